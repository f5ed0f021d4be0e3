//! The handoff protocol: how the active agent passes control, and the
//! routing calls that pick the next agent when it hands off to nobody.
//!
//! - A `handoff(destination_agent, reason)` tool where the model calls
//!   tools, or a `HANDOFF:<agent>:<reason>` line where it does not (read as
//!   forgivingly as `ASSIGN`). The orchestrator intercepts either; it is
//!   never run as a tool.
//! - A `set_variable(name, value)` tool changes a context variable.
//! - The rule-routing call asks which `handoffs:` rule holds (`RULE: <n>` or
//!   `NONE`, or `{"rule": n}` as JSON); the roster-routing call asks which
//!   agent should act next (`NEXT: <agent>` or `NONE`, or `{"agent": ..}`).
//!
//! Everything here is pure: prompts in, text out. The driver owns the
//! calls; the `sim` model recognises these prompts by their tags
//! (`<history>`, `<handoff_rules>`, `<routing_rules>`, `<candidates>`).

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{strip_decoration, strip_markers};
use crate::model::{Message, ToolSpec};
use crate::util::text::closest;
use crate::util::text::escape_xml;
use crate::util::vars::Variables;

#[cfg(test)]
pub(crate) use routing::AGENT_CHOICE_SCHEMA;
pub(crate) use routing::{
    RULE_CHOICE_SCHEMA, RoutingRule, parse_agent_choice, parse_rule_choice, roster_routing_prompt,
    rule_routing_prompt,
};

/// The name of the built-in handoff tool.
pub(crate) const HANDOFF_TOOL: &str = "handoff";
/// The name of the built-in tool that changes a context variable.
pub(crate) const SET_VARIABLE_TOOL: &str = "set_variable";

/// An agent's request to pass control.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct HandoffDirective {
    /// The destination, as written (check it with [`resolve_destination`]).
    pub to: String,
    /// Why, in the agent's words (may be empty).
    pub reason: String,
}

/// One earlier step, as the next agent sees it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct HistoryStep {
    /// The agent that acted, or `user` for the user's words.
    pub agent: String,
    /// What it wrote (without its HANDOFF line).
    pub text: String,
    /// Files it wrote.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<String>,
    /// Who it handed off to, if anyone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handoff_to: Option<String>,
    /// Why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The keyword, then `:` (or an arrow) and the rest of the line.
fn handoff_rest(line: &str) -> Option<&str> {
    let s = strip_decoration(line);
    let word_len = s.bytes().take_while(u8::is_ascii_alphabetic).count();
    let word = &s[..word_len];
    if !(word.eq_ignore_ascii_case("handoff") || word.eq_ignore_ascii_case("hand_off")) {
        // "HAND OFF:" and "hand-off:" as two pieces.
        let lower = s.to_ascii_lowercase();
        let rest = ["hand off", "hand-off", "hand_off"]
            .iter()
            .find_map(|k| lower.starts_with(k).then(|| &s[k.len()..]))?;
        return after_separator(rest);
    }
    after_separator(&s[word_len..])
}

fn after_separator(rest: &str) -> Option<&str> {
    let rest = rest.trim_start_matches(['*', '_', '`']).trim_start();
    let rest = rest
        .strip_prefix(':')
        .or_else(|| rest.strip_prefix("->"))
        .or_else(|| rest.strip_prefix('→'))?;
    Some(rest.trim_start_matches(['*', '_', '`']).trim())
}

