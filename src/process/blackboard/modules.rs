//! The plan's work modules through a run: every assignment becomes a
//! module, `pending` → `ongoing` (the member starts) → `pending_review`
//! (its draft lands) → `completed` (the master says DONE or moves on
//! without it), or back to `pending` when the master gives the same
//! member more work on it. A module's context archive is the member's
//! transcript: the messages it was sent and its answers.

use std::collections::{HashMap, VecDeque};

use serde_json::Value;

use super::{Blackboard, Room};
use crate::board::Entry;
use crate::event::now_ms;
use crate::model::{Message, Phase};
use crate::plan::{ModuleStatus, Plan, WorkModule};
use crate::protocol::{Assignment, Decision};
use crate::record::{RunPhase, Turn};
use crate::store::JournalRecord;

/// Where each member's first module of a round is in the plan: a hint
/// that `find` checks before it trusts it (tools may change the plan).
pub(crate) type ModuleHints = HashMap<(u32, String), usize>;

/// The module of `member` in `round` (for `task`, in one of `status`).
/// Every member of a round looks its module up three times: a scan of the
/// whole plan under its lock each time made a round of N members O(N²)
/// (at 1024 members, most of the round's CPU), so the hint goes first.
fn find<'p>(
    plan: &'p mut Plan,
    hints: &mut ModuleHints,
    member: &str,
    round: u32,
    task: Option<&str>,
    status: &[ModuleStatus],
) -> Option<&'p mut WorkModule> {
    let matches = |m: &WorkModule| {
        m.assigned_agent.as_deref() == Some(member)
            && m.round == Some(round)
            && task.is_none_or(|t| m.description == t)
            && status.contains(&m.status)
    };
    let key = (round, member.to_string());
    if !hints.contains_key(&key) {
        // Unknown (a new round, or a changed plan): index it all, once.
        hints.clear();
        for (i, m) in plan.tasks.iter().enumerate() {
            if let (Some(agent), Some(r)) = (m.assigned_agent.as_deref(), m.round) {
                hints.entry((r, agent.to_string())).or_insert(i);
            }
        }
    }
    let hit = hints
        .get(&key)
        .copied()
        .filter(|&i| plan.tasks.get(i).is_some_and(matches));
    match hit {
        Some(i) => plan.tasks.get_mut(i),
        None => plan.tasks.iter_mut().find(|m| matches(m)),
    }
}

fn stamp(m: &mut WorkModule, key: &str) {
    m.metadata.insert(key.into(), Value::from(now_ms()));
}

impl Blackboard<'_> {
    /// The master decided after round `round` (0: the plan).
    pub(crate) fn plan_decided(&self, round: u32, decision: Option<&Decision>) {
        let mut plan = self.room.core.plan.lock();
        match decision {
            Some(Decision::Assign(assignments)) if round < self.cap() => {
                let next = round + 1;
                // Each member's modules waiting for review, in plan order
                // (indexed once: a scan a member made a plan of N O(N²)).
                // One sent back is `pending` again, so it is taken once.
                let mut in_review: HashMap<String, VecDeque<usize>> = HashMap::new();
                for (i, m) in plan.tasks.iter().enumerate() {
                    if let (ModuleStatus::PendingReview, Some(agent)) =
                        (m.status, m.assigned_agent.as_ref())
                    {
                        in_review.entry(agent.clone()).or_default().push_back(i);
                    }
                }
                let any_seeded = plan
                    .tasks
                    .iter()
                    .any(|m| m.assigned_agent.is_none() && m.status == ModuleStatus::Pending);
                for a in assignments {
                    let again = in_review
                        .get_mut(a.member.as_str())
                        .and_then(VecDeque::pop_front);
                    let again = match again {
                        Some(i) => plan.tasks.get_mut(i),
                        // A module the run was seeded with, taken over.
                        None if any_seeded => seeded(&mut plan.tasks, &a.task),
                        None => None,
                    };
                    match again {
                        Some(m) if m.assigned_agent.is_none() => {
                            m.assigned_agent = Some(a.member.clone());
                            m.description = a.task.clone();
                            m.round = Some(next);
                            stamp(m, "assigned_ms");
                        }
                        Some(m) => {
                            // Sent back: the same module, a new description.
                            m.status = ModuleStatus::Pending;
                            let previous = std::mem::replace(&mut m.description, a.task.clone());
                            let history = m
                                .metadata
                                .entry("previous")
                                .or_insert_with(|| Value::Array(Vec::new()));
                            if let Value::Array(v) = history {
                                v.push(Value::from(previous));
                            }
                            m.round = Some(next);
                            stamp(m, "reassigned_ms");
                        }
                        None => {
                            plan.add(a.task.clone(), Some(a.member.clone()));
                            // The one just added (not looked up by id: a
                            // scan a member).
                            if let Some(m) = plan.tasks.last_mut() {
                                m.round = Some(next);
                                m.metadata.insert("added_by".into(), Value::from("master"));
                                stamp(m, "assigned_ms");
                            }
                        }
                    }
                }
                complete(&mut plan);
            }
            // A question for the user accepts nothing yet.
            Some(Decision::Ask(_)) => {}
            Some(_) => complete(&mut plan),
            None => {}
        }
    }

    /// Every module still waiting for review is accepted.
    pub(crate) fn complete_reviewed_modules(&self) {
        complete(&mut self.room.core.plan.lock());
    }
}

