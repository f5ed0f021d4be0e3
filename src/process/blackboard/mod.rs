//! The blackboard process, phase by phase:
//!
//! ```text
//! plan (master) -> [members (parallel) -> challenge (parallel) -> review (master)]* -> answer
//! ```
//!
//! The driver thread owns the [`RunState`]; member threads touch only the
//! [`Room`] (the board: one short write lock per entry; through the core,
//! the usage totals and the plan). The room is borrowed by the run's
//! thread pool for the whole run: its threads start once, while the master
//! plans, and serve every phase (see `runtime/pool.rs`).

mod end;
mod modules;
pub(crate) mod prompt;
mod remember;
pub(crate) mod resume;
mod structured;

use std::collections::HashMap;
use std::ops::Deref;

use parking_lot::Mutex;

use crate::board::{Entry, EntryKind, NewEntry, SharedBoard};
use crate::event::{EventKind, ReviewVerdict, RoomStatus, RunStatus};
use crate::model::{ChatResponse, Message, ModelError, Phase};
use crate::protocol::{Assignment, Decision, Verdict};
use crate::runtime::call::{Ask, Attempt, CUT_OFF, EMPTY};
use crate::runtime::core::Core;
use crate::runtime::persist::Opening;
use crate::runtime::pool::{Pool, threads_for};
use crate::runtime::{RunError, RunOutcome, RunPhase, RunState, Runtime, Turn};
use crate::store::JournalRecord;
use crate::team::{AgentSpec, Team};

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

