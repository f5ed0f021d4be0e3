//! The core of one run (see the module's map in `core/mod.rs`).
//!
//! A driver owns its state and calls the core; the core never calls back
//! into a driver. Every model call goes through [`Core::call_until`]; every
//! event through [`Core::emit`], which hands it to the subscribers of the
//! run's [`Bus`](super::bus::Bus).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::bus::Bus;
use super::config::{RunConfig, RunContext};
use super::error::RunError;
use super::models;
use super::persist::{Opening, Persist};
use super::turns::TurnTracker;
use crate::event::{Event, EventKind};
use crate::model::{SharedModel, Usage};
use crate::plan::Plan;
use crate::record::{RunPhase, RunState};
use crate::store::JournalRecord;
use crate::team::{AgentSpec, Team};

/// The agent name the user's events carry.
pub(crate) const USER_AGENT: &str = "user";

/// What every run has. Shared by reference with the driver's member
/// threads: everything that changes mid-phase sits behind a short lock.
pub(crate) struct Core<'a> {
    /// The run's settings.
    pub(crate) config: &'a RunConfig,
    /// What this run has of its own (its stop flag, its user's message).
    ctx: RunContext,
    pub(crate) team: &'a Team,
    pub(crate) run_id: String,
    models: HashMap<String, SharedModel>,
    /// Tokens used, in total and per agent.
    usage: UsageBook,
    /// The work modules, shared with the tools that read and change them.
    pub(crate) plan: Mutex<Plan>,
    /// The run directory and the snapshot writer.
    pub(crate) persist: Persist,
    /// Turn ids and parents.
    pub(crate) tracker: Mutex<TurnTracker>,
    /// Calls answered after the snapshot a resume went on from: made
    /// again, they are answered from their turns.
    pub(crate) unclaimed: super::turns::Unclaimed,
    /// The run's tools; MCP servers end when the run is dropped.
    pub(crate) tools: crate::tools::ToolRegistry,
    /// Model calls made so far (numbers the calls in events).
    pub(crate) calls: AtomicU64,
    /// The wall-clock limit of this drive, if any.
    pub(crate) timeout: Option<Duration>,
    /// When that limit passes.
    pub(crate) deadline: Option<Instant>,
    /// The master's memory of earlier runs, read when this run started.
    pub(crate) memory: String,
    /// Where the driver is (round, phase): what journal records are filed
    /// under, so a resume replays only the phase that was cut off.
    position: Mutex<(u32, RunPhase)>,
    bus: Bus,
    /// Every agent's inbox.
    pub(crate) inboxes: super::inboxes::Inboxes,
    /// Changes of the in-flight limits of the run's endpoints, emitted as
    /// events by the next `emit` (the watches end with the run).
    limits: (LimitQueue, Vec<crate::model::LimitWatch>),
}

/// Tokens used, in total and per agent, in shards picked by the agent's
/// name: every member of a round adds its call's tokens when it returns,
/// and with one lock (and a search of every agent's name under it) a
/// 2048-member round queued on it.
struct UsageBook {
    shards: Box<[Mutex<UsageShard>]>,
    /// Every token so far, for the budget check before each call (which
    /// would otherwise take every shard's lock).
    tokens: AtomicU64,
}

/// One shard: its agents' total and each of theirs.
type UsageShard = (Usage, BTreeMap<String, Usage>);

/// The shards of a [`UsageBook`].
const USAGE_SHARDS: usize = 64;

/// How long a run whose process exits once it has the result (see
/// [`Core::wait_for_exit`]) waits, after handing it over, before its
/// member threads are ended.
pub(crate) const EXIT_GRACE: Duration = Duration::from_secs(2);

impl UsageBook {
    fn new(total: Usage, by_agent: BTreeMap<String, Usage>) -> Self {
        let book = UsageBook {
            shards: (0..USAGE_SHARDS).map(|_| Mutex::default()).collect(),
            tokens: AtomicU64::new(total.total()),
        };
        book.shards[0].lock().0 = total;
        for (agent, usage) in by_agent {
            book.shard(&agent).lock().1.insert(agent, usage);
        }
        book
    }

