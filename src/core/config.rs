//! What a run is configured with, apart from what each run has of its own.
//!
//! [`RunConfig`] holds the settings the builder ([`Runtime`](crate::Runtime))
//! collects; a run reads them through `&RunConfig` and never changes them.
//! [`RunContext`] is the small part that differs between two runs of one
//! configuration: the stop flag, the run's own event channel, the user's
//! message a resumed run took, and the runs directory it writes to.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::Sender;

use super::cancel::Cancel;
use crate::event::Event;
use crate::memory::MasterMemory;
use crate::model::SharedModel;
use crate::plan::Plan;
use crate::protocol::Protocol;
use crate::record::Executor;
use crate::team::Team;
use crate::tools::Tool;

/// The default round cap.
pub(crate) const DEFAULT_MAX_ROUNDS: u32 = 5;

/// The settings of a run, frozen when it starts (the builder shares them
/// in an `Arc`; a setting changed after a start makes a new copy).
#[derive(Clone)]
pub(crate) struct RunConfig {
    pub(crate) team: Team,
    /// The default model: every agent whose `model:` names no other.
    pub(crate) model: SharedModel,
    pub(crate) max_rounds: Option<u32>,
    pub(crate) max_parallel: Option<usize>,
    /// What runs a round's members.
    pub(crate) executor: Option<Executor>,
    /// The widest phase `auto` runs on rayon, when a test sets it (else
    /// [`Executor::auto_limit`]).
    pub(crate) auto_limit: Option<usize>,
    /// The caller's channel, shared by every run of this configuration.
    pub(crate) events: Option<Sender<Event>>,
    /// Whether each started run gets a channel of its own.
    pub(crate) per_run_events: bool,
    /// Whether the caller's process exits once a started run's result is
    /// in (a command-line run): see [`Runtime::exits_after_run`](crate::Runtime::exits_after_run).
    pub(crate) exits_after_run: bool,
    /// A test holds the run's thread here once the run has handed its
    /// result over ([`Core::end`](super::Core::end)), until it opens.
    #[cfg(test)]
    pub(crate) after_end: Option<std::sync::Arc<TestGate>>,
    /// A test holds a checkpoint written aside (`Core::save_aside`) on
    /// its thread, before it writes, until it opens.
    #[cfg(test)]
    pub(crate) aside_write: Option<std::sync::Arc<TestGate>>,
    /// Whether an agent whose tool call needs approval waits for a
    /// decision (else the run stops with status `awaiting_approval`).
    pub(crate) wait_for_approvals: bool,
    /// The master's memory, as given (without a [`MasterMemory`]).
    pub(crate) memory: String,
    pub(crate) workspace: Option<PathBuf>,
    pub(crate) token_budget: Option<u64>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) protocol: Option<Protocol>,
    /// Where new runs get their directory.
    pub(crate) runs_dir: Option<PathBuf>,
    pub(crate) master_memory: Option<MasterMemory>,
    /// The spec the default model was built from (saved for a resume).
    pub(crate) model_spec: Option<String>,
    /// The program's own tools.
    pub(crate) tools: Vec<Arc<dyn Tool>>,
    /// Work modules a new run starts with.
    pub(crate) seed: Plan,
    /// The agent that launched the run: the parent of events with no other.
    pub(crate) parent: Option<String>,
    /// The conversation the run belongs to (a chat's id), for traces.
    pub(crate) session: Option<String>,
    /// Context variables set for this run, in order.
    pub(crate) vars: Vec<(String, String)>,
}

impl RunConfig {
    /// The team's context variables with the run's overrides, and the team
    /// with its souls rendered against them: where a process starts.
    ///
    /// # Errors
    ///
    /// An override that names no variable or does not fit it; a soul that
    /// does not render.
    pub(crate) fn rendered_team(&self) -> Result<(crate::team::Variables, Team), super::RunError> {
        let vars = self
            .team
            .variables()
            .with_overrides(&self.vars)
            .map_err(super::RunError::Variables)?;
        let team = self
            .team
            .with_rendered_souls(&vars)
            .map_err(|(name, source)| super::RunError::Template {
                place: super::error::TemplatePlace::Soul(name),
                source,
            })?;
        Ok((vars, team))
    }