/// What the members of one parallel phase are given, once for the phase.
struct PhaseCtx {
    round: u32,
    /// Where the driver is: what the phase's journal records are filed
    /// under.
    at: (u32, RunPhase),
    /// The task as every agent sees it.
    task: String,
    /// The board, rendered once for the phase.
    board: prompt::SharedBoardText,
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
        std::thread::scope(|scope| {
            let pool = Pool::new(scope, "member", cap);
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
                process: "blackboard".to_string(),
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
                    self.review();
                    Ok(())
                }
                RunPhase::Final => self.final_answer(),
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

    // ---- phases -------------------------------------------------------

    fn plan(&mut self) -> Result<(), RunError> {
        self.status(RoomStatus::Thinking);
        let messages = prompt::plan(
            &self.team,
            &self.core.memory,
            &self.task_text(),
            &self.core.plan.lock(),
            self.wording(),
        );
        let (decision, problems) =
            self.master_turn(Phase::Plan, 0, messages)
                .map_err(|source| RunError::Master {
                    phase: crate::runtime::MasterPhase::Plan,
                    source,
                })?;
        self.state.feedback = problems;
        let planned = decision.is_some();
        self.decide(0, decision);
        if !planned && self.state.phase == RunPhase::Plan {
            // No usable plan after the logical retries (no directive, or a
            // DONE before any member worked): the error goes on the board
            // and the run fails with no usable draft.
            let master = self.team.master().name.clone();
            let text = format!(
                "the master gave no usable plan: {}",
                self.state.feedback.join("; ")
            );
            self.add_entry(0, &master, EntryKind::Error, None, text);
            self.state.phase = RunPhase::Final;
        }
        Ok(())
    }

    fn members(&mut self, pool: &Pool<'_, 'd>) -> Result<(), RunError> {
        let round = self.state.round;
        // On resume, members whose drafts for this round are on the board
        // are not called again; those that failed on the transport are.
        // The board as it stood when the round started, resumed or not: no
        // member sees a draft of its own round.
        let mut snapshot = self.board.snapshot();
        let (todo, again) = resume::still_to_do(&self.state, &snapshot);
        if !again.is_empty() {
            self.core.emit(
                &self.team.master().name,
                None,
                EventKind::Rerun {
                    round,
                    members: again.iter().map(|a| a.member.clone()).collect(),
                    reason: if self.state.rerun_errors {
                        "the run failed; their last attempt ended in an error".into()
                    } else {
                        "their last call got no answer".into()
                    },
                },
            );
        }
        let threads = threads_for(todo.len(), self.core.rt.parallel_cap());
        self.status(RoomStatus::Working);
        self.core.emit(
            &self.team.master().name,
            None,
            EventKind::RoundStarted {
                round,
                assignments: todo.len(),
                threads,
            },
        );
        snapshot.retain(|e| e.round < round);
        // Rendered once for the whole round, not once a member; so is the
        // task.
        let ctx = PhaseCtx {
            round,
            at: (self.state.round, self.state.phase),
            task: self.task_text(),
            board: prompt::SharedBoardText::new(&snapshot),
        };
        drop(snapshot);
        let room = self.room;
        let results = pool
            .run(threads, todo.clone(), move |a| room.member_turn(&ctx, &a))
            .map_err(|e| RunError::Pool(e.into()))?;
        for (a, result) in todo.iter().zip(results) {
            if let Err(panic) = result {
                self.add_entry(
                    round,
                    &a.member,
                    EntryKind::Error,
                    Some(&a.task),
                    format!("{} panicked: {panic}", a.member),
                );
            }
        }
        if self.core.stop_reason().is_some() {
            // Stopped mid-round: the phase stays, a resume finishes it.
            return Ok(());
        }
        self.no_draft_check()?;
        let has_challengers = self.team.members().any(|m| m.can_challenge);
        self.state.phase = if has_challengers {
            RunPhase::Challenge
        } else {
            RunPhase::Review
        };
        Ok(())
    }

    fn challenge(&mut self, pool: &Pool<'_, 'd>) -> Result<(), RunError> {
        let round = self.state.round;
        let room = self.room;
        let challengers: Vec<&AgentSpec> =
            room.team.members().filter(|m| m.can_challenge).collect();
        self.status(RoomStatus::Working);
        let snapshot = self.board.snapshot();
        let threads = threads_for(challengers.len(), self.core.rt.parallel_cap());
        let ctx = PhaseCtx {
            round,
            at: (self.state.round, self.state.phase),
            task: self.task_text(),
            board: prompt::SharedBoardText::new(&snapshot),
        };
        drop(snapshot);
        let results = pool
            .run(threads, challengers.clone(), move |c| {
                room.challenger_turn(&ctx, c)
            })
            .map_err(|e| RunError::Pool(e.into()))?;
        for (c, result) in challengers.iter().zip(results) {
            if let Err(panic) = result {
                self.add_entry(
                    round,
                    &c.name,
                    EntryKind::Error,
                    None,
                    format!("{} panicked: {panic}", c.name),
                );
            }
        }
        if self.core.stop_reason().is_none() {
            self.state.phase = RunPhase::Review;
        }
        Ok(())
    }
}

impl<'a> Room<'a> {
    fn member_turn(&self, ctx: &PhaseCtx, a: &Assignment) {
        let round = ctx.round;
        let Some(member) = self.team.agent(&a.member) else {
            return;
        };
        self.module_started(round, a);
        let messages = prompt::draft(member, &ctx.task, &ctx.board, &a.task);
        let outcome = self.call_until_on(
            member,
            Phase::Draft,
            round,
            Some(&a.task),
            messages,
            "a complete draft for your assignment",
            |r| Ok(r.text.trim().to_string()),
        );
        match outcome {
            Ok(Attempt::Usable(text)) => {
                let kind = EntryKind::Draft;
                self.add_entry_at(ctx.at, round, &a.member, kind, Some(&a.task), text);
            }
            Ok(Attempt::Unusable(problems)) => {
                let msg = format!("{} gave no usable draft: {}", a.member, problems.join("; "));
                let kind = EntryKind::Error;
                self.add_entry_at(ctx.at, round, &a.member, kind, Some(&a.task), msg);
            }
            // Stopped before it was sent: nothing to put on the board.
            Err(ModelError::Cancelled) => {}
            Err(e) => {
                let text = format!("{} failed: {e}", a.member);
                let new = NewEntry {
                    round,
                    author: a.member.clone(),
                    kind: EntryKind::Error,
                    task: Some(a.task.clone()),
                    text,
                };
                self.add_new_entry(ctx.at, new, resume::is_transport(&e));
            }
        }
    }

