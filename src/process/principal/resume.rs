//! Resuming a principal run: the last snapshot (saved after every
//! principal turn and as each associate delivers, so no delivered module
//! is asked for again), plus the usage of every call journaled after it.

use std::path::Path;

use crate::core::{Refusal, RunError};
use crate::event::RunStatus;
use crate::record::{RunPhase, RunState};
use crate::store::{self, JournalRecord, RunRecord};

/// The state a saved principal run goes on from.
pub(crate) fn prepare(
    dir: &Path,
    record: RunRecord,
    message: Option<&str>,
) -> Result<RunState, RunError> {
    let mut state = record.state;
    let journal =
        store::read_journal(dir, record.journal_len.unwrap_or(0)).map_err(RunError::Store)?;
    for w in &journal.warnings {
        log::warn!("{}: {w}", dir.display());
    }
    // Every call finished after the snapshot was paid for: the snapshot
    // names the journal length its usage covers.
    for r in journal.items {
        if let JournalRecord::Usage { agent, usage, .. } = r {
            state.usage.add(usage);
            state.usage_by_agent.entry(agent).or_default().add(usage);
        }
    }
    if message.is_some() {
        return Err(RunError::MessageRefused {
            run_id: state.run_id.clone(),
            status: state.status,
            why: Refusal::NotWaiting,
        });
    }
    if matches!(
        state.status,
        RunStatus::Cancelled | RunStatus::Failed | RunStatus::AwaitingApproval
    ) && state.phase != RunPhase::Finished
    {
        state.status = RunStatus::Running;
        state.error = None;
    }
    Ok(state)
}
