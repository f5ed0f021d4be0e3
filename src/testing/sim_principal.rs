//! How `sim` plays the principal process, deterministically, from what
//! the principal's and the associates' requests carry (their tools, the
//! `<work_modules>` and `<associates>` of the principal's prompt, the
//! schema `generate_message_summary` answers with). Every text it writes
//! says it is simulated.
//!
//! - **The principal**, at the start of a turn: no modules → creates one
//!   per associate (`manage_work_modules`); modules pending review →
//!   accepts each, but sends the second module back once with a note;
//!   pending modules → `dispatch_submodules`; every module completed →
//!   `generate_markdown_report`; the report written → `finish_flow`.
//!   After a tool's result in the same turn: created or sent back →
//!   dispatch the pending modules; all completed → the report's
//!   instructions; the instructions → the report, one section a module.
//! - **An associate**: first `generate_message_summary`, then a JSON
//!   object built from the schema it was given (every property filled by
//!   its type), marked revised when the briefing carries a review note.

use serde_json::{Map, Value, json};

use super::sim::unescape;
use crate::model::{ChatRequest, ChatResponse, FinishReason, Role, ToolCall, estimate_usage};

const MANAGE: &str = "manage_work_modules";
const DISPATCH: &str = "dispatch_submodules";
const REPORT: &str = "generate_markdown_report";
const FINISH: &str = "finish_flow";
const SUMMARY: &str = "generate_message_summary";

/// The sim's reply to a principal or associate request, `None` for any
/// other.
pub(super) fn reply(req: &ChatRequest, on_delta: &mut dyn FnMut(&str)) -> Option<ChatResponse> {
    let offers = |name: &str| req.tools.iter().any(|t| t.name == name);
    if offers(MANAGE) {
        return Some(principal(req, on_delta));
    }
    if offers(SUMMARY) || (req.tools.is_empty() && briefed(req) && answered(req, SUMMARY)) {
        return Some(associate(req, on_delta));
    }
    None
}

/// An associate's request: it carries a module briefing.
fn briefed(req: &ChatRequest) -> bool {
    req.messages
        .iter()
        .any(|m| m.role == Role::User && m.content.contains("<module id="))
}

/// Whether the request holds the result of a call to `tool`.
fn answered(req: &ChatRequest, tool: &str) -> bool {
    last_tool(req).is_some_and(|(name, _)| name == tool)
}

/// The last message if it is a tool result: the tool's name and the result.
fn last_tool(req: &ChatRequest) -> Option<(String, String)> {
    let last = req.messages.last()?;
    if last.role != Role::Tool {
        return None;
    }
    let id = last.tool_call_id.as_deref()?;
    let name = req
        .messages
        .iter()
        .flat_map(|m| m.tool_calls.iter())
        .find(|c| c.id == id)
        .map(|c| c.name.clone())?;
    Some((name, last.content.clone()))
}

fn call(req: &ChatRequest, name: &str, args: Value) -> ChatResponse {
    let n = req.messages.len();
    ChatResponse {
        tool_calls: vec![ToolCall {
            id: format!("sim-{}-{name}-{n}", req.agent),
            name: name.to_string(),
            arguments: args.to_string(),
        }],
        finish: FinishReason::ToolCalls,
        usage: estimate_usage(req, name),
        ..ChatResponse::default()
    }
}

fn text(req: &ChatRequest, text: String, on_delta: &mut dyn FnMut(&str)) -> ChatResponse {
    on_delta(&text);
    let usage = estimate_usage(req, &text);
    ChatResponse::text(text, usage)
}

/// A module as the principal's prompt lists it.
struct Module {
    id: String,
    status: String,
    reworks: u64,
}

fn attr(tag: &str, name: &str) -> Option<String> {
    let key = format!("{name}=\"");
    let start = tag.find(&key)? + key.len();
    let end = start + tag[start..].find('"')?;
    Some(unescape(&tag[start..end]))
}