    fn challenger_turn(&self, ctx: &PhaseCtx, challenger: &AgentSpec) {
        let round = ctx.round;
        let messages = prompt::challenge(challenger, &ctx.task, &ctx.board, round, self.wording());
        let outcome = self.call_until(
            challenger,
            Phase::Challenge,
            round,
            messages,
            self.verdict_expected(),
            |r| self.read_verdict(&r.text).map_err(|e| vec![e.to_string()]),
        );
        let parent = self.core.parent_of(challenger);
        match outcome {
            Ok(Attempt::Usable(Verdict::Challenge(text))) => {
                self.add_entry_at(
                    ctx.at,
                    round,
                    &challenger.name,
                    EntryKind::Challenge,
                    None,
                    text.clone(),
                );
                self.core.emit(
                    &challenger.name,
                    parent,
                    EventKind::Challenge { round, text },
                );
            }
            Ok(Attempt::Usable(Verdict::Agree)) => {
                self.core
                    .emit(&challenger.name, parent, EventKind::Agree { round })
            }
            Ok(Attempt::Unusable(problems)) => {
                log::warn!(
                    "{} gave no verdict in round {round}: {}",
                    challenger.name,
                    problems.join("; ")
                );
            }
            Err(ModelError::Cancelled) => {}
            Err(e) => {
                self.add_entry_at(
                    ctx.at,
                    round,
                    &challenger.name,
                    EntryKind::Error,
                    None,
                    format!("{} failed: {e}", challenger.name),
                );
            }
        }
    }
}

impl<'d> Blackboard<'d> {
    fn review(&mut self) {
        let round = self.state.round;
        self.status(RoomStatus::Thinking);
        let board = self.board.snapshot();
        let messages = prompt::review(
            &self.team,
            &self.core.memory,
            &self.task_text(),
            &board,
            (round, self.cap()),
            &self.state.feedback,
            self.wording(),
        );
        let master = self.team.master().name.clone();
        match self.master_turn(Phase::Review, round, messages) {
            Ok((decision, problems)) => {
                self.state.feedback = problems;
                if decision.is_none() {
                    // Nothing usable after the retries: ask for the best answer.
                    self.state.phase = RunPhase::Final;
                    self.state.status = RunStatus::Done;
                } else {
                    self.decide(round, decision);
                }
            }
            // Stopped: the review is done again on resume.
            Err(ModelError::Cancelled) => {}
            Err(e) => {
                self.add_entry(
                    round,
                    &master,
                    EntryKind::Error,
                    None,
                    format!("review failed: {e}"),
                );
                self.state.phase = RunPhase::Final;
                self.state.status = RunStatus::Done;
            }
        }
    }

    fn final_answer(&mut self) -> Result<(), RunError> {
        self.no_draft_check()?;
        self.status(RoomStatus::Thinking);
        let board = self.board.snapshot();
        let messages =
            prompt::final_answer(&self.team, &self.core.memory, &self.task_text(), &board);
        let master = self.team.master();
        match self.call_until(
            master,
            Phase::Final,
            self.state.round,
            messages,
            "the final answer",
            |r| Ok(r.text.trim().to_string()),
        ) {
            Ok(Attempt::Usable(answer)) => self.state.answer = Some(answer),
            Ok(Attempt::Unusable(problems)) => {
                return Err(RunError::Master {
                    phase: crate::runtime::MasterPhase::Final,
                    source: ModelError::BadResponse {
                        model: self.core.model_for(&master.name).name(),
                        detail: problems.join("; "),
                        source: None,
                    },
                });
            }
            Err(source) => {
                return Err(RunError::Master {
                    phase: crate::runtime::MasterPhase::Final,
                    source,
                });
            }
        }
        if self.state.status == RunStatus::Running {
            self.state.status = RunStatus::Done;
        }
        self.state.phase = RunPhase::Finished;
        Ok(())
    }

