//! The sim playing the partner of `boardroom chat`, deterministically:
//! one clarifying question for a short request, then four work modules
//! drafted with `plan_add_task`, shown as a numbered list with a
//! `launch_team` proposal; `team_status` for a status question; a short
//! relay of every `<team_event>`. Also the master's plan when a run is
//! seeded with work modules: each pending module goes to a member, in
//! roster order.

use std::fmt::Write as _;

use serde_json::{Value, json};

use crate::model::{
    ChatRequest, ChatResponse, FinishReason, Message, Role, ToolCall, estimate_usage,
};

/// Requests shorter than this (in words) get a clarifying question first.
const SHORT_REQUEST_WORDS: usize = 8;
/// The marker of the clarifying question (the sim asks it once).
const CLARIFY: &str = "Before I draft the work, two questions:";

/// The partner's answer, when `req` is a partner turn (it offers
/// `launch_team`).
pub(crate) fn respond(req: &ChatRequest) -> Option<ChatResponse> {
    if !req.tools.iter().any(|t| t.name == "launch_team") {
        return None;
    }
    let (text, calls) = partner(req);
    let mut resp = ChatResponse::text(text.clone(), estimate_usage(req, &text));
    if !calls.is_empty() {
        resp.finish = FinishReason::ToolCalls;
        resp.tool_calls = calls
            .into_iter()
            .enumerate()
            .map(|(i, (name, args))| ToolCall {
                id: format!("sim-partner-{}-{i}", req.messages.len()),
                name: name.to_string(),
                arguments: args.to_string(),
            })
            .collect();
    }
    Some(resp)
}

