//! Events: everything that happens in a run, as it happens.
//!
//! The runtime sends [`Event`]s to any `crossbeam_channel::Sender<Event>`
//! the caller gives it. Each carries the run id, the agent it concerns and
//! that agent's parent (the master for members), so a viewer can draw the
//! call graph. Serialised, an event is one flat JSON object with a `type`.

use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::board::EntryKind;
pub(crate) use crate::board::RoomStatus;
use crate::model::{FinishReason, Phase, Usage};
pub(crate) use crate::record::RunStatus;
use crate::record::{Executor, HandoffHow, ProcessKind, TurnId};

/// What the master decided after reading the board
/// ([`EventKind::ReviewDecision`]). Serialized as the strings runs have
/// always written to `events.jsonl`: `assign`, `done`, `ask`, `none`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ReviewVerdict {
    /// Another round: the master assigned work.
    Assign,
    /// The master gave the answer.
    Done,
    /// The master has a question for the user.
    Ask,
    /// The master's reply held no usable decision.
    None,
}

impl ReviewVerdict {
    /// The name as `events.jsonl` spells it.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            ReviewVerdict::Assign => "assign",
            ReviewVerdict::Done => "done",
            ReviewVerdict::Ask => "ask",
            ReviewVerdict::None => "none",
        }
    }
}

impl std::fmt::Display for ReviewVerdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why an endpoint's in-flight limit changed
/// ([`EventKind::LimitChanged`]). Written as `rate_limited`, `overloaded`,
/// `latency` or `growth`; a name this build does not know reads as
/// [`LimitChangeReason::Other`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LimitChangeReason {
    /// The server answered 429 (too many requests).
    RateLimited,
    /// The server answered 503 (overloaded).
    Overloaded,
    /// Answers came well slower than their recent floor.
    Latency,
    /// A window of answers came back without congestion.
    Growth,
    /// A name this build does not know (written by a newer one).
    Other(String),
}

impl LimitChangeReason {
    /// The name as `events.jsonl` spells it.
    #[must_use]
    pub fn as_str(&self) -> &str {
        match self {
            LimitChangeReason::RateLimited => "rate_limited",
            LimitChangeReason::Overloaded => "overloaded",
            LimitChangeReason::Latency => "latency",
            LimitChangeReason::Growth => "growth",
            LimitChangeReason::Other(name) => name,
        }
    }

    /// The reason a name stands for.
    #[must_use]
    pub fn from_name(name: &str) -> LimitChangeReason {
        match name {
            "rate_limited" => LimitChangeReason::RateLimited,
            "overloaded" => LimitChangeReason::Overloaded,
            "latency" => LimitChangeReason::Latency,
            "growth" => LimitChangeReason::Growth,
            other => LimitChangeReason::Other(other.to_string()),
        }
    }
}

impl From<crate::model::LimitReason> for LimitChangeReason {
    fn from(r: crate::model::LimitReason) -> Self {
        LimitChangeReason::from_name(r.as_str())
    }
}

