//! The blackboard process, phase by phase:
//!
//! ```text
//! plan (master) -> [members (parallel) -> challenge (parallel) -> review (master)]* -> answer
//! ```
//!
//! The driver thread owns the [`RunState`]; member threads touch only the
//! [`Room`] (the board: one short write lock per entry; through the core,
//! the usage totals and the plan). The room is borrowed by the run's
//! thread pool for the whole run (rayon's or the run's own, by the
//! executor setting; the driver does not know which): its threads start
//! once, while the master plans, and serve every phase (see
//! `runtime/pool.rs`).
//!
//! Here: the run's shape and the loop over phases. `master.rs`: the
//! master's turns (plan, review, final answer) and its decisions;
//! `phases.rs`: the parallel phases (members, challengers); `room.rs`: what
//! every thread does through the room (a call, an entry on the board);
//! `modules.rs`: the plan's work modules; `resume.rs`: where a resumed run
//! goes on.

mod end;
mod master;
mod modules;
mod phases;
pub(crate) mod prompt;
mod remember;
pub(crate) mod resume;
mod room;
mod structured;

use std::collections::HashMap;
use std::ops::Deref;

use parking_lot::Mutex;

use crate::board::{Entry, EntryKind, Failure, SharedBoard};
use crate::event::{EventKind, RoomStatus, RunStatus};
use crate::runtime::core::Core;
use crate::runtime::persist::Opening;
use crate::runtime::pool::Pool;
use crate::runtime::{RunError, RunOutcome, RunPhase, RunState, Runtime};
use crate::team::Team;

/// One blackboard run, ready to drive.
pub(crate) struct BlackboardRun<'a> {
    room: Room<'a>,
    state: RunState,
}

/// What every thread of a blackboard run shares: the core, the team, the
/// board and the plan bookkeeping. Never the [`RunState`] (the driver's).
pub(crate) struct Room<'a> {
    pub(crate) core: Core<'a>,
    /// The run's team with its souls rendered over the context variables.
    team: Team,
    /// The context variables (`team.yaml` defaults, `--var` over them).
    vars: crate::team::Variables,
    board: SharedBoard,
    /// Where each ongoing module's archive of this round starts.
    archive_from: Mutex<HashMap<String, usize>>,
    /// Where each member's module of a round is in the plan.
    module_hints: Mutex<modules::ModuleHints>,
}

/// The driver of one blackboard run: its state, over the shared room.
pub(crate) struct Blackboard<'d> {
    room: &'d Room<'d>,
    state: RunState,
}

impl<'a> Deref for BlackboardRun<'a> {
    type Target = Room<'a>;

    fn deref(&self) -> &Room<'a> {
        &self.room
    }
}

impl<'d> Deref for Blackboard<'d> {
    type Target = Room<'d>;

    fn deref(&self) -> &Room<'d> {
        self.room
    }
}

/// The most member threads started ahead of the first member phase (see
/// `Blackboard::drive`). A plan usually gives every member work, so the
/// team's size is the right guess up to here: `boardroom bench` at 1024 and
/// 2048 sim members measured round/L 1.38 and 1.75 with every thread started
/// during the plan against 1.74 and 1.99 with 256 started then and the rest
/// when the round began. Past it, a huge team that a plan gives one task
/// does not start a thread per member (2 GiB of stack reserved at most, far
/// less resident).
const PRESTART: usize = 2048;

impl<'a> BlackboardRun<'a> {
    pub(crate) fn start(
        rt: &'a Runtime,
        mut state: RunState,
        opening: Opening,
    ) -> Result<Self, RunError> {
        let vars = rt
            .team
            .variables()
            .with_overrides(&rt.vars)
            .map_err(|e| RunError::Process(format!("--var: {e}")))?;
        let team = rt
            .team
            .with_rendered_souls(&vars)
            .map_err(|(name, e)| RunError::Process(format!("the soul of '{name}': {e}")))?;
        let core = Core::start(rt, &mut state, opening)?;
        let board = SharedBoard::from_entries(std::mem::take(&mut state.board));
        Ok(BlackboardRun {
            room: Room {
                team,
                vars,
                core,
                board,
                archive_from: Mutex::default(),
                module_hints: Mutex::default(),
            },
            state,
        })
    }