/// Finds a `HANDOFF:<agent>:<reason>` line in a reply (the last one, as the
/// directive usually ends the reply). Forgiving: any case, spaces, list
/// bullets, bold or code markers, `HANDOFF: to writer - reason`,
/// `HANDOFF -> writer: reason`. `None` when there is no such line or it
/// names nobody.
pub(crate) fn parse_handoff_line(text: &str) -> Option<HandoffDirective> {
    text.lines().rev().find_map(|line| {
        let rest = handoff_rest(line)?;
        let rest = match rest.get(..3) {
            Some(w) if w.eq_ignore_ascii_case("to ") => rest[3..].trim_start(),
            _ => rest,
        };
        // The name ends at ':', ' - ', '—', ',', ';', '(' or whitespace.
        let end = rest
            .find(|c: char| {
                c == ':' || c == ',' || c == ';' || c == '(' || c == '—' || c.is_whitespace()
            })
            .unwrap_or(rest.len());
        let name = strip_markers(&rest[..end]).trim_end_matches(['.', '!']);
        if name.is_empty() {
            return None;
        }
        let reason = rest[end..]
            .trim_start_matches(['*', '_', '`'])
            .trim_start()
            .trim_start_matches([':', ',', ';', '—', '-'])
            .trim();
        let reason = reason
            .strip_prefix("because ")
            .unwrap_or(reason)
            .trim_matches(['*', '_', '`', '"', '\''])
            .trim();
        Some(HandoffDirective {
            to: name.to_string(),
            reason: reason.to_string(),
        })
    })
}

/// The reply without its HANDOFF lines: what goes into the history as the
/// step's text.
pub(crate) fn strip_handoff_lines(text: &str) -> String {
    text.lines()
        .filter(|l| handoff_rest(l).is_none())
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_string()
}

/// The roster name a destination means (any letter case), or the
/// corrective message to send back to the agent: an unknown agent (with a
/// suggestion) or itself, naming the agents it may hand off to.
///
/// # Errors
///
/// The corrective text, ready to send to the agent.
pub(crate) fn resolve_destination(to: &str, from: &str, roster: &[&str]) -> Result<String, String> {
    let to = strip_markers(to);
    let others: Vec<&str> = roster
        .iter()
        .copied()
        .filter(|n| !n.eq_ignore_ascii_case(from))
        .collect();
    let choices = if others.is_empty() {
        "nobody else is on the team".to_string()
    } else {
        format!("hand off to one of: {}", others.join(", "))
    };
    if to.eq_ignore_ascii_case(from) {
        return Err(format!(
            "Your handoff names yourself ('{from}'): {choices}, or hand off to nobody if the \
             work is finished. Reply again with your work and a valid handoff."
        ));
    }
    match roster.iter().find(|n| n.eq_ignore_ascii_case(to)) {
        Some(name) => Ok((*name).to_string()),
        None => {
            let mut m = format!("Your handoff names '{to}', who is not on the team");
            if let Some(s) = closest(to, &others) {
                let _ = write!(m, " (did you mean '{s}'?)");
            }
            let _ = write!(
                m,
                ": {choices}, or hand off to nobody if the work is finished. Reply again with \
                 your work and a valid handoff."
            );
            Err(m)
        }
    }
}

/// Checks a directive's destination against the roster.
///
/// # Errors
///
/// The corrective message for the agent (see [`resolve_destination`]).
#[cfg(test)]
pub(crate) fn check_destination(
    d: &HandoffDirective,
    from: &str,
    roster: &[&str],
) -> Result<(), String> {
    resolve_destination(&d.to, from, roster).map(|_| ())
}

/// The built-in `handoff` tool, offered to every agent of a handoff team
/// whose model calls tools. `others` are the agents it may hand off to.
pub(crate) fn handoff_tool_spec(others: &[&str]) -> ToolSpec {
    let mut destination = json!({
        "type": "string",
        "description": "The agent that should act next, by name."
    });
    if !others.is_empty() {
        destination["enum"] = json!(others);
    }
    ToolSpec {
        name: HANDOFF_TOOL.into(),
        description: "Pass control to another agent of the team when your part is done. \
                      Call it at most once, after your work, as your last action; the \
                      other agent sees your work and the reason."
            .into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "destination_agent": destination,
                "reason": {
                    "type": "string",
                    "description": "Why this agent should act next, and what it should do."
                }
            },
            "required": ["destination_agent", "reason"],
            "additionalProperties": false
        }),
    }
}

