//! The end of a master-memory call, shared by every process: a usable
//! note is kept for the team's next runs; no note (an unusable answer, a
//! failed call, a store that cannot write) is logged and never fails the
//! run.

use std::fmt::Display;

use crate::core::call::Attempt;
use crate::memory::MasterMemory;

/// Keeps the note the master gave for run `run_id` of `task` in `memory`,
/// or logs why there is none.
pub(crate) fn keep(
    memory: &MasterMemory,
    run_id: &str,
    task: &str,
    asked: Result<Attempt<String>, impl Display>,
) {
    match asked {
        Ok(Attempt::Usable(note)) => {
            if let Err(e) = memory.remember_for(run_id, task, &note) {
                log::warn!("master memory not saved: {e}");
            }
        }
        Ok(Attempt::Unusable(problems)) => {
            log::warn!("the master gave no memory note: {}", problems.join("; "));
        }
        Err(e) => log::warn!("the master gave no memory note: {e}"),
    }
}
