//! The blackboard process as the runtime starts it ([`Driver`]) and as the
//! shared loop steps it ([`Phases`]): on a pool of member threads that
//! lives as long as the run.

use std::path::Path;

use super::{Blackboard, BlackboardRun, Room, resume};
use crate::board::SharedBoard;
use crate::core::budget::Stop;
use crate::core::persist::Opening;
use crate::core::pool::Pool;
use crate::core::{Core, Driver, Phases, RunConfig, RunContext, RunError, RunOutcome, drive};
use crate::event::{EventKind, RunStatus};
use crate::record::{ProcessKind, RunPhase, RunState};
use crate::store::RunRecord;

/// The most member threads started ahead of the first member phase (see
/// `Blackboard::drive`). A plan usually gives every member work, so the
/// team's size is the right guess up to here: `boardroom bench` at 1024 and
/// 2048 sim members measured round/L 1.38 and 1.75 with every thread started
/// during the plan against 1.74 and 1.99 with 256 started then and the rest
/// when the round began. Past it, a huge team that a plan gives one task
/// does not start a thread per member (2 GiB of stack reserved at most, far
/// less resident).
const PRESTART: usize = 2048;

impl<'a> Driver<'a> for BlackboardRun<'a> {
    fn prepare_resume(
        dir: &Path,
        record: RunRecord,
        message: Option<&str>,
    ) -> Result<RunState, RunError> {
        if message.is_some() {
            resume::check_message(&record.state)?;
        }
        let mut state = resume::prepare(dir, record)?;
        if let Some(message) = message {
            resume::take_message(&mut state, message)?;
        }
        Ok(state)
    }

    fn start(
        config: &'a RunConfig,
        ctx: RunContext,
        mut state: RunState,
        opening: Opening,
    ) -> Result<Self, RunError> {
        let (vars, team) = config.rendered_team()?;
        let core = Core::start(config, ctx, &mut state, opening)?;
        let board = SharedBoard::from_entries(std::mem::take(&mut state.board));
        Ok(BlackboardRun {
            room: Room {
                team,
                vars,
                core,
                board,
                archive_from: Default::default(),
                module_hints: Default::default(),
                last_tools: Default::default(),
                flows: Default::default(),
                member_memories: Default::default(),
                member_notes: Default::default(),
            },
            state,
        })
    }

    fn core(&self) -> &Core<'a> {
        &self.room.core
    }

    /// Runs phases until the run is finished, on a pool of member threads
    /// that lives as long as the run (joined before this returns).
    fn run(self) -> Result<RunOutcome, RunError> {
        let BlackboardRun { room, state } = self;
        let config = room.core.config;
        // Capped by `max_parallel` only, not by the team's size: a master
        // may give one member several assignments in a round, and each is
        // a call in flight of its own (issue 14). No cap: the pool grows
        // to each phase's size.
        let cap = config.parallel_cap().unwrap_or(usize::MAX);
        // `auto` is judged per phase by its width (a plan may give a
        // member several assignments): see `Pool`.
        let executor = config.executor_setting();
        let auto_limit = config.auto_limit();
        std::thread::scope(|scope| {
            let pool = Pool::new(scope, executor, auto_limit, "member", cap);
            if matches!(state.phase, RunPhase::Plan | RunPhase::Members) {
                // The members' threads start while the master plans (a
                // hint: a phase grows the pool to its own size). Only when
                // a member phase is next: a run that ends at the plan or
                // resumes at the review may never need them. At most
                // PRESTART of them: a plan may give a huge team one task,
                // and each thread costs a mapped stack and its start-up; a
                // bigger round starts the rest when it begins.
                pool.prestart(room.team.members().count().min(PRESTART));
            }
            let run = Blackboard { room: &room, state };
            let result = drive(OnPool {
                run,
                pool: &pool,
                scope,
            });
            room.core.wait_for_exit(pool.threads(), &result);
            result
        })
    }
}

/// A blackboard run on its pool, as the shared loop steps it.
struct OnPool<'p, 's, 'd> {
    run: Blackboard<'d>,
    pool: &'p Pool<'s, 'd>,
    /// Where a checkpoint written beside the next call runs.
    scope: &'s std::thread::Scope<'s, 'd>,
}

impl Phases for OnPool<'_, '_, '_> {
    fn core(&self) -> &Core<'_> {
        &self.run.room.core
    }

    fn started(&self) -> (String, EventKind) {
        let (room, state) = (self.run.room, &self.run.state);
        let master = room.team.master().name.clone();
        let started = EventKind::RunStarted {
            task: crate::event::task_for_event(&state.task),
            team: room.team.name().to_string(),
            model: room.core.config.model.name(),
            members: room.team.members().count(),
            max_rounds: room.core.config.rounds_cap(),
            process: ProcessKind::Blackboard,
            executor: Some(self.pool.executor()),
            session: self.core().config.session.clone(),
        };
        (master, started)
    }

    fn next(&mut self) -> Option<(u32, RunPhase)> {
        let state = &self.run.state;
        (state.phase != RunPhase::Finished).then_some((state.round, state.phase))
    }

    fn step(&mut self) -> Result<(), RunError> {
        let (run, pool) = (&mut self.run, self.pool);
        match run.state.phase {
            RunPhase::Plan => run.plan(),
            RunPhase::Members => run.members(pool),
            RunPhase::Challenge => run.challenge(pool),
            RunPhase::Review => {
                run.review(pool);
                Ok(())
            }
            RunPhase::Final => run.final_answer(pool),
            RunPhase::Finished => Ok(()),
            // Only a hand-edited run.json gets here.
            phase => Err(RunError::ForeignPhase {
                run_id: run.room.core.run_id.clone(),
                phase,
            }),
        }
    }

    /// An error that came from a stop ends the run as the stop says; not
    /// a board without a usable draft, which fails whatever stopped it.
    fn stopped_by(&self, error: &RunError) -> Option<Stop> {
        match self.run.room.core.stop_reason() {
            Some(stop) if !matches!(error, RunError::NoUsableDraft { .. }) => Some(stop),
            _ => None,
        }
    }

    fn end_early(&mut self, stop: Stop) -> Result<(), RunError> {
        self.run.end_early(stop)
    }

    /// After a round's drafts or challenges the master's review comes:
    /// its call goes out while the round's checkpoint is written beside
    /// it (see `Blackboard::checkpoint_aside`). Not when the run is to
    /// stop (a review that was cut off stays the next phase): it ends at
    /// once, and waits for its last save.
    fn stepped(&mut self) {
        let state = &self.run.state;
        if state.phase == RunPhase::Review
            && state.status == RunStatus::Running
            && self.run.room.core.stop_reason().is_none()
        {
            self.run.checkpoint_aside(self.scope);
        } else {
            self.run.checkpoint();
        }
    }

    fn checkpoint(&self) {
        self.run.checkpoint();
    }

    fn wrap_up(&mut self, saved: bool) {
        let run = &self.run;
        if !matches!(
            run.state.status,
            RunStatus::Cancelled | RunStatus::AwaitingUser | RunStatus::AwaitingApproval
        ) {
            run.room.core.at(run.state.round, run.state.phase);
            if !saved {
                run.checkpoint();
            }
            run.gather_member_notes();
        }
    }

    fn finish(&mut self) -> RunOutcome {
        self.run.finish()
    }

    fn last_agent(&self) -> String {
        self.run.room.team.master().name.clone()
    }

    fn remember(&mut self) {
        if !matches!(
            self.run.state.status,
            RunStatus::Cancelled | RunStatus::AwaitingUser
        ) {
            self.run.update_memory();
        }
    }
}