/// The built-in `set_variable` tool: changes a declared context variable
/// for the rest of the run.
pub(crate) fn set_variable_tool_spec(vars: &Variables) -> ToolSpec {
    let names = vars.names();
    let mut name = json!({"type": "string", "description": "A declared context variable."});
    if !names.is_empty() {
        name["enum"] = json!(names);
    }
    ToolSpec {
        name: SET_VARIABLE_TOOL.into(),
        description: "Set a context variable of the team (see <context_variables>) for the \
                      rest of the run; later prompts and handoff conditions use the new value."
            .into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "name": name,
                "value": {"type": "string", "description": "The new value."}
            },
            "required": ["name", "value"],
            "additionalProperties": false
        }),
    }
}

fn parse_object(arguments: &str) -> Result<serde_json::Map<String, Value>, String> {
    let text = arguments.trim();
    let text = if text.is_empty() { "{}" } else { text };
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err("the arguments must be a JSON object".into()),
        Err(e) => Err(format!("the arguments are not valid JSON: {e}")),
    }
}

fn scalar_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.trim().to_string()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Reads the arguments of a `handoff` call (`destination_agent` and
/// `reason`; `agent`, `to` and `destination` are taken for the first).
///
/// # Errors
///
/// A message for the agent when the JSON is bad or names no destination.
pub(crate) fn parse_handoff_args(arguments: &str) -> Result<HandoffDirective, String> {
    let m = parse_object(arguments).map_err(|e| format!("handoff: {e}"))?;
    let to = ["destination_agent", "destination", "agent", "to"]
        .iter()
        .find_map(|k| m.get(*k).and_then(scalar_text))
        .filter(|s| !s.is_empty())
        .ok_or("handoff: 'destination_agent' is missing: name the agent that should act next")?;
    let reason = m.get("reason").and_then(scalar_text).unwrap_or_default();
    Ok(HandoffDirective { to, reason })
}

/// Reads the arguments of a `set_variable` call: `(name, value)`, the value
/// as text (a number or boolean is written out).
///
/// # Errors
///
/// A message for the agent when the JSON is bad or a field is missing.
pub(crate) fn parse_set_variable_args(arguments: &str) -> Result<(String, String), String> {
    let m = parse_object(arguments).map_err(|e| format!("set_variable: {e}"))?;
    let name = m
        .get("name")
        .and_then(scalar_text)
        .filter(|s| !s.is_empty())
        .ok_or("set_variable: 'name' is missing")?;
    let value = m
        .get("value")
        .and_then(scalar_text)
        .ok_or("set_variable: 'value' is missing (text, a number or a boolean)")?;
    Ok((name, value))
}

/// What the active agent sees in its turn.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TurnInput<'a> {
    /// The active agent.
    pub agent: &'a str,
    /// Its soul, already rendered with the variables.
    pub soul: &'a str,
    /// The task, already rendered.
    pub task: &'a str,
    /// The context variables as they are now.
    pub variables: &'a Variables,
    /// Every agent of the team: (name, description).
    pub roster: &'a [(&'a str, &'a str)],
    /// The rules from this agent, in the order they are tried:
    /// (destination, rendered condition).
    pub rules: &'a [(&'a str, Option<&'a str>)],
    /// Every earlier step, oldest first.
    pub history: &'a [HistoryStep],
    /// Whether the `handoff` tool is offered (else the HANDOFF line).
    pub tools: bool,
}

