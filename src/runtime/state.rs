//! The state of a run between phases: everything needed to go on from
//! where it stopped.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::board::Entry;
use crate::event::RunStatus;
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
    /// A handoff run's own state: the steps so far, the active agent, the
    /// context variables.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) handoff: Option<crate::process::handoff::HandoffState>,
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
            handoff: None,
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
    pub fn handoff(&self) -> Option<&crate::process::handoff::HandoffState> {
        self.handoff.as_ref()
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
