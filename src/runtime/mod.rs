//! The runtime and the run core every process drives: the [`Runtime`]
//! builder, [`RunHandle`], and the core of one run (`core.rs`: ids,
//! models, tools, budget and usage, turns, cancellation, the run
//! directory, the event bus). The processes themselves live in
//! `crate::process`.

pub(crate) mod budget;
mod bus;
pub(crate) mod call;
pub(crate) mod core;
mod error;
mod executor;
mod handle;
pub(crate) mod id;
mod models;
pub(crate) mod persist;
pub(crate) mod pool;
mod saved;
mod seed;
#[cfg(test)]
mod tests;
pub(crate) mod tool_loop;
pub(crate) mod turns;

use std::sync::Arc;

use crossbeam_channel::Sender;

use crate::board::Entry;
use crate::event::Event;
use crate::model::{ChatModel, SharedModel, Usage};
use crate::record::RunStatus;
use crate::team::Team;

pub(crate) use crate::record::{RunPhase, RunState, Turn, UserNote};
pub use error::{MasterPhase, RunError, ThreadError};
pub(crate) use executor::Executor;
pub use handle::{Cancel, RunHandle};
pub use pool::panic_is_caught;

/// The default round cap.
pub(crate) const DEFAULT_MAX_ROUNDS: u32 = 5;

/// Runs a team on a task. Cheap to clone.
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
    pub(crate) team: Team,
    pub(crate) model: SharedModel,
    pub(crate) max_rounds: Option<u32>,
    pub(crate) max_parallel: Option<usize>,
    /// What runs a round's members (see [`Runtime::executor`]).
    pub(crate) executor: Option<Executor>,
    /// The widest phase `auto` runs on rayon, when a test sets it (else
    /// [`Executor::auto_limit`]).
    pub(crate) auto_limit: Option<usize>,
    pub(crate) events: Option<Sender<Event>>,
    /// Whether [`Runtime::start`] gives each run a channel of its own.
    pub(crate) per_run_events: bool,
    /// The sending side of this run's own channel (set per spawned run).
    pub(crate) run_events: Option<Sender<Event>>,
    /// This run's stop flag: fresh for every [`Runtime::start`], so a
    /// stopped run never stops the next one or a clone's.
    pub(crate) cancel: Cancel,
    pub(crate) memory: String,
    pub(crate) workspace: Option<std::path::PathBuf>,
    pub(crate) token_budget: Option<u64>,
    pub(crate) timeout: Option<std::time::Duration>,
    pub(crate) protocol: Option<crate::protocol::Protocol>,
    pub(crate) runs_dir: Option<std::path::PathBuf>,
    pub(crate) master_memory: Option<crate::memory::MasterMemory>,
    pub(crate) model_spec: Option<String>,
    pub(crate) tools: Vec<Arc<dyn crate::tools::Tool>>,
    /// Work modules a new run starts with (see [`Runtime::modules`]).
    pub(crate) seed: crate::plan::Plan,
    /// The agent that launched the run (see [`Runtime::parent`]).
    pub(crate) parent: Option<String>,
    /// Context variables set for this run (`--var`), in order.
    pub(crate) vars: Vec<(String, String)>,
    /// The user's message this resumed run took (announced once as a
    /// `user_message` event when it starts).
    pub(crate) user_message: Option<String>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("team", &self.team.name())
            .field("model", &self.model.name())
            .field("max_rounds", &self.max_rounds)
            .field("max_parallel", &self.max_parallel)
            .field("executor", &self.executor)
            .finish_non_exhaustive()
    }
}

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
    /// Tokens used.
    pub usage: Usage,
    /// Tokens used by each agent.
    pub usage_by_agent: std::collections::BTreeMap<String, Usage>,
    /// The work modules.
    pub plan: crate::plan::Plan,
    /// The steps of a handoff run (empty for a blackboard run).
    pub steps: Vec<crate::process::handoff::HandoffStep>,
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

impl Runtime {
    /// A runtime for `team` whose agents use `model` unless their `model:`
    /// names another.
    pub fn new(team: Team, model: impl ChatModel + 'static) -> Self {
        Runtime {
            team,
            model: Arc::new(model),
            max_rounds: None,
            max_parallel: None,
            executor: None,
            auto_limit: None,
            events: None,
            per_run_events: false,
            run_events: None,
            cancel: Cancel::new(),
            memory: String::new(),
            workspace: None,
            token_budget: None,
            timeout: None,
            protocol: None,
            runs_dir: None,
            master_memory: None,
            model_spec: None,
            tools: Vec::new(),
            seed: crate::plan::Plan::default(),
            parent: None,
            vars: Vec::new(),
            user_message: None,
        }
    }

    /// A runtime whose default model is already shared.
    pub fn with_shared_model(team: Team, model: SharedModel) -> Self {
        Runtime {
            model,
            ..Runtime::new(team, crate::testing::Sim::new())
        }
    }

