//! The builder's settings: each one changes the runtime's [`RunConfig`]
//! (its own copy, when a clone or a run shares it), and every run started
//! afterwards reads them frozen.
//!
//! [`RunConfig`]: crate::core::RunConfig

use std::path::PathBuf;
use std::sync::Arc;

use crossbeam_channel::Sender;

use super::Runtime;
use crate::event::Event;
use crate::memory::MasterMemory;
use crate::plan::Plan;
use crate::record::Executor;
use crate::store::RunRecord;

impl Runtime {
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
    /// [`Runtime::max_parallel`]) has a thread of its own, named, and the
    /// threads end while the master reviews the run's last round. Under
    /// [`Runtime::run`] every member thread has ended before the run
    /// returns (the run's own helper threads, `-events` and `-save`, have
    /// done their work by then and may still be ending). A started run
    /// that gets to its end hands its result to
    /// [`RunHandle::wait`](crate::RunHandle::wait) as soon as it is
    /// closed, and its thread (`boardroom-run`) then joins the member
    /// threads (see [`Runtime::exits_after_run`]). The run's `run_started` event
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

    /// Says that the caller's process exits as soon as a started run's
    /// result is in ([`RunHandle::wait`](crate::RunHandle::wait)), as a
    /// command-line run does. Such a run keeps its member threads through
    /// its last review instead of ending them while the master reviews:
    /// the process's exit ends them all at once, where a thousand threads
    /// ending one by one each unmap memory under the process's one
    /// memory-map lock (measured on two cores: they were still ending
    /// after the review, slowing the run's end). After handing the result
    /// over, the run's thread waits two seconds more before it ends them:
    /// the process's exit comes first. Meanwhile the run's thread holds
    /// its runtime, so a sender given to [`Runtime::events`] ends two
    /// seconds after the result (a run's own channel,
    /// [`Runtime::events_per_run`], ends with the result). A run that
    /// waits for its user or for decisions does not wait: its caller goes
    /// on with it. A process that goes on after the run (a server, a chat)
    /// should not say this: its run's threads would be kept two seconds
    /// for nothing, then end one by one. No effect on [`Runtime::run`],
    /// which ends them before it returns.
    #[must_use]
    pub fn exits_after_run(mut self) -> Self {
        self.set().exits_after_run = true;
        self
    }

    /// Lets an agent whose tool call needs approval (`approve:` on the
    /// agent or in `team.yaml`) wait for a decision through
    /// [`RunHandle::decide`](crate::RunHandle::decide) while the other
    /// agents go on. Without it (the default) such a call stops the run,
    /// saved with status [`RunStatus::AwaitingApproval`](crate::RunStatus::AwaitingApproval),
    /// and [`Runtime::start_resume_deciding`] goes on with decisions. The
    /// run's time limit still holds: a wait it ends stops the run the same
    /// way, resumable.
    #[must_use]
    pub fn wait_for_approvals(mut self, wait: bool) -> Self {
        self.set().wait_for_approvals = wait;
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

    /// Starts new runs with these work modules: the master's first turn
    /// sees every open one as a pending module to assign (an assignment
    /// that names a module's id or repeats its description takes that
    /// module over instead of adding one). Used by `boardroom chat`, where
    /// the partner drafts the modules.
    ///
    /// # Examples
    ///
    /// ```
    /// use boardroom::{Runtime, Team};
    /// use boardroom::plan::Plan;
    /// use boardroom::testing::Sim;
    ///
    /// let mut plan = Plan::default();
    /// plan.add("Find a venue for 20 people", None);
    /// let run = Runtime::new(Team::builtin()?, Sim::new())
    ///     .modules(plan)
    ///     .parent("partner")
    ///     .run("Plan a team offsite")?;
    /// assert_eq!(run.plan.tasks[0].task_id, "task_001");
    /// assert_eq!(run.plan.tasks[0].metadata["added_by"], "partner");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn modules(mut self, plan: Plan) -> Self {
        self.set().seed = plan;
        self
    }

    /// Names the agent that launched the run (`partner`): the parent of
    /// every event that has no other (the master's), so a viewer draws the
    /// run under it.
    #[must_use]
    pub fn parent(mut self, agent: impl Into<String>) -> Self {
        self.set().parent = Some(agent.into());
        self
    }

    /// Names the conversation the run belongs to (the id of the chat that
    /// launched it): its `run_started` event carries it, and its traces
    /// give it as their `session.id`.
    #[must_use]
    pub fn session(mut self, id: impl Into<String>) -> Self {
        self.set().session = Some(id.into());
        self
    }

    /// Writes the run to `<dir>/<run-id>/` (`run.json`, `events.jsonl`,
    /// `turns.jsonl`, `workspace/`). Without it nothing is written. The
    /// run's workspace is `<dir>/<run-id>/workspace` unless
    /// [`Runtime::workspace`] names another.
    #[must_use]
    pub fn runs_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.set().runs_dir = Some(dir.into());
        self
    }

    /// Gives the master the memory kept in `memory` (read when each run
    /// starts, so a run sees what the one before it added) and, after each
    /// run that ends with an answer, asks it what to add. It takes the
    /// place of [`Runtime::memory`].
    #[must_use]
    pub fn master_memory(mut self, memory: MasterMemory) -> Self {
        self.set().master_memory = Some(memory);
        self
    }

    /// Records the model spec the default model was built from, so that a
    /// resume can build it again (it goes into `run.json`).
    #[must_use]
    pub fn model_spec(mut self, spec: impl Into<String>) -> Self {
        self.set().model_spec = Some(spec.into());
        self
    }

    /// A runtime for a saved run, as it was started: its team (as saved,
    /// souls included), round cap, parallelism, token budget, protocol and executor,
    /// with `model` as the default model (build it from
    /// [`RunSettings::model_spec`](crate::store::RunSettings::model_spec) or choose another). Add what the saved
    /// run cannot know (events, memory, a time limit), then call
    /// [`Runtime::resume`] or [`Runtime::resume_with_message`].
    ///
    /// # Errors
    ///
    /// A [`TeamError`](crate::TeamError) when the saved team no longer
    /// loads.
    pub fn for_saved(
        record: &RunRecord,
        model: crate::model::SharedModel,
    ) -> Result<Runtime, crate::team::TeamError> {
        let settings = &record.settings;
        let mut rt = Runtime::with_shared_model(record.team.to_team()?, model)
            .max_rounds(settings.max_rounds);
        if let Some(p) = settings.max_parallel {
            rt = rt.max_parallel(p);
        }
        if let Some(n) = settings.token_budget {
            rt = rt.token_budget(n);
        }
        if let Some(p) = settings.protocol {
            rt = rt.protocol(p);
        }
        if let Some(x) = settings.executor {
            rt = rt.executor(x);
        }
        for (name, value) in &settings.vars {
            rt = rt.var(name, value);
        }
        Ok(rt)
    }
}
