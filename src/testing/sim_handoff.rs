//! How `sim` plays the handoff process, deterministically, from what the
//! prompts of [`crate::protocol::handoff`] carry.
//!
//! - **A turn** (`<history>` + "It is your turn"): the agent writes its part
//!   in the manner of its name and description (research notes, a draft
//!   built on them, a review or the reviewer's corrections, the published
//!   text), then hands off along the first of its `<handoff_rules>`
//!   whose condition holds, else to the first agent in roster order that has
//!   not acted yet, else to nobody. It hands off with the `handoff` tool
//!   when the request offers it, else with a `HANDOFF:` line.
//! - **A reviewer** (name or description speaks of review, critique,
//!   checking) whose rules can send work back for revision writes
//!   `VERDICT: REVISE` on its first review and `VERDICT: APPROVED` after
//!   (at once when a context variable `max_revisions` is 0).
//! - **Conditions** are judged from the latest reply: one that says
//!   revisions or changes are needed holds after `VERDICT: REVISE`, one about approval after
//!   `VERDICT: APPROVED`, one about errors or failures never, any other
//!   always.
//! - **Rule routing** answers the first rule that holds (`RULE: n` or
//!   `NONE`, JSON where a schema is asked); **roster routing** answers the
//!   first candidate that has not acted yet, or `NONE`.
//!
//! - **The last step** (it hands off to nobody) is the answer: it carries
//!   the simulated line.
//!
//! So every chain is bounded: each agent is reached by the roster at most
//! once, and a reviewer asks for one revision; only rules whose conditions
//! always hold can ping-pong, which `max_handoffs` ends.

use std::fmt::Write as _;

use serde_json::json;

use super::SimOptions;
use super::sim::{text, unescape};
use crate::model::{ChatRequest, ChatResponse, FinishReason, Role, ToolCall, estimate_usage};
use crate::protocol::handoff::{HANDOFF_TOOL, RULE_CHOICE_SCHEMA};

/// The sim's reply to a handoff prompt, or `None` for any other request.
pub(super) fn reply(
    options: &SimOptions,
    req: &ChatRequest,
    on_delta: &mut dyn FnMut(&str),
) -> Option<ChatResponse> {
    // Most calls are not a handoff team's: their user messages are looked
    // at in place before they are joined (a 2048-member round makes 2048
    // such calls, and the sim's CPU is the round's).
    let users = || req.messages.iter().filter(|m| m.role == Role::User);
    let mentions = |needle: &str| users().any(|m| m.content.contains(needle));
    let handoff = mentions("<routing_rules")
        || mentions("<candidates>")
        || (mentions("<history>") && mentions("It is your turn"));
    if !handoff {
        return None;
    }
    let user = users()
        .map(|m| m.content.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    if user.contains("<routing_rules") {
        let text = route_rules(&user, req);
        return Some(stream(req, text, on_delta));
    }
    if user.contains("<candidates>") {
        let text = route_roster(&user, req);
        return Some(stream(req, text, on_delta));
    }
    if !(user.contains("<history>") && user.contains("It is your turn")) {
        return None;
    }
    if let Some(calls) = own_tool_calls(options, req) {
        return Some(ChatResponse {
            tool_calls: calls,
            finish: FinishReason::ToolCalls,
            usage: estimate_usage(req, "tool call"),
            ..ChatResponse::default()
        });
    }
    let (mut text, next) = turn(&req.agent, &user);
    let results: Vec<&str> = req
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.content.trim())
        .collect();
    if !results.is_empty() {
        text.push_str("\n\nTool results:");
        for r in results {
            let _ = write!(text, "\n- {r}");
        }
    }
    if next.is_none() {
        // Nobody acts after this step: its text is the answer.
        text = text::marked(&text);
    }
    let offered = req.tools.iter().any(|t| t.name == HANDOFF_TOOL);
    match next {
        Some((to, reason)) if offered => {
            let mut resp = stream(req, text, on_delta);
            resp.tool_calls = vec![ToolCall {
                id: format!("sim-handoff-{}-{}", req.agent, req.round),
                name: HANDOFF_TOOL.into(),
                arguments: json!({"destination_agent": to, "reason": reason}).to_string(),
            }];
            resp.finish = FinishReason::ToolCalls;
            Some(resp)
        }
        Some((to, reason)) => {
            let _ = write!(text, "\n\nHANDOFF:{to}:{reason}");
            Some(stream(req, text, on_delta))
        }
        None => Some(stream(req, text, on_delta)),
    }
}

/// The tool calls the options list for this agent, in a turn that offers
/// them and has no results yet.
fn own_tool_calls(options: &SimOptions, req: &ChatRequest) -> Option<Vec<ToolCall>> {
    if req.messages.iter().any(|m| m.role == Role::Tool) {
        return None;
    }
    let calls: Vec<ToolCall> = options
        .tool_calls
        .iter()
        .filter(|c| c.agent == req.agent)
        .filter(|c| {
            let wire = c.tool.replace('.', "__");
            req.tools.iter().any(|t| t.name == c.tool || t.name == wire)
        })
        .enumerate()
        .map(|(i, c)| ToolCall {
            id: format!("sim-{}-{}-{i}", req.agent, req.round),
            name: c.tool.replace('.', "__"),
            arguments: c.arguments.clone(),
        })
        .collect();
    (!calls.is_empty()).then_some(calls)
}

