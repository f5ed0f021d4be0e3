//! The principal process as the runtime starts it and the shared loop
//! steps it:
//!
//! ```text
//! begin:   the startup briefing (partner_to_principal) into the principal's inbox
//! step:    dispatching?  -> dispatch: one associate per module, in parallel on the
//!                           member pool; each delivery archived, stored, put into
//!                           the inbox as a TOOL_RESULT and saved as it arrives
//!          else          -> the principal's turn: its inbox, the modules, its log
//!                           -> manage_work_modules / dispatch_submodules /
//!                              generate_markdown_report (+ the report) / finish_flow
//! caps:    max_rounds rounds of dispatch, max_turns principal turns, the token
//!          budget, the time limit
//! ```

use std::path::Path;

use parking_lot::Mutex;

use crate::core::budget::Stop;
use crate::core::persist::Opening;
use crate::core::pool::Pool;
use crate::core::{Core, Driver, Phases, RunConfig, RunContext, RunError, RunOutcome, drive};
use crate::event::{EventKind, RoomStatus};
use crate::model::Usage;
use crate::record::{
    InboxKind, PrincipalState, ProcessKind, ProcessState, RunPhase, RunState, RunStatus,
};
use crate::store::RunRecord;
use crate::team::{AgentRole, AgentSpec, Team, Variables};

/// Principal turns a run takes at most unless `max_turns` says.
const DEFAULT_MAX_TURNS: u32 = 24;

/// A principal run in progress.
pub(crate) struct PrincipalRun<'a> {
    room: Room<'a>,
}

/// What the principal's turns and the associates share: the core, the
/// team, and the run's state behind a short lock (associates deliver into
/// it from the pool's threads).
pub(super) struct Room<'a> {
    pub(super) core: Core<'a>,
    pub(super) team: Team,
    pub(super) vars: Variables,
    pub(super) live: Mutex<Live>,
    /// The usage and journal length of the snapshot a dispatch began
    /// with: the saves while associates work keep them, so a resume adds
    /// every call after that snapshot once (calls finish on every thread
    /// while a save is written).
    pub(super) frozen: Mutex<Option<Frozen>>,
    /// Held by a save from its copy of the state to its `run.json`:
    /// associates delivering at once save one after the other, each
    /// snapshot newer than the last.
    pub(super) saving: Mutex<()>,
}

/// The run's state: the shared part and the principal's own.
pub(super) struct Live {
    pub(super) state: RunState,
    pub(super) ps: PrincipalState,
}

/// Usage and journal length of a snapshot.
#[derive(Clone)]
pub(super) struct Frozen {
    usage: Usage,
    by_agent: std::collections::BTreeMap<String, Usage>,
    journal_len: Option<u64>,
}

impl<'a> Driver<'a> for PrincipalRun<'a> {
    fn prepare_resume(
        dir: &Path,
        record: RunRecord,
        message: Option<&str>,
    ) -> Result<RunState, RunError> {
        super::resume::prepare(dir, record, message)
    }

    fn start(
        config: &'a RunConfig,
        ctx: RunContext,
        mut state: RunState,
        opening: Opening,
    ) -> Result<Self, RunError> {
        let (vars, team) = config.rendered_team()?;
        let ps = state.process.take_principal().unwrap_or_default();
        if state.phase == RunPhase::Plan {
            state.phase = RunPhase::Review;
        }
        state.process = ProcessState::Principal(ps.clone());
        let core = Core::start(config, ctx, &mut state, opening)?;
        state.process = ProcessState::Blackboard;
        Ok(PrincipalRun {
            room: Room {
                core,
                team,
                vars,
                live: Mutex::new(Live { state, ps }),
                frozen: Mutex::new(None),
                saving: Mutex::new(()),
            },
        })
    }

    fn core(&self) -> &Core<'a> {
        &self.room.core
    }

    /// Runs the principal's turns and its dispatches, on a pool of member
    /// threads that lives as long as the run.
    fn run(self) -> Result<RunOutcome, RunError> {
        let room = self.room;
        let config = room.core.config;
        let cap = config.parallel_cap().unwrap_or(usize::MAX);
        let executor = config.executor_setting();
        let auto_limit = config.auto_limit();
        std::thread::scope(|scope| {
            let pool = Pool::new(scope, executor, auto_limit, "associate", cap);
            let result = drive(OnPool {
                room: &room,
                pool: &pool,
            });
            room.core.wait_for_exit(pool.threads(), &result);
            result
        })
    }
}

