//! The public face of a run: the [`Runtime`] builder, [`RunHandle`],
//! starting and resuming runs, and the choice of the process that drives
//! them (`start.rs`, one `match` on the team's process). The run core is
//! `crate::core`; the processes are `crate::process`.

mod builder;
mod handle;
pub(crate) mod id;
mod seed;
mod start;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use crate::core::RunConfig;
use crate::model::{ChatModel, SharedModel};
use crate::record::{Executor, RunState};
use crate::team::Team;

pub use crate::core::pool::panic_is_caught;
pub use crate::core::{
    ApprovalError, Approvals, Cancel, DraftFailures, MasterPhase, Refusal, RunError, RunOutcome,
    TemplatePlace, ThreadError,
};
pub use handle::RunHandle;

/// Runs a team on a task. Cheap to clone: the settings sit in an `Arc`,
/// frozen for every run started from them (a setting changed on a clone
/// changes that clone's copy only).
///
/// # Examples
///
/// ```
/// use boardroom::{Runtime, Team};
/// use boardroom::testing::Sim;
/// let team = Team::load(".").unwrap();
/// let run = Runtime::new(team, Sim::new()).max_rounds(3).run("Write a haiku about tea").unwrap();
/// assert!(!run.answer.is_empty());
/// ```
#[derive(Clone)]
pub struct Runtime {
    config: Arc<RunConfig>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let c = &self.config;
        f.debug_struct("Runtime")
            .field("team", &c.team.name())
            .field("model", &c.model.name())
            .field("max_rounds", &c.max_rounds)
            .field("max_parallel", &c.max_parallel)
            .field("executor", &c.executor)
            .finish_non_exhaustive()
    }
}

impl Runtime {
    /// A runtime for `team` whose agents use `model` unless their `model:`
    /// names another.
    pub fn new(team: Team, model: impl ChatModel + 'static) -> Self {
        Runtime::with_shared_model(team, Arc::new(model))
    }
    /// A runtime whose default model is already shared.
    pub fn with_shared_model(team: Team, model: SharedModel) -> Self {
        Runtime {
            config: Arc::new(RunConfig::new(team, model)),
        }
    }
    /// The settings, to change (a copy of them if a run or a clone
    /// shares them).
    fn set(&mut self) -> &mut RunConfig {
        Arc::make_mut(&mut self.config)
    }
    /// The settings runs start with.
    pub(crate) fn config(&self) -> &RunConfig {
        &self.config
    }
    /// The team.
    #[must_use]
    pub fn team(&self) -> &Team {
        &self.config.team
    }
    /// The effective round cap.
    #[must_use]
    pub fn rounds_cap(&self) -> u32 {
        self.config.rounds_cap()
    }
    /// The executor setting in effect: [`Runtime::executor`], else
    /// `team.yaml`'s, else [`Executor::Auto`].
    #[must_use]
    pub fn executor_setting(&self) -> Executor {
        self.config.executor_setting()
    }
    /// Runs the task to the end: an answer, or an error.
    ///
    /// # Errors
    ///
    /// A [`RunError`] when the run cannot start (a model that cannot be
    /// built) or ends without an answer (the master's model fails).
    pub fn run(&self, task: &str) -> Result<RunOutcome, RunError> {
        if task.trim().is_empty() {
            return Err(RunError::EmptyTask);
        }
        let state = self.seeded(RunState::new(id::new_run_id(), task.trim().to_string()));
        self.drive_in(self.context(), start::Start::New(state))
    }
    /// Continues a run from a snapshot of its state (what
    /// [`Runtime::start`] does on its thread; the unit tests call it, and
    /// `lib.rs` shows that a caller cannot skip resume's checks with it).
    ///
    /// # Errors
    ///
    /// As [`Runtime::run`].
    #[cfg_attr(not(test), expect(dead_code, reason = "the tests' way in"))]
    pub(crate) fn drive(&self, state: RunState) -> Result<RunOutcome, RunError> {
        self.drive_in(self.context(), start::Start::Snapshot(state))
    }
}
