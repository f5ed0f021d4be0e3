//! The state of a run between phases: everything needed to go on from
//! where it stopped.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{HandoffState, PrincipalState, RunStatus};
use crate::board::Entry;
use crate::model::Usage;
use crate::plan::Plan;
use crate::protocol::Assignment;

/// Where a run is in its loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum RunPhase {
    /// The master has not split the task yet.
    Plan,
    /// The members of `round` are drafting.
    Members,
    /// The challengers of `round` are reading the board.
    Challenge,
    /// The master is reviewing `round`.
    Review,
    /// The master is writing the final answer.
    Final,
    /// The run is over (or, with status
    /// [`AwaitingUser`](RunStatus::AwaitingUser), waits for its user).
    Finished,
    /// A handoff run: the active agent's next step.
    Step,
}

/// Snapshot of a run: the task, where the loop is, the board, and the
/// assignments of the current round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunState {
    /// The run's id.
    pub(crate) run_id: String,
    /// The task.
    pub(crate) task: String,
    /// The current round (0 while planning).
    pub(crate) round: u32,
    /// Where the loop is.
    pub(crate) phase: RunPhase,
    /// Assignments of the current round.
    pub(crate) assignments: Vec<Assignment>,
    /// Problems with the master's last reply, to show it next turn.
    pub(crate) feedback: Vec<String>,
    /// The board.
    pub(crate) board: Vec<Entry>,
    /// The work modules.
    #[serde(default)]
    pub(crate) plan: Plan,
    /// Tokens used, in total.
    pub(crate) usage: Usage,
    /// Tokens used, per agent.
    pub(crate) usage_by_agent: BTreeMap<String, Usage>,
    /// How the run stands.
    pub(crate) status: RunStatus,
    /// The answer, once there is one.
    pub(crate) answer: Option<String>,
    /// The last error that stopped the run.
    pub(crate) error: Option<String>,
    /// Set when a failed run is resumed: the round's assignments that
    /// ended in an error of any kind run again (a mid-round crash re-runs
    /// only those that failed on the transport).
    #[serde(skip)]
    pub(crate) rerun_errors: bool,
    /// What the user told a blackboard run: answers to the master's `ASK:`
    /// questions and follow-ups, oldest first (the master sees them with
    /// the task).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) user_notes: Vec<UserNote>,
    /// Rounds run before the last follow-up: a follow-up gets the round cap
    /// again, counted from here.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) round_offset: u32,
    /// The process's own state: a handoff run's steps, active agent and
    /// context variables (saved as today's `handoff` key), a principal
    /// run's inbox and progress (the `principal` key); both absent for a
    /// blackboard run, so runs saved before it existed load.
    #[serde(flatten, with = "process_wire")]
    pub(crate) process: ProcessState,
    /// Agent turns paused at tool calls that wait for a person's decision
    /// (status [`RunStatus::AwaitingApproval`], or a run stopped while it
    /// waited): a resume goes on from the reply that asked for them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) approvals: Vec<super::approval::PausedTurn>,
}

impl RunState {
    /// A fresh run about to plan.
    pub(crate) fn new(run_id: String, task: String) -> Self {
        RunState {
            run_id,
            task,
            round: 0,
            phase: RunPhase::Plan,
            assignments: Vec::new(),
            feedback: Vec::new(),
            board: Vec::new(),
            plan: Plan::default(),
            usage: Usage::default(),
            usage_by_agent: BTreeMap::new(),
            status: RunStatus::Running,
            answer: None,
            error: None,
            rerun_errors: false,
            user_notes: Vec::new(),
            round_offset: 0,
            process: ProcessState::Blackboard,
            approvals: Vec::new(),
        }
    }

    /// The run's id.
    #[must_use]
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The task.
    #[must_use]
    pub fn task(&self) -> &str {
        &self.task
    }

    /// The current round (0 while planning).
    #[must_use]
    pub fn round(&self) -> u32 {
        self.round
    }

    /// Where the loop is.
    #[must_use]
    pub fn phase(&self) -> RunPhase {
        self.phase
    }

    /// The tool calls that wait for a person's decision (a run with
    /// status [`RunStatus::AwaitingApproval`]): resume it with decisions
    /// ([`Runtime::start_resume_deciding`](crate::Runtime::start_resume_deciding)).
    #[must_use]
    pub fn pending_approvals(&self) -> Vec<super::PendingApproval> {
        self.approvals
            .iter()
            .flat_map(|t| t.undecided().cloned())
            .collect()
    }

    /// The assignments of the current round.
    #[must_use]
    pub fn assignments(&self) -> &[Assignment] {
        &self.assignments
    }

    /// The board.
    #[must_use]
    pub fn board(&self) -> &[Entry] {
        &self.board
    }

    /// The work modules.
    #[must_use]
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// Tokens used, in total.
    #[must_use]
    pub fn usage(&self) -> Usage {
        self.usage
    }

    /// Tokens used, per agent.
    #[must_use]
    pub fn usage_by_agent(&self) -> &BTreeMap<String, Usage> {
        &self.usage_by_agent
    }

    /// How the run stands.
    #[must_use]
    pub fn status(&self) -> RunStatus {
        self.status
    }

    /// The answer, once there is one.
    #[must_use]
    pub fn answer(&self) -> Option<&str> {
        self.answer.as_deref()
    }

    /// The last error that stopped the run.
    #[must_use]
    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    /// What the user told a blackboard run, oldest first.
    #[must_use]
    pub fn user_notes(&self) -> &[UserNote] {
        &self.user_notes
    }

    /// A handoff run's own state (steps, active agent, context variables).
    #[must_use]
    pub fn handoff(&self) -> Option<&HandoffState> {
        self.process.handoff()
    }

