//! What a finished run gives back.

use crate::board::Entry;
use crate::event::RunStatus;
use crate::model::Usage;

/// What a finished run gives back.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RunOutcome {
    /// The run's id.
    pub run_id: String,
    /// The final answer.
    pub answer: String,
    /// How it ended.
    pub status: RunStatus,
    /// Rounds of members that ran (a handoff run: its steps).
    pub rounds: u32,
    /// The whole board.
    pub board: Vec<Entry>,
    /// Tokens used up to the run's answer. The memory notes are taken
    /// after the outcome is reported, so their tokens are not in it: they
    /// are in the `run_finished` event's usage, in the saved run's totals
    /// and in `turns.jsonl`.
    pub usage: Usage,
    /// Tokens used by each agent, up to the answer (as `usage`).
    pub usage_by_agent: std::collections::BTreeMap<String, Usage>,
    /// The work modules.
    pub plan: crate::plan::Plan,
    /// The steps of a handoff run (empty for a blackboard run).
    pub steps: Vec<crate::record::HandoffStep>,
}

/// Members' assignments that failed in a run that still gave an answer
/// ([`RunOutcome::draft_failures`]): the run is a partial success.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DraftFailures {
    /// Assignments whose last attempt ended in an error.
    pub failed: usize,
    /// Assignments given to members in the run.
    pub total: usize,
    /// The first failure's text, as the board has it.
    pub first: String,
}

impl std::fmt::Display for DraftFailures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} of {} drafts failed: {}",
            self.failed, self.total, self.first
        )
    }
}

impl RunOutcome {
    /// The members' assignments that ended in an error (the board's
    /// `error` entries with an assignment), if any: a run whose master
    /// answered from what arrived while some drafts failed. `None` when
    /// every assignment has a draft.
    #[must_use]
    pub fn draft_failures(&self) -> Option<DraftFailures> {
        use crate::board::EntryKind;
        // The last entry per assignment wins (a resumed run redoes failed
        // ones).
        let mut last: std::collections::HashMap<(u32, &str, &str), &Entry> =
            std::collections::HashMap::new();
        for e in &self.board {
            let Some(task) = e.task.as_deref() else {
                continue;
            };
            if matches!(e.kind, EntryKind::Draft | EntryKind::Error) {
                last.insert((e.round, e.author.as_str(), task), e);
            }
        }
        let total = last.len();
        let first = self
            .board
            .iter()
            .filter(|e| e.kind == EntryKind::Error)
            .find(|e| {
                e.task
                    .as_deref()
                    .is_some_and(|t| last.get(&(e.round, e.author.as_str(), t)) == Some(e))
            })?;
        let failed = last.values().filter(|e| e.kind == EntryKind::Error).count();
        Some(DraftFailures {
            failed,
            total,
            first: first.text.clone(),
        })
    }
}
