//! The master's turns: the plan, the review after each round, the final
//! answer, and what its decisions do to the run.

use crate::board::{EntryKind, Failure};
use crate::core::RunError;
use crate::core::call::Attempt;
use crate::core::pool::Pool;
use crate::event::{EventKind, ReviewVerdict, RoomStatus, RunStatus};
use crate::model::{Message, ModelError, Phase};
use crate::protocol::Decision;
use crate::record::RunPhase;
use crate::team::FlowAction;

use super::{Blackboard, prompt};

impl<'d> Blackboard<'d> {
    pub(super) fn plan(&mut self) -> Result<(), RunError> {
        self.status(RoomStatus::Thinking);
        let messages = prompt::plan(
            &self.room.team,
            &self.room.core.memory,
            &self.task_text(),
            &self.room.core.plan.lock(),
            self.room.wording(),
        );
        let (decision, problems) =
            self.master_turn(Phase::Plan, 0, messages)
                .map_err(|source| RunError::Master {
                    phase: crate::core::MasterPhase::Plan,
                    source,
                })?;
        self.state.feedback = problems;
        let planned = decision.is_some();
        self.decide(0, decision);
        if !planned && self.state.phase == RunPhase::Plan {
            // No usable plan after the logical retries (no directive, or a
            // DONE before any member worked): the error goes on the board
            // and the run fails with no usable draft.
            let master = self.room.team.master().name.clone();
            let text = format!(
                "the master gave no usable plan: {}",
                self.state.feedback.join("; ")
            );
            self.add_failure(0, &master, None, text, Failure::Unusable);
            self.state.phase = RunPhase::Final;
        }
        Ok(())
    }

    pub(super) fn review(&mut self, pool: &Pool<'_, 'd>) {
        let round = self.state.round;
        self.status(RoomStatus::Thinking);
        let board = self.room.board.snapshot();
        let messages = prompt::review(
            &self.room.team,
            &self.room.core.memory,
            &self.task_text(),
            &board,
            (round, self.cap()),
            &self.state.feedback,
            self.room.wording(),
        );
        drop(board);
        // The last round's review cannot ask for another: what the
        // members held is let go while the master reviews (once its prompt
        // is built), not after the run, when its caller waits (see
        // `let_go`).
        if round >= self.cap() {
            self.let_go(pool);
        }
        let master = self.room.team.master().name.clone();
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
                self.add_failure(
                    round,
                    &master,
                    None,
                    format!("review failed: {e}"),
                    Failure::Model,
                );
                self.state.phase = RunPhase::Final;
                self.state.status = RunStatus::Done;
            }
        }
    }

    /// Lets go of what the run's last call does not need, while the
    /// master makes it: the idle connections (a thousand after a wide
    /// round; closing them takes tens of microseconds of kernel time
    /// each) and the member threads, unless the process exits once it has
    /// the result (`Core::keeps_threads_to_exit`): its exit ends them all
    /// at once. A thousand threads ending one by one each unmap memory
    /// under the process's one memory-map lock; measured on two cores,
    /// they were still ending when the master's call was back, and slowed
    /// the run's last save and the process's end.
    fn let_go(&self, pool: &Pool<'_, 'd>) {
        let master = &self.room.team.master().name;
        self.room.core.release_idle_models(master);
        if !self.room.core.keeps_threads_to_exit() {
            pool.release();
        }
    }

    pub(super) fn final_answer(&mut self, pool: &Pool<'_, 'd>) -> Result<(), RunError> {
        self.no_draft_check()?;
        self.status(RoomStatus::Thinking);
        let board = self.room.board.snapshot();
        let messages = prompt::final_answer(
            &self.room.team,
            &self.room.core.memory,
            &self.task_text(),
            &board,
        );
        drop(board);
        self.let_go(pool);
        let master = self.room.team.master();
        match self.room.call_until(
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
                    phase: crate::core::MasterPhase::Final,
                    source: ModelError::BadResponse {
                        model: self.room.core.model_for(&master.name).name(),
                        detail: problems.join("; "),
                        source: None,
                    },
                });
            }
            Err(source) => {
                return Err(RunError::Master {
                    phase: crate::core::MasterPhase::Final,
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
        let master = self.room.team.master();
        let members: Vec<&str> = self.room.team.members().map(|m| m.name.as_str()).collect();
        let outcome = self.room.call_until(
            master,
            phase,
            round,
            messages,
            self.room.master_expected(phase),
            |r| {
                // The master's profile may decide what its reply is.
                match self.room.flow_of(&master.name) {
                    FlowAction::AwaitUserInput => {
                        let question = r.text.trim().to_string();
                        return Ok((Decision::Ask(question), Vec::new(), r.text.clone()));
                    }
                    FlowAction::Finish if phase != Phase::Plan => {
                        let answer = r.text.trim().to_string();
                        return Ok((Decision::Done(answer), Vec::new(), r.text.clone()));
                    }
                    _ => {}
                }
                let reply = self.room.read_master(&r.text, &members, &master.name);
                let mut problems: Vec<String> =
                    reply.errors.iter().map(ToString::to_string).collect();
                match reply.decision {
                    // A plan that finishes the work before any member was
                    // asked is no plan: nothing on the board checks it.
                    Some(Decision::Done(_)) if phase == Phase::Plan => {
                        problems.push(prompt::PLAN_DONE.to_string());
                        Err(problems)
                    }
                    // A junk plan of thousands of lines for one member
                    // runs the first few: the rest are said back.
                    Some(Decision::Assign(mut v)) => {
                        let limit = self.room.team.config().max_assignments_per_member();
                        let dropped = crate::protocol::limit_per_member(&mut v, limit);
                        problems.extend(dropped.iter().map(ToString::to_string));
                        Ok((Decision::Assign(v), problems, r.text.clone()))
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
                self.room
                    .core
                    .emit(&master.name, None, EventKind::Error { round, message });
                (None, problems)
            }
        })
    }

    /// Applies a decision taken after round `round` (0: the plan).
    fn decide(&mut self, round: u32, decision: Option<Decision>) {
        let master = self.room.team.master().name.clone();
        let (verdict, count) = match &decision {
            Some(Decision::Assign(v)) => (ReviewVerdict::Assign, v.len()),
            Some(Decision::Done(_)) => (ReviewVerdict::Done, 0),
            Some(Decision::Ask(_)) => (ReviewVerdict::Ask, 0),
            None => (ReviewVerdict::None, 0),
        };
        self.room.core.emit(
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
                self.room.core.emit(
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
                    self.room.core.emit(
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
}
