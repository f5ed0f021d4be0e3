//! How a blackboard run ends before its master has finished (the stop
//! reasons themselves are the core's: see `core/budget.rs`).

use crate::board::EntryKind;
use crate::core::RunError;
use crate::core::budget::Stop;
use crate::event::RunStatus;
use crate::record::RunPhase;
use crate::util::text::{capitalized, humantime};

use super::Blackboard;

impl Blackboard<'_> {
    /// Ends the run early, gracefully. Returns the error to end with when
    /// the board holds no usable draft to answer from.
    pub(crate) fn end_early(&mut self, stop: Stop) -> Result<(), RunError> {
        match stop {
            Stop::Cancelled | Stop::AwaitingApproval => {
                // Saved where it stands: `resume` goes on from this phase.
                self.state.status = if stop == Stop::Cancelled {
                    RunStatus::Cancelled
                } else {
                    RunStatus::AwaitingApproval
                };
                self.checkpoint();
                return Ok(());
            }
            Stop::TimedOut | Stop::Budget => {}
        }
        let has_draft = self
            .room
            .board
            .snapshot()
            .iter()
            .any(|e| e.kind == EntryKind::Draft);
        if !has_draft && self.state.answer.is_none() {
            self.checkpoint();
            return Err(RunError::NoUsableDraft {
                reason: format!("{} before any member produced a usable draft", stop.what()),
            });
        }
        self.state.status = match stop {
            Stop::TimedOut => RunStatus::TimedOut,
            _ => RunStatus::BudgetExhausted,
        };
        if self.state.answer.is_none() {
            let note = match (stop, self.room.core.timeout) {
                (Stop::TimedOut, Some(t)) => format!(
                    "The run's time limit ({}) ran out; the drafts so far:",
                    humantime(t)
                ),
                _ => format!("{}; the drafts so far:", capitalized(stop.what())),
            };
            self.state.answer = Some(self.answer_from_board(&note));
        }
        // Over: a resume would only hit the same limit again.
        self.state.phase = RunPhase::Finished;
        self.checkpoint();
        Ok(())
    }
}