    /// Runs phases until the run is finished, on a pool of member threads
    /// that lives as long as the run (joined before this returns).
    pub(crate) fn drive(self) -> Result<RunOutcome, RunError> {
        let BlackboardRun { room, state } = self;
        // Capped by `max_parallel` only, not by the team's size: a master
        // may give one member several assignments in a round, and each is
        // a call in flight of its own (issue 14). No cap: the pool grows
        // to each phase's size.
        let cap = room.core.rt.parallel_cap().unwrap_or(usize::MAX);
        // `auto` is judged per phase by its width (a plan may give a
        // member several assignments): see `Pool`.
        let executor = room.core.rt.executor_setting();
        let auto_limit = room.core.rt.auto_limit();
        std::thread::scope(|scope| {
            let pool = Pool::new(scope, executor, auto_limit, "member", cap);
            Blackboard { room: &room, state }.drive(&pool)
        })
    }
}

impl<'d> Blackboard<'d> {
    /// Runs phases until the run is finished.
    fn drive(mut self, pool: &Pool<'_, 'd>) -> Result<RunOutcome, RunError> {
        if matches!(self.state.phase, RunPhase::Plan | RunPhase::Members) {
            // The members' threads start while the master plans (a hint: a
            // phase grows the pool to its own size). Only when a member
            // phase is next: a run that ends at the plan or resumes at the
            // review may never need them. At most PRESTART of them: a plan
            // may give a huge team one task, and each thread costs a
            // mapped stack and its start-up; a bigger round starts the
            // rest when it begins.
            pool.prestart(self.team.members().count().min(PRESTART));
        }
        let master = self.team.master().name.clone();
        self.core.emit(
            &master,
            None,
            EventKind::RunStarted {
                task: self.state.task.clone(),
                team: self.team.name().to_string(),
                model: self.core.rt.model.name(),
                members: self.team.members().count(),
                max_rounds: self.core.rt.rounds_cap(),
                process: crate::record::ProcessKind::Blackboard,
                executor: Some(pool.executor()),
            },
        );
        self.core.emit_user_message();
        while self.state.phase != RunPhase::Finished {
            self.core.at(self.state.round, self.state.phase);
            if let Some(stop) = self.core.stop_reason() {
                self.end_early(stop)?;
                break;
            }
            let step = match self.state.phase {
                RunPhase::Plan => self.plan(),
                RunPhase::Members => self.members(pool),
                RunPhase::Challenge => self.challenge(pool),
                RunPhase::Review => {
                    self.review(pool);
                    Ok(())
                }
                RunPhase::Final => self.final_answer(pool),
                RunPhase::Finished => Ok(()),
                // Only a hand-edited run.json gets here.
                RunPhase::Step => Err(RunError::Process(format!(
                    "run {}: a handoff step in a blackboard run",
                    self.core.run_id
                ))),
            };
            if let Err(e) = step {
                match self.core.stop_reason() {
                    // The error came from the stop: end as the stop says.
                    Some(stop) if !matches!(e, RunError::NoUsableDraft { .. }) => {
                        self.end_early(stop)?;
                        break;
                    }
                    _ => {
                        // Saved as it stands, so a resume goes on from here.
                        self.checkpoint();
                        return Err(e);
                    }
                }
            }
            self.checkpoint();
        }
        if !matches!(
            self.state.status,
            RunStatus::Cancelled | RunStatus::AwaitingUser
        ) {
            self.core.at(self.state.round, self.state.phase);
            self.update_memory();
            self.checkpoint();
        }
        Ok(self.finish())
    }
}

impl<'d> Blackboard<'d> {
    // ---- helpers ---------------------------------------------------------

    /// The task with what the user told the run since (answers to the
    /// master's questions, follow-ups), as every agent of the run sees it.
    fn task_text(&self) -> String {
        // A task is the user's text: one that is not a template over the
        // variables (a stray `{{`) is used as written.
        let task = if self.vars.is_empty() {
            self.state.task.clone()
        } else {
            crate::team::render_task(&self.state.task, &self.vars)
        };
        if self.state.user_notes.is_empty() {
            return task;
        }
        let mut text = format!("{}\n\nWhat the user told the team since:", task.trim());
        for note in &self.state.user_notes {
            match &note.question {
                Some(q) => {
                    text.push_str(&format!(
                        "\n- The master asked: {}\n  The user answered: {}",
                        q.trim(),
                        note.message.trim()
                    ));
                }
                None => {
                    text.push_str(&format!(
                        "\n- Follow-up from the user: {}",
                        note.message.trim()
                    ));
                }
            }
        }
        text
    }

    /// The round cap of this stretch of the run (a follow-up gets the cap
    /// again).
    pub(crate) fn cap(&self) -> u32 {
        self.core.rt.rounds_cap() + self.state.round_offset
    }