impl std::fmt::Display for LimitChangeReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<str> for LimitChangeReason {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for LimitChangeReason {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl Serialize for LimitChangeReason {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for LimitChangeReason {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Ok(LimitChangeReason::from_name(&name))
    }
}

/// One thing that happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Event {
    /// The run it belongs to.
    pub run_id: String,
    /// The agent it concerns.
    pub agent: String,
    /// The agent that set this one to work (the master for members).
    #[serde(default)]
    pub parent: Option<String>,
    /// Milliseconds since the Unix epoch.
    pub time_ms: u64,
    /// What happened.
    #[serde(flatten)]
    pub kind: EventKind,
}

impl Event {
    /// The executors that ran a run's members, as its `run_started` events
    /// name them: each once, in order (a resumed run may have run on
    /// another). Empty for a handoff run and for events saved before the
    /// executor was recorded.
    #[must_use]
    pub fn executors_of(events: &[Event]) -> Vec<Executor> {
        let mut ran = Vec::new();
        for e in events {
            if let EventKind::RunStarted {
                executor: Some(x), ..
            } = e.kind
                && !ran.contains(&x)
            {
                ran.push(x);
            }
        }
        ran
    }
}

/// What happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum EventKind {
    /// The run began.
    RunStarted {
        /// The task; one longer than 64 KiB is cut there, with a note of
        /// its size (the whole task is in the run's saved state, and a
        /// 60 MiB task would otherwise be in every copy of the event).
        task: String,
        /// The team's name.
        team: String,
        /// The default model's name.
        model: String,
        /// Members on the roster.
        members: usize,
        /// The round cap (for a handoff run: its turn cap, `max_turns`).
        max_rounds: u32,
        /// The process that drives the run: `blackboard` or `handoff`
        /// (absent in events saved before it was recorded: read as
        /// [`ProcessKind::unrecorded`], the empty name).
        #[serde(default = "ProcessKind::unrecorded")]
        process: ProcessKind,
        /// What the run started its members on:
        /// [`Executor::Rayon`](crate::Executor::Rayon) or
        /// [`Executor::Threads`](crate::Executor::Threads); under `auto` a
        /// round wider than [`Executor::auto_limit`](crate::Executor::auto_limit)
        /// runs on the own pool, and so does every later one (`None` for a
        /// handoff run, which runs one agent at a time, and in events saved
        /// before it was recorded).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        executor: Option<Executor>,
        /// The conversation the run belongs to: the id of the chat that
        /// launched it (absent for a run started on its own).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session: Option<String>,
    },
    /// The room's status light changed.
    RoomStatus {
        /// The new status.
        status: RoomStatus,
    },
    /// A round of members is starting.
    RoundStarted {
        /// The round.
        round: u32,
        /// How many assignments it holds.
        assignments: usize,
        /// Threads the round runs on.
        threads: usize,
    },
    /// Assignments of a round that already ran are run again (on resume,
    /// those whose last attempt failed on the transport).
    Rerun {
        /// The round.
        round: u32,
        /// The members whose assignments run again.
        members: Vec<String>,
        /// Why.
        reason: String,
    },
    /// The master gave a member work.
    TaskAssigned {
        /// The round it is for.
        round: u32,
        /// The member.
        member: String,
        /// The task.
        task: String,
    },
    /// A model call is about to be sent: an agent is at work.
    CallStarted {
        /// The round.
        round: u32,
        /// What the call is for.
        phase: Phase,
        /// The call's number in the run (its deltas and its end carry it).
        call: u64,
        /// 0 for the first try, 1.. for the logical retries.
        attempt: u32,
        /// The assignment it works on (member drafts).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        task: Option<String>,
    },
    /// A model call returned (its Turn record is in `turns.jsonl`).
    CallEnded {
        /// The round.
        round: u32,
        /// What the call was for.
        phase: Phase,
        /// The call's number in the run.
        call: u64,
        /// Why it failed, if it did.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// A piece of an answer as it streams in.
    AgentDelta {
        /// The round.
        round: u32,
        /// What the call is for.
        phase: Phase,
        /// The new text.
        delta: String,
        /// The call it belongs to (see [`EventKind::CallStarted`]).
        #[serde(default)]
        call: u64,
    },
    /// An agent's complete answer.
    AgentMessage {
        /// The round.
        round: u32,
        /// What the call is for.
        phase: Phase,
        /// The text.
        text: String,
    },
    /// An entry landed on the board.
    BoardEntry {
        /// Its sequence number.
        seq: u64,
        /// The round.
        round: u32,
        /// What it is.
        kind: EntryKind,
    },
    /// A challenger objected.
    Challenge {
        /// The round.
        round: u32,
        /// What is wrong and why.
        text: String,
    },
    /// A challenger agreed with the board.
    Agree {
        /// The round.
        round: u32,
    },
    /// The master decided after reading the board.
    ReviewDecision {
        /// The round reviewed (0 for the plan).
        round: u32,
        /// What the master decided (serialized `assign`, `done`, `ask`
        /// or `none`).
        decision: ReviewVerdict,
        /// Assignments for the next round.
        assignments: usize,
        /// Directives that were rejected, fed back to the master.
        rejected: Vec<String>,
    },
    /// Something failed; the run goes on where it can.
    Error {
        /// The round.
        round: u32,
        /// What went wrong.
        message: String,
    },
    /// A model call finished (its Turn record is in `turns.jsonl`).
    TurnCompleted {
        /// The turn's id.
        turn_id: TurnId,
        /// The round.
        round: u32,
        /// What the call was for.
        phase: Phase,
        /// The turns it was based on.
        parents: Vec<TurnId>,
        /// Tokens used.
        usage: Usage,
        /// How long the call took, in milliseconds.
        latency_ms: u64,
        /// Why it failed, if it did.
        error: Option<String>,
        /// The model's name, as the agent's model reports it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
        /// Why the model stopped (when the call succeeded).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        finish_reason: Option<FinishReason>,
        /// Transport retries inside the call.
        #[serde(default)]
        retries: u32,
    },
    /// An agent asked for a tool call.
    ToolCall {
        /// The round.
        round: u32,
        /// What the agent's call is for.
        phase: Phase,
        /// The call's id (the result carries it back).
        id: String,
        /// The tool, as granted (`server.tool` for MCP tools).
        tool: String,
        /// The arguments, as the JSON text the model wrote.
        arguments: String,
    },
    /// A tool call finished; failures go back to the model as results.
    ToolResult {
        /// The round.
        round: u32,
        /// The call's id.
        id: String,
        /// The tool.
        tool: String,
        /// Whether it failed.
        is_error: bool,
        /// The result (or the error) as the model sees it.
        text: String,
    },
    /// A tool call waits for a person's decision (`approve:` in the team);
    /// the agent that asked pauses, the others go on.
    ApprovalRequested {
        /// The round (a handoff run: the step).
        round: u32,
        /// The call's id: what a decision names.
        id: String,
        /// The tool, as granted.
        tool: String,
        /// The arguments as the model wrote them, known secrets masked.
        arguments: String,
        /// Whether they held a known secret: a resumed run's saved copy is
        /// masked, so such a call is edited or denied, not approved as it
        /// is.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        masked: bool,
    },
    /// A person decided about a call that waited (a denied call never
    /// runs: the model gets the denial as its result).
    ApprovalDecided {
        /// The call's id.
        id: String,
        /// The tool.
        tool: String,
        /// `approved`, `edited` or `denied`.
        decision: String,
        /// Why it was denied, if a reason was given.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        /// The arguments it runs with when they were edited (known
        /// secrets masked).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        arguments: Option<String>,
    },
    /// A tool wrote a file in the run's workspace.
    WorkspaceFile {
        /// The path, relative to the workspace.
        path: String,
        /// Its size after the write.
        bytes: u64,
    },
    /// The run ended.
    RunFinished {
        /// How it ended.
        status: RunStatus,
        /// The answer (empty when it failed).
        answer: String,
        /// Rounds of members that ran.
        rounds: u32,
        /// Tokens used by the whole run.
        usage: Usage,
    },
    /// In a handoff run, control passed from one agent to another.
    Handoff {
        /// The agent that had control.
        from: String,
        /// The agent that has it now.
        to: String,
        /// Why (the handing agent's words, or the rule or router's).
        reason: String,
        /// How the next agent was chosen: `tool`, `line`, `rule N`,
        /// `router`, `after_work`.
        how: HandoffHow,
    },
    /// The run stops to wait for its user's reply (status
    /// [`RunStatus::AwaitingUser`]).
    AwaitingUser {
        /// What the run asks the user, or its last answer.
        question: String,
    },
    /// The user's message, taken when a run is resumed with one (a reply
    /// to a run that waits for it, or a follow-up): emitted once, right
    /// after `run_started`, by the agent `user`.
    UserMessage {
        /// What the user said.
        text: String,
    },
    /// The adaptive in-flight limit of a model endpoint changed (the
    /// event's agent is the one whose answer changed it).
    LimitChanged {
        /// The endpoint's URL (never its key).
        endpoint: String,
        /// The limit before.
        from: usize,
        /// The limit now.
        to: usize,
        /// Requests in flight to the endpoint at the time.
        in_flight: usize,
        /// `rate_limited` (429), `overloaded` (503), `latency` or `growth`.
        reason: LimitChangeReason,
    },
}

impl Event {
    /// An event stamped with the current time.
    pub fn now(run_id: &str, agent: &str, parent: Option<&str>, kind: EventKind) -> Self {
        Event {
            run_id: run_id.to_string(),
            agent: agent.to_string(),
            parent: parent.map(str::to_string),
            time_ms: now_ms(),
            kind,
        }
    }
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The most of a task a `run_started` event carries (64 KiB).
pub(crate) const MAX_TASK_IN_EVENT: usize = 64 * 1024;

/// `task` as a `run_started` event carries it: whole, or cut at
/// [`MAX_TASK_IN_EVENT`] (on a character boundary) with a note of its
/// size (issue 28, finding 4).
pub(crate) fn task_for_event(task: &str) -> String {
    if task.len() <= MAX_TASK_IN_EVENT {
        return task.to_string();
    }
    let mut end = MAX_TASK_IN_EVENT;
    while !task.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n[cut: the task is {} bytes; the first {end} are shown]",
        &task[..end],
        task.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_serialise_flat_with_a_type() {
        let e = Event::now(
            "r1",
            "writer",
            Some("master"),
            EventKind::TaskAssigned {
                round: 1,
                member: "writer".into(),
                task: "t".into(),
            },
        );
        let json = serde_json::to_value(&e).unwrap();
        assert_eq!(json["type"], "task_assigned");
        assert_eq!(json["run_id"], "r1");
        assert_eq!(json["parent"], "master");
        assert_eq!(json["member"], "writer");
        let back: Event = serde_json::from_value(json).unwrap();
        assert_eq!(back, e);
    }

    /// Issue 15: the decision is a type now, written as the same strings,
    /// so a line an older run wrote still reads, and reads back the same.
    #[test]
    fn an_old_review_decision_line_still_parses() {
        for (text, verdict) in [
            ("assign", ReviewVerdict::Assign),
            ("done", ReviewVerdict::Done),
            ("ask", ReviewVerdict::Ask),
            ("none", ReviewVerdict::None),
        ] {
            let line = format!(
                r#"{{"run_id":"r1","agent":"master","parent":null,"time_ms":1700000000000,"type":"review_decision","round":2,"decision":"{text}","assignments":3,"rejected":["x"]}}"#
            );
            let e: Event = serde_json::from_str(&line).unwrap();
            let EventKind::ReviewDecision {
                decision, round, ..
            } = &e.kind
            else {
                panic!("{e:?}")
            };
            assert_eq!((*decision, *round), (verdict, 2));
            assert_eq!(decision.to_string(), text);
            let again = serde_json::to_value(&e).unwrap();
            assert_eq!(again["decision"], text);
            assert_eq!(
                again,
                serde_json::from_str::<serde_json::Value>(&line).unwrap()
            );
        }
        let bad = r#"{"run_id":"r1","agent":"m","parent":null,"time_ms":1,"type":"review_decision","round":1,"decision":"maybe","assignments":0,"rejected":[]}"#;
        assert!(serde_json::from_str::<Event>(bad).is_err());
    }

    /// Issue 22: `process`, `how` and `reason` are types now, written as
    /// the same strings: lines older runs wrote read and write back the
    /// same, a name this build does not know still loads, and a
    /// `run_started` saved before `process` was recorded reads as before.
    #[test]
    fn old_string_fields_still_parse() {
        let head = r#"{"run_id":"r1","agent":"a","parent":null,"time_ms":1,"#;
        let lines = [
            r#""type":"run_started","task":"t","team":"x","model":"sim","members":2,"max_rounds":3,"process":"handoff""#,
            r#""type":"run_started","task":"t","team":"x","model":"sim","members":2,"max_rounds":3,"process":"blackboard","executor":"rayon""#,
            r#""type":"run_started","task":"t","team":"x","model":"sim","members":2,"max_rounds":3,"process":"principal""#,
            r#""type":"handoff","from":"a","to":"b","reason":"r","how":"rule 2""#,
            r#""type":"handoff","from":"a","to":"b","reason":"r","how":"after_work""#,
            r#""type":"handoff","from":"a","to":"b","reason":"r","how":"telepathy""#,
            r#""type":"limit_changed","endpoint":"http://x","from":4,"to":2,"in_flight":3,"reason":"rate_limited""#,
            r#""type":"limit_changed","endpoint":"http://x","from":4,"to":2,"in_flight":3,"reason":"sunspots""#,
        ];
        for line in lines {
            let line = format!("{head}{line}}}");
            let e: Event = serde_json::from_str(&line).unwrap();
            let again = serde_json::to_value(&e).unwrap();
            assert_eq!(
                again,
                serde_json::from_str::<serde_json::Value>(&line).unwrap()
            );
        }
        let kind = |line: &str| {
            serde_json::from_str::<Event>(&format!("{head}{line}}}"))
                .unwrap()
                .kind
        };
        let EventKind::RunStarted { process, .. } = kind(lines[0]) else {
            panic!()
        };
        assert_eq!(process, ProcessKind::Handoff);
        let EventKind::Handoff { how, .. } = kind(lines[3]) else {
            panic!()
        };
        assert_eq!(how, HandoffHow::Rule(2));
        let EventKind::LimitChanged { reason, .. } = kind(lines[6]) else {
            panic!()
        };
        assert_eq!(reason, LimitChangeReason::RateLimited);
        let EventKind::LimitChanged { reason, .. } = kind(lines[7]) else {
            panic!()
        };
        assert_eq!(reason, LimitChangeReason::Other("sunspots".into()));
        // Saved before `process` was recorded: the empty name, as before.
        let old = r#""type":"run_started","task":"t","team":"x","model":"sim","members":2,"max_rounds":3"#;
        let EventKind::RunStarted { process, .. } = kind(old) else {
            panic!()
        };
        assert_eq!(process, ProcessKind::unrecorded());
        assert_eq!(process.as_str(), "");
    }
}