    /// The shard of an agent.
    fn shard(&self, agent: &str) -> &Mutex<UsageShard> {
        &self.shards[crate::util::shard::shard_of(agent, self.shards.len())]
    }

    fn add(&self, agent: &str, usage: Usage) {
        // Saturating, as `Usage::add` is: a server's counts are not trusted.
        let _ = self.tokens.fetch_update(
            std::sync::atomic::Ordering::Relaxed,
            std::sync::atomic::Ordering::Relaxed,
            |t| Some(t.saturating_add(usage.total())),
        );
        let mut shard = self.shard(agent).lock();
        shard.0.add(usage);
        match shard.1.get_mut(agent) {
            Some(u) => u.add(usage),
            None => shard.1.entry(agent.to_string()).or_default().add(usage),
        }
    }

    /// The total and every agent's.
    fn totals(&self) -> (Usage, BTreeMap<String, Usage>) {
        let mut total = Usage::default();
        let mut by_agent = BTreeMap::new();
        for shard in &self.shards {
            let shard = shard.lock();
            total.add(shard.0);
            by_agent.extend(shard.1.iter().map(|(a, u)| (a.clone(), *u)));
        }
        (total, by_agent)
    }

    /// Every token so far.
    fn tokens(&self) -> u64 {
        self.tokens.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// The limit changes not yet emitted.
struct LimitQueue {
    changes: crossbeam_channel::Receiver<crate::model::LimitChange>,
    /// Held while changes are taken off the queue and sent: two member
    /// threads that each took one would otherwise race to the bus and
    /// could send them out of the order they happened (issue 14).
    out: Mutex<()>,
}

impl LimitQueue {
    /// Sends every waiting change, in the order they happened.
    fn drain(&self, mut send: impl FnMut(crate::model::LimitChange)) {
        // Most events see no change: no lock for them.
        if self.changes.is_empty() {
            return;
        }
        let _in_order = self.out.lock();
        while let Ok(c) = self.changes.try_recv() {
            send(c);
        }
    }
}

impl<'a> Core<'a> {
    /// Builds the core of a run from `state` (which keeps its
    /// process-specific parts: the caller takes the usage and plan here).
    pub(crate) fn start(
        config: &'a RunConfig,
        mut ctx: RunContext,
        state: &mut RunState,
        opening: Opening,
    ) -> Result<Self, RunError> {
        let models = models::resolve_agents(&config.team, &config.model)
            .map_err(|(agent, source)| RunError::Model { agent, source })?;
        // Tools first: a bad grant or a dead MCP server is bad input, and
        // should not leave a run directory behind.
        let tools = super::tool_loop::registry(config).map_err(RunError::Tools)?;
        // Turns paused at calls that wait for a decision go on from there
        // (the state keeps them until the next save writes the desk's).
        ctx.approvals.0.restore(state.approvals.clone());
        let (persist, turns, unclaimed) =
            Persist::open(config, ctx.runs_dir.as_deref(), state, opening)?;
        // The run's own sender lives in the bus only: its receiver ends
        // when the run does.
        let callers = config.events.iter().cloned().chain(ctx.events.take());
        let bus = Bus::new(callers, persist.dir.as_ref());
        let limits = watch_limits(&models, &config.model);
        let timeout = config.time_limit();
        // Memory is read per run: the note the last run left counts.
        let memory = match &config.master_memory {
            Some(m) => m.load_for(&state.task).unwrap_or_else(|e| {
                log::warn!("master memory not read: {e}");
                String::new()
            }),
            None => config.memory.clone(),
        };
        let tracker = TurnTracker::from_turns(&turns).numbering_above(
            state
                .plan
                .tasks
                .iter()
                .flat_map(crate::plan::WorkModule::named_turns)
                .chain([unclaimed.last]),
        );
        Ok(Core {
            config,
            ctx,
            team: &config.team,
            run_id: state.run_id.clone(),
            models,
            usage: UsageBook::new(state.usage, std::mem::take(&mut state.usage_by_agent)),
            plan: Mutex::new(std::mem::take(&mut state.plan)),
            persist,
            tracker: Mutex::new(tracker),
            unclaimed,
            tools,
            calls: AtomicU64::new(0),
            timeout,
            deadline: timeout.map(|t| Instant::now() + t),
            memory,
            position: Mutex::new((state.round, state.phase)),
            bus,
            inboxes: super::inboxes::Inboxes::default(),
            limits: (
                LimitQueue {
                    changes: limits.0,
                    out: Mutex::new(()),
                },
                limits.1,
            ),
        })
    }

    /// Tells every model of the run that its last parallel phase is over
    /// (see [`crate::model::ChatModel::release_idle`]): each distinct
    /// model once.
    pub(crate) fn release_idle_models(&self, keep: &str) {
        let mut told: Vec<*const ()> = Vec::new();
        for m in std::iter::once(&self.config.model).chain(self.models.values()) {
            let at = Arc::as_ptr(m).cast::<()>();
            if !told.contains(&at) {
                told.push(at);
                m.release_idle(keep);
            }
        }
    }

    /// The model `agent` uses.
    pub(crate) fn model_for(&self, agent: &str) -> SharedModel {
        self.models
            .get(agent)
            .map_or_else(|| Arc::clone(&self.config.model), Arc::clone)
    }

    /// Members answer to the master; the master to nobody.
    pub(crate) fn parent_of(&self, agent: &AgentSpec) -> Option<&str> {
        (agent.role == crate::team::AgentRole::Member).then(|| self.team.master().name.as_str())
    }

    /// The run's tool calls that wait for a decision.
    pub(crate) fn approvals(&self) -> &super::approval::Desk {
        &self.ctx.approvals.0
    }

    /// Hands the outcome to whoever waits for the run to be reported done
    /// (its [`RunHandle`](crate::RunHandle)), before the memory notes.
    pub(crate) fn report(&self, outcome: &super::RunOutcome) {
        if let Some(tx) = &self.ctx.reported {
            let _ = tx.send(outcome.clone());
        }
    }

    /// Whether the run keeps its member threads through its last review
    /// instead of ending them while the master reviews: a started run
    /// whose caller's process exits once it has the result (see
    /// [`Runtime::exits_after_run`](crate::Runtime::exits_after_run)),
    /// which ends them all at once. Any other run ends them then: its
    /// caller, or its process, goes on.
    pub(crate) fn keeps_threads_to_exit(&self) -> bool {
        self.ctx.ended.is_some() && self.config.exits_after_run
    }

    /// The run is over (saved, its memory notes taken, `run_finished`
    /// sent): for a started run (a [`RunHandle`](crate::RunHandle)'s, which
    /// takes the result early), closes the run (every event delivered and
    /// written, a checkpoint under way done, the directory's lock given
    /// back) and hands it `outcome`. Nothing of the run is written or
    /// emitted after this.
    ///
    /// Returns `outcome` when the run is not a started one (its caller
    /// takes it from the driver), or what is left once it is handed over:
    /// its id, answer, status, rounds and usage; the rest went to the
    /// caller whole instead of as a copy (a thousand modules with their
    /// transcripts took milliseconds to copy).
    pub(crate) fn end(&self, outcome: super::RunOutcome) -> super::RunOutcome {
        // A checkpoint written aside is in before the run is closed.
        self.persist.aside.wait();
        let Some(ended) = &self.ctx.ended else {
            return outcome;
        };
        // The run's MCP servers first (no tool call can come any more):
        // the caller may exit as soon as it has the result, before the
        // registry is dropped, and a server that ignores its closed stdin,
        // or a child it started, would outlive it.
        if let Some(mcp) = self.tools.mcp() {
            mcp.shutdown();
        }
        self.bus.close();
        if let Some(dir) = &self.persist.dir {
            dir.close();
        }
        #[cfg(test)]
        if let Some(gate) = &self.config.after_end {
            gate.arrive();
        }
        let left = match ended.lock().take() {
            Some(tx) => {
                let left = super::RunOutcome {
                    run_id: outcome.run_id.clone(),
                    answer: outcome.answer.clone(),
                    status: outcome.status,
                    rounds: outcome.rounds,
                    board: Vec::new(),
                    usage: outcome.usage,
                    usage_by_agent: BTreeMap::new(),
                    plan: crate::plan::Plan::default(),
                    steps: Vec::new(),
                };
                let _ = tx.send(Ok(outcome));
                left
            }
            None => outcome,
        };
        #[cfg(test)]
        if let Some(gate) = &self.config.after_end {
            gate.hold();
        }
        left
    }

    /// Called by a process with a pool of `threads` threads once its run
    /// is over, before the pool ends them: when the run's process is to
    /// exit now, waits [`EXIT_GRACE`] for that exit, which ends them all
    /// at once. Ended one by one as the process exits, each unmapping
    /// memory under the process's one memory-map lock, a thousand made
    /// the exit 13 ms longer (median of 25 alternating pairs). A caller
    /// that goes on after all has them ended after the wait.
    pub(crate) fn wait_for_exit(
        &self,
        threads: usize,
        result: &Result<super::RunOutcome, RunError>,
    ) {
        let handed_over = self.ctx.ended.as_ref().is_some_and(|e| e.lock().is_none());
        let status = result.as_ref().ok().map(|o| o.status);
        if waits_for_exit(self.keeps_threads_to_exit(), handed_over, threads, status) {
            std::thread::sleep(EXIT_GRACE);
        }
    }

    /// Whether the caller asked the run to stop.
    pub(crate) fn cancelled(&self) -> bool {
        self.ctx.cancel.is_cancelled()
    }

    /// The run's workspace directory, if it has one.
    pub(crate) fn workspace_dir(&self) -> Option<std::path::PathBuf> {
        self.config
            .workspace
            .clone()
            .or_else(|| self.persist.dir.as_ref().map(|d| d.workspace()))
    }

    /// Tells the core where the driver is: journal records made from now
    /// on are filed under this round and phase.
    pub(crate) fn at(&self, round: u32, phase: RunPhase) {
        *self.position.lock() = (round, phase);
    }

    /// Where the driver is.
    pub(crate) fn position(&self) -> (u32, RunPhase) {
        *self.position.lock()
    }

    /// Counts a call's tokens, in total and for `agent`, and journals them
    /// so a resume after a crash mid-phase still counts finished calls.
    pub(crate) fn add_usage(&self, agent: &str, usage: Usage) {
        self.usage.add(agent, usage);
        if !self.journaling() {
            return;
        }
        let (round, phase) = self.position();
        self.journal(&JournalRecord::Usage {
            round,
            phase,
            agent: agent.to_string(),
            usage,
        });
    }

    /// Tokens used so far: the total and each agent's.
    pub(crate) fn usage(&self) -> (Usage, BTreeMap<String, Usage>) {
        self.usage.totals()
    }

    /// The total tokens used so far.
    pub(crate) fn used_tokens(&self) -> u64 {
        self.usage.tokens()
    }

    /// Sends an event to every subscriber.
    pub(crate) fn emit(&self, agent: &str, parent: Option<&str>, kind: EventKind) {
        self.emit_limit_changes();
        if self.bus.is_empty() {
            return;
        }
        // The master's own parent is the agent that launched the run.
        let parent = parent.or(self.config.parent.as_deref());
        self.bus
            .event(Event::now(&self.run_id, agent, parent, kind));
    }

    /// Whether anyone listens to the run's events (a caller's channel or
    /// the run store): with no one, a call need not build them.
    pub(crate) fn listened(&self) -> bool {
        !self.bus.is_empty()
    }

    /// Whether the run keeps a journal (it has a run directory).
    pub(crate) fn journaling(&self) -> bool {
        self.bus.journaling()
    }

    /// Emits the limit changes seen since the last event, before it.
    fn emit_limit_changes(&self) {
        self.limits.0.drain(|c| {
            let parent = self.team.agent(&c.agent).and_then(|a| self.parent_of(a));
            let kind = EventKind::LimitChanged {
                endpoint: c.endpoint,
                from: c.from,
                to: c.to,
                in_flight: c.in_flight,
                reason: c.reason.into(),
            };
            self.bus
                .event(Event::now(&self.run_id, &c.agent, parent, kind));
        });
    }

    /// Announces the user's message a resumed run took, if it took one:
    /// the drivers call it right after `run_started`.
    pub(crate) fn emit_user_message(&self) {
        if let Some(text) = &self.ctx.user_message {
            self.emit(
                USER_AGENT,
                None,
                EventKind::UserMessage { text: text.clone() },
            );
        }
    }

    /// Files a change made in the middle of a phase (written at once, not
    /// fsynced: a killed process keeps it, a power cut may not).
    ///
    /// Waits for a checkpoint being written aside (`Core::save_aside`):
    /// never call it holding the plan's lock, or any other a checkpoint
    /// takes (the journal's, the turns', the state log's).
    pub(crate) fn journal(&self, record: &JournalRecord) {
        // After a checkpoint taken before a call, as that call's records.
        self.persist.aside.wait_if_pending();
        self.bus.journal(record);
    }

    /// Files a turn record. Waits as [`Core::journal`] does.
    pub(crate) fn file_turn(&self, turn: &crate::record::Turn) {
        self.persist.aside.wait_if_pending();
        self.bus.turn(turn);
    }

    /// Whether [`Core::save`] has anywhere to save to (a run directory or
    /// a workspace).
    pub(crate) fn saves(&self) -> bool {
        self.persist.dir.is_some() || self.config.workspace.is_some()
    }
}

/// Whether a run waits for its process to exit before its threads are
/// ended ([`Core::wait_for_exit`]): its caller said the process exits once
/// it has the result, the result is handed over, there are threads to
/// end, and the run got to an end. A run that waits for its user or for
/// decisions is not one: the command line asks at once and goes on with
/// it in the same process.
fn waits_for_exit(
    keeps: bool,
    handed_over: bool,
    threads: usize,
    status: Option<crate::record::RunStatus>,
) -> bool {
    use crate::record::RunStatus;
    keeps
        && handed_over
        && threads > 0
        && status
            .is_some_and(|s| !matches!(s, RunStatus::AwaitingUser | RunStatus::AwaitingApproval))
}

/// Watches the in-flight limit of every endpoint the run's models use,
/// once an endpoint; changes arrive on the returned channel.
fn watch_limits(
    models: &HashMap<String, SharedModel>,
    default: &SharedModel,
) -> (
    crossbeam_channel::Receiver<crate::model::LimitChange>,
    Vec<crate::model::LimitWatch>,
) {
    let (tx, rx) = crossbeam_channel::unbounded();
    let mut watches: Vec<crate::model::LimitWatch> = Vec::new();
    for model in models.values().chain(std::iter::once(default)) {
        let tx = tx.clone();
        let watcher: crate::model::LimitWatcher = Arc::new(move |c: &crate::model::LimitChange| {
            let _ = tx.send(c.clone());
        });
        if let Some(w) = model.watch_limit(watcher)
            && !watches.iter().any(|seen| seen.same_endpoint(&w))
        {
            watches.push(w);
        }
    }
    (rx, watches)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{LimitChange, LimitReason};
    use crate::record::RunStatus;
    use parking_lot::Condvar;

    /// Issue 25: only a run handed over to a process that exits now, with
    /// threads to end, waits for that exit; one that waits for its user or
    /// for decisions does not (the command line goes on with it at once),
    /// nor a run that failed, has no threads, or is not to exit.
    #[test]
    fn only_a_run_whose_process_exits_now_waits_for_the_exit() {
        let done = Some(RunStatus::Done);
        assert!(waits_for_exit(true, true, 16, done));
        assert!(waits_for_exit(true, true, 1, Some(RunStatus::RoundLimit)));
        assert!(waits_for_exit(true, true, 1, Some(RunStatus::Cancelled)));
        assert!(!waits_for_exit(false, true, 16, done), "not said");
        assert!(!waits_for_exit(true, false, 16, done), "not handed over");
        assert!(!waits_for_exit(true, true, 0, done), "no threads");
        assert!(!waits_for_exit(true, true, 16, None), "failed");
        for waiting in [RunStatus::AwaitingUser, RunStatus::AwaitingApproval] {
            assert!(
                !waits_for_exit(true, true, 16, Some(waiting)),
                "{waiting:?}"
            );
        }
    }

    /// Issue 14: the usage book in shards counts what one lock did: a
    /// resumed run's usage, then calls by 300 agents from 4 threads.
    #[test]
    fn the_usage_book_counts_every_agent_once_and_the_total() {
        let u = |p, c| Usage {
            prompt_tokens: p,
            completion_tokens: c,
            ..Usage::default()
        };
        let seed = BTreeMap::from([("a0".to_string(), u(5, 5)), ("old".to_string(), u(1, 1))]);
        let book = UsageBook::new(u(12, 12), seed);
        std::thread::scope(|s| {
            for t in 0..4 {
                let book = &book;
                s.spawn(move || {
                    for i in 0..300 {
                        book.add(&format!("a{i}"), u(1, t));
                    }
                });
            }
        });
        let (total, by_agent) = book.totals();
        // 12 + 12 seeded; 1200 calls of (1, t) for t in 0..4: 1200 + 1800.
        assert_eq!(total, u(12 + 1200, 12 + 1800));
        assert_eq!(book.tokens(), total.total());
        assert_eq!(by_agent.len(), 301, "300 agents and the resumed one");
        assert_eq!(by_agent["a0"], u(5 + 4, 5 + 6));
        assert_eq!(by_agent["a299"], u(4, 6));
        assert_eq!(by_agent["old"], u(1, 1));
    }

    /// Issue 14: two threads that drain limit changes at once send them in
    /// the order they happened. The first sender holds its change until
    /// the other thread has sent one (or 500 ms pass): unlocked, the other
    /// thread takes the second change and sends it first.
    #[test]
    fn limit_changes_are_sent_in_the_order_they_happened() {
        let (tx, rx) = crossbeam_channel::unbounded();
        for to in 1..=4 {
            tx.send(LimitChange {
                endpoint: "http://127.0.0.1:1".into(),
                from: to - 1,
                to,
                in_flight: 0,
                reason: LimitReason::Growth,
                agent: "m".into(),
            })
            .unwrap();
        }
        let queue = LimitQueue {
            changes: rx,
            out: Mutex::new(()),
        };
        let sent = Mutex::new(Vec::new());
        let other_sent = (Mutex::new(false), Condvar::new());
        let first = std::sync::atomic::AtomicBool::new(true);
        let (a_took, a_took_cv) = (&Mutex::new(false), &Condvar::new());
        std::thread::scope(|scope| {
            scope.spawn(|| {
                queue.drain(|c| {
                    if first.swap(false, std::sync::atomic::Ordering::SeqCst) {
                        *a_took.lock() = true;
                        a_took_cv.notify_all();
                        let mut done = other_sent.0.lock();
                        let until = Instant::now() + Duration::from_millis(500);
                        while !*done && !other_sent.1.wait_until(&mut done, until).timed_out() {}
                    }
                    sent.lock().push(c.to);
                });
            });
            scope.spawn(|| {
                let mut took = a_took.lock();
                let until = Instant::now() + Duration::from_millis(500);
                while !*took && !a_took_cv.wait_until(&mut took, until).timed_out() {}
                drop(took);
                queue.drain(|c| {
                    sent.lock().push(c.to);
                    *other_sent.0.lock() = true;
                    other_sent.1.notify_all();
                });
            });
        });
        assert_eq!(sent.into_inner(), vec![1, 2, 3, 4]);
    }
}
