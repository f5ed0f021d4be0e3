//! `sim`: a deterministic offline model that plays every role of the
//! protocol from what the request carries.
//!
//! The master assigns one task to every member on the roster, members write
//! notes on the task in the manner of their part, challengers agree (or
//! challenge in a chosen round), and the master finishes with one document
//! composed from the notes, marked as simulated ([`text`] writes them).
//! Options drive every path: a per-call latency, a challenge round, a
//! failing or panicking member, a master that never says DONE, a question
//! for the user.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use parking_lot::Mutex;

use crate::model::{ChatModel, ChatRequest, ChatResponse, ModelError, Phase, Role, estimate_usage};

#[path = "sim_text.rs"]
pub(super) mod text;

/// What the simulated model does.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SimOptions {
    /// How long each call blocks, as if waiting on a server.
    pub latency: Duration,
    /// The phases the latency applies to; empty means every phase.
    pub latency_phases: Vec<Phase>,
    /// Challengers challenge in this round (and agree in the others).
    pub challenge_round: Option<u32>,
    /// Calls by this agent fail.
    pub fail_agent: Option<String>,
    /// Calls by this agent panic (to test that a panic stays contained).
    pub panic_agent: Option<String>,
    /// The master re-assigns forever and never says DONE.
    pub never_done: bool,
    /// Tool calls members ask for: in a draft turn whose request offers the
    /// tool, the agent first asks for every call listed for it (at once),
    /// then writes its draft with the results appended.
    pub tool_calls: Vec<SimToolCall>,
    /// The master's plan asks its user this (`ASK:`) until the task holds
    /// an answer.
    pub ask: Option<String>,
    /// The members' drafts wait until this file exists (at most 60 s):
    /// a test holds a run at work, by construction, while
    /// it looks at it from outside (`boardroom chat`'s status answer).
    pub hold: Option<std::path::PathBuf>,
}

/// The longest a draft waits for the `hold` file.
const HOLD_LIMIT: Duration = Duration::from_secs(60);

/// A tool call the sim asks for on an agent's behalf.
#[derive(Debug, Clone, PartialEq)]
pub struct SimToolCall {
    /// The agent that asks.
    pub agent: String,
    /// The tool, as granted (`workspace_write`, `server.tool`).
    pub tool: String,
    /// The arguments, as JSON text.
    pub arguments: String,
}

impl SimToolCall {
    /// `agent` asks for `tool` with these arguments.
    #[must_use]
    pub fn new(agent: &str, tool: &str, arguments: serde_json::Value) -> Self {
        SimToolCall {
            agent: agent.to_string(),
            tool: tool.to_string(),
            arguments: arguments.to_string(),
        }
    }
}

/// Counters the sim keeps, shared across threads: how many calls are in
/// flight right now, the most ever in flight at once, and calls per agent.
#[derive(Debug)]
pub struct SimStats {
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    calls: AtomicUsize,
    /// Calls by agent and by phase, in shards picked by the agent's name:
    /// one lock for every member of a 2048-member round made them queue
    /// for it (a thread preempted while holding it held up the rest; with
    /// 16 shards it was still the round's most waited-for lock).
    shards: Box<[Mutex<Counts>]>,
}

impl Default for SimStats {
    fn default() -> Self {
        SimStats {
            in_flight: AtomicUsize::new(0),
            max_in_flight: AtomicUsize::new(0),
            calls: AtomicUsize::new(0),
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
        }
    }
}

/// The counter shards of [`SimStats`].
const SHARDS: usize = 256;

#[derive(Debug, Default)]
struct Counts {
    by_agent: HashMap<String, usize>,
    by_phase: HashMap<Phase, usize>,
}

/// The shard of an agent's counters.
fn shard(agent: &str) -> usize {
    crate::util::shard::shard_of(agent, SHARDS)
}

impl SimStats {
    /// The most calls that were ever in flight at the same moment.
    pub fn max_in_flight(&self) -> usize {
        self.max_in_flight.load(Ordering::SeqCst)
    }

    /// All calls so far.
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    /// Calls made by one agent.
    pub fn calls_by(&self, agent: &str) -> usize {
        self.shards[shard(agent)]
            .lock()
            .by_agent
            .get(agent)
            .copied()
            .unwrap_or(0)
    }

    /// Calls made for one phase.
    pub fn calls_for(&self, phase: Phase) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().by_phase.get(&phase).copied().unwrap_or(0))
            .sum()
    }

    /// Counts a call by `agent` for `phase`.
    fn count(&self, agent: &str, phase: Phase) {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let mut counts = self.shards[shard(agent)].lock();
        match counts.by_agent.get_mut(agent) {
            Some(n) => *n += 1,
            None => {
                counts.by_agent.insert(agent.to_string(), 1);
            }
        }
        *counts.by_phase.entry(phase).or_default() += 1;
    }
}