type Calls = Vec<(&'static str, Value)>;

fn partner(req: &ChatRequest) -> (String, Calls) {
    let msgs = &req.messages;
    let Some(last) = msgs.last() else {
        return ("Hello. What can the team do for you?".into(), Vec::new());
    };
    if last.role == Role::Tool {
        return after_tools(msgs);
    }
    let text = last.content.trim();
    if text.starts_with("<team_event") {
        // Every event since the partner last spoke, in order.
        let since = msgs
            .iter()
            .rposition(|m| m.role != Role::User)
            .map_or(0, |i| i + 1);
        let said: Vec<String> = msgs[since..]
            .iter()
            .filter(|m| m.content.trim_start().starts_with("<team_event"))
            .map(|m| relay(m.content.trim()))
            .collect();
        return (said.join("\n"), Vec::new());
    }
    if text.starts_with("<briefing>") {
        return ("Welcome back. Where were we?".into(), Vec::new());
    }
    let since = msgs
        .iter()
        .rposition(|m| m.role == Role::Assistant)
        .map_or(0, |i| i + 1);
    if msgs[since..].iter().any(|m| {
        m.content.starts_with("<briefing>") && m.content.contains("as the answer to its question")
    }) {
        return (
            "Thank you: I passed your answer to the team, and it goes on.".into(),
            Vec::new(),
        );
    }
    let lower = text.to_lowercase();
    let launched = called(msgs, "launch_team")
        && msgs
            .iter()
            .any(|m| m.role == Role::Tool && m.content.starts_with("launched run"));
    if launched
        && [
            "how is it going",
            "how's it going",
            "status",
            "progress",
            "how far",
        ]
        .iter()
        .any(|k| lower.contains(k))
    {
        return (String::new(), vec![("team_status", json!({}))]);
    }
    let finished = msgs.iter().any(|m| {
        m.role == Role::User
            && m.content.contains("kind=\"run_finished\"")
            && m.content.contains("has been shown")
    });
    if finished
        && [
            "shorter", "longer", "more", "less", "change", "add", "follow",
        ]
        .iter()
        .any(|k| lower.contains(k))
    {
        return (
            String::new(),
            vec![("follow_up", json!({ "message": text }))],
        );
    }
    let drafted = called(msgs, "plan_add_task");
    if !drafted {
        let requests = user_texts(msgs);
        let first = requests.first().cloned().unwrap_or_default();
        let asked = msgs
            .iter()
            .any(|m| m.role == Role::Assistant && m.content.starts_with(CLARIFY));
        if requests.len() == 1 && first.split_whitespace().count() < SHORT_REQUEST_WORDS && !asked {
            return (
                format!(
                    "{CLARIFY} who is it for and how big is it (people, pages, budget)? \
                     And by when, or over how long?"
                ),
                Vec::new(),
            );
        }
        let details = if requests.len() > 1 {
            requests[1..].join("; ")
        } else {
            String::new()
        };
        let calls = drafts(msgs, modules(&first, &details));
        return (String::new(), calls);
    }
    if !launched
        && ["yes", "launch", "go ahead", "go"]
            .iter()
            .any(|k| lower == *k)
    {
        return (
            String::new(),
            vec![("launch_team", json!({ "brief": brief(msgs) }))],
        );
    }
    // While the team works, what the user asks for goes to it: a
    // follow-up, which the chat queues until the run finishes.
    if working(msgs) {
        return (
            String::new(),
            vec![("follow_up", json!({ "message": text }))],
        );
    }
    (
        format!(
            "Noted: \"{}\". I will keep it in mind; ask me how the team is doing at any time.",
            text.lines().next().unwrap_or("")
        ),
        Vec::new(),
    )
}

/// `plan_add_task` calls for the modules; for a team whose every module
/// goes to one associate (the partner's prompt says so), each names a
/// member of the team in turn (the team's make-up the user agrees to).
fn drafts(msgs: &[Message], modules: Vec<String>) -> Calls {
    let system = msgs
        .iter()
        .find(|m| m.role == Role::System)
        .map_or("", |m| m.content.as_str());
    let members: Vec<&str> = if system.contains("every module goes to one associate") {
        system
            .lines()
            .filter(|l| l.starts_with("- ") && !l.ends_with("(leads the team)"))
            .filter_map(|l| l[2..].split(':').next())
            .collect()
    } else {
        Vec::new()
    };
    modules
        .into_iter()
        .enumerate()
        .map(|(i, d)| match members.get(i % members.len().max(1)) {
            Some(agent) if !members.is_empty() => (
                "plan_add_task",
                json!({ "description": d, "assigned_agent": agent }),
            ),
            _ => ("plan_add_task", json!({ "description": d })),
        })
        .collect()
}

/// Whether a run the partner launched (or followed up) is under way: no
/// end of it has reached the partner since.
fn working(msgs: &[Message]) -> bool {
    let started = msgs.iter().rposition(|m| {
        m.role == Role::Tool
            && (m.content.starts_with("launched run") || m.content.starts_with("follow-up sent"))
    });
    let ended = msgs.iter().rposition(|m| {
        m.role == Role::User
            && ["run_finished", "run_failed", "awaiting_user"]
                .iter()
                .any(|k| m.content.contains(&format!("kind=\"{k}\"")))
    });
    started.is_some_and(|s| ended.is_none_or(|e| e < s))
}

/// The partner's answer once its tools have answered.
fn after_tools(msgs: &[Message]) -> (String, Calls) {
    let Some(asked) = msgs
        .iter()
        .rev()
        .find(|m| m.role == Role::Assistant && !m.tool_calls.is_empty())
    else {
        return ("Done.".into(), Vec::new());
    };
    let result = |name: &str| {
        let ids: Vec<&str> = asked
            .tool_calls
            .iter()
            .filter(|c| c.name == name)
            .map(|c| c.id.as_str())
            .collect();
        msgs.iter()
            .rev()
            .find(|m| {
                m.role == Role::Tool && m.tool_call_id.as_deref().is_some_and(|i| ids.contains(&i))
            })
            .map(|m| m.content.trim().to_string())
    };
    if let Some(r) = result("launch_team") {
        if r.starts_with("error: the plan has no open work modules") {
            let requests = user_texts(msgs);
            let first = requests.first().cloned().unwrap_or_default();
            let calls = drafts(msgs, modules(&first, ""));
            return (String::new(), calls);
        }
        if r.starts_with("launched run") {
            let id = r
                .strip_prefix("launched run ")
                .and_then(|s| s.split(':').next())
                .unwrap_or("");
            return (
                format!(
                    "The team is on it (run {id}). Ask me how it is going at any time; I will tell \
                     you when modules are done."
                ),
                Vec::new(),
            );
        }
        if r.starts_with("the user declined") {
            return (
                "All right, nothing was launched. Tell me what to change in the modules, or say \
                 \"launch\" when you are ready."
                    .into(),
                Vec::new(),
            );
        }
        return (format!("The launch did not work: {r}"), Vec::new());
    }
    if let Some(r) = result("follow_up") {
        let text = if r.starts_with("follow-up sent") {
            "The team is on your follow-up; I will tell you when it is done.".to_string()
        } else if r.starts_with("follow-up queued") {
            "The team gets your follow-up as soon as it has finished this round; I will tell \
             you when it is done."
                .to_string()
        } else if r.starts_with("the user declined") {
            "All right, no follow-up. Anything else?".to_string()
        } else {
            format!("The follow-up did not work: {r}")
        };
        return (text, Vec::new());
    }
    if let Some(r) = result("team_status") {
        // A launched run's status comes escaped in its element.
        let r = match r.strip_prefix("<team_status") {
            Some(rest) => {
                let body = rest.split_once('\n').map_or("", |(_, b)| b);
                super::sim::unescape(
                    body.trim_end()
                        .trim_end_matches("</team_status>")
                        .trim_end(),
                )
            }
            None => r,
        };
        return (format!("Here is where the team stands:\n{r}"), Vec::new());
    }
    if result("plan_add_task").is_some() {
        let mut list = String::from("Here is the work I would give the team:\n");
        let descriptions: Vec<String> = asked
            .tool_calls
            .iter()
            .filter(|c| c.name == "plan_add_task")
            .filter_map(|c| serde_json::from_str::<Value>(&c.arguments).ok())
            .filter_map(|v| v["description"].as_str().map(str::to_string))
            .collect();
        for (i, d) in descriptions.iter().enumerate() {
            let _ = writeln!(list, "{}. {d}", i + 1);
        }
        list.push_str("Shall I launch the team on it?");
        return (list, vec![("launch_team", json!({ "brief": brief(msgs) }))]);
    }
    ("Done.".into(), Vec::new())
}

/// What the user said, oldest first (team events and briefings aside).
fn user_texts(msgs: &[Message]) -> Vec<String> {
    msgs.iter()
        .filter(|m| m.role == Role::User)
        .map(|m| m.content.trim())
        .filter(|t| !t.starts_with("<team_event") && !t.starts_with("<briefing>"))
        .filter(|t| !["y", "n", "yes", "no", "launch", "go"].contains(&t.to_lowercase().as_str()))
        .map(str::to_string)
        .collect()
}

fn called(msgs: &[Message], tool: &str) -> bool {
    msgs.iter()
        .any(|m| m.tool_calls.iter().any(|c| c.name == tool))
}

fn brief(msgs: &[Message]) -> String {
    let requests = user_texts(msgs);
    let first = requests.first().cloned().unwrap_or_default();
    let mut b = first.trim_end_matches(['.', '!', '?']).to_string();
    if requests.len() > 1 {
        let _ = write!(b, " ({})", requests[1..].join("; "));
    }
    b.push('.');
    b
}

/// Four modules for a request: options, a recommendation, a schedule, a
/// budget.
fn modules(request: &str, details: &str) -> Vec<String> {
    let subject = request.trim().trim_end_matches(['.', '!', '?']);
    let mut c = subject.chars();
    let subject: String = c
        .next()
        .map(|f| f.to_lowercase().chain(c).collect())
        .unwrap_or_default();
    let with = if details.trim().is_empty() {
        String::new()
    } else {
        format!(" ({})", details.trim())
    };
    vec![
        format!("Research the options to {subject}{with}"),
        format!("Compare the options to {subject} and recommend one"),
        format!("Draft the schedule to {subject}{with}"),
        format!("Estimate the budget to {subject}{with}"),
    ]
}

/// One or two sentences about a team event.
fn relay(text: &str) -> String {
    let kind = text
        .split("kind=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .unwrap_or("");
    let body = text
        .split_once('>')
        .map(|(_, b)| b.trim_end_matches("</team_event>").trim())
        .unwrap_or("");
    let body = super::sim::unescape(body);
    match kind {
        "module_completed" => format!("Progress: {body}."),
        "run_finished" if body.contains("has been shown") => {
            let status = body
                .split("with status ")
                .nth(1)
                .and_then(|s| s.split('.').next())
                .unwrap_or("done");
            format!(
                "The team has finished (status {status}); the report is above. I can make it \
                 shorter, go deeper on one module, or start a new run."
            )
        }
        "run_finished" => {
            format!("{body} It is saved: boardroom chat --resume offers to go on with it.")
        }
        "run_failed" => format!("Bad news: {body}. Shall I try again?"),
        "awaiting_user" => {
            let q = body
                .strip_prefix("The team asks the user: ")
                .and_then(|s| s.lines().next())
                .unwrap_or(&body);
            format!("The team has a question for you: {q}")
        }
        _ => format!("From the team: {body}"),
    }
}

/// The master's plan for a run seeded with work modules (a `<modules>`
/// block in its prompt): every pending module goes to a member, in roster
/// order, its task starting with the module's id.
pub(crate) fn plan_with_modules(prompt: &str, roster: &[String]) -> Option<String> {
    let start = prompt.rfind("<modules>")? + "<modules>".len();
    let end = prompt[start..].find("</modules>")? + start;
    let modules: Vec<String> = prompt[start..end]
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- "))
        .map(super::sim::unescape)
        .collect();
    if modules.is_empty() || roster.is_empty() {
        return None;
    }
    let mut out = String::from("The partner's modules, one member each.\n");
    for (i, m) in modules.iter().enumerate() {
        let _ = writeln!(out, "ASSIGN:{}:{m}", roster[i % roster.len()]);
    }
    Some(out)
}

/// The master's `ASK:` (sim option `ask=QUESTION`) until the task holds the
/// user's answer.
pub(crate) fn ask(prompt: &str, question: Option<&str>) -> Option<String> {
    let question = question?;
    (!prompt.contains("The user answered:")).then(|| format!("ASK: {question}"))
}

/// A review after a follow-up on a finished run: the board ends with the
/// master's DONE (nothing happened since), so every member who drafted
/// revises for the follow-up.
pub(crate) fn follow_up(prompt: &str, drafts: &[(String, String)]) -> Option<String> {
    let message = prompt
        .lines()
        .rev()
        .find_map(|l| l.trim().strip_prefix("- Follow-up from the user: "))?;
    let board = &prompt[prompt.rfind("<board>")?..];
    let last = board.rfind("<entry ")?;
    let last = &board[last..];
    let done = last.contains("kind=\"review\"")
        && last
            .split_once('>')
            .is_some_and(|(_, body)| body.trim_start().to_ascii_uppercase().starts_with("DONE"));
    if !done || drafts.is_empty() {
        return None;
    }
    let mut out = String::from("A follow-up from the user: one more round.\n");
    for (member, _) in drafts {
        let _ = writeln!(
            out,
            "ASSIGN:{member}:Revise your draft for the user's follow-up: {}",
            message.replace("&quot;", "\"").replace("&amp;", "&")
        );
    }
    Some(out)
}