/// Renders `<history>`: every step with its agent, text (without HANDOFF
/// lines), artifacts and handoff.
pub(crate) fn render_history(history: &[HistoryStep]) -> String {
    let mut out = String::from("<history>\n");
    for (i, s) in history.iter().enumerate() {
        let _ = write!(
            out,
            "<step n=\"{}\" agent=\"{}\"",
            i + 1,
            escape_xml(&s.agent)
        );
        if let Some(to) = &s.handoff_to {
            let _ = write!(out, " handoff_to=\"{}\"", escape_xml(to));
        }
        out.push_str(">\n");
        // The handoff is in the attributes; a HANDOFF line left in the text
        // would be copied by the next agent and read as its own.
        let _ = writeln!(out, "{}", escape_xml(&strip_handoff_lines(&s.text)));
        if !s.artifacts.is_empty() {
            let files: Vec<String> = s.artifacts.iter().map(|a| escape_xml(a)).collect();
            let _ = writeln!(out, "<artifacts>{}</artifacts>", files.join(", "));
        }
        if let Some(reason) = s.reason.as_deref().filter(|r| !r.trim().is_empty()) {
            let _ = writeln!(out, "<reason>{}</reason>", escape_xml(reason.trim()));
        }
        out.push_str("</step>\n");
    }
    out.push_str("</history>");
    out
}

fn render_variables(vars: &Variables) -> String {
    let mut out = String::from("<context_variables>\n");
    for (name, _) in vars.iter() {
        let value = vars.get_text(name).unwrap_or_default();
        let _ = writeln!(out, "- {}: {}", escape_xml(name), escape_xml(&value));
    }
    out.push_str("</context_variables>");
    out
}

fn render_roster(roster: &[(&str, &str)]) -> String {
    let mut out = String::from("<roster>\n");
    for (name, description) in roster {
        let _ = writeln!(out, "- {}: {}", escape_xml(name), escape_xml(description));
    }
    out.push_str("</roster>");
    out
}

/// The active agent's turn: a system message (its soul and how handoffs
/// work) and a user message (task, variables, roster, the rules from it,
/// the history, and whose turn it is).
pub(crate) fn turn_prompt(t: &TurnInput<'_>) -> Vec<Message> {
    let how = if t.tools {
        "call the `handoff` tool with `destination_agent` (a name from the roster) and \
         `reason` (why, and what they should do)"
    } else {
        "end your reply with one line `HANDOFF:<agent>:<reason>`, the agent being a name \
         from the roster"
    };
    let mut system = t.soul.trim().to_string();
    let _ = write!(
        system,
        "\n\n## How this team works\n\n\
         You are {agent}, one agent of a team that passes the work from agent to agent. \
         One agent acts at a time; everyone sees the task and the whole history of earlier \
         steps. Do your own part of the work fully in your reply. When another agent should \
         act next, {how}. Hand off to nobody when the work is finished: your reply is then \
         the answer the user receives, so make it complete.",
        agent = t.agent
    );
    if !t.variables.is_empty() {
        system.push_str(
            "\n\nThe team's context variables are listed with the task; where you may, \
             change one with the `set_variable` tool.",
        );
    }
    let mut user = format!("<task>\n{}\n</task>\n", escape_xml(t.task.trim()));
    if !t.variables.is_empty() {
        let _ = writeln!(user, "{}", render_variables(t.variables));
    }
    let _ = writeln!(user, "{}", render_roster(t.roster));
    if !t.rules.is_empty() {
        user.push_str("<handoff_rules>\n");
        for (to, condition) in t.rules {
            let _ = writeln!(
                user,
                "- to {}: {}",
                escape_xml(to),
                escape_xml(condition.unwrap_or("always"))
            );
        }
        user.push_str("</handoff_rules>\n");
    }
    let _ = writeln!(user, "{}", render_history(t.history));
    let _ = write!(
        user,
        "It is your turn, {agent}.{first} Do your part, then hand off or finish.",
        agent = t.agent,
        first = if t.history.is_empty() {
            " You act first."
        } else {
            " Build on the history above."
        }
    );
    if !t.rules.is_empty() {
        user.push_str(
            " The handoff rules say who usually acts after you and when; follow them unless \
             the work needs otherwise.",
        );
    }
    vec![Message::system(system), Message::user(user)]
}

mod routing;
#[cfg(test)]
mod tests;
