//! OpenInference attributes, next to the GenAI ones on every span: what
//! Arize Phoenix (and other OpenInference readers) render a span by.
//!
//! The kind says how a span is drawn (`CHAIN` the run, `AGENT` an agent's
//! turn, `LLM` a model call, `TOOL` a tool call); `input.value` and
//! `output.value` fill its input and output panes and are only ever given
//! text the caller may export (content on).

use crate::model::{Message, Role, Usage};

use super::proto::KeyValue;

/// What a span is, as OpenInference names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// The run: a chain of rounds and phases.
    Chain,
    /// An agent's turn.
    Agent,
    /// A model call.
    Llm,
    /// A tool call.
    Tool,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Chain => "CHAIN",
            Kind::Agent => "AGENT",
            Kind::Llm => "LLM",
            Kind::Tool => "TOOL",
        }
    }
}

/// `openinference.span.kind`.
pub(crate) fn kind(kind: Kind) -> KeyValue {
    KeyValue::str("openinference.span.kind", kind.as_str())
}

/// `input.value` and its `input.mime_type`: JSON when the text is a JSON
/// object or array, else plain text.
pub(crate) fn input(text: &str, attrs: &mut Vec<KeyValue>) {
    value("input", text, attrs);
}

/// `output.value` and its `output.mime_type`, as [`input`] does.
pub(crate) fn output(text: &str, attrs: &mut Vec<KeyValue>) {
    value("output", text, attrs);
}

fn value(prefix: &str, text: &str, attrs: &mut Vec<KeyValue>) {
    let json = matches!(
        serde_json::from_str::<serde_json::Value>(text),
        Ok(serde_json::Value::Object(_) | serde_json::Value::Array(_))
    );
    let mime = if json {
        "application/json"
    } else {
        "text/plain"
    };
    attrs.push(KeyValue::str(&format!("{prefix}.value"), text));
    attrs.push(KeyValue::str(&format!("{prefix}.mime_type"), mime));
}

/// `llm.token_count.prompt`, `.completion` and `.total`.
pub(crate) fn tokens(usage: &Usage, attrs: &mut Vec<KeyValue>) {
    let (prompt, completion) = (to_i64(usage.prompt_tokens), to_i64(usage.completion_tokens));
    attrs.push(KeyValue::int("llm.token_count.prompt", prompt));
    attrs.push(KeyValue::int("llm.token_count.completion", completion));
    attrs.push(KeyValue::int(
        "llm.token_count.total",
        prompt.saturating_add(completion),
    ));
}

/// `llm.input_messages.{i}.message.role` / `.content` (or
/// `llm.output_messages...`): the chat a model call saw or wrote.
pub(crate) fn messages(output: bool, messages: &[Message], attrs: &mut Vec<KeyValue>) {
    let list = if output {
        "llm.output_messages"
    } else {
        "llm.input_messages"
    };
    for (i, m) in messages.iter().enumerate() {
        attrs.push(KeyValue::str(
            &format!("{list}.{i}.message.role"),
            role_name(m.role),
        ));
        attrs.push(KeyValue::str(
            &format!("{list}.{i}.message.content"),
            m.content.clone(),
        ));
    }
}

/// A role as the GenAI and OpenInference conventions both write it.
pub(crate) fn role_name(role: Role) -> &'static str {
    match role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    }
}

pub(crate) fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::super::proto::Value;
    use super::*;

    fn text(attrs: &[KeyValue], key: &str) -> Option<String> {
        attrs
            .iter()
            .find(|kv| kv.key == key)
            .and_then(|kv| kv.value.as_ref()?.value.clone())
            .and_then(|v| match v {
                Value::String(s) => Some(s),
                _ => None,
            })
    }

    #[test]
    fn values_say_whether_they_are_json() {
        let mut attrs = Vec::new();
        input("{\"path\":\"a.md\"}", &mut attrs);
        output("4 files", &mut attrs);
        assert_eq!(
            text(&attrs, "input.mime_type").as_deref(),
            Some("application/json")
        );
        assert_eq!(
            text(&attrs, "output.mime_type").as_deref(),
            Some("text/plain")
        );
        let mut attrs = Vec::new();
        output("42", &mut attrs);
        assert_eq!(
            text(&attrs, "output.mime_type").as_deref(),
            Some("text/plain"),
            "a bare number is text"
        );
    }
}
