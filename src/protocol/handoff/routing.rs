//! The routing calls that pick the next agent when the active one hands
//! off to nobody: over the `handoffs:` rules (`RULE: <n>` or `NONE`, or
//! `{"rule": n}`), then over the roster (`NEXT: <agent>` or `NONE`, or
//! `{"agent": ..}`).

use std::fmt::Write as _;

use serde_json::{Value, json};

use super::{HistoryStep, render_history};
use crate::model::{Message, OutputSchema};
use crate::protocol::{strip_decoration, strip_markers};
use crate::util::text::escape_xml;

/// The name of the rule-routing schema.
pub(crate) const RULE_CHOICE_SCHEMA: &str = "handoff_rule_choice";
/// The name of the roster-routing schema.
pub(crate) const AGENT_CHOICE_SCHEMA: &str = "handoff_agent_choice";

/// One rule as the routing call sees it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RoutingRule<'a> {
    /// The agent the rule activates.
    pub to_agent: &'a str,
    /// Its condition, rendered with the variables (`None`: always).
    pub condition: Option<&'a str>,
}

/// The schema of a rule choice: `{"rule": 0..=n, "reason": ".."}` (0 for
/// none).
fn rule_choice_schema(rules: usize) -> OutputSchema {
    OutputSchema {
        name: RULE_CHOICE_SCHEMA.into(),
        schema: json!({
            "type": "object",
            "properties": {
                "rule": {"type": "integer", "minimum": 0, "maximum": rules},
                "reason": {"type": "string"}
            },
            "required": ["rule", "reason"],
            "additionalProperties": false
        }),
    }
}

