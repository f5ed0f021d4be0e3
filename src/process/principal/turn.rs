//! The principal's turn: its inbox read, one call with its four tools.
//! `manage_work_modules` changes the plan at once and the turn goes on;
//! `generate_markdown_report` answers with the report's instructions and
//! the turn goes on (the reply after it is the report);
//! `dispatch_submodules` and `finish_flow` end the turn, and the driver
//! acts on them.

use parking_lot::Mutex;

use super::driver::Room;
use super::tools::{self, DISPATCH, FINISH, MANAGE, REPORT};
use crate::core::call::{Ask, Attempt, Intercepted};
use crate::core::{MasterPhase, RunError};
use crate::event::{EventKind, RoomStatus};
use crate::model::{ChatResponse, Message, ModelError, Phase, ToolCall};
use crate::plan::ModuleStatus;
use crate::record::RunStatus;
use crate::tools::wire_name;

/// What a turn's tool calls asked of the driver.
#[derive(Default)]
struct Effects {
    log: Vec<String>,
    dispatch: Option<Vec<String>>,
    finish: Option<String>,
    report_asked: bool,
}

impl Room<'_> {
    /// One turn of the principal.
    pub(super) fn principal_turn(&self) -> Result<(), RunError> {
        let (items, log, report_done, report_asked, turns, round) = {
            let live = self.live.lock();
            let mut items = live.ps.inbox.clone();
            items.sort_by_key(|i| (i.kind, i.id));
            (
                items,
                live.ps.log.clone(),
                live.ps.report.is_some(),
                live.ps.report_asked,
                live.ps.turns,
                live.state.round,
            )
        };
        if turns >= self.max_turns() {
            self.end_with(
                RunStatus::TurnLimit,
                &format!(
                    "the principal's turn cap ({}) was reached",
                    self.max_turns()
                ),
            );
            return Ok(());
        }
        let master = self.team.master();
        self.core.emit(
            &master.name,
            None,
            EventKind::RoomStatus {
                status: RoomStatus::Thinking,
            },
        );
        // The turn reads through the principal's inbox in the core: the
        // process's ask (the modules, its log and the items of its saved
        // queue, escaped) with whatever else waits there, by priority. The
        // saved queue (`PrincipalState::inbox`) is what survives a kill.
        let ask_text = self.principal_message(&items, &log, report_done);
        let received = self.core.deliver(
            &master.name,
            crate::core::InboxItem::Directive {
                from: "runtime".into(),
                text: ask_text,
            },
        );
        let inputs = crate::core::inbox::ids(&received);
        let mut messages = vec![Message::system(self.principal_system())];
        messages.extend(crate::core::ingest_all(&received));
        let specs = tools::principal_specs();
        let effects = Mutex::new(Effects {
            report_asked,
            ..Effects::default()
        });
        let associates: Vec<String> = self.associates().iter().map(|a| a.name.clone()).collect();
        let dispatch_cap = self.core.config.rounds_cap();
        let intercept = |call: &ToolCall| self.intercept(call, &effects, &associates, dispatch_cap);
        let ask = Ask {
            inputs: &inputs,
            process_tools: &specs,
            intercept: &intercept,
            ..Ask::new(Phase::Review, round, "a call of one of your tools")
        };
        let accept = |r: &ChatResponse| Ok::<_, Vec<String>>(r.text.trim().to_string());
        let outcome = self.core.call_until(master, &ask, messages, accept);
        let text = match outcome {
            Ok(Attempt::Usable(text)) => text,
            Ok(Attempt::Unusable(problems)) => {
                effects.lock().log.push(format!(
                    "your reply could not be used: {}",
                    problems.join("; ")
                ));
                String::new()
            }
            Err(ModelError::Cancelled | ModelError::BudgetExhausted { .. })
                if self.core.stop_reason().is_some() =>
            {
                return Ok(());
            }
            Err(source) => {
                return Err(RunError::Master {
                    phase: MasterPhase::PrincipalTurn,
                    source,
                });
            }
        };
        self.after_turn(effects.into_inner(), &items, text);
        Ok(())
    }

    /// Handles one of the principal's tool calls.
    fn intercept(
        &self,
        call: &ToolCall,
        effects: &Mutex<Effects>,
        associates: &[String],
        dispatch_cap: u32,
    ) -> Intercepted {
        let is = |tool: &str| call.name == tool || call.name == wire_name(tool);
        if is(MANAGE) {
            let names: Vec<&str> = associates.iter().map(String::as_str).collect();
            let answer = match tools::changes(&call.arguments) {
                Ok(changes) => {
                    let mut plan = self.core.plan.lock();
                    match tools::apply(&mut plan, &changes, &names) {
                        Ok(done) => {
                            effects
                                .lock()
                                .log
                                .push(format!("manage_work_modules: {}", done.join(", ")));
                            format!(
                                "ok: {}\nThe modules now:\n{}",
                                done.join(", "),
                                tools::plan_lines(&plan)
                            )
                        }
                        Err(e) => format!("error: {e}; nothing was changed"),
                    }
                }
                Err(e) => format!("error: {e}"),
            };
            Intercepted::Answer(answer)
        } else if is(DISPATCH) {
            let rounds = self.live.lock().ps.dispatch_rounds;
            if rounds >= dispatch_cap {
                return Intercepted::Answer(format!(
                    "error: the cap of {dispatch_cap} rounds of dispatch is reached: review what \
                     was delivered, then generate_markdown_report"
                ));
            }
            match self.dispatchable(&call.arguments) {
                Ok(ids) => {
                    let mut e = effects.lock();
                    e.log
                        .push(format!("dispatch_submodules: {}", ids.join(", ")));
                    e.dispatch = Some(ids);
                    Intercepted::End
                }
                Err(why) => Intercepted::Answer(format!("error: {why}")),
            }
        } else if is(REPORT) {
            let plan = self.core.plan.lock().clone();
            let open: Vec<&str> = plan
                .tasks
                .iter()
                .filter(|m| m.status != ModuleStatus::Completed)
                .map(|m| m.task_id.as_str())
                .collect();
            if plan.tasks.is_empty() || !open.is_empty() {
                return Intercepted::Answer(format!(
                    "error: not every module is completed yet (open: {})",
                    open.join(", ")
                ));
            }
            let mut e = effects.lock();
            e.report_asked = true;
            e.log
                .push("generate_markdown_report: instructions received".into());
            Intercepted::Answer(tools::report_instructions(&plan))
        } else if is(FINISH) {
            let summary = serde_json::from_str::<serde_json::Value>(&call.arguments)
                .ok()
                .and_then(|v| {
                    v.get("summary")
                        .and_then(|s| s.as_str())
                        .map(str::to_string)
                })
                .unwrap_or_default();
            let mut e = effects.lock();
            e.log.push("finish_flow".into());
            e.finish = Some(summary);
            Intercepted::End
        } else {
            Intercepted::No
        }
    }

    /// The module ids of a `dispatch_submodules` call, if each is pending
    /// and has an associate.
    fn dispatchable(&self, arguments: &str) -> Result<Vec<String>, String> {
        let args: serde_json::Value = serde_json::from_str(arguments)
            .map_err(|e| format!("the arguments are not JSON ({e})"))?;
        let ids: Vec<String> = args
            .get("module_ids")
            .and_then(|v| v.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        if ids.is_empty() {
            return Err("'module_ids' is missing or empty".into());
        }
        let plan = self.core.plan.lock();
        for id in &ids {
            let Some(m) = plan.get(id) else {
                return Err(format!("no module '{id}'"));
            };
            if m.status != ModuleStatus::Pending {
                return Err(format!(
                    "{id} is {}, only pending modules are dispatched",
                    m.status
                ));
            }
            if m.assigned_agent.is_none() {
                return Err(format!(
                    "{id} has no associate: set one with manage_work_modules"
                ));
            }
        }
        Ok(ids)
    }

    /// Takes the turn's effects into the state and saves.
    fn after_turn(&self, effects: Effects, read: &[crate::record::InboxItem], text: String) {
        let mut plan = self.core.plan.lock();
        let mut live = self.live.lock();
        live.ps.turns += 1;
        live.ps.inbox.retain(|i| !read.iter().any(|r| r.id == i.id));
        live.ps.log.extend(effects.log);
        let was_asked = live.ps.report_asked;
        live.ps.report_asked |= effects.report_asked;
        // The reply after the report's instructions is the report.
        if (effects.report_asked || was_asked)
            && effects.dispatch.is_none()
            && text.len() > 40
            && live.ps.report.is_none()
        {
            live.ps.report = Some(text.clone());
            live.ps.log.push("the report is written".into());
        }
        if let Some(ids) = effects.dispatch {
            for id in &ids {
                if let Some(m) = plan.get_mut(id) {
                    m.status = ModuleStatus::Ongoing;
                }
            }
            live.ps.dispatching = ids;
            live.ps.dispatch_rounds += 1;
        } else if effects.finish.is_none() && text.is_empty() {
            live.ps
                .log
                .push("your last turn ended with no tool call and no text".into());
        }
        drop(plan);
        if let Some(summary) = effects.finish {
            live.ps.finished = true;
            drop(live);
            self.end_with(RunStatus::Done, &format!("finish_flow: {summary}"));
        }
    }
}
