//! Memory after a run (seed 004): the master is asked what is worth
//! remembering, and the note is kept for the team's next runs; then each
//! member that drafted in the run (the first [`MAX_MEMBER_NOTES`] by
//! name) is asked the same of its own work, and its note is kept in its
//! own file beside the master's, for its next drafts. All of it happens
//! after the run is reported done.

/// The most members asked for a note after one run: a round of thousands
/// of members must not end in thousands of calls.
pub(crate) const MAX_MEMBER_NOTES: usize = 8;

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
        self.update_member_memories(memory);
    }

    /// Before the run is reported done (the outcome takes the board):
    /// the drafts of each member that will be asked for its own note.
    pub(crate) fn gather_member_notes(&self) {
        if self.room.core.config.master_memory.is_none() {
            return;
        }
        let mut by_member: std::collections::BTreeMap<String, Vec<String>> = Default::default();
        for e in self.room.board.snapshot().iter() {
            if e.kind == crate::board::EntryKind::Draft {
                by_member
                    .entry(e.author.clone())
                    .or_default()
                    .push(e.text.clone());
            }
        }
        *self.room.member_notes.lock() = by_member.into_iter().take(MAX_MEMBER_NOTES).collect();
    }

    /// Asks each member that drafted in this run for its own note.
    fn update_member_memories(&self, memory: &crate::memory::MasterMemory) {
        let gathered = std::mem::take(&mut *self.room.member_notes.lock());
        for (name, drafts) in gathered {
            let Some(member) = self.room.team.agent(&name) else {
                continue;
            };
            let own = memory.for_member(&name);
            if own.remembers(&self.room.core.run_id) {
                continue;
            }
            let messages = prompt::member_memory(member, &self.state.task, &drafts);
            let asked = self.room.call_until(
                member,
                Phase::Memory,
                self.state.round,
                messages,
                "a few short bullet points",
                |r| Ok(r.text.trim().to_string()),
            );
            crate::process::memory_note::keep(
                &own,
                &self.room.core.run_id,
                &self.state.task,
                asked,
            );
        }
    }
}