    /// The settings of a runtime for `team` with `model` as its default.
    pub(crate) fn new(team: Team, model: SharedModel) -> Self {
        RunConfig {
            team,
            model,
            max_rounds: None,
            max_parallel: None,
            executor: None,
            auto_limit: None,
            events: None,
            per_run_events: false,
            exits_after_run: false,
            #[cfg(test)]
            after_end: None,
            #[cfg(test)]
            aside_write: None,
            wait_for_approvals: false,
            memory: String::new(),
            workspace: None,
            token_budget: None,
            timeout: None,
            protocol: None,
            runs_dir: None,
            master_memory: None,
            model_spec: None,
            tools: Vec::new(),
            seed: Plan::default(),
            parent: None,
            session: None,
            vars: Vec::new(),
        }
    }

    /// The effective round cap: the builder's, else `team.yaml`'s, else 5.
    pub(crate) fn rounds_cap(&self) -> u32 {
        self.max_rounds
            .or(self.team.config().max_rounds)
            .unwrap_or(DEFAULT_MAX_ROUNDS)
    }

    /// The effective cap on members at once, if any.
    pub(crate) fn parallel_cap(&self) -> Option<usize> {
        self.max_parallel.or(self.team.config().max_parallel)
    }

    /// The executor in effect: the builder's, else `team.yaml`'s, else
    /// [`Executor::Auto`].
    pub(crate) fn executor_setting(&self) -> Executor {
        self.executor
            .or(self.team.config().executor)
            .unwrap_or_default()
    }

    /// The widest phase [`Executor::Auto`] runs on rayon.
    pub(crate) fn auto_limit(&self) -> usize {
        self.auto_limit.unwrap_or_else(Executor::auto_limit)
    }

    /// The effective token budget, if any.
    pub(crate) fn token_budget(&self) -> Option<u64> {
        self.token_budget.or(self.team.config().token_budget)
    }

    /// The effective wall-clock limit, if any.
    pub(crate) fn time_limit(&self) -> Option<Duration> {
        self.timeout.or(self.team.config().timeout())
    }

    /// The protocol in effect, if the builder or the team sets one.
    pub(crate) fn protocol_setting(&self) -> Option<Protocol> {
        self.protocol.or(self.team.config().protocol)
    }
}

/// A gate a test holds a thread at until it opens (60 s at most: a test
/// that fails before it opens its gate fails, it does not hang).
#[cfg(test)]
#[derive(Debug, Default)]
pub(crate) struct TestGate {
    open: parking_lot::Mutex<bool>,
    opened: parking_lot::Condvar,
    /// Threads that came to the gate.
    pub(crate) arrived: std::sync::atomic::AtomicUsize,
}

#[cfg(test)]
impl TestGate {
    pub(crate) fn open(&self) {
        *self.open.lock() = true;
        self.opened.notify_all();
    }

    /// Counts a thread come to the gate (before it [`TestGate::hold`]s:
    /// what it does in between is seen as done at the gate).
    pub(crate) fn arrive(&self) {
        self.arrived
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    /// Waits until the gate opens.
    pub(crate) fn hold(&self) {
        let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let mut open = self.open.lock();
        while !*open && !self.opened.wait_until(&mut open, until).timed_out() {}
    }
}

/// What one run has of its own, beside its [`RunConfig`].
#[derive(Debug, Default)]
pub(crate) struct RunContext {
    /// This run's stop flag.
    pub(crate) cancel: Cancel,
    /// The sending side of this run's own channel, if it has one.
    pub(crate) events: Option<Sender<Event>>,
    /// The user's message a resumed run took (announced once as a
    /// `user_message` event when it starts).
    pub(crate) user_message: Option<String>,
    /// The directory this run's directory is in (a resumed run: the one
    /// it was found in), if it is saved.
    pub(crate) runs_dir: Option<PathBuf>,
    /// This run's tool calls that wait for a decision.
    pub(crate) approvals: super::Approvals,
    /// Where the outcome goes as soon as the run is reported done, before
    /// its memory notes (a [`RunHandle`](crate::RunHandle)'s).
    pub(crate) reported: Option<crossbeam_channel::Sender<crate::core::RunOutcome>>,
    /// Where the run's result goes once the run is over (a
    /// [`RunHandle`](crate::RunHandle)'s): sent as soon as the run is
    /// closed, before it is freed and its threads end, or by the run's
    /// thread afterwards when the run did not get that far. `None`: the
    /// caller waits for the whole run to return ([`Runtime::run`](crate::Runtime::run)).
    pub(crate) ended: Option<Ended>,
}

/// The one slot of a started run's result: whoever takes the sender
/// first sends it.
pub(crate) type Ended = std::sync::Arc<
    parking_lot::Mutex<
        Option<crossbeam_channel::Sender<Result<crate::core::RunOutcome, crate::core::RunError>>>,
    >,
>;
