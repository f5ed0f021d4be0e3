//! The structured-output protocol: the same decisions as the line protocol,
//! asked for as JSON through `response_format: json_schema`, with a schema
//! built from the roster (member names as an enum), for models that cannot
//! follow the line protocol.
//!
//! The master answers
//! `{"decision": "assign" | "done", "assignments": [{"member", "task"}], "answer"}`,
//! a challenger `{"verdict": "agree" | "challenge", "reason"}`. Replies are
//! read forgivingly (code fences and text around the object are ignored) and
//! map to the same [`Decision`] and [`Verdict`] as [`parse_master`] and
//! [`parse_verdict`]; a reply with no JSON object at all is read with the
//! line protocol.

use crate::util::text::closest;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{
    Assignment, Decision, MasterReply, ProtocolError, Verdict, parse_master, parse_verdict,
};
use crate::model::OutputSchema;

/// How agents write their directives.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    /// `ASSIGN:<member>:<task>`, `DONE`, `CHALLENGE:`, `AGREE` lines (the
    /// default).
    #[default]
    Line,
    /// JSON objects following a schema (`response_format: json_schema`).
    Json,
}

impl std::str::FromStr for Protocol {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "line" => Ok(Protocol::Line),
            "json" => Ok(Protocol::Json),
            other => Err(format!("unknown protocol '{other}' (known: line, json)")),
        }
    }
}

/// What the master is told in JSON mode, in place of the line rules.
pub(crate) const MASTER_RULES_JSON: &str = "\
## How you direct the team

Reply with exactly one JSON object and nothing else:

