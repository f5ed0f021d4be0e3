//! Modules' transcripts read back from `turns.jsonl`: a module built of
//! turns is saved with their ids (`context_turns`, see `plan/archive.rs`),
//! and every reader of a run gets its `context_archive` whole.

use std::collections::HashMap;
use std::path::Path;

use super::StoreError;
use crate::plan::WorkModule;
use crate::record::Turn;

/// Reads back the transcripts of `modules` that were saved as turn ids,
/// from the turns of the run in `dir` (`task`: the run's task, which a
/// long one is cut out of the turns for). Reads `turns.jsonl` only when a
/// module needs it. A turn that is not there (a power cut lost the end of
/// the file) adds nothing to the transcript, and is logged.
pub(crate) fn read_back<'m>(
    dir: &Path,
    task: Option<&str>,
    modules: impl IntoIterator<Item = &'m mut WorkModule>,
) -> Result<(), StoreError> {
    let pending: Vec<&mut WorkModule> = modules
        .into_iter()
        .filter(|m| m.turns_to_read().next().is_some())
        .collect();
    if pending.is_empty() {
        return Ok(());
    }
    let turns = super::read::read_turns_for(dir, task)?;
    // A turn id is unique in a run; were one written twice, the later wins.
    let by_id: HashMap<u32, &Turn> = turns
        .items
        .iter()
        .map(|t| (t.turn_id.number(), t))
        .collect();
    for m in pending {
        let agent = m.assigned_agent.clone();
        let missing = m.read_turns_with(|n| {
            let t = by_id.get(&n)?;
            // The member's own call, or not the turn the module meant.
            if agent.as_deref().is_some_and(|a| a != t.agent) {
                return None;
            }
            Some((&t.messages[..], t.answer.as_deref(), t.error.as_deref()))
        });
        if !missing.is_empty() {
            let ids: Vec<String> = missing.iter().map(|n| format!("t{n:04}")).collect();
            log::warn!(
                "{}: module {}: turns.jsonl lacks turn {} of its transcript; read without it",
                dir.display(),
                m.task_id,
                ids.join(", ")
            );
        }
    }
    Ok(())
}
