//! The public face of a run: the [`Runtime`] builder, [`RunHandle`],
//! starting and resuming runs, and the choice of the process that drives
//! them (`resume.rs`, one `match` on the team's process). The run core is
//! `crate::core`; the processes are `crate::process`.

mod executor;
mod handle;
pub(crate) mod id;
mod resume;
mod seed;
mod state;
#[cfg(test)]
mod tests;
pub(crate) mod turns;

use std::sync::Arc;

use crossbeam_channel::Sender;

use crate::core::RunConfig;
use crate::event::Event;
use crate::model::{ChatModel, SharedModel};
use crate::team::Team;

pub use crate::core::{
    Cancel, DraftFailures, MasterPhase, Refusal, RunError, RunOutcome, TemplatePlace, ThreadError,
};
pub use executor::{Executor, ParseExecutorError};
pub use handle::RunHandle;
pub use state::{RunPhase, RunState, UserNote};
pub use turns::{ParseTurnIdError, Turn, TurnId};

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

    /// Caps the rounds of members (default: `team.yaml`, else 5). A
    /// handoff team has no rounds: its caps are `max_turns` and
    /// `max_handoffs` in `team.yaml` (the CLI refuses `--rounds` for it).
    #[must_use]
    pub fn max_rounds(mut self, rounds: u32) -> Self {
        self.set().max_rounds = Some(rounds.max(1));
        self
    }

    /// Caps the members that run at once (default: `team.yaml`, else all
    /// of a round). A handoff team runs one agent at a time and does not
    /// use it (the CLI refuses `--parallel` for it).
    #[must_use]
    pub fn max_parallel(mut self, parallel: usize) -> Self {
        self.set().max_parallel = Some(parallel.max(1));
        self
    }

    /// What runs a round's members (default: `team.yaml`'s `executor`,
    /// else [`Executor::Auto`]): a rayon pool, the run's own pool of
    /// threads, or rayon up to [`Executor::auto_limit`] members and the own
    /// pool above. Either way every member of a round (up to
    /// [`Runtime::max_parallel`]) has a thread of its own, named, and every
    /// thread ends before the run returns. The run's `run_started` event
    /// names the executor it started on (under `auto`, a wider round goes
    /// on the own pool). A handoff team runs one agent at a time
    /// and does not use it.
    ///
    /// # Examples
    ///
    /// ```
    /// use boardroom::{Executor, Runtime, Team};
    /// use boardroom::testing::Sim;
    ///
    /// let run = Runtime::new(Team::builtin()?, Sim::new())
    ///     .executor(Executor::Threads)
    ///     .run("Write a haiku about tea")?;
    /// assert!(!run.answer.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn executor(mut self, executor: Executor) -> Self {
        self.set().executor = Some(executor);
        self
    }

    /// For tests: the widest phase [`Executor::Auto`] runs on rayon, in
    /// place of [`Executor::auto_limit`].
    #[doc(hidden)]
    #[must_use]
    pub fn auto_limit_for_tests(mut self, limit: usize) -> Self {
        self.set().auto_limit = Some(limit);
        self
    }

    /// Sends every event of the run to `sender`. Every run started from
    /// this runtime or its clones sends to the same channel (events carry
    /// their `run_id`); for a receiver per run, see
    /// [`Runtime::events_per_run`].
    #[must_use]
    pub fn events(mut self, sender: Sender<Event>) -> Self {
        self.set().events = Some(sender);
        self
    }

    /// Gives every run started from this runtime (or its clones) with
    /// [`Runtime::start`], [`Runtime::start_resume`] or
    /// [`Runtime::start_resume_with_message`] a channel of its own: its
    /// [`RunHandle`] holds the receiver ([`RunHandle::events`],
    /// [`RunHandle::take_events`]), which sees that run's events only and
    /// ends when the run ends. Also sent to [`Runtime::events`]' sender,
    /// if there is one.
    ///
    /// Opt-in, because the channel is unbounded: a handle whose receiver
    /// is never read keeps every event of its run (token deltas included)
    /// in memory until the handle is dropped. Dropping the receiver
    /// (`drop(handle.take_events())`) makes the run's sends to it no-ops;
    /// the run goes on. [`Runtime::run`] makes no such channel.
    ///
    /// # Examples
    ///
    /// ```
    /// use boardroom::{EventKind, RunStatus, Runtime, Team};
    /// use boardroom::testing::Sim;
    ///
    /// let runtime = Runtime::new(Team::builtin()?, Sim::new()).events_per_run();
    /// let mut a = runtime.start("Plan a picnic")?;
    /// let mut b = runtime.clone().start("Plan a party")?;
    /// let (rx_a, rx_b) = (a.take_events().unwrap(), b.take_events().unwrap());
    /// let (id_a, id_b) = (a.run_id().to_string(), b.run_id().to_string());
    /// assert_eq!(a.wait()?.status, RunStatus::Done);
    /// assert_eq!(b.wait()?.status, RunStatus::Done);
    /// // Each receiver ends with its run, and saw only that run.
    /// assert!(rx_a.iter().all(|e| e.run_id == id_a));
    /// let last = rx_b.iter().inspect(|e| assert_eq!(e.run_id, id_b)).last();
    /// assert!(matches!(last.map(|e| e.kind), Some(EventKind::RunFinished { .. })));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn events_per_run(mut self) -> Self {
        self.set().per_run_events = true;
        self
    }

    /// Gives the master this memory of earlier runs.
    #[must_use]
    pub fn memory(mut self, memory: impl Into<String>) -> Self {
        self.set().memory = memory.into();
        self
    }

    /// The directory where agents' files go (workspace tools, `plan.json`,
    /// `report.md`). Without one, workspace tools refuse to run.
    #[must_use]
    pub fn workspace(mut self, dir: impl Into<std::path::PathBuf>) -> Self {
        self.set().workspace = Some(dir.into());
        self
    }

    /// Ends the run gracefully, with the best answer so far, once it has
    /// used `tokens` tokens (default: `team.yaml`'s `token_budget`, else no
    /// limit). Calls in flight finish, so a run may end a little over.
    #[must_use]
    pub fn token_budget(mut self, tokens: u64) -> Self {
        self.set().token_budget = Some(tokens);
        self
    }

    /// Ends the run gracefully, with the best answer on the board, once it
    /// has run for `limit` of wall-clock time (default: `team.yaml`'s
    /// `timeout`, else no limit). Checked before every model call and
    /// between phases: calls in flight finish (each within its own
    /// deadline), so a run may end a little over. The status is
    /// [`RunStatus::TimedOut`]; a run whose board holds no draft by then
    /// fails instead ([`RunError::NoUsableDraft`]).
    #[must_use]
    pub fn timeout(mut self, limit: std::time::Duration) -> Self {
        self.set().timeout = Some(limit);
        self
    }

    /// How the master and challengers write their decisions (default:
    /// `team.yaml`'s `protocol`, else [`Protocol::Line`](crate::protocol::Protocol::Line)).
    #[must_use]
    pub fn protocol(mut self, protocol: crate::protocol::Protocol) -> Self {
        self.set().protocol = Some(protocol);
        self
    }

    /// Adds a tool of the program's own to the run's registry (beside the
    /// built-ins and the MCP servers' tools). Agents use it when their
    /// `tools:` grants its name.
    #[must_use]
    pub fn tool(mut self, tool: impl crate::tools::Tool + 'static) -> Self {
        self.set().tools.push(Arc::new(tool));
        self
    }

    /// Sets a context variable of the team for this run (as `--var
    /// name=value` does), over its default in `team.yaml`. Repeatable;
    /// the last value wins.
    ///
    /// A name the team does not declare makes the run fail to start with
    /// [`RunError::Variables`], naming the declared ones.
    #[must_use]
    pub fn var(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.set().vars.push((name.into(), value.into()));
        self
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
        self.drive_in(self.context(), resume::Start::New(state))
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
        self.drive_in(self.context(), resume::Start::Snapshot(state))
    }
}