{\"decision\": \"assign\", \"assignments\": [{\"member\": \"<name from the roster>\", \"task\": \"<task>\"}], \"answer\": \"\"}
  Gives members tasks. Use only names from the roster. Give each member a
  self-contained task: they see the board but not this message.
{\"decision\": \"done\", \"assignments\": [], \"answer\": \"<the complete final answer>\"}
  Ends the work. The answer goes to the user as it stands.
{\"decision\": \"ask_user\", \"assignments\": [], \"answer\": \"<one question for the user>\"}
  Only when the work cannot go on without the user's answer (a choice only the
  user can make): the run waits for it, and you see the answer in your next turn.

Members work in parallel, so split the task into parts that can be done at the
same time. After every round you see the board (drafts, challenges, errors) and
either assign another round or finish with done.";

/// What a challenger is told in JSON mode, in place of the line rules.
pub(crate) const CHALLENGE_RULES_JSON: &str = "\
## The challenge round

Read the board: every member's draft for this round. Look for factual errors,
gaps that matter for the task, contradictions between drafts, and advice that
would mislead the user. Then reply with exactly one JSON object and nothing else:

{\"verdict\": \"challenge\", \"reason\": \"<what is wrong, where (name the member), and why>\"}
{\"verdict\": \"agree\", \"reason\": \"\"}

Challenge only what you can justify; do not challenge style. If nothing matters
enough, reply {\"verdict\": \"agree\", \"reason\": \"\"}.";

/// The note that ends a JSON-mode request.
pub(crate) const REPLY_JSON: &str = "Reply with the JSON object only.";

/// What the corrective note asks for in JSON mode.
pub(crate) const MASTER_EXPECTED: &str = "one JSON object: {\"decision\": \"assign\" or \"done\", \"assignments\": [...], \"answer\": \"...\"}";

/// What the corrective note asks the master's plan for in JSON mode.
pub(crate) const PLAN_EXPECTED: &str = "one JSON object: {\"decision\": \"assign\", \"assignments\": [at least one {\"member\", \"task\"}], \"answer\": \"\"}";

/// What the corrective note asks a challenger for in JSON mode.
pub(crate) const VERDICT_EXPECTED: &str =
    "one JSON object: {\"verdict\": \"agree\" or \"challenge\", \"reason\": \"...\"}";

/// The schema of a master reply; `members` become the enum of names.
pub(crate) fn master_schema(members: &[&str]) -> OutputSchema {
    OutputSchema {
        name: "master_decision".into(),
        schema: json!({
            "type": "object",
            "properties": {
                "decision": {"type": "string", "enum": ["assign", "done", "ask_user"]},
                "assignments": {
                    "type": "array",
                    // One task per member at most: a small model constrained
                    // to the schema would otherwise repeat items until cut off.
                    "maxItems": members.len(),
                    "items": {
                        "type": "object",
                        "properties": {
                            "member": {"type": "string", "enum": members},
                            "task": {"type": "string"}
                        },
                        "required": ["member", "task"],
                        "additionalProperties": false
                    }
                },
                "answer": {"type": "string"}
            },
            "required": ["decision", "assignments", "answer"],
            "additionalProperties": false
        }),
    }
}

/// The schema of the master's plan: an "assign" decision with at least one
/// assignment (nobody has worked yet, so a plan cannot finish the work).
pub(crate) fn plan_schema(members: &[&str]) -> OutputSchema {
    let mut plan = master_schema(members);
    plan.name = "master_plan".into();
    plan.schema["properties"]["decision"]["enum"] = json!(["assign"]);
    plan.schema["properties"]["assignments"]["minItems"] = json!(1);
    plan
}

/// The schema of a challenger's verdict.
pub(crate) fn verdict_schema() -> OutputSchema {
    OutputSchema {
        name: "challenge_verdict".into(),
        schema: json!({
            "type": "object",
            "properties": {
                "verdict": {"type": "string", "enum": ["agree", "challenge"]},
                "reason": {"type": "string"}
            },
            "required": ["verdict", "reason"],
            "additionalProperties": false
        }),
    }
}

/// The outermost `{...}` of a reply, past code fences and chatter.
fn object(reply: &str) -> Option<&str> {
    let start = reply.find('{')?;
    let end = reply.rfind('}')?;
    (end > start).then(|| &reply[start..=end])
}

fn bad(detail: impl Into<String>) -> ProtocolError {
    ProtocolError::BadJson {
        detail: detail.into(),
    }
}

fn text_at<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .trim()
}

/// Parses a JSON master reply against the roster; same rules and errors as
/// [`parse_master`] (an error's `line` is the assignment's 1-based place in
/// the list).
pub fn parse_master_json(reply: &str, members: &[&str], master: &str) -> MasterReply {
    let Some(text) = object(reply) else {
        return parse_master(reply, members, master);
    };
    let v: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            return MasterReply {
                decision: None,
                errors: vec![bad(format!("not valid json: {e}"))],
            };
        }
    };
    let mut errors = Vec::new();
    let mut assignments = Vec::new();
    let items = v.get("assignments").and_then(Value::as_array);
    for (i, item) in items.into_iter().flatten().enumerate() {
        let line = i + 1;
        let name = text_at(item, "member");
        let task = text_at(item, "task");
        if name.is_empty() {
            errors.push(ProtocolError::MissingMember { line });
        } else if name.eq_ignore_ascii_case(master) {
            errors.push(ProtocolError::SelfAssignment { line });
        } else if let Some(m) = members.iter().find(|m| m.eq_ignore_ascii_case(name)) {
            if task.is_empty() {
                errors.push(ProtocolError::EmptyTask {
                    line,
                    member: m.to_string(),
                });
            } else {
                assignments.push(Assignment {
                    member: m.to_string(),
                    task: task.to_string(),
                });
            }
        } else {
            errors.push(ProtocolError::UnknownMember {
                line,
                name: name.to_string(),
                suggestion: closest(name, members),
            });
        }
    }
    if let Some(question) = super::ask::parse_ask_json(text) {
        return MasterReply {
            decision: Some(Decision::Ask(question)),
            errors: Vec::new(),
        };
    }
    let answer = text_at(&v, "answer");
    let decision = match text_at(&v, "decision").to_ascii_lowercase().as_str() {
        "done" => Some(Decision::Done(answer.to_string())),
        _ if !assignments.is_empty() => Some(Decision::Assign(assignments)),
        "assign" => None,
        _ if !answer.is_empty() => Some(Decision::Done(answer.to_string())),
        _ => None,
    };
    if decision.is_none() && errors.is_empty() {
        errors.push(ProtocolError::NoDirective {
            expected: "\"decision\": \"assign\" with assignments, or \"done\" with the answer",
        });
    }
    MasterReply { decision, errors }
}

/// Parses a JSON verdict; same meaning as [`parse_verdict`].
///
/// # Errors
///
/// A [`ProtocolError`] when the reply holds no usable verdict.
pub fn parse_verdict_json(reply: &str) -> Result<Verdict, ProtocolError> {
    let Some(text) = object(reply) else {
        return parse_verdict(reply);
    };
    let v: Value = serde_json::from_str(text).map_err(|e| bad(format!("not valid json: {e}")))?;
    let reason = text_at(&v, "reason");
    match text_at(&v, "verdict").to_ascii_lowercase().as_str() {
        "agree" => Ok(Verdict::Agree),
        "challenge" if !reason.is_empty() => Ok(Verdict::Challenge(reason.to_string())),
        "challenge" => Err(bad("a challenge needs a reason")),
        _ => Err(ProtocolError::NoDirective {
            expected: "\"verdict\": \"agree\" or \"challenge\"",
        }),
    }
}

/// A line-protocol reply rewritten as the JSON the schema asks for (the
/// offline model answers this way when a request carries a schema).
pub(crate) fn line_to_json(reply: &str, schema: &OutputSchema) -> String {
    if schema.name == "challenge_verdict" {
        let v = match parse_verdict(reply) {
            Ok(Verdict::Challenge(reason)) => json!({"verdict": "challenge", "reason": reason}),
            _ => json!({"verdict": "agree", "reason": ""}),
        };
        return v.to_string();
    }
    let members: Vec<&str> =
        schema.schema["properties"]["assignments"]["items"]["properties"]["member"]["enum"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
    let v = match parse_master(reply, &members, "").decision {
        Some(Decision::Assign(list)) => json!({
            "decision": "assign",
            "assignments": list.iter().map(|a| json!({"member": a.member, "task": a.task})).collect::<Vec<_>>(),
            "answer": ""
        }),
        Some(Decision::Done(answer)) => {
            json!({"decision": "done", "assignments": [], "answer": answer})
        }
        Some(Decision::Ask(question)) => {
            json!({"decision": "ask_user", "assignments": [], "answer": question})
        }
        None => json!({"decision": "done", "assignments": [], "answer": reply.trim()}),
    };
    v.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MEMBERS: &[&str] = &["researcher", "writer"];

    /// The JSON rules say what the line rules say (issue 15: two sentences
    /// were lost in translation).
    #[test]
    fn json_rules_keep_the_line_rules_sentences() {
        let flat = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        let master = flat(MASTER_RULES_JSON);
        assert!(
            master.contains("without the user's answer (a choice only the user can make)"),
            "{master}"
        );
        let challenge = flat(CHALLENGE_RULES_JSON);
        assert!(
            challenge.contains(
                "If nothing matters enough, reply {\"verdict\": \"agree\", \"reason\": \"\"}."
            ),
            "{challenge}"
        );
    }

    #[test]
    fn master_json_maps_to_the_same_decisions() {
        let reply = "```json\n{\"decision\": \"assign\", \"assignments\": [\
            {\"member\": \"Researcher\", \"task\": \"find facts\"},\
            {\"member\": \"writr\", \"task\": \"x\"},\
            {\"member\": \"master\", \"task\": \"y\"}], \"answer\": \"\"}\n```";
        let r = parse_master_json(reply, MEMBERS, "master");
        assert_eq!(
            r.decision,
            Some(Decision::Assign(vec![Assignment {
                member: "researcher".into(),
                task: "find facts".into()
            }]))
        );
        let errors: Vec<String> = r.errors.iter().map(ToString::to_string).collect();
        assert_eq!(
            errors,
            [
                "line 2: unknown member 'writr' (did you mean 'writer'?)",
                "line 3: the master cannot assign work to itself"
            ]
        );
        let done = parse_master_json(
            "{\"decision\":\"done\",\"assignments\":[],\"answer\":\"42\"}",
            MEMBERS,
            "master",
        );
        assert_eq!(done.decision, Some(Decision::Done("42".into())));
        let broken = parse_master_json("{\"decision\": }", MEMBERS, "master");
        assert!(broken.decision.is_none());
        assert!(broken.errors[0].to_string().starts_with("not valid json: "));
        // No JSON at all: read as lines.
        let lines = parse_master_json("ASSIGN:writer:draft it", MEMBERS, "master");
        assert!(matches!(lines.decision, Some(Decision::Assign(_))));
    }

    #[test]
    fn verdicts_and_schema() {
        assert_eq!(
            parse_verdict_json("{\"verdict\":\"agree\",\"reason\":\"\"}"),
            Ok(Verdict::Agree)
        );
        assert_eq!(
            parse_verdict_json("{\"verdict\":\"challenge\",\"reason\":\"wrong date\"}"),
            Ok(Verdict::Challenge("wrong date".into()))
        );
        assert!(parse_verdict_json("{\"verdict\":\"maybe\"}").is_err());
        let s = master_schema(MEMBERS);
        assert_eq!(
            s.schema["properties"]["assignments"]["items"]["properties"]["member"]["enum"],
            json!(["researcher", "writer"])
        );
        let round_trip = line_to_json("ASSIGN:writer:draft\nASSIGN:researcher:facts", &s);
        let r = parse_master_json(&round_trip, MEMBERS, "master");
        assert!(matches!(r.decision, Some(Decision::Assign(v)) if v.len() == 2));
        let v = line_to_json("CHALLENGE:bad", &verdict_schema());
        assert_eq!(parse_verdict_json(&v), Ok(Verdict::Challenge("bad".into())));
        assert_eq!("JSON".parse::<Protocol>(), Ok(Protocol::Json));
    }
}