    /// Saves the run after a phase: settles the plan at the end, then
    /// `run.json` and `plan.json` (and `report.md` at the end).
    fn checkpoint(&self) {
        if self.state.phase == RunPhase::Finished
            && matches!(
                self.state.status,
                RunStatus::Done
                    | RunStatus::RoundLimit
                    | RunStatus::BudgetExhausted
                    | RunStatus::TimedOut
            )
        {
            self.complete_reviewed_modules();
        }
        // Nothing to save to (no run directory, no workspace): no copy of
        // the state and the board either.
        if !self.core.saves() {
            return;
        }
        let mut state = self.state.clone();
        state.board = self.board.snapshot();
        self.core.save(state);
    }

    fn finish(mut self) -> RunOutcome {
        self.state.phase = RunPhase::Finished;
        let answer = self.state.answer.clone().unwrap_or_default();
        let (usage, usage_by_agent) = self.core.usage();
        self.status(RoomStatus::Done);
        let master = self.team.master().name.clone();
        self.core.emit(
            &master,
            None,
            EventKind::RunFinished {
                status: self.state.status,
                answer: answer.clone(),
                rounds: self.state.round,
                usage,
            },
        );
        RunOutcome {
            run_id: self.core.run_id.clone(),
            answer,
            status: self.state.status,
            rounds: self.state.round,
            // The run is over (saved, its memory written): the outcome
            // takes the board and the plan instead of copies.
            board: self.board.take(),
            usage,
            usage_by_agent,
            plan: std::mem::take(&mut *self.core.plan.lock()),
            steps: Vec::new(),
        }
    }

    /// Fails when the board holds no usable draft: the members' answers
    /// were all unusable or failed (counted by cause), or the master never
    /// gave a usable plan. Nothing is worth a final answer then.
    fn no_draft_check(&self) -> Result<(), RunError> {
        let board = self.board.snapshot();
        if board.iter().any(|e| e.kind == EntryKind::Draft) {
            return Ok(());
        }
        let round = self.state.round;
        let assignments = &self.state.assignments;
        let mut causes: Vec<(String, usize)> = Vec::new();
        for a in assignments {
            let last = board.iter().rev().find(|e| {
                e.round == round
                    && e.author == a.member
                    && e.task.as_deref() == Some(a.task.as_str())
                    && e.kind == EntryKind::Error
            });
            let cause = last
                .and_then(Entry::failed_by)
                .map_or("gave no answer", Failure::cause);
            match causes.iter_mut().find(|(c, _)| c == cause) {
                Some((_, n)) => *n += 1,
                None => causes.push((cause.to_string(), 1)),
            }
        }
        let why = if assignments.is_empty() || round == 0 {
            "the master gave no usable plan".to_string()
        } else {
            let total = assignments.len();
            causes
                .iter()
                .map(|(c, n)| format!("{n} of {total} {c}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        Err(RunError::NoUsableDraft {
            reason: format!("no member produced a usable draft ({why})"),
        })
    }

    /// The latest draft of every member, for a run that ends without the
    /// master (the budget or the time ran out).
    pub(crate) fn answer_from_board(&self, note: &str) -> String {
        let mut out = format!("{note}\n");
        let board = self.board.snapshot();
        let mut seen = Vec::new();
        for e in board.iter().rev().filter(|e| e.kind == EntryKind::Draft) {
            if !seen.contains(&e.author) {
                seen.push(e.author.clone());
                out.push_str(&format!("\n## {}\n\n{}\n", e.author, e.text));
            }
        }
        out
    }

    pub(crate) fn add_entry(
        &self,
        round: u32,
        author: &str,
        kind: EntryKind,
        task: Option<&str>,
        text: String,
    ) -> Entry {
        let at = (self.state.round, self.state.phase);
        self.room.add_entry_at(at, round, author, kind, task, text)
    }

    /// Adds the `error` entry of a member or call that failed by
    /// `failure`.
    pub(crate) fn add_failure(
        &self,
        round: u32,
        author: &str,
        task: Option<&str>,
        text: String,
        failure: Failure,
    ) -> Entry {
        let at = (self.state.round, self.state.phase);
        self.room
            .add_failure_at(at, round, author, task, text, failure)
    }

    fn status(&self, status: RoomStatus) {
        self.core.emit(
            &self.team.master().name,
            None,
            EventKind::RoomStatus { status },
        );
    }
}
