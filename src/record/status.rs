//! How a run stands.

use serde::{Deserialize, Serialize};

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum RunStatus {
    /// Still going (in snapshots).
    Running,
    /// The master said DONE.
    Done,
    /// The round cap was reached; the master gave its best answer.
    RoundLimit,
    /// The token budget ran out; the best answer so far was given.
    BudgetExhausted,
    /// The run's wall-clock limit passed; the best answer so far was given.
    TimedOut,
    /// Cancelled by the caller.
    Cancelled,
    /// The run failed without an answer.
    Failed,
    /// The run stopped to wait for its user's reply (a handoff team that
    /// returns to the user, a master that asks). It is saved;
    /// `boardroom resume RUN_ID --message TEXT` or
    /// [`Runtime::resume_with_message`](crate::Runtime::resume_with_message)
    /// continues it with the reply.
    AwaitingUser,
    /// A handoff run took `max_turns` agent turns; the last answer was
    /// given.
    TurnLimit,
    /// A handoff run reached `max_handoffs`; the last answer was given.
    HandoffLimit,
    /// The run stopped at tool calls that wait for a person's decision
    /// (`approve:` in the team) with nobody there to decide. It is saved;
    /// `boardroom resume RUN_ID --approve CALL` (or `--deny CALL`) or
    /// [`Runtime::start_resume_deciding`](crate::Runtime::start_resume_deciding)
    /// continues it.
    AwaitingApproval,
}

impl RunStatus {
    /// The snake_case name.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Done => "done",
            RunStatus::RoundLimit => "round_limit",
            RunStatus::BudgetExhausted => "budget_exhausted",
            RunStatus::TimedOut => "timed_out",
            RunStatus::Cancelled => "cancelled",
            RunStatus::Failed => "failed",
            RunStatus::AwaitingUser => "awaiting_user",
            RunStatus::TurnLimit => "turn_limit",
            RunStatus::HandoffLimit => "handoff_limit",
            RunStatus::AwaitingApproval => "awaiting_approval",
        }
    }
}
