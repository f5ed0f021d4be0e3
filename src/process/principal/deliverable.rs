//! An associate's deliverable: the JSON object in its reply, checked
//! against the schema in its profile (`deliverable:` in its front matter).
//!
//! The check covers the part of JSON Schema a deliverable's schema uses:
//! `type` (one or a list), `required`, `properties`, `items`, `enum`,
//! `minItems`, `minLength`. A full validator crate (`jsonschema`) would
//! bring some forty crates for a check of a few keys; other keywords are
//! accepted unchecked.

use serde_json::Value;

/// The schema of an associate with none of its own: a summary.
pub(super) fn default_schema() -> Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "summary": {"type": "string", "description": "What was found or made"}
        },
        "required": ["summary"]
    })
}

/// The deliverable in `text`: a JSON object, alone or in a code fence or
/// amid prose, valid per `schema`; else the problems, for the corrective
/// retry.
pub(super) fn parse(text: &str, schema: &Value) -> Result<Value, Vec<String>> {
    let Some(json) = extract(text) else {
        return Err(vec!["the reply holds no JSON object".to_string()]);
    };
    let value: Value =
        serde_json::from_str(json).map_err(|e| vec![format!("the JSON does not parse: {e}")])?;
    let mut problems = Vec::new();
    check(&value, schema, "$", &mut problems);
    if problems.is_empty() {
        Ok(value)
    } else {
        problems.truncate(8);
        Err(problems)
    }
}

/// The JSON object in a reply: from its first `{` to its last `}`.
fn extract(text: &str) -> Option<&str> {
    let start = text.find('{')?;
    let end = text.rfind('}')?;
    (end > start).then(|| &text[start..=end])
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn is_type(v: &Value, want: &str) -> bool {
    let have = type_name(v);
    have == want || (want == "number" && have == "integer")
}

/// Checks `v` against `schema` at `path`, adding what is wrong.
fn check(v: &Value, schema: &Value, path: &str, problems: &mut Vec<String>) {
    let types: Vec<&str> = match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if !types.is_empty() && !types.iter().any(|t| is_type(v, t)) {
        problems.push(format!(
            "{path}: expected {}, found {}",
            types.join(" or "),
            type_name(v)
        ));
        return;
    }
    if let Some(Value::Array(allowed)) = schema.get("enum")
        && !allowed.contains(v)
    {
        problems.push(format!(
            "{path}: {v} is not one of {}",
            Value::from(allowed.clone())
        ));
    }
    match v {
        Value::Object(map) => {
            if let Some(Value::Array(required)) = schema.get("required") {
                for key in required.iter().filter_map(Value::as_str) {
                    if !map.contains_key(key) {
                        problems.push(format!("{path}: missing required '{key}'"));
                    }
                }
            }
            if let Some(Value::Object(props)) = schema.get("properties") {
                for (key, sub) in props {
                    if let Some(value) = map.get(key) {
                        check(value, sub, &format!("{path}.{key}"), problems);
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(min) = schema.get("minItems").and_then(Value::as_u64)
                && (items.len() as u64) < min
            {
                problems.push(format!(
                    "{path}: at least {min} items, found {}",
                    items.len()
                ));
            }
            if let Some(sub) = schema.get("items") {
                for (i, item) in items.iter().enumerate() {
                    check(item, sub, &format!("{path}[{i}]"), problems);
                }
            }
        }
        Value::String(s) => {
            if let Some(min) = schema.get("minLength").and_then(Value::as_u64)
                && (s.chars().count() as u64) < min
            {
                problems.push(format!("{path}: at least {min} characters"));
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({
            "type": "object",
            "required": ["title", "points"],
            "properties": {
                "title": {"type": "string", "minLength": 1},
                "points": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                "confidence": {"type": "string", "enum": ["low", "high"]}
            }
        })
    }

    #[test]
    fn a_deliverable_is_found_in_prose_or_a_fence_and_checked() {
        let ok = parse(
            "Here it is:\n```json\n{\"title\": \"T\", \"points\": [\"a\"]}\n```",
            &schema(),
        )
        .unwrap();
        assert_eq!(ok["title"], "T");
        let bad = parse(
            r#"{"title": 3, "points": [], "confidence": "sure"}"#,
            &schema(),
        )
        .unwrap_err();
        assert_eq!(
            bad,
            vec![
                "$.confidence: \"sure\" is not one of [\"low\",\"high\"]".to_string(),
                "$.points: at least 1 items, found 0".to_string(),
                "$.title: expected string, found integer".to_string(),
            ]
        );
        assert_eq!(
            parse("no json here", &schema()).unwrap_err(),
            vec!["the reply holds no JSON object".to_string()]
        );
        assert!(
            parse("{not json}", &schema()).unwrap_err()[0].starts_with("the JSON does not parse")
        );
        assert_eq!(
            parse(r#"{"points": ["a"]}"#, &schema()).unwrap_err(),
            vec!["$: missing required 'title'".to_string()]
        );
    }
}
