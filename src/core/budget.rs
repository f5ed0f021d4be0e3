//! How a run stops before its master has finished: one mechanism for the
//! token budget (`--token-budget` / `token_budget` in `team.yaml` /
//! [`Runtime::token_budget`](crate::Runtime::token_budget)), the wall-clock
//! limit (`--timeout` / `timeout` in `team.yaml` /
//! [`Runtime::timeout`](crate::Runtime::timeout)) and cancellation (Ctrl-C,
//! [`RunHandle::cancel`](crate::RunHandle::cancel)).
//!
//! [`Run::stop_reason`] is checked before every model call and between
//! phases; calls already in flight finish, so a run may end a little over
//! its budget or its time. A spent budget or time ends the run gracefully
//! with the best answer on the board (status `budget_exhausted` or
//! `timed_out`); if the board holds no draft at all, the run fails instead
//! (and stays resumable). A cancelled run saves its state where it stands
//! (status `cancelled`) and can be resumed.

use std::time::Instant;

use crate::model::ModelError;

use super::run::Core;

/// Why a run stops before the master has finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// The caller cancelled it (Ctrl-C).
    Cancelled,
    /// The wall-clock limit passed.
    TimedOut,
    /// The token budget is spent.
    Budget,
    /// A tool call waits for a decision nobody is there to make (or the
    /// time limit passed while it waited): saved, resumable with one.
    AwaitingApproval,
}

impl Stop {
    /// What ran out, for messages: "the token budget ran out".
    pub(crate) fn what(self) -> &'static str {
        match self {
            Stop::Cancelled => "the run was stopped",
            Stop::TimedOut => "the time limit ran out",
            Stop::Budget => "the token budget ran out",
            Stop::AwaitingApproval => "a tool call waits for approval",
        }
    }
}

impl Core<'_> {
    /// The effective budget in tokens, if any.
    pub(crate) fn token_budget(&self) -> Option<u64> {
        self.config.token_budget()
    }

    /// Fails when the budget is spent.
    pub(crate) fn budget_check(&self) -> Result<(), ModelError> {
        match self.token_budget() {
            Some(budget) => {
                let used = self.used_tokens();
                if used >= budget {
                    Err(ModelError::BudgetExhausted { used, budget })
                } else {
                    Ok(())
                }
            }
            None => Ok(()),
        }
    }

    /// Whether the run must stop, and why: cancelled first, then a call
    /// that waits for approval (a wait the time limit ended included),
    /// then the time limit, then the budget.
    pub(crate) fn stop_reason(&self) -> Option<Stop> {
        if self.cancelled() {
            Some(Stop::Cancelled)
        } else if self.approvals().is_parked() {
            Some(Stop::AwaitingApproval)
        } else if self.deadline.is_some_and(|d| Instant::now() >= d) {
            Some(Stop::TimedOut)
        } else if self.budget_check().is_err() {
            Some(Stop::Budget)
        } else {
            None
        }
    }

    /// Before a call: fails when the run must stop.
    pub(crate) fn stop_check(&self) -> Result<(), ModelError> {
        match self.stop_reason() {
            None => Ok(()),
            Some(Stop::Budget) => self.budget_check(),
            Some(_) => Err(ModelError::Cancelled),
        }
    }
}
