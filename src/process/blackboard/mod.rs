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
//! `core/pool.rs`).
//!
//! Here: the run's shape and its helpers. `driver.rs`: the process as the
//! runtime starts it and the shared loop steps it; `master.rs`: the
//! master's turns (plan, review, final answer) and its decisions;
//! `phases.rs`: the parallel phases (members, challengers); `room.rs`: what
//! every thread does through the room (a call, an entry on the board);
//! `modules.rs`: the plan's work modules; `resume.rs`: where a resumed run
//! goes on.

mod driver;
mod end;
mod master;
mod modules;
mod phases;
mod profile;
pub(crate) mod prompt;
mod remember;
pub(crate) mod resume;
mod room;
mod structured;

use std::collections::HashMap;

use parking_lot::Mutex;

use crate::board::{Entry, EntryKind, Failure, SharedBoard};
use crate::core::{Core, RunError, RunOutcome};
use crate::event::{EventKind, RoomStatus, RunStatus};
use crate::record::{RunPhase, RunState};
use crate::team::Team;

/// One blackboard run, ready to drive (see `driver.rs`).
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
    /// The tools each agent with a profile called in its last turn.
    last_tools: Mutex<HashMap<String, Vec<String>>>,
    /// What the flow decider said of each profiled agent's last reply.
    flows: Mutex<HashMap<String, crate::team::FlowAction>>,
    /// Each member's memory of earlier runs, read at its first draft.
    member_memories: Mutex<HashMap<String, String>>,
    /// The members to ask for a note after the run, with their drafts.
    member_notes: Mutex<Vec<(String, Vec<String>)>>,
}

/// The driver of one blackboard run: its state, over the shared room.
pub(crate) struct Blackboard<'d> {
    room: &'d Room<'d>,
    state: RunState,
}

impl<'d> Blackboard<'d> {
    // ---- helpers ---------------------------------------------------------

    /// The task with what the user told the run since (answers to the
    /// master's questions, follow-ups), as every agent of the run sees it.
    fn task_text(&self) -> String {
        // A task is the user's text: one that is not a template over the
        // variables (a stray `{{`) is used as written.
        let task = if self.room.vars.is_empty() {
            self.state.task.clone()
        } else {
            crate::team::render_task(&self.state.task, &self.room.vars)
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
        self.room.core.config.rounds_cap() + self.state.round_offset
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
        if !self.room.core.saves() {
            return;
        }
        let mut state = self.state.clone();
        state.board = self.room.board.snapshot();
        // A run that waits for its user holds the question, not a report.
        let report = self.state.status != RunStatus::AwaitingUser;
        self.room.core.save_behind(state, report);
    }

    /// As [`Blackboard::checkpoint`], after a round's drafts (or
    /// challenges) when the master's review comes next: the checkpoint is
    /// written on a thread of `scope` while the review's call goes out
    /// (`Core::save_aside`). It is the run as it is now: the state and the
    /// board are copied here, and what the review changes in the plan, its
    /// records and its turn wait until it is written. A run with no
    /// directory (a workspace only) writes nothing between phases.
    fn checkpoint_aside<'s>(&self, scope: &'s std::thread::Scope<'s, 'd>)
    where
        'd: 's,
    {
        if self.room.core.persist.dir.is_none() {
            self.checkpoint();
            return;
        }
        let mut state = self.state.clone();
        state.board = self.room.board.snapshot();
        let room: &'d Room<'d> = self.room;
        if !room.core.save_aside(scope, state, true) {
            self.checkpoint();
        }
    }

    fn finish(&mut self) -> RunOutcome {
        self.state.phase = RunPhase::Finished;
        let answer = self.state.answer.clone().unwrap_or_default();
        let (usage, usage_by_agent) = self.room.core.usage();
        // A run that asks its user is not over: the room waits on them.
        self.status(if self.state.status == RunStatus::AwaitingUser {
            RoomStatus::Pending
        } else {
            RoomStatus::Done
        });
        RunOutcome {
            run_id: self.room.core.run_id.clone(),
            answer,
            status: self.state.status,
            rounds: self.state.round,
            // The run is over (saved, its memory written): the outcome
            // takes the board and the plan instead of copies.
            board: self.room.board.take(),
            usage,
            usage_by_agent,
            plan: std::mem::take(&mut *self.room.core.plan.lock()),
            steps: Vec::new(),
        }
    }

    /// Fails when the board holds no usable draft: the members' answers
    /// were all unusable or failed (counted by cause), or the master never
    /// gave a usable plan. Nothing is worth a final answer then.
    fn no_draft_check(&self) -> Result<(), RunError> {
        let board = self.room.board.snapshot();
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
        let board = self.room.board.snapshot();
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
        self.room.core.emit(
            &self.room.team.master().name,
            None,
            EventKind::RoomStatus { status },
        );
    }
}