    // ---- the master's decisions ----------------------------------------

    /// A master turn, asked again with the problems while it has no usable
    /// decision. Returns the decision (`None` if it never gave one) and the
    /// problems to show it next time.
    fn master_turn(
        &self,
        phase: Phase,
        round: u32,
        messages: Vec<Message>,
    ) -> Result<(Option<Decision>, Vec<String>), ModelError> {
        let master = self.team.master();
        let members: Vec<&str> = self.team.members().map(|m| m.name.as_str()).collect();
        let outcome = self.call_until(
            master,
            phase,
            round,
            messages,
            self.master_expected(phase),
            |r| {
                let reply = self.read_master(&r.text, &members, &master.name);
                let mut problems: Vec<String> =
                    reply.errors.iter().map(ToString::to_string).collect();
                match reply.decision {
                    // A plan that finishes the work before any member was
                    // asked is no plan: nothing on the board checks it.
                    Some(Decision::Done(_)) if phase == Phase::Plan => {
                        problems.push(prompt::PLAN_DONE.to_string());
                        Err(problems)
                    }
                    Some(decision) => Ok((decision, problems, r.text.clone())),
                    None => Err(problems),
                }
            },
        )?;
        Ok(match outcome {
            Attempt::Usable((decision, problems, text)) => {
                if round > 0 {
                    self.add_entry(round, &master.name, EntryKind::Review, None, text);
                }
                (Some(decision), problems)
            }
            Attempt::Unusable(problems) => {
                let message = format!(
                    "the master gave no usable directive: {}",
                    problems.join("; ")
                );
                log::warn!("{message}");
                self.core
                    .emit(&master.name, None, EventKind::Error { round, message });
                (None, problems)
            }
        })
    }

    /// Applies a decision taken after round `round` (0: the plan).
    fn decide(&mut self, round: u32, decision: Option<Decision>) {
        let master = self.team.master().name.clone();
        let (verdict, count) = match &decision {
            Some(Decision::Assign(v)) => (ReviewVerdict::Assign, v.len()),
            Some(Decision::Done(_)) => (ReviewVerdict::Done, 0),
            Some(Decision::Ask(_)) => (ReviewVerdict::Ask, 0),
            None => (ReviewVerdict::None, 0),
        };
        self.core.emit(
            &master,
            None,
            EventKind::ReviewDecision {
                round,
                decision: verdict,
                assignments: count,
                rejected: self.state.feedback.clone(),
            },
        );
        self.plan_decided(round, decision.as_ref());
        match decision {
            Some(Decision::Done(answer)) if answer.trim().is_empty() => {
                self.state.status = RunStatus::Done;
                self.state.phase = RunPhase::Final;
            }
            Some(Decision::Done(answer)) => {
                self.state.status = RunStatus::Done;
                self.state.answer = Some(answer);
                self.state.phase = RunPhase::Finished;
            }
            Some(Decision::Ask(question)) => {
                // The run waits for its user: saved as awaiting_user, the
                // question as its answer; a reply resumes it where it
                // stood (see resume::take_message).
                self.core.emit(
                    &master,
                    None,
                    EventKind::AwaitingUser {
                        question: question.clone(),
                    },
                );
                self.state.status = RunStatus::AwaitingUser;
                self.state.answer = Some(question);
                self.state.phase = RunPhase::Finished;
            }
            Some(Decision::Assign(assignments)) => {
                if round >= self.cap() {
                    self.state.status = RunStatus::RoundLimit;
                    self.state.phase = RunPhase::Final;
                    return;
                }
                self.state.round = round + 1;
                for a in &assignments {
                    self.core.emit(
                        &a.member,
                        Some(&master),
                        EventKind::TaskAssigned {
                            round: round + 1,
                            member: a.member.clone(),
                            task: a.task.clone(),
                        },
                    );
                }
                self.state.assignments = assignments;
                self.state.phase = RunPhase::Members;
            }
            None => {}
        }
    }

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
            let cause = last.map_or("gave no answer", |e| cause_of(&e.text));
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