fn modules(user: &str) -> Vec<Module> {
    let Some(block) = user
        .split("<work_modules>")
        .nth(1)
        .and_then(|b| b.split("</work_modules>").next())
    else {
        return Vec::new();
    };
    block
        .lines()
        .filter(|l| l.starts_with("<module "))
        .filter_map(|l| {
            let head = &l[..l.find('>')?];
            Some(Module {
                id: attr(head, "id")?,
                status: attr(head, "status")?,
                reworks: attr(head, "reworks")
                    .and_then(|r| r.parse().ok())
                    .unwrap_or(0),
            })
        })
        .collect()
}

/// The ids and statuses in a `manage_work_modules` result
/// (`task_001 [pending] (agent) ...`).
fn statuses(result: &str) -> Vec<(String, String)> {
    result
        .lines()
        .filter_map(|l| {
            let (id, rest) = l.split_once(" [")?;
            let (status, _) = rest.split_once(']')?;
            id.starts_with("task_")
                .then(|| (id.to_string(), status.to_string()))
        })
        .collect()
}

fn principal(req: &ChatRequest, on_delta: &mut dyn FnMut(&str)) -> ChatResponse {
    if let Some((tool, result)) = last_tool(req) {
        return match tool.as_str() {
            REPORT => text(req, report(req, &result), on_delta),
            MANAGE => {
                let all = statuses(&result);
                let pending: Vec<&str> = all
                    .iter()
                    .filter(|(_, s)| s == "pending")
                    .map(|(id, _)| id.as_str())
                    .collect();
                if !pending.is_empty() {
                    call(req, DISPATCH, json!({ "module_ids": pending }))
                } else if !all.is_empty() && all.iter().all(|(_, s)| s == "completed") {
                    call(req, REPORT, json!({}))
                } else {
                    text(
                        req,
                        "(simulated) Waiting for the associates.".into(),
                        on_delta,
                    )
                }
            }
            _ => text(
                req,
                format!("(simulated) Noted: {}", first_line(&result)),
                on_delta,
            ),
        };
    }
    let user = req
        .messages
        .iter()
        .filter(|m| m.role == Role::User)
        .map(|m| m.content.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    let all = modules(&user);
    if user.contains("<report_status>written</report_status>") {
        return call(
            req,
            FINISH,
            json!({"summary": "(simulated) the report is written"}),
        );
    }
    if all.is_empty() {
        let system = req
            .messages
            .iter()
            .find(|m| m.role == Role::System)
            .map_or("", |m| m.content.as_str());
        let task = request_line(&user);
        let created: Vec<Value> = system
            .lines()
            .filter(|l| l.starts_with("<associate "))
            .filter_map(|l| attr(l, "name"))
            .map(|name| {
                json!({
                    "description": format!("(simulated) {name}'s part of: {}", words(&task, 12)),
                    "agent": name,
                })
            })
            .collect();
        return call(req, MANAGE, json!({ "modules": created }));
    }
    let review: Vec<&Module> = all
        .iter()
        .filter(|m| m.status == "pending_review")
        .collect();
    if !review.is_empty() {
        let updates: Vec<Value> = review
            .iter()
            .map(|m| {
                let second = all.get(1).is_some_and(|s| s.id == m.id);
                if second && m.reworks == 0 {
                    json!({"id": m.id, "status": "pending",
                           "note": "(simulated) add one concrete example and say where each point comes from"})
                } else {
                    json!({"id": m.id, "status": "completed"})
                }
            })
            .collect();
        return call(req, MANAGE, json!({ "modules": updates }));
    }
    let pending: Vec<&str> = all
        .iter()
        .filter(|m| m.status == "pending")
        .map(|m| m.id.as_str())
        .collect();
    if !pending.is_empty() {
        return call(req, DISPATCH, json!({ "module_ids": pending }));
    }
    if all.iter().all(|m| m.status == "completed") {
        return call(req, REPORT, json!({}));
    }
    text(
        req,
        "(simulated) Waiting for the associates.".into(),
        on_delta,
    )
}

/// The first line of the request in the briefing.
fn request_line(user: &str) -> String {
    user.split("<request>")
        .nth(1)
        .and_then(|b| b.split("</request>").next())
        .map_or_else(|| "the task".into(), |r| unescape(first_line(r)))
}

/// The first few words of a text.
fn words(s: &str, n: usize) -> String {
    let all: Vec<&str> = s.split_whitespace().collect();
    let mut out = all.iter().take(n).copied().collect::<Vec<_>>().join(" ");
    if all.len() > n {
        out.push('…');
    }
    out
}

fn first_line(s: &str) -> &str {
    s.trim().lines().next().unwrap_or("").trim()
}

/// The report: one section per deliverable in the instructions.
fn report(req: &ChatRequest, instructions: &str) -> String {
    let user = req
        .messages
        .iter()
        .find(|m| m.role == Role::User)
        .map_or("", |m| m.content.as_str());
    let mut s = format!(
        "# Report: {}\n\n*(simulated: written by the offline sim model, not a real one)*\n\n",
        request_line(user)
    );
    for part in instructions.split("<deliverable module=\"").skip(1) {
        let id = part.split('"').next().unwrap_or("");
        let body = part
            .split_once('>')
            .map(|(_, b)| b.split("</deliverable>").next().unwrap_or(""))
            .unwrap_or("");
        let value: Value = serde_json::from_str(&unescape(body)).unwrap_or(Value::Null);
        s.push_str(&format!("## {id}\n\n"));
        if let Value::Object(map) = &value {
            for (k, v) in map {
                let v = match v {
                    Value::String(t) => t.clone(),
                    other => other.to_string(),
                };
                s.push_str(&format!("- **{k}**: {v}\n"));
            }
        }
        s.push('\n');
    }
    s
}

fn associate(req: &ChatRequest, on_delta: &mut dyn FnMut(&str)) -> ChatResponse {
    let Some((_, instructions)) = last_tool(req).filter(|(n, _)| n == SUMMARY) else {
        return call(req, SUMMARY, json!({}));
    };
    let schema: Value = instructions
        .split("<schema>")
        .nth(1)
        .and_then(|s| s.split("</schema>").next())
        .and_then(|s| serde_json::from_str(s).ok())
        .unwrap_or_else(
            || json!({"type": "object", "properties": {"summary": {"type": "string"}}}),
        );
    let briefing = req
        .messages
        .iter()
        .find(|m| m.role == Role::User)
        .map_or("", |m| m.content.as_str());
    let module = briefing
        .split("<module ")
        .nth(1)
        .and_then(|b| b.split_once('>'))
        .map(|(_, rest)| unescape(rest.split("</module>").next().unwrap_or("")))
        .unwrap_or_default();
    let revised = briefing.contains("<review_note>");
    let seed = format!(
        "(simulated) {}{}",
        req.agent,
        if revised {
            ", revised per the review note"
        } else {
            ""
        },
    );
    let _ = module;
    let value = sample(&schema, &seed, "value");
    text(req, value.to_string(), on_delta)
}

/// A value that fits `schema`, its texts built from `seed`.
fn sample(schema: &Value, seed: &str, name: &str) -> Value {
    if let Some(Value::Array(options)) = schema.get("enum")
        && let Some(first) = options.first()
    {
        return first.clone();
    }
    let ty = match schema.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(ts)) => ts.first().and_then(Value::as_str).unwrap_or("string"),
        _ if schema.get("properties").is_some() => "object",
        _ => "string",
    };
    match ty {
        "object" => {
            let mut map = Map::new();
            if let Some(Value::Object(props)) = schema.get("properties") {
                for (k, sub) in props {
                    map.insert(k.clone(), sample(sub, seed, k));
                }
            }
            Value::Object(map)
        }
        "array" => {
            let item = schema
                .get("items")
                .cloned()
                .unwrap_or(json!({"type": "string"}));
            let n = schema
                .get("minItems")
                .and_then(Value::as_u64)
                .unwrap_or(2)
                .max(1);
            (1..=n)
                .map(|i| sample(&item, &format!("{seed}, {name} {i}"), name))
                .collect()
        }
        "integer" => json!(3),
        "number" => json!(0.8),
        "boolean" => json!(true),
        "null" => Value::Null,
        _ => Value::from(format!("{seed}: {name}")),
    }
}