/// Streams the text in line pieces, as a server would, and returns it.
fn stream(req: &ChatRequest, text: String, on_delta: &mut dyn FnMut(&str)) -> ChatResponse {
    let mut start = 0;
    for (i, _) in text.match_indices('\n') {
        on_delta(&text[start..=i]);
        start = i + 1;
    }
    if start < text.len() {
        on_delta(&text[start..]);
    }
    let usage = estimate_usage(req, &text);
    ChatResponse::text(text, usage)
}

/// A step of `<history>`.
struct Step {
    agent: String,
    text: String,
}

/// The text between the first `<name ...>` (or `<name>`) and its close.
fn block<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    let open = text
        .find(&format!("<{name}>"))
        .or_else(|| text.find(&format!("<{name} ")))?;
    let start = open + text[open..].find('>')? + 1;
    let end = start + text[start..].find(&format!("</{name}>"))?;
    Some(&text[start..end])
}

fn history(user: &str) -> Vec<Step> {
    let Some(h) = block(user, "history") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut rest = h;
    while let Some(pos) = rest.find("<step ") {
        rest = &rest[pos..];
        let Some(head_end) = rest.find('>') else {
            break;
        };
        let head = &rest[..head_end];
        let Some(close) = rest.find("</step>") else {
            break;
        };
        let body = &rest[head_end + 1..close];
        let body = body.split("\n<artifacts>").next().unwrap_or(body);
        let body = body.split("\n<reason>").next().unwrap_or(body);
        let agent = head
            .split_once("agent=\"")
            .and_then(|(_, v)| v.split_once('"'))
            .map(|(v, _)| unescape(v))
            .unwrap_or_default();
        out.push(Step {
            agent,
            text: unescape(body.trim()),
        });
        rest = &rest[close + "</step>".len()..];
    }
    out
}

/// `- name: description` lines of a block, as (name, description).
fn listed(user: &str, name: &str) -> Vec<(String, String)> {
    block(user, name)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- "))
        .filter_map(|l| l.split_once(':'))
        .map(|(n, d)| (unescape(n.trim()), unescape(d.trim())))
        .filter(|(n, _)| !n.is_empty())
        .collect()
}

#[derive(Clone, Copy, PartialEq)]
enum Condition {
    Revise,
    Approved,
    Failure,
    Other,
}

fn classify(condition: &str) -> Condition {
    let c = condition.to_lowercase();
    let any = |words: &[&str]| words.iter().any(|w| c.contains(w));
    if any(&["revis", "change", "feedback", "rework", "fix"])
        && any(&["need", "request", "require", "must", "should", "asked"])
    {
        Condition::Revise
    } else if any(&["approv", "accept", "publication", "sign-off", "signed off"]) {
        Condition::Approved
    } else if any(&["error", "fail", "broken"]) {
        Condition::Failure
    } else {
        Condition::Other
    }
}

