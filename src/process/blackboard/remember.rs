//! Master memory after a run: the master is asked what is worth
//! remembering, and the note is kept for the team's next runs.

use super::Blackboard;
use super::prompt;
use crate::event::RunStatus;
use crate::model::Phase;

impl Blackboard<'_> {
    /// Asks the master for a memory note and stores it (when the runtime
    /// has a [`MasterMemory`](crate::store::MasterMemory) and the run has an answer).
    pub(crate) fn update_memory(&self) {
        let Some(memory) = &self.room.core.config.master_memory else {
            return;
        };
        let Some(answer) = self
            .state
            .answer
            .as_deref()
            .filter(|a| !a.trim().is_empty())
        else {
            return;
        };
        if !matches!(
            self.state.status,
            RunStatus::Done | RunStatus::RoundLimit | RunStatus::BudgetExhausted
        ) || memory.remembers(&self.room.core.run_id)
        {
            return;
        }
        let master = self.room.team.master();
        let messages = prompt::memory(&self.room.team, &self.state.task, answer);
        let asked = self.room.call_until(
            master,
            Phase::Memory,
            self.state.round,
            messages,
            "a few short bullet points",
            |r| Ok(r.text.trim().to_string()),
        );
        crate::process::memory_note::keep(memory, &self.room.core.run_id, &self.state.task, asked);
    }
}
