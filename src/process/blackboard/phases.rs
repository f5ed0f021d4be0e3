//! The parallel phases: every member's draft for its assignment, then
//! the challengers' verdicts, each phase on the run's pool.

use crate::board::{EntryKind, Failure, NewEntry};
use crate::core::RunError;
use crate::core::call::{Attempt, CUT_OFF, EMPTY};
use crate::core::pool::{Pool, threads_for};
use crate::event::{EventKind, RoomStatus};
use crate::model::{ModelError, Phase};
use crate::protocol::{Assignment, Verdict};
use crate::record::RunPhase;
use crate::team::AgentSpec;

use super::{Blackboard, Room, prompt, resume};

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
    /// The phase's work modules were all marked started by the driver
    /// (every member has a thread of its own, so all start at once).
    modules_started: bool,
}

impl<'d> Blackboard<'d> {
    pub(super) fn members(&mut self, pool: &Pool<'_, 'd>) -> Result<(), RunError> {
        let round = self.state.round;
        // On resume, members whose drafts for this round are on the board
        // are not called again; those that failed on the transport are.
        // The board as it stood when the round started, resumed or not: no
        // member sees a draft of its own round.
        let mut snapshot = self.room.board.snapshot();
        let (todo, again) = resume::still_to_do(&self.state, &snapshot);
        if !again.is_empty() {
            self.room.core.emit(
                &self.room.team.master().name,
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
        let threads = threads_for(todo.len(), self.room.core.config.parallel_cap());
        self.status(RoomStatus::Working);
        self.room.core.emit(
            &self.room.team.master().name,
            None,
            EventKind::RoundStarted {
                round,
                assignments: todo.len(),
                threads,
            },
        );
        snapshot.retain(|e| e.round < round);
        // With a thread each, every member starts at once: their modules
        // are marked here, under one lock, not by each member in turn.
        let at_once = threads >= todo.len();
        if at_once {
            // Only members the team has: an assignment of a saved round
            // whose member is gone is never run, and its module stays.
            let team = &self.room.team;
            let known = todo.iter().filter(|a| team.agent(&a.member).is_some());
            self.room.modules_started(round, known);
        }
        self.on_pool(
            pool,
            snapshot,
            todo,
            at_once,
            |room, ctx, a| room.member_turn(ctx, a),
            |a| (a.member.as_str(), Some(a.task.as_str())),
        )?;
        if self.room.core.stop_reason().is_some() {
            // Stopped mid-round: the phase stays, a resume finishes it.
            return Ok(());
        }
        self.no_draft_check()?;
        let has_challengers = self.room.team.members().any(|m| m.can_challenge);
        self.state.phase = if has_challengers {
            RunPhase::Challenge
        } else {
            RunPhase::Review
        };
        Ok(())
    }

    pub(super) fn challenge(&mut self, pool: &Pool<'_, 'd>) -> Result<(), RunError> {
        let room = self.room;
        let challengers: Vec<&AgentSpec> =
            room.team.members().filter(|m| m.can_challenge).collect();
        self.status(RoomStatus::Working);
        let snapshot = self.room.board.snapshot();
        self.on_pool(
            pool,
            snapshot,
            challengers,
            false,
            |room, ctx, c| room.challenger_turn(ctx, c),
            |c| (c.name.as_str(), None),
        )?;
        if self.room.core.stop_reason().is_none() {
            self.state.phase = RunPhase::Review;
        }
        Ok(())
    }

    /// Runs `turn` for every item of a parallel phase on the run's pool,
    /// every turn given the same [`PhaseCtx`] (`board` and the task,
    /// rendered once for the phase), and files a turn
    /// that panicked as an error entry by `who(item)`: (author, task).
    fn on_pool<T>(
        &mut self,
        pool: &Pool<'_, 'd>,
        board: Vec<crate::board::Entry>,
        items: Vec<T>,
        modules_started: bool,
        turn: fn(&Room<'d>, &PhaseCtx, &T),
        who: impl Fn(&T) -> (&str, Option<&str>),
    ) -> Result<(), RunError>
    where
        T: Clone + Send + 'd,
    {
        let round = self.state.round;
        let threads = threads_for(items.len(), self.room.core.config.parallel_cap());
        let ctx = PhaseCtx {
            round,
            at: (self.state.round, self.state.phase),
            task: self.task_text(),
            board: prompt::SharedBoardText::new(&board),
            modules_started,
        };
        drop(board);
        let room = self.room;
        let results = pool
            .run(threads, items.clone(), move |item| turn(room, &ctx, &item))
            .map_err(|e| RunError::Pool(e.into()))?;
        for (item, result) in items.iter().zip(results) {
            if let Err(panic) = result {
                let (author, task) = who(item);
                let text = format!("{author} panicked: {panic}");
                self.add_failure(round, author, task, text, Failure::Panicked);
            }
        }
        Ok(())
    }
}

impl<'a> Room<'a> {
    /// A member's memory of earlier runs (read once a run; empty without
    /// a memory or a note).
    fn member_memory(&self, name: &str, task: &str) -> String {
        let Some(memory) = &self.core.config.master_memory else {
            return String::new();
        };
        if let Some(known) = self.member_memories.lock().get(name) {
            return known.clone();
        }
        let text = memory.for_member(name).load_for(task).unwrap_or_else(|e| {
            log::warn!("{name}'s memory not read: {e}");
            String::new()
        });
        self.member_memories
            .lock()
            .insert(name.to_string(), text.clone());
        text
    }

    fn member_turn(&self, ctx: &PhaseCtx, a: &Assignment) {
        let round = ctx.round;
        let Some(member) = self.team.agent(&a.member) else {
            return;
        };
        if !ctx.modules_started {
            self.module_started(round, a);
        }
        let memory = self.member_memory(&member.name, &ctx.task);
        let messages = prompt::draft(member, &memory, &ctx.task, &ctx.board, &a.task);
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
                let failure = unusable(&problems);
                self.add_failure_at(ctx.at, round, &a.member, Some(&a.task), msg, failure);
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
                    failure: Some(Failure::Model),
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
                self.add_failure_at(
                    ctx.at,
                    round,
                    &challenger.name,
                    None,
                    format!("{} failed: {e}", challenger.name),
                    Failure::Model,
                );
            }
        }
    }
}

/// How a member whose answers stayed unusable failed: cut off, empty, or
/// unusable otherwise (by the problems the call path gave).
fn unusable(problems: &[String]) -> Failure {
    if problems.iter().any(|p| p.contains(CUT_OFF)) {
        Failure::CutOff
    } else if problems.iter().any(|p| p.contains(EMPTY)) {
        Failure::Empty
    } else {
        Failure::Unusable
    }
}