/// Whether a condition holds after a reply (see the module docs).
fn holds(condition: &str, reply: &str) -> bool {
    match classify(condition) {
        Condition::Revise => reply.contains("VERDICT: REVISE"),
        Condition::Approved => reply.contains("VERDICT: APPROVED"),
        Condition::Failure => false,
        Condition::Other => true,
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Manner {
    Facts,
    Review,
    Publish,
    Write,
}

impl Manner {
    /// From the agent's name, else its description.
    fn of(agent: &str, description: &str) -> Manner {
        Manner::from_words(agent)
            .or_else(|| Manner::from_words(description))
            .unwrap_or(Manner::Write)
    }

    fn from_words(text: &str) -> Option<Manner> {
        let t = text.to_lowercase();
        let any = |words: &[&str]| words.iter().any(|w| t.contains(w));
        if any(&["review", "critic", "check", "editor", "judge"]) {
            Some(Manner::Review)
        } else if any(&["publish", "format", "release"]) {
            Some(Manner::Publish)
        } else if any(&["research", "fact", "source", "expert"]) {
            Some(Manner::Facts)
        } else if any(&["writ", "draft", "author"]) {
            Some(Manner::Write)
        } else {
            None
        }
    }
}

/// An agent's turn: its text and whom it hands off to, with the reason.
fn turn(agent: &str, user: &str) -> (String, Option<(String, String)>) {
    let steps = history(user);
    let roster = listed(user, "roster");
    let rules = listed(user, "handoff_rules");
    let description = roster
        .iter()
        .find(|(n, _)| n == agent)
        .map(|(_, d)| d.as_str())
        .unwrap_or("");
    let task = block(user, "task").map(unescape).unwrap_or_default();
    let task = task.trim();
    let mut notes = text::Notes::of_task(task);
    for s in steps.iter().filter(|s| s.agent == "user") {
        notes.follow_up(&s.text);
    }
    let mine = steps.iter().filter(|s| s.agent == agent).count();
    let manner = Manner::of(agent, description);
    let mut text = String::new();
    if let (Some(u), false) = (
        steps.iter().rev().find(|s| s.agent == "user"),
        manner == Manner::Publish,
    ) {
        let _ = writeln!(
            text,
            "Taking your reply into account: \"{}\".\n",
            u.text.trim()
        );
    }
    // The latest step of a manner, by someone else.
    let latest = |m: Manner| {
        steps
            .iter()
            .rev()
            .find(|s| s.agent != "user" && s.agent != agent && Manner::of(&s.agent, "") == m)
            .map(|s| s.text.as_str())
    };
    // The latest draft: a text in sections, corrected or not.
    let draft = steps
        .iter()
        .rev()
        .filter(|s| s.agent != "user")
        .map(|s| s.text.as_str())
        .find(|t| t.lines().any(|l| l.starts_with("## ")));
    match manner {
        Manner::Facts => text.push_str(&text::steps::research_notes(agent, task, &notes)),
        Manner::Write => {
            let facts = latest(Manner::Facts);
            text.push_str(&text::steps::handoff_draft(
                agent,
                task,
                facts,
                &notes,
                mine > 0,
            ));
        }
        Manner::Review => {
            let can_send_back = rules.iter().any(|(_, c)| classify(c) == Condition::Revise);
            let no_revisions = listed(user, "context_variables")
                .iter()
                .any(|(n, v)| n == "max_revisions" && v.trim() == "0");
            let approve = mine > 0 || !can_send_back || no_revisions;
            if !can_send_back {
                // Nobody to send it back to: the reviewer fixes it itself.
                let _ = write!(
                    text,
                    "{}\nVERDICT: APPROVED",
                    text::steps::corrected(draft.unwrap_or(""))
                );
            } else if approve {
                let _ = write!(
                    text,
                    "The draft is clear, correct and complete: every point says what to do and \
                     why.\nVERDICT: APPROVED"
                );
            } else {
                let _ = write!(
                    text,
                    "Changes needed:\n1. Each point says what to do but not why: give one reason \
                     for each.\n2. Keep the order: the point that matters most comes first.\n\
                     VERDICT: REVISE"
                );
            }
        }
        Manner::Publish => {
            let doc = draft.map_or_else(
                || text::steps::handoff_draft(agent, task, latest(Manner::Facts), &notes, false),
                str::to_string,
            );
            text.push_str(&text::steps::publish(task, &doc, &notes));
        }
    }
    // Along the first rule that holds, else the roster order.
    let next = rules
        .iter()
        .find(|(_, c)| holds(c, &text))
        .map(|(to, c)| {
            let to = to.strip_prefix("to ").unwrap_or(to).trim().to_string();
            (to, c.clone())
        })
        .or_else(|| {
            roster
                .iter()
                .map(|(n, _)| n)
                .find(|n| *n != agent && !steps.iter().any(|s| &s.agent == *n))
                .map(|n| (n.clone(), format!("{n} has not worked on this yet")))
        });
    (text, next)
}

/// The answer to a rule-routing prompt.
fn route_rules(user: &str, req: &ChatRequest) -> String {
    let last = history(user).pop().map(|s| s.text).unwrap_or_default();
    let rules: Vec<(usize, String)> = block(user, "routing_rules")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let (n, rest) = l.trim().split_once(". ")?;
            let n: usize = n.parse().ok()?;
            let (_, cond) = rest.split_once(" when: ")?;
            Some((n, unescape(cond)))
        })
        .collect();
    let chosen = rules.iter().find(|(_, c)| holds(c, &last)).map(|(n, _)| *n);
    let json = req
        .schema
        .as_ref()
        .is_some_and(|s| s.name == RULE_CHOICE_SCHEMA);
    match (chosen, json) {
        (Some(n), true) => json!({"rule": n, "reason": "its condition holds"}).to_string(),
        (None, true) => json!({"rule": 0, "reason": "no condition holds"}).to_string(),
        (Some(n), false) => format!("RULE: {n}"),
        (None, false) => "NONE".into(),
    }
}

/// The answer to a roster-routing prompt.
fn route_roster(user: &str, req: &ChatRequest) -> String {
    let steps = history(user);
    let chosen = listed(user, "candidates")
        .into_iter()
        .map(|(n, _)| n)
        .find(|n| !steps.iter().any(|s| &s.agent == n));
    match (chosen, req.schema.is_some()) {
        (Some(n), true) => json!({"agent": n, "reason": "has not acted yet"}).to_string(),
        (None, true) => json!({"agent": "none", "reason": "everyone has acted"}).to_string(),
        (Some(n), false) => format!("NEXT: {n}"),
        (None, false) => "NONE".into(),
    }
}

#[cfg(test)]
#[path = "sim_handoff_tests.rs"]
mod tests;