/// The routing call over the rules of the agent that just finished
/// (`last_agent`), in the order they are tried: which is the first whose
/// condition holds? Returns the messages and the JSON schema (to send where
/// the provider supports structured output; the line answer `RULE: <n>` /
/// `NONE` is read either way).
pub(crate) fn rule_routing_prompt(
    last_agent: &str,
    task: &str,
    rules: &[RoutingRule<'_>],
    history: &[HistoryStep],
) -> (Vec<Message>, OutputSchema) {
    let system = "You route work in a team of agents. Read the task and the history, then \
                  judge the numbered rules in order and pick the first whose condition holds \
                  now, judging from the latest step above all. Reply with one line: \
                  `RULE: <number>`, or `NONE` if no condition holds. Where asked for JSON, \
                  reply {\"rule\": <number, 0 for none>, \"reason\": \"...\"}.";
    let mut user = format!("<task>\n{}\n</task>\n", escape_xml(task.trim()));
    let _ = writeln!(user, "{}", render_history(history));
    let _ = writeln!(user, "<routing_rules from=\"{}\">", escape_xml(last_agent));
    for (i, r) in rules.iter().enumerate() {
        let _ = writeln!(
            user,
            "{}. to {} when: {}",
            i + 1,
            escape_xml(r.to_agent),
            escape_xml(r.condition.unwrap_or("always"))
        );
    }
    user.push_str("</routing_rules>\n");
    let _ = write!(
        user,
        "{last_agent} has just finished and handed off to nobody. Which rule holds first?"
    );
    (
        vec![Message::system(system), Message::user(user)],
        rule_choice_schema(rules.len()),
    )
}

/// The outermost `{...}` of a reply, past code fences and chatter.
fn json_object(reply: &str) -> Option<serde_json::Map<String, Value>> {
    let start = reply.find('{')?;
    let end = reply.rfind('}')?;
    if end <= start {
        return None;
    }
    match serde_json::from_str::<Value>(&reply[start..=end]) {
        Ok(Value::Object(m)) => Some(m),
        _ => None,
    }
}

/// Reads a rule choice: the 0-based index of the chosen rule among `rules`,
/// or `None` (NONE, 0, out of range, or nothing readable). Takes
/// `{"rule": 2}`, `RULE: 2`, `Rule 2`, `**2**`, `#2` and `none`.
pub(crate) fn parse_rule_choice(answer: &str, rules: usize) -> Option<usize> {
    let pick = |n: i64| -> Option<usize> {
        usize::try_from(n)
            .ok()
            .filter(|n| (1..=rules).contains(n))
            .map(|n| n - 1)
    };
    if let Some(m) = json_object(answer) {
        return match m.get("rule") {
            Some(Value::Number(n)) => n.as_i64().and_then(pick),
            Some(Value::String(s)) => s.trim().trim_start_matches('#').parse().ok().and_then(pick),
            _ => None,
        };
    }
    let lines: Vec<&str> = answer
        .lines()
        .map(|l| {
            l.trim()
                .trim_start_matches(['*', '_', '`', '#', '>', '-', '•'])
                .trim()
        })
        .collect();
    let number = |rest: &str| -> Option<i64> {
        let rest = rest.trim_start_matches(|c: char| {
            c == ':' || c == '#' || c == '*' || c == '`' || c == '=' || c.is_whitespace()
        });
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok()
    };
    // "RULE: n" or "NONE" first, wherever they are; then a lone number.
    for s in &lines {
        let lower = s.to_ascii_lowercase();
        if lower.starts_with("none") || lower.starts_with("no rule") {
            return None;
        }
        if let Some(rest) = lower.strip_prefix("rule")
            && let Some(n) = number(rest)
        {
            return pick(n);
        }
    }
    lines
        .iter()
        .find(|s| {
            let t = s.trim_end_matches(['*', '`', '.', ')']);
            !t.is_empty() && t.chars().all(|c| c.is_ascii_digit())
        })
        .and_then(|s| number(s))
        .and_then(pick)
}

/// The schema of an agent choice: `{"agent": <name or "none">, "reason"}`.
fn agent_choice_schema(candidates: &[&str]) -> OutputSchema {
    let mut names: Vec<&str> = candidates.to_vec();
    names.push("none");
    OutputSchema {
        name: AGENT_CHOICE_SCHEMA.into(),
        schema: json!({
            "type": "object",
            "properties": {
                "agent": {"type": "string", "enum": names},
                "reason": {"type": "string"}
            },
            "required": ["agent", "reason"],
            "additionalProperties": false
        }),
    }
}

/// The routing fallback: which of `candidates` (name, description) should
/// act next after `last_agent`, or none? Returns the messages and the JSON
/// schema (the line answer `NEXT: <agent>` / `NONE` is read either way).
pub(crate) fn roster_routing_prompt(
    last_agent: &str,
    task: &str,
    candidates: &[(&str, &str)],
    history: &[HistoryStep],
) -> (Vec<Message>, OutputSchema) {
    let system = "You route work in a team of agents. Read the task and the history and \
                  decide whether another agent should act next, and if so which one, by its \
                  description. If the work is finished or nobody fits, say so. Reply with one \
                  line: `NEXT: <agent>` or `NONE`. Where asked for JSON, reply \
                  {\"agent\": \"<name or none>\", \"reason\": \"...\"}.";
    let mut user = format!("<task>\n{}\n</task>\n", escape_xml(task.trim()));
    let _ = writeln!(user, "{}", render_history(history));
    user.push_str("<candidates>\n");
    for (name, description) in candidates {
        let _ = writeln!(user, "- {}: {}", escape_xml(name), escape_xml(description));
    }
    user.push_str("</candidates>\n");
    let _ = write!(
        user,
        "{last_agent} has just finished and handed off to nobody. Who should act next, if anyone?"
    );
    let names: Vec<&str> = candidates.iter().map(|(n, _)| *n).collect();
    (
        vec![Message::system(system), Message::user(user)],
        agent_choice_schema(&names),
    )
}

/// Reads an agent choice against the candidates: the roster spelling, or
/// `None` for none, an unknown name or nothing readable. Takes
/// `{"agent": "writer"}`, `NEXT: writer`, `**Writer**`, and a lone name.
pub(crate) fn parse_agent_choice(answer: &str, candidates: &[&str]) -> Option<String> {
    let find = |name: &str| {
        let name = strip_markers(name).trim_end_matches(['.', '!']);
        candidates
            .iter()
            .find(|c| c.eq_ignore_ascii_case(name))
            .map(|c| (*c).to_string())
    };
    if let Some(m) = json_object(answer) {
        return m.get("agent").and_then(Value::as_str).and_then(find);
    }
    let mut lone = None;
    for line in answer.lines() {
        let s = strip_decoration(line);
        if let Some(name) = find(s) {
            return Some(name);
        }
        let lower = s.to_ascii_lowercase();
        if lower.starts_with("none") {
            return None;
        }
        for key in ["next agent", "next", "agent"] {
            if lower.starts_with(key) {
                let rest = s[key.len()..]
                    .trim_start_matches(['*', '_', '`'])
                    .trim_start()
                    .trim_start_matches([':', '-', '='])
                    .trim();
                let word = rest.split_whitespace().next().unwrap_or("");
                return find(word);
            }
        }
        if lone.is_none() {
            // "I pick writer." — a candidate named alone in a short line.
            let words: Vec<&str> = s.split_whitespace().collect();
            if words.len() <= 4 {
                lone = words.iter().find_map(|w| find(w));
            }
        }
    }
    lone
}