impl Room<'_> {
    /// A member starts on its assignment.
    pub(crate) fn module_started(&self, round: u32, a: &Assignment) {
        self.modules_started(round, std::iter::once(a));
    }

    /// The members of `assignments` set to work at once: their modules
    /// marked under one taking of the plan's lock. Thousands of members
    /// woken together each taking it in turn queued on it (a sixth of a
    /// 2048-member round's CPU, most of it spinning and yielding). Their
    /// `started_ms` is then when the round handed them out, the same for
    /// all; with a cap (`--parallel`) each member marks its own as it
    /// begins.
    pub(crate) fn modules_started<'x>(
        &self,
        round: u32,
        assignments: impl IntoIterator<Item = &'x Assignment>,
    ) {
        let mut plan = self.core.plan.lock();
        let statuses = [ModuleStatus::Pending, ModuleStatus::Ongoing];
        let hints = &mut self.module_hints.lock();
        let mut from = self.archive_from.lock();
        let now = Value::from(now_ms());
        for a in assignments {
            if let Some(m) = find(&mut plan, hints, &a.member, round, Some(&a.task), &statuses) {
                m.status = ModuleStatus::Ongoing;
                m.metadata.insert("started_ms".into(), now.clone());
                from.insert(m.task_id.clone(), m.context_archive.len());
            }
        }
    }

    /// A member's draft (or error) for `task` landed on the board.
    /// Filed under `at` (where the driver is).
    pub(crate) fn module_drafted(&self, at: (u32, RunPhase), entry: &Entry, task: &str) {
        let module = {
            let mut plan = self.core.plan.lock();
            let statuses = [ModuleStatus::Ongoing, ModuleStatus::Pending];
            let hints = &mut self.module_hints.lock();
            let Some(m) = find(
                &mut plan,
                hints,
                &entry.author,
                entry.round,
                Some(task),
                &statuses,
            ) else {
                return;
            };
            m.status = ModuleStatus::PendingReview;
            m.metadata.insert("entry".into(), Value::from(entry.seq));
            stamp(m, "drafted_ms");
            // The module with its transcript: copied only for a journal.
            if !self.core.journaling() {
                return;
            }
            m.clone()
        };
        self.core.journal(&JournalRecord::Module {
            round: at.0,
            phase: at.1,
            module,
        });
    }

    /// Keeps a member's draft call in its module's context archive: what
    /// this round's last call was sent, then its answer. `task` is the
    /// assignment the call is for (a member may have several a round).
    pub(crate) fn archive_turn(&self, turn: &Turn, task: Option<&str>) {
        if turn.phase != Phase::Draft {
            return;
        }
        // Built before the plan's lock is taken (every member of a round
        // takes it once its call returns), copied from the record (its
        // messages go back to the call, for asking again) without a long
        // task (the turn in `turns.jsonl`, which the saved archive names,
        // has it).
        let reply = crate::plan::reply(turn.answer.as_deref(), turn.error.as_deref());
        let number = turn.turn_id.number();
        let messages: Vec<Message> = turn
            .messages
            .iter()
            .map(|m| Message {
                role: m.role,
                content: super::prompt::without_long_tasks(&m.content).into_owned(),
                tool_calls: m.tool_calls.clone(),
                tool_call_id: m.tool_call_id.clone(),
            })
            .collect();
        let mut plan = self.core.plan.lock();
        let hints = &mut self.module_hints.lock();
        let Some(m) = find(
            &mut plan,
            hints,
            &turn.agent,
            turn.round,
            task,
            &[ModuleStatus::Ongoing],
        ) else {
            return;
        };
        let from = self
            .archive_from
            .lock()
            .get(&m.task_id)
            .copied()
            .unwrap_or(0);
        // Saved as the turn's id: `turns.jsonl` holds the messages.
        m.archive_cut(from);
        m.archive_turn(number, 0, messages, Some(reply));
    }
}

/// The open seeded module an assignment takes over: the first unassigned
/// pending one whose id starts the task or whose description the task
/// repeats.
fn seeded<'p>(tasks: &'p mut [WorkModule], task: &str) -> Option<&'p mut WorkModule> {
    let task_l = task.trim().to_lowercase();
    tasks.iter_mut().find(|m| {
        m.assigned_agent.is_none()
            && m.status == ModuleStatus::Pending
            && m.metadata
                .get("seeded")
                .is_some_and(|v| v == &Value::Bool(true))
            && (task_l.starts_with(&m.task_id.to_lowercase())
                || task_l.contains(&m.description.trim().to_lowercase()))
    })
}

fn complete(plan: &mut Plan) {
    for m in &mut plan.tasks {
        if m.status == ModuleStatus::PendingReview {
            m.status = ModuleStatus::Completed;
            stamp(m, "completed_ms");
        }
    }
}
