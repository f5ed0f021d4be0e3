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
    pub run_id: String,
    /// The task.
    pub task: String,
    /// The current round (0 while planning).
    pub round: u32,
    /// Where the loop is.
    pub phase: RunPhase,
    /// Assignments of the current round.
    pub assignments: Vec<Assignment>,
    /// Problems with the master's last reply, to show it next turn.
    pub feedback: Vec<String>,
    /// The board.
    pub board: Vec<Entry>,
    /// The work modules.
    #[serde(default)]
    pub plan: Plan,
    /// Tokens used, in total.
    pub usage: Usage,
    /// Tokens used, per agent.
    pub usage_by_agent: BTreeMap<String, Usage>,
    /// How the run stands.
    pub status: RunStatus,
    /// The answer, once there is one.
    pub answer: Option<String>,
    /// The last error that stopped the run.
    pub error: Option<String>,
    /// Set when a failed run is resumed: the round's assignments that
    /// ended in an error of any kind run again (a mid-round crash re-runs
    /// only those that failed on the transport).
    #[serde(skip)]
    pub(crate) rerun_errors: bool,
    /// A handoff run's own state: the steps so far, the active agent, the
    /// context variables.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handoff: Option<crate::process::handoff::HandoffState>,
}

impl RunState {
    /// A fresh run about to plan.
    pub fn new(run_id: String, task: String) -> Self {
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
            handoff: None,
        }
    }
}