    /// Caps the rounds of members (default: `team.yaml`, else 5). A
    /// handoff team has no rounds: its caps are `max_turns` and
    /// `max_handoffs` in `team.yaml` (the CLI refuses `--rounds` for it).
    #[must_use]
    pub fn max_rounds(mut self, rounds: u32) -> Self {
        self.max_rounds = Some(rounds.max(1));
        self
    }

    /// Caps the members that run at once (default: `team.yaml`, else all
    /// of a round). A handoff team runs one agent at a time and does not
    /// use it (the CLI refuses `--parallel` for it).
    #[must_use]
    pub fn max_parallel(mut self, parallel: usize) -> Self {
        self.max_parallel = Some(parallel.max(1));
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
        self.executor = Some(executor);
        self
    }

    /// For tests: the widest phase [`Executor::Auto`] runs on rayon, in
    /// place of [`Executor::auto_limit`].
    #[doc(hidden)]
    #[must_use]
    pub fn auto_limit_for_tests(mut self, limit: usize) -> Self {
        self.auto_limit = Some(limit);
        self
    }

    /// Sends every event of the run to `sender`. Every run started from
    /// this runtime or its clones sends to the same channel (events carry
    /// their `run_id`); for a receiver per run, see
    /// [`Runtime::events_per_run`].
    #[must_use]
    pub fn events(mut self, sender: Sender<Event>) -> Self {
        self.events = Some(sender);
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
        self.per_run_events = true;
        self
    }

    /// Gives the master this memory of earlier runs.
    #[must_use]
    pub fn memory(mut self, memory: impl Into<String>) -> Self {
        self.memory = memory.into();
        self
    }

    /// The directory where agents' files go (workspace tools, `plan.json`,
    /// `report.md`). Without one, workspace tools refuse to run.
    #[must_use]
    pub fn workspace(mut self, dir: impl Into<std::path::PathBuf>) -> Self {
        self.workspace = Some(dir.into());
        self
    }

    /// Ends the run gracefully, with the best answer so far, once it has
    /// used `tokens` tokens (default: `team.yaml`'s `token_budget`, else no
    /// limit). Calls in flight finish, so a run may end a little over.
    #[must_use]
    pub fn token_budget(mut self, tokens: u64) -> Self {
        self.token_budget = Some(tokens);
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
        self.timeout = Some(limit);
        self
    }

    /// How the master and challengers write their decisions (default:
    /// `team.yaml`'s `protocol`, else [`Protocol::Line`](crate::protocol::Protocol::Line)).
    #[must_use]
    pub fn protocol(mut self, protocol: crate::protocol::Protocol) -> Self {
        self.protocol = Some(protocol);
        self
    }

    /// Adds a tool of the program's own to the run's registry (beside the
    /// built-ins and the MCP servers' tools). Agents use it when their
    /// `tools:` grants its name.
    #[must_use]
    pub fn tool(mut self, tool: impl crate::tools::Tool + 'static) -> Self {
        self.tools.push(Arc::new(tool));
        self
    }

    /// Sets a context variable of the team for this run (as `--var
    /// name=value` does), over its default in `team.yaml`. Repeatable;
    /// the last value wins.
    ///
    /// A name the team does not declare makes the run fail to start with
    /// [`RunError::Process`], naming the declared ones.
    #[must_use]
    pub fn var(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.vars.push((name.into(), value.into()));
        self
    }

    /// The team.
    #[must_use]
    pub fn team(&self) -> &Team {
        &self.team
    }

    /// The effective round cap.
    #[must_use]
    pub fn rounds_cap(&self) -> u32 {
        self.max_rounds
            .or(self.team.config().max_rounds)
            .unwrap_or(DEFAULT_MAX_ROUNDS)
    }

    pub(crate) fn parallel_cap(&self) -> Option<usize> {
        self.max_parallel.or(self.team.config().max_parallel)
    }

    /// The executor setting in effect: [`Runtime::executor`], else
    /// `team.yaml`'s, else [`Executor::Auto`].
    #[must_use]
    pub fn executor_setting(&self) -> Executor {
        self.executor
            .or(self.team.config().executor)
            .unwrap_or_default()
    }

    /// The widest phase [`Executor::Auto`] runs on rayon.
    pub(crate) fn auto_limit(&self) -> usize {
        self.auto_limit.unwrap_or_else(Executor::auto_limit)
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
        self.drive_in(state, persist::Opening::New)
    }

    /// Continues a run from a snapshot of its state.
    ///
    /// # Errors
    ///
    /// As [`Runtime::run`].
    pub(crate) fn drive(&self, state: RunState) -> Result<RunOutcome, RunError> {
        self.drive_in(state, persist::Opening::Either)
    }
}
