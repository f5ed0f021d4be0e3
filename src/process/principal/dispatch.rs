//! The dispatcher: one associate per module, in parallel on the member
//! pool, each in an isolated context from its briefing. An associate
//! works with its own tools, calls `generate_message_summary` (which
//! answers with instructions and its deliverable's schema) and replies
//! with the JSON deliverable, checked against the schema (a corrective
//! retry when it does not parse or does not fit). As each one delivers,
//! the dispatcher archives its whole context into the module, stores the
//! deliverable, sets the module `pending_review`, puts a `TOOL_RESULT`
//! into the principal's inbox and saves the run: a resume never asks an
//! associate again for a module it delivered.

use parking_lot::Mutex;

use super::deliverable;
use super::driver::Room;
use super::prompt::associate_messages;
use super::tools::{self, SUMMARY};
use crate::core::RunError;
use crate::core::call::{Ask, Attempt, Intercepted};
use crate::core::pool::{Pool, threads_for};
use crate::event::{EventKind, RoomStatus};
use crate::model::{Message, ModelError, Phase, ToolCall};
use crate::plan::{ModuleStatus, Transcript};
use crate::record::{InboxKind, Turn};
use crate::tools::wire_name;

/// One associate's job.
#[derive(Clone)]
struct Job {
    module: String,
    agent: String,
    description: String,
    messages: Vec<Message>,
}

/// How an associate's work ended.
enum Delivery {
    Delivered(serde_json::Value),
    Failed(String),
    /// The run stopped while it worked: it is dispatched again on resume.
    Stopped,
}

impl Room<'_> {
    /// Runs the dispatch in flight: every module in it not yet delivered.
    pub(super) fn dispatch<'d>(&'d self, pool: &Pool<'_, 'd>) -> Result<(), RunError> {
        self.freeze();
        let (ids, round) = {
            let live = self.live.lock();
            (live.ps.dispatching.clone(), live.state.round)
        };
        let mut jobs = Vec::new();
        for id in &ids {
            let (agent, description) = {
                let plan = self.core.plan.lock();
                match plan.get(id) {
                    // Only what is still out: a module delivered before a
                    // kill is never asked for again.
                    Some(m) if m.status == ModuleStatus::Ongoing => (
                        m.assigned_agent.clone().unwrap_or_default(),
                        m.description.clone(),
                    ),
                    _ => continue,
                }
            };
            let Some(spec) = self.team.agent(&agent) else {
                self.deliver(
                    id,
                    &agent,
                    Delivery::Failed(format!("no associate '{agent}'")),
                    Transcript::default(),
                );
                continue;
            };
            let briefing = self.associate_briefing(id)?;
            jobs.push(Job {
                module: id.clone(),
                agent: agent.clone(),
                description,
                messages: associate_messages(&spec.soul, &briefing),
            });
        }
        let master = self.team.master().name.clone();
        self.core.emit(
            &master,
            None,
            EventKind::RoomStatus {
                status: RoomStatus::Working,
            },
        );
        let threads = threads_for(jobs.len(), self.core.config.parallel_cap());
        let results = pool
            .run(threads, jobs.clone(), move |job| {
                self.associate(&job, round)
            })
            .map_err(|e| RunError::Pool(e.into()))?;
        for (job, result) in jobs.iter().zip(results) {
            if let Err(panic) = result {
                let why = format!("{} panicked: {panic}", job.agent);
                let none = Transcript::default();
                self.deliver(&job.module, &job.agent, Delivery::Failed(why), none);
            }
        }
        if self.core.stop_reason().is_none() {
            // Every job delivered or failed: nothing is out any more.
            self.live.lock().ps.dispatching.clear();
        }
        self.thaw();
        Ok(())
    }

    /// One associate's work on one module, delivered as it ends.
    fn associate(&self, job: &Job, round: u32) {
        let Some(agent) = self.team.agent(&job.agent) else {
            return;
        };
        let schema = agent
            .deliverable
            .clone()
            .unwrap_or_else(deliverable::default_schema);
        let instructions = tools::summary_instructions(&job.module, &schema);
        let specs = [tools::summary_spec()];
        let intercept = |call: &ToolCall| {
            if call.name == SUMMARY || call.name == wire_name(SUMMARY) {
                Intercepted::Answer(instructions.clone())
            } else {
                Intercepted::No
            }
        };
        // The whole context: every message of every call, and the replies.
        // Kept as the turns' ids and where each adds to it: `turns.jsonl`
        // holds the messages.
        let archive = Mutex::new(Transcript::default());
        let on_turn = |turn: &Turn| {
            let mut a = archive.lock();
            let skip = turn.messages.len().min(a.len());
            let reply = turn.answer.clone().map(Message::assistant);
            a.push_turn(turn.turn_id.number(), skip, turn.messages.clone(), reply);
        };
        let ask = Ask {
            task: Some(&job.description),
            process_tools: &specs,
            intercept: &intercept,
            on_turn: &on_turn,
            on_pool: true,
            ..Ask::new(
                Phase::Draft,
                round,
                "your deliverable: one JSON object that follows the schema generate_message_summary gave",
            )
        };
        let accept = |r: &crate::model::ChatResponse| deliverable::parse(&r.text, &schema);
        let outcome = self
            .core
            .call_until(agent, &ask, job.messages.clone(), accept);
        let delivery = match outcome {
            Ok(Attempt::Usable(value)) => Delivery::Delivered(value),
            Ok(Attempt::Unusable(problems)) => Delivery::Failed(format!(
                "no valid deliverable after the retries: {}",
                problems.join("; ")
            )),
            Err(ModelError::Cancelled | ModelError::BudgetExhausted { .. })
                if self.core.stop_reason().is_some() =>
            {
                Delivery::Stopped
            }
            Err(e) => Delivery::Failed(e.to_string()),
        };
        self.deliver(&job.module, &job.agent, delivery, archive.into_inner());
    }

    /// Files a delivery: the archive and the deliverable on the module, a
    /// TOOL_RESULT in the principal's inbox, the run saved.
    fn deliver(&self, id: &str, agent: &str, delivery: Delivery, archive: Transcript) {
        let text = {
            let mut plan = self.core.plan.lock();
            let Some(m) = plan.get_mut(id) else { return };
            match delivery {
                Delivery::Stopped => return,
                Delivery::Delivered(value) => {
                    m.set_transcript(archive);
                    let text = format!(
                        "{id} ({agent}) delivered; it is pending_review. Its deliverable:\n{}",
                        serde_json::to_string_pretty(&value).unwrap_or_default()
                    );
                    m.deliverable = Some(value);
                    m.status = ModuleStatus::PendingReview;
                    text
                }
                Delivery::Failed(why) => {
                    if !archive.is_empty() {
                        m.set_transcript(archive);
                    }
                    m.status = ModuleStatus::Pending;
                    m.metadata
                        .insert("error".into(), serde_json::Value::from(why.clone()));
                    format!(
                        "{id} ({agent}) failed: {why}. It is pending again: dispatch it again or change it."
                    )
                }
            }
        };
        {
            let mut live = self.live.lock();
            live.ps.dispatching.retain(|d| d != id);
            live.ps.post(InboxKind::ToolResult, "dispatcher", text);
        }
        self.checkpoint();
        crate::store::crash_point("principal-delivered");
    }
}