/// The simulated model. Cheap to clone; clones share their [`SimStats`].
#[derive(Debug, Clone, Default)]
pub struct Sim {
    options: SimOptions,
    stats: Arc<SimStats>,
}

/// Counts a call in flight for as long as it lives.
struct InFlight<'a>(&'a SimStats);

impl<'a> InFlight<'a> {
    fn enter(stats: &'a SimStats) -> Self {
        let now = stats.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        stats.max_in_flight.fetch_max(now, Ordering::SeqCst);
        InFlight(stats)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Sim {
    /// A sim with no latency that agrees and finishes after one round.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// A sim with these options.
    #[must_use]
    pub fn with_options(options: SimOptions) -> Self {
        Sim {
            options,
            stats: Arc::default(),
        }
    }

    /// Sets the per-call latency.
    #[must_use]
    pub fn latency(mut self, latency: Duration) -> Self {
        self.options.latency = latency;
        self
    }

    /// The options.
    #[must_use]
    pub fn options(&self) -> &SimOptions {
        &self.options
    }

    /// The shared counters.
    #[must_use]
    pub fn stats(&self) -> Arc<SimStats> {
        Arc::clone(&self.stats)
    }

    /// The calls to ask for: in a draft turn that offers the tools and has
    /// no results yet.
    fn tool_calls_for(&self, req: &ChatRequest) -> Option<Vec<crate::model::ToolCall>> {
        if req.phase != Phase::Draft
            || req.tools.is_empty()
            || req.messages.iter().any(|m| m.role == Role::Tool)
        {
            return None;
        }
        let offered = |tool: &str| {
            let wire = tool.replace('.', "__");
            req.tools.iter().any(|t| t.name == tool || t.name == wire)
        };
        let calls: Vec<crate::model::ToolCall> = self
            .options
            .tool_calls
            .iter()
            .filter(|c| c.agent == req.agent && offered(&c.tool))
            .enumerate()
            .map(|(i, c)| crate::model::ToolCall {
                id: format!("sim-{}-{}-{i}", req.agent, req.round),
                name: c.tool.replace('.', "__"),
                arguments: c.arguments.clone(),
            })
            .collect();
        (!calls.is_empty()).then_some(calls)
    }

    fn answer(&self, req: &ChatRequest) -> String {
        if req.phase == Phase::Draft {
            // A draft reads only its own prompt: the whole request is not
            // joined for it (the round's thousands of calls).
            return draft(&req.agent, last_user(req));
        }
        let text = all_text(req);
        match req.phase {
            Phase::Plan => super::sim_partner::ask(&text, self.options.ask.as_deref())
                .or_else(|| super::sim_partner::plan_with_modules(&text, &roster(&text)))
                .unwrap_or_else(|| {
                    let decide = req.messages.iter().any(|m| {
                        m.role == Role::System
                            && m.content.to_lowercase().contains("recommendation")
                    });
                    plan(&text, decide)
                }),
            Phase::Draft => draft(&req.agent, last_user(req)),
            Phase::Challenge => {
                if self.options.challenge_round == Some(req.round) {
                    let target = latest_drafts(&text)
                        .into_iter()
                        .map(|(author, _)| author)
                        .find(|a| *a != req.agent)
                        .unwrap_or_else(|| "the team".into());
                    format!(
                        "CHALLENGE: the draft by {target} in round {} states its points without \
                         checking them; add the reasons and one concrete example.",
                        req.round
                    )
                } else {
                    "AGREE".into()
                }
            }
            Phase::Review => super::sim_partner::follow_up(&text, &latest_drafts(&text))
                .unwrap_or_else(|| review(&text, req.round, self.options.never_done)),
            Phase::Final => final_answer(&text),
            Phase::Memory => {
                let task = tag(&text, "task").unwrap_or_default();
                let answer = tag(&text, "answer").unwrap_or_default();
                let headings = text::headings(&answer);
                let shape = if headings.is_empty() {
                    "a short text".to_string()
                } else {
                    format!("one document in sections: {}", headings.join(", "))
                };
                format!(
                    "- \"{}\": the drafts were merged into {shape}.",
                    first_line(&task)
                )
            }
            Phase::Converse | Phase::Route => format!("(sim) {}", first_line(last_user(req))),
        }
    }
}

impl ChatModel for Sim {
    fn name(&self) -> String {
        "sim".into()
    }

    fn chat(
        &self,
        req: &ChatRequest,
        on_delta: &mut dyn FnMut(&str),
    ) -> Result<ChatResponse, ModelError> {
        let _guard = InFlight::enter(&self.stats);
        self.stats.count(&req.agent, req.phase);
        let o = &self.options;
        if let (Some(file), Phase::Draft) = (&o.hold, req.phase) {
            let until = std::time::Instant::now() + HOLD_LIMIT;
            while !file.exists() && std::time::Instant::now() < until {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        if !o.latency.is_zero()
            && (o.latency_phases.is_empty() || o.latency_phases.contains(&req.phase))
        {
            std::thread::sleep(o.latency);
        }
        if o.panic_agent.as_deref() == Some(req.agent.as_str()) && req.phase == Phase::Draft {
            panic!("sim: simulated panic in '{}'", req.agent);
        }
        if o.fail_agent.as_deref() == Some(req.agent.as_str()) {
            return Err(ModelError::Simulated {
                agent: req.agent.clone(),
                detail: "the model is configured to fail for this agent".into(),
            });
        }
        if let Some(resp) = super::sim_principal::reply(req, on_delta) {
            return Ok(resp);
        }
        if let Some(resp) = super::sim_handoff::reply(&self.options, req, on_delta) {
            return Ok(resp);
        }
        if let Some(resp) = super::sim_partner::respond(req) {
            return Ok(resp);
        }
        if let Some(calls) = self.tool_calls_for(req) {
            return Ok(ChatResponse {
                tool_calls: calls,
                finish: crate::model::FinishReason::ToolCalls,
                usage: estimate_usage(req, "tool call"),
                ..ChatResponse::default()
            });
        }
        let mut answer = self.answer(req);
        let results: Vec<&crate::model::Message> = req
            .messages
            .iter()
            .filter(|m| m.role == Role::Tool)
            .collect();
        if !results.is_empty() {
            answer.push_str("\n\nTool results:");
            for m in results {
                let _ = write!(answer, "\n- {}", m.content.trim());
            }
        }
        if let Some(schema) = &req.schema {
            // Structured-output mode: the same decision, as the schema's JSON.
            answer = crate::protocol::line_to_json(&answer, schema);
        }
        // Stream in a few pieces, as a real server would.
        let mut start = 0;
        for (i, _) in answer.match_indices('\n') {
            on_delta(&answer[start..=i]);
            start = i + 1;
        }
        if start < answer.len() {
            on_delta(&answer[start..]);
        }
        let usage = estimate_usage(req, &answer);
        Ok(ChatResponse::text(answer, usage))
    }
}

fn all_text(req: &ChatRequest) -> String {
    req.messages
        .iter()
        .map(|m| m.content.as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

fn last_user(req: &ChatRequest) -> &str {
    req.messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .map_or("", |m| m.content.as_str())
}

fn first_line(s: &str) -> &str {
    s.trim().lines().next().unwrap_or("")
}

/// The text between the last `<name>` and the `</name>` after it.
fn tag(text: &str, name: &str) -> Option<String> {
    let open = format!("<{name}>");
    let close = format!("</{name}>");
    let start = text.rfind(&open)? + open.len();
    let end = text[start..].find(&close)? + start;
    Some(unescape(text[start..end].trim()))
}

pub(super) fn unescape(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

/// Roster lines `- name: description (can challenge)` inside `<roster>`,
/// as (name, description).
fn roster_entries(text: &str) -> Vec<(String, String)> {
    tag(text, "roster")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- "))
        .filter_map(|l| l.split_once(':'))
        .map(|(n, d)| {
            (
                n.trim().to_string(),
                d.trim()
                    .trim_end_matches("(can challenge)")
                    .trim()
                    .to_string(),
            )
        })
        .filter(|(n, _)| !n.is_empty())
        .collect()
}

fn roster(text: &str) -> Vec<String> {
    roster_entries(text).into_iter().map(|(n, _)| n).collect()
}

/// The board's entries as (round, author, kind, text), parsed back from the
/// XML the runtime renders.
fn entries(text: &str) -> Vec<(u32, String, String, String)> {
    let Some(start) = text.rfind("<board>") else {
        return Vec::new();
    };
    let board = &text[start..];
    let mut out = Vec::new();
    let mut rest = board;
    while let Some(pos) = rest.find("<entry ") {
        rest = &rest[pos..];
        let Some(head_end) = rest.find('>') else {
            break;
        };
        let head = &rest[..head_end];
        let Some(close) = rest.find("</entry>") else {
            break;
        };
        let body = unescape(rest[head_end + 1..close].trim());
        let attr = |name: &str| {
            let key = format!("{name}=\"");
            head.find(&key).and_then(|p| {
                let v = &head[p + key.len()..];
                v.find('"').map(|e| unescape(&v[..e]))
            })
        };
        out.push((
            attr("round").and_then(|r| r.parse().ok()).unwrap_or(0),
            attr("author").unwrap_or_default(),
            attr("kind").unwrap_or_default(),
            body,
        ));
        rest = &rest[close + "</entry>".len()..];
    }
    out
}

/// The latest draft of every member, in board order of first appearance.
fn latest_drafts(text: &str) -> Vec<(String, String)> {
    let mut drafts: Vec<(String, String)> = Vec::new();
    // Where each author's draft is (a scan an entry made a board of N
    // drafts O(N²) to read).
    let mut at: HashMap<String, usize> = HashMap::new();
    for (_, author, kind, body) in entries(text) {
        if kind != "draft" {
            continue;
        }
        match at.get(&author) {
            Some(&i) => drafts[i].1 = body,
            None => {
                at.insert(author.clone(), drafts.len());
                drafts.push((author, body));
            }
        }
    }
    drafts
}

/// The master's plan: every member on the roster gets the task and its
/// part. A master whose instructions ask its members for a recommendation
/// (a panel that decides) asks each for one.
fn plan(text: &str, decide: bool) -> String {
    let task = tag(text, "task").unwrap_or_default();
    let task = first_line(&task);
    let mut out = String::from("The work splits cleanly across the team.\n");
    let ask = if decide {
        " Give your recommendation, the two or three reasons that matter most from your angle, \
         and how confident you are."
    } else {
        ""
    };
    for (name, description) in roster_entries(text) {
        let part = description.trim_end_matches('.').to_lowercase();
        let _ = writeln!(out, "ASSIGN:{name}:{task} (your part: {part}){ask}");
    }
    out
}

/// The task of `agent`'s first draft on the board, when it had a part.
fn first_assignment(prompt: &str, agent: &str) -> Option<String> {
    let board = &prompt[prompt.rfind("<board>")?..];
    let head = format!(
        "author=\"{}\" kind=\"draft\" task=\"",
        crate::util::text::escape_xml(agent)
    );
    let start = board.find(&head)? + head.len();
    let end = board[start..].find('"')? + start;
    let task = unescape(&board[start..end]);
    task.contains("(your part: ").then_some(task)
}

/// A member's draft: notes on the task (its subject and the points it
/// names) and the member's part (from its assignment), in the manner of its
/// role. Offline and deterministic. It says it was revised only when it
/// was: the member has an earlier draft on the board and a challenge was
/// raised since.
fn draft(agent: &str, prompt: &str) -> String {
    let task = tag(prompt, "task").unwrap_or_else(|| first_line(prompt).to_string());
    let assignment = tag(prompt, "assignment").unwrap_or_else(|| task.clone());
    let board = entries(prompt);
    let earlier = board.iter().rposition(|e| e.1 == agent && e.2 == "draft");
    let challenge = earlier.and_then(|at| {
        board[at..]
            .iter()
            .find(|e| e.2 == "challenge" && e.3.contains(&format!(" by {agent} ")))
    });
    // A revision keeps the part of the member's first assignment.
    let first = (!assignment.contains("(your part: "))
        .then(|| first_assignment(prompt, agent))
        .flatten();
    let part = text::Part::of(agent, first.as_deref().unwrap_or(&assignment));
    text::notes(agent, &task, &part, challenge.map(|c| (c.1.as_str(), c.0)))
}

fn review(text: &str, round: u32, never_done: bool) -> String {
    let all = entries(text);
    let challenged = all.iter().any(|e| e.0 == round && e.2 == "challenge");
    if challenged || never_done {
        let mut out = format!("Round {round} needs another pass.\n");
        let members: Vec<String> = all
            .iter()
            .filter(|e| e.0 == round && e.2 == "draft")
            .map(|e| e.1.clone())
            .fold(Vec::new(), |mut v, a| {
                if !v.contains(&a) {
                    v.push(a);
                }
                v
            });
        let members = if members.is_empty() {
            roster(text)
        } else {
            members
        };
        for m in members {
            let _ = writeln!(
                out,
                "ASSIGN:{m}:Revise your draft from round {round}, answering every challenge on the board."
            );
        }
        out
    } else {
        format!("DONE\n{}", final_answer(text))
    }
}

/// The master's answer: one document composed from the latest drafts.
fn final_answer(text: &str) -> String {
    let task = tag(text, "task").unwrap_or_else(|| "the task".into());
    text::compose(&task, &latest_drafts(text))
}
