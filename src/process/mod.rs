//! The processes: one driver per way a team works, each over the run core
//! (`crate::runtime::core`). A driver owns its state and its prompts, and
//! drives phases or steps through the core; it knows nothing of the other
//! drivers. Adding a process is a new folder here and one arm in each
//! `match` of this file.

pub(crate) mod blackboard;
pub(crate) mod handoff;
pub(crate) mod memory_note;

use std::path::Path;
use std::sync::Arc;

use crate::runtime::persist::Opening;
use crate::runtime::{RunError, RunOutcome, RunState, Runtime};
use crate::store::{RunLock, RunRecord};
use crate::team::{Process, Team};

/// The driver of one run.
pub(crate) enum Driver<'a> {
    /// Master, parallel members, challenge round, review.
    Blackboard(Box<blackboard::BlackboardRun<'a>>),
    /// One active agent at a time, passing control by handoff.
    Handoff(Box<handoff::Handoff<'a>>),
}

impl<'a> Driver<'a> {
    /// Builds the core of the run and the team's process over it.
    pub(crate) fn start(
        rt: &'a Runtime,
        state: RunState,
        opening: Opening,
    ) -> Result<Self, RunError> {
        match rt.team.config().process {
            Process::Blackboard => Ok(Driver::Blackboard(Box::new(
                blackboard::BlackboardRun::start(rt, state, opening)?,
            ))),
            Process::Handoff => Ok(Driver::Handoff(Box::new(handoff::Handoff::start(
                rt, state, opening,
            )?))),
        }
    }

    /// The run directory's lock, to hold until the run's last word is
    /// written.
    pub(crate) fn lock(&self) -> Option<Arc<RunLock>> {
        match self {
            Driver::Blackboard(b) => b.core.persist.lock(),
            Driver::Handoff(h) => h.core.persist.lock(),
        }
    }

    /// Runs the process to its end.
    pub(crate) fn drive(self) -> Result<RunOutcome, RunError> {
        match self {
            Driver::Blackboard(b) => b.drive(),
            Driver::Handoff(h) => h.drive(),
        }
    }
}

/// The state a saved run goes on from: the process replays what its
/// journal holds after the snapshot, makes a stopped or failed run
/// runnable again, and takes the user's message if there is one.
pub(crate) fn prepare_resume(
    team: &Team,
    dir: &Path,
    record: RunRecord,
    message: Option<&str>,
) -> Result<RunState, RunError> {
    match team.config().process {
        Process::Blackboard => {
            if message.is_some() {
                blackboard::resume::check_message(&record.state)?;
            }
            let mut state = blackboard::resume::prepare(dir, record)?;
            if let Some(message) = message {
                blackboard::resume::take_message(&mut state, message)?;
            }
            Ok(state)
        }
        Process::Handoff => handoff::resume::prepare(dir, record, message),
    }
}