/// A principal run on its pool, as the shared loop steps it.
pub(super) struct OnPool<'p, 's, 'd, 'a> {
    pub(super) room: &'d Room<'a>,
    pub(super) pool: &'p Pool<'s, 'd>,
}

impl Phases for OnPool<'_, '_, '_, '_> {
    fn core(&self) -> &Core<'_> {
        &self.room.core
    }

    fn started(&self) -> (String, EventKind) {
        let room = self.room;
        let started = EventKind::RunStarted {
            task: crate::event::task_for_event(&room.live.lock().state.task),
            team: room.team.name().to_string(),
            model: room.core.config.model.name(),
            members: room.associates().len(),
            max_rounds: room.core.config.rounds_cap(),
            process: ProcessKind::Principal,
            executor: Some(self.pool.executor()),
            session: self.core().config.session.clone(),
        };
        (room.team.master().name.clone(), started)
    }

    fn begin(&mut self) -> Result<(), RunError> {
        let room = self.room;
        let fresh = {
            let live = room.live.lock();
            live.ps.next_item == 0
        };
        if fresh {
            let briefing = room.startup_briefing()?;
            let mut live = room.live.lock();
            let source = room
                .core
                .config
                .parent
                .clone()
                .unwrap_or_else(|| "user".to_string());
            live.ps
                .post(InboxKind::AgentStartupBriefing, &source, briefing);
        }
        self.checkpoint();
        Ok(())
    }

    fn next(&mut self) -> Option<(u32, RunPhase)> {
        let mut live = self.room.live.lock();
        if live.state.phase == RunPhase::Finished || live.ps.finished {
            return None;
        }
        let phase = if live.ps.dispatching.is_empty() {
            RunPhase::Review
        } else {
            RunPhase::Members
        };
        live.state.phase = phase;
        live.state.round = live.ps.turns + live.ps.dispatch_rounds;
        Some((live.state.round, phase))
    }

    fn step(&mut self) -> Result<(), RunError> {
        let phase = self.room.live.lock().state.phase;
        match phase {
            RunPhase::Members => self.room.dispatch(self.pool),
            _ => self.room.principal_turn(),
        }
    }

    fn stopped_by(&self, _error: &RunError) -> Option<Stop> {
        self.room.core.stop_reason()
    }

    fn end_early(&mut self, stop: Stop) -> Result<(), RunError> {
        self.room.end_early(stop);
        Ok(())
    }

    fn checkpoint(&self) {
        self.room.checkpoint();
    }

    fn wrap_up(&mut self, _saved: bool) {}

    fn finish(&mut self) -> RunOutcome {
        self.room.finish()
    }

    fn last_agent(&self) -> String {
        self.room.team.master().name.clone()
    }
}