    /// The process's own state.
    #[must_use]
    pub fn process(&self) -> &ProcessState {
        &self.process
    }
}

/// The part of a run's state that belongs to its process.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub enum ProcessState {
    /// A blackboard run: its state is the shared part of [`RunState`].
    #[default]
    Blackboard,
    /// A handoff run: the steps so far, the active agent, the context
    /// variables.
    Handoff(HandoffState),
    /// A principal run: the principal's inbox, its log, the dispatch in
    /// flight, the report.
    Principal(PrincipalState),
}

impl ProcessState {
    /// Which process it belongs to.
    #[must_use]
    pub fn kind(&self) -> ProcessKind {
        match self {
            ProcessState::Blackboard => ProcessKind::Blackboard,
            ProcessState::Handoff(_) => ProcessKind::Handoff,
            ProcessState::Principal(_) => ProcessKind::Principal,
        }
    }

    /// A handoff run's state.
    #[must_use]
    pub fn handoff(&self) -> Option<&HandoffState> {
        match self {
            ProcessState::Handoff(hs) => Some(hs),
            _ => None,
        }
    }

    /// A handoff run's state, to change.
    pub(crate) fn handoff_mut(&mut self) -> Option<&mut HandoffState> {
        match self {
            ProcessState::Handoff(hs) => Some(hs),
            _ => None,
        }
    }

    /// Takes a handoff run's state out, leaving [`ProcessState::Blackboard`].
    pub(crate) fn take_handoff(&mut self) -> Option<HandoffState> {
        match std::mem::take(self) {
            ProcessState::Handoff(hs) => Some(hs),
            other => {
                *self = other;
                None
            }
        }
    }

    /// A principal run's state.
    #[must_use]
    pub fn principal(&self) -> Option<&PrincipalState> {
        match self {
            ProcessState::Principal(ps) => Some(ps),
            _ => None,
        }
    }

    /// Takes a principal run's state out, leaving [`ProcessState::Blackboard`].
    pub(crate) fn take_principal(&mut self) -> Option<PrincipalState> {
        match std::mem::take(self) {
            ProcessState::Principal(ps) => Some(ps),
            other => {
                *self = other;
                None
            }
        }
    }
}

/// `run.json`'s `handoff` and `principal` keys: a handoff run's state
/// under `handoff`, a principal run's under `principal`, neither for a
/// blackboard run (a `handoff: null` of older runs reads as none).
mod process_wire {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::{HandoffState, PrincipalState, ProcessState};

    #[derive(Serialize)]
    struct Out<'a> {
        #[serde(skip_serializing_if = "Option::is_none")]
        handoff: Option<&'a HandoffState>,
        #[serde(skip_serializing_if = "Option::is_none")]
        principal: Option<&'a PrincipalState>,
    }

    #[derive(Deserialize)]
    struct In {
        #[serde(default)]
        handoff: Option<HandoffState>,
        #[serde(default)]
        principal: Option<PrincipalState>,
    }

    pub(super) fn serialize<S: Serializer>(p: &ProcessState, s: S) -> Result<S::Ok, S::Error> {
        let out = match p {
            ProcessState::Handoff(hs) => Out {
                handoff: Some(hs),
                principal: None,
            },
            ProcessState::Principal(ps) => Out {
                handoff: None,
                principal: Some(ps),
            },
            ProcessState::Blackboard => Out {
                handoff: None,
                principal: None,
            },
        };
        out.serialize(s)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<ProcessState, D::Error> {
        let wire = In::deserialize(d)?;
        Ok(match (wire.handoff, wire.principal) {
            (Some(hs), _) => ProcessState::Handoff(hs),
            (None, Some(ps)) => ProcessState::Principal(ps),
            (None, None) => ProcessState::Blackboard,
        })
    }
}

/// A run's process, by name: `blackboard`, `handoff` or `principal`, as `team.yaml`
/// and a `run_started` event write it. A name this build does not know
/// (an event written by a newer one) is kept as [`ProcessKind::Other`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProcessKind {
    /// Master, parallel members, challenge round, review.
    Blackboard,
    /// One agent active at a time, passing control by handoff.
    Handoff,
    /// A principal manages work modules and dispatches them to parallel
    /// associates (Common Ground).
    Principal,
    /// A name this build does not know (empty in a `run_started` event
    /// saved before the process was recorded).
    Other(String),
}

impl ProcessKind {
    /// The name as `team.yaml` and `events.jsonl` spell it.
    #[must_use]
    pub fn as_str(&self) -> &str {
        match self {
            ProcessKind::Blackboard => "blackboard",
            ProcessKind::Handoff => "handoff",
            ProcessKind::Principal => "principal",
            ProcessKind::Other(name) => name,
        }
    }

    /// The kind a name stands for.
    #[must_use]
    pub fn from_name(name: &str) -> ProcessKind {
        match name {
            "blackboard" => ProcessKind::Blackboard,
            "handoff" => ProcessKind::Handoff,
            "principal" => ProcessKind::Principal,
            other => ProcessKind::Other(other.to_string()),
        }
    }

    /// What a `run_started` event saved before the process was recorded
    /// reads as: the empty name.
    #[must_use]
    pub fn unrecorded() -> ProcessKind {
        ProcessKind::Other(String::new())
    }
}

impl From<&str> for ProcessKind {
    fn from(name: &str) -> Self {
        ProcessKind::from_name(name)
    }
}

impl std::fmt::Display for ProcessKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<str> for ProcessKind {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for ProcessKind {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl Serialize for ProcessKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ProcessKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Ok(ProcessKind::from_name(&name))
    }
}

/// Something the user told a run: the answer to the master's question, or a
/// follow-up to a finished run (no question).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct UserNote {
    /// The master's question it answers, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
    /// What the user said.
    pub message: String,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}