    fn status(&self, status: RoomStatus) {
        self.core.emit(
            &self.team.master().name,
            None,
            EventKind::RoomStatus { status },
        );
    }
}

impl Room<'_> {
    /// An agent's turn through the core, asked again while its answer is
    /// unusable (see [`Core::call_until`]), with this run's schema for the
    /// phase and the member's transcript kept in its work module.
    fn call_until<T>(
        &self,
        agent: &AgentSpec,
        phase: Phase,
        round: u32,
        messages: Vec<Message>,
        expected: &str,
        accept: impl Fn(&ChatResponse) -> Result<T, Vec<String>>,
    ) -> Result<Attempt<T>, ModelError> {
        self.call_until_on(agent, phase, round, None, messages, expected, accept)
    }

    /// [`Room::call_until`] for a call that works on one assignment.
    #[allow(clippy::too_many_arguments)]
    fn call_until_on<T>(
        &self,
        agent: &AgentSpec,
        phase: Phase,
        round: u32,
        task: Option<&str>,
        messages: Vec<Message>,
        expected: &str,
        accept: impl Fn(&ChatResponse) -> Result<T, Vec<String>>,
    ) -> Result<Attempt<T>, ModelError> {
        // The assignment's own module: a member with several in a round
        // keeps each draft in its own archive.
        let archive = |turn: &Turn| self.archive_turn(turn, task);
        let ask = Ask {
            task,
            schema: self.schema_for(phase),
            on_turn: &archive,
            ..Ask::new(phase, round, expected)
        };
        self.core.call_until(agent, &ask, messages, accept)
    }

    /// Adds an entry and files it under `at` (where the driver is).
    pub(crate) fn add_entry_at(
        &self,
        at: (u32, RunPhase),
        round: u32,
        author: &str,
        kind: EntryKind,
        task: Option<&str>,
        text: String,
    ) -> Entry {
        self.add_new_entry(
            at,
            NewEntry {
                round,
                author: author.to_string(),
                kind,
                task: task.map(str::to_string),
                text,
            },
            false,
        )
    }

    /// Adds an entry (marked as a transport failure when `transport`),
    /// saves it (filed under `at`) and announces it.
    fn add_new_entry(&self, at: (u32, RunPhase), new: NewEntry, transport: bool) -> Entry {
        let (round, kind, author) = (new.round, new.kind, new.author.clone());
        let author = author.as_str();
        let entry = self.board.add_marked(new, transport);
        // To the journal at once (a resume keeps it); a member's draft
        // moves its module to `pending_review`.
        if self.core.journaling() {
            self.core.journal(&JournalRecord::Entry {
                round: at.0,
                phase: at.1,
                entry: entry.clone(),
            });
        }
        if let (EntryKind::Draft | EntryKind::Error, Some(task)) = (entry.kind, &entry.task) {
            self.module_drafted(at, &entry, task);
        }
        let parent = self.team.agent(author).and_then(|a| self.core.parent_of(a));
        self.core.emit(
            author,
            parent,
            EventKind::BoardEntry {
                seq: entry.seq,
                round,
                kind,
            },
        );
        if kind == EntryKind::Error {
            self.core.emit(
                author,
                parent,
                EventKind::Error {
                    round,
                    message: entry.text.clone(),
                },
            );
        }
        entry
    }
}

/// The cause of a member's error entry, in a few words for the count.
fn cause_of(text: &str) -> &'static str {
    if text.contains(CUT_OFF) {
        "cut off at the length limit"
    } else if text.contains(EMPTY) {
        "empty"
    } else if text.contains(" gave no usable draft: ") {
        "unusable"
    } else if text.contains(" panicked: ") {
        "panicked"
    } else {
        "failed at the model"
    }
}