impl Room<'_> {
    /// The associates: every member of the team.
    pub(super) fn associates(&self) -> Vec<&AgentSpec> {
        self.team
            .agents()
            .iter()
            .filter(|a| a.role == AgentRole::Member)
            .collect()
    }

    /// Principal turns the run may take.
    pub(super) fn max_turns(&self) -> u32 {
        self.team.config().max_turns.unwrap_or(DEFAULT_MAX_TURNS)
    }

    /// Saves the run as it stands. While a dispatch is under way the
    /// snapshot keeps the usage and journal length the dispatch began
    /// with (see [`Room::frozen`]).
    pub(super) fn checkpoint(&self) {
        let workspace = self.core.workspace_dir();
        if !self.core.saves() {
            return;
        }
        let _one_at_a_time = self.saving.lock();
        let mut state = {
            let live = self.live.lock();
            let mut state = live.state.clone();
            state.process = ProcessState::Principal(live.ps.clone());
            state
        };
        let answer_is_report = state.phase == RunPhase::Finished;
        state.plan = self.core.plan.lock().clone();
        let frozen = self.frozen.lock().clone();
        let (usage, by_agent) = match &frozen {
            Some(f) => (f.usage, f.by_agent.clone()),
            None => self.core.usage(),
        };
        state.usage = usage;
        state.usage_by_agent = by_agent;
        state.approvals = self.core.approvals().paused();
        let journal_len = frozen.as_ref().and_then(|f| f.journal_len);
        if let Err(e) = self.core.persist.save_at(
            self.core.config,
            &state,
            workspace.as_deref(),
            answer_is_report,
            journal_len,
        ) {
            log::error!("cannot save the run: {e}");
        }
    }

    /// Saves the run and keeps its usage and journal length for the saves
    /// while associates work.
    pub(super) fn freeze(&self) {
        *self.frozen.lock() = None;
        self.checkpoint();
        let (usage, by_agent) = self.core.usage();
        let journal_len = self.core.persist.journal_len();
        *self.frozen.lock() = Some(Frozen {
            usage,
            by_agent,
            journal_len,
        });
    }

    /// Saves as usual again after a dispatch.
    pub(super) fn thaw(&self) {
        *self.frozen.lock() = None;
    }

    /// Ends the run: done, or at a cap, with the report or a fallback one.
    pub(super) fn end_with(&self, status: RunStatus, why: &str) {
        log::info!("run {}: {why}", self.core.run_id);
        let fallback =
            super::report::fallback(&self.live.lock().state.task, &self.core.plan.lock());
        let mut live = self.live.lock();
        let answer = live.ps.report.clone().unwrap_or(fallback);
        live.state.answer = Some(answer);
        live.state.status = status;
        live.state.phase = RunPhase::Finished;
        live.ps.dispatching.clear();
    }

    /// Ends the run before the principal finished: stopped, or a call
    /// waits for approval (saved where it stands, the dispatch kept,
    /// resumable), or out of time or tokens (a report from what came in).
    fn end_early(&self, stop: Stop) {
        if matches!(stop, Stop::Cancelled | Stop::AwaitingApproval) {
            self.live.lock().state.status = if stop == Stop::Cancelled {
                RunStatus::Cancelled
            } else {
                RunStatus::AwaitingApproval
            };
            self.checkpoint();
            return;
        }
        let status = if stop == Stop::TimedOut {
            RunStatus::TimedOut
        } else {
            RunStatus::BudgetExhausted
        };
        self.thaw();
        self.end_with(status, stop.what());
        self.checkpoint();
    }

    fn finish(&self) -> RunOutcome {
        let (answer, status, rounds) = {
            let live = self.live.lock();
            (
                live.state.answer.clone().unwrap_or_default(),
                live.state.status,
                live.ps.dispatch_rounds,
            )
        };
        let (usage, usage_by_agent) = self.core.usage();
        let agent = self.team.master().name.clone();
        // `run_finished` is the drive loop's, after the outcome is
        // reported; a run that waits on its user is pending, not done.
        self.core.emit(
            &agent,
            None,
            EventKind::RoomStatus {
                status: if status == RunStatus::AwaitingUser {
                    RoomStatus::Pending
                } else {
                    RoomStatus::Done
                },
            },
        );
        RunOutcome {
            run_id: self.core.run_id.clone(),
            answer,
            status,
            rounds,
            board: Vec::new(),
            usage,
            usage_by_agent,
            plan: self.core.plan.lock().clone(),
            steps: Vec::new(),
        }
    }
}
