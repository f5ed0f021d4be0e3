//! A partner turn: the inbox drained, the model called (on a thread the
//! user can walk away from), the tools it asks for run — `launch_team` and
//! `follow_up` only on the user's yes.

use std::sync::Arc;
use std::time::Duration;

use super::{Chat, ChatEvent, ChatIo, TurnEnd, chat_thread_error};
use crate::chat::{ChatError, ingest, tools};
use crate::core::{InboxItem, TeamNews};
use crate::event::RunStatus;
use crate::model::{ChatRequest, ChatResponse, Message, ModelError, Phase, ToolCall};
use crate::runtime::Cancel;
use crate::tools::{ToolContext, spec_of, wire_name};

/// Tool steps in one partner turn before it must answer.
const MAX_STEPS: usize = 12;

impl Chat {
    /// One partner turn: drains the inbox, calls the model, runs the tools
    /// it asks for (feeding their results back through the inbox) until it
    /// answers. `cancel` ends the turn at once: the call in flight is
    /// abandoned (its thread is joined when the chat closes) and its answer
    /// dropped.
    ///
    /// # Errors
    ///
    /// [`ChatError::Model`] when the partner's model fails after its
    /// retries (the conversation is kept; the user may try again).
    pub fn turn(&mut self, io: &mut dyn ChatIo, cancel: &Cancel) -> Result<TurnEnd, ChatError> {
        self.reap();
        for step in 0..MAX_STEPS {
            let items = self.inbox.drain();
            if items.is_empty() && step == 0 {
                return Ok(TurnEnd::Idle);
            }
            for item in items.iter().map(|r| &r.item) {
                if let InboxItem::TeamEvent(TeamNews::AwaitingUser { run_id, .. }) = item {
                    self.awaiting = Some(run_id.clone());
                }
                if let InboxItem::TeamEvent(TeamNews::RunFinished {
                    run_id,
                    report: Some(path),
                    ..
                }) = item
                {
                    let text = crate::store::read_text_lossy(
                        std::path::Path::new(path),
                        crate::store::MAX_RECORD_FILE,
                    )
                    .unwrap_or_default();
                    self.show(
                        io,
                        ChatEvent::Report {
                            run_id: run_id.clone(),
                            path: path.clone(),
                            text,
                        },
                    );
                }
                // Before the news itself: the partner reads that the run
                // ended, knowing what became of the follow-ups.
                let ended = match item {
                    InboxItem::TeamEvent(TeamNews::RunFinished { run_id, status, .. }) => {
                        Some((run_id, *status))
                    }
                    InboxItem::TeamEvent(TeamNews::RunFailed { run_id, .. }) => {
                        Some((run_id, RunStatus::Failed))
                    }
                    InboxItem::TeamEvent(TeamNews::AwaitingUser { run_id, .. }) => {
                        Some((run_id, RunStatus::AwaitingUser))
                    }
                    _ => None,
                };
                if let Some(note) = ended.and_then(|(id, status)| self.send_queued(id, status, io))
                {
                    self.messages
                        .push(ingest(&InboxItem::Briefing { text: note }));
                }
                self.messages.push(ingest(item));
            }
            // Cancelled: the unanswered call is dropped; what came before
            // (tool calls and their results) stays, consistent.
            let Some(response) = self.call(cancel)? else {
                self.save();
                return Ok(TurnEnd::Cancelled);
            };
            let text = response.text.trim().to_string();
            if !text.is_empty() {
                self.show(io, ChatEvent::PartnerMessage { text: text.clone() });
            }
            let mut said = Message::assistant(text);
            said.tool_calls = response.tool_calls.clone();
            self.messages.push(said);
            if response.tool_calls.is_empty() {
                self.save();
                return Ok(TurnEnd::Answered);
            }
            for call in &response.tool_calls {
                let (text, is_error) = match self.run_tool(call, io) {
                    Ok(t) => (t, false),
                    Err(t) => (t, true),
                };
                self.inbox.push(InboxItem::ToolResult {
                    call_id: call.id.clone(),
                    tool: call.name.clone(),
                    text,
                    is_error,
                });
            }
            if cancel.is_cancelled() {
                // The tools ran; their results wait for the next turn.
                self.save();
                return Ok(TurnEnd::Cancelled);
            }
        }
        self.show(
            io,
            ChatEvent::Notice {
                text: format!(
                    "the partner used {MAX_STEPS} tool steps without answering; its turn ends here"
                ),
            },
        );
        self.save();
        Ok(TurnEnd::Answered)
    }

    /// The model call, on a thread of its own so that `cancel` can drop
    /// it; `None` when cancelled.
    fn call(&mut self, cancel: &Cancel) -> Result<Option<ChatResponse>, ChatError> {
        let mut messages = Vec::with_capacity(self.messages.len() + 1);
        messages.push(self.system.clone());
        messages.extend(self.messages.iter().cloned());
        let mut req = ChatRequest::new(&self.partner.name, Phase::Converse, 0, messages);
        // A model without tool calling is sent none (ChatModel::supports_tools).
        if self.model.supports_tools() {
            req.tools = self.granted.iter().map(|t| spec_of(t.as_ref())).collect();
            req.tools.push(tools::launch_team_spec());
            req.tools.push(tools::team_status_spec());
            req.tools.push(tools::follow_up_spec());
        } else if !self.tools_warned {
            // Once a chat, not once a turn.
            self.tools_warned = true;
            log::warn!(
                "agent '{}': its model {} cannot call tools, so its {} tool(s) (launch_team and \
                 the others it is granted) are not sent (said once this chat)",
                self.partner.name,
                self.model.name(),
                self.granted.len() + 3
            );
        }
        req.temperature = self.partner.temperature;
        req.max_tokens = self.partner.max_tokens;
        let model = Arc::clone(&self.model);
        let (tx, rx) = crossbeam_channel::bounded::<Result<ChatResponse, ModelError>>(1);
        let worker = std::thread::Builder::new()
            .name("boardroom-partner".into())
            .spawn(move || {
                let _ = tx.send(model.chat(&req, &mut |_| {}));
            })
            .map_err(chat_thread_error)?;
        loop {
            match rx.recv_timeout(Duration::from_millis(25)) {
                Ok(r) => {
                    let _ = worker.join();
                    return r.map(Some).map_err(ChatError::Model);
                }
                Err(crossbeam_channel::RecvTimeoutError::Disconnected) => {
                    let message = match worker.join() {
                        Err(panic) => crate::core::unwind::panic_text(panic.as_ref()),
                        Ok(()) => "no answer".to_string(),
                    };
                    return Err(ChatError::Run(crate::runtime::RunError::Pool(
                        crate::runtime::ThreadError::Panicked {
                            thread: "the partner's model call",
                            message,
                        },
                    )));
                }
                Err(crossbeam_channel::RecvTimeoutError::Timeout) if cancel.is_cancelled() => {
                    // Joined when the chat closes (the call ends within its
                    // own deadline).
                    self.abandoned.push(worker);
                    return Ok(None);
                }
                Err(crossbeam_channel::RecvTimeoutError::Timeout) => {}
            }
        }
    }

    fn run_tool(&mut self, call: &ToolCall, io: &mut dyn ChatIo) -> Result<String, String> {
        match call.name.as_str() {
            tools::LAUNCH_TEAM => self.launch_tool(&call.arguments, io),
            tools::TEAM_STATUS => Ok(self.status()),
            tools::FOLLOW_UP => self.follow_up_tool(&call.arguments, io),
            name => {
                let Some(tool) = self
                    .granted
                    .iter()
                    .find(|t| wire_name(t.name()) == name)
                    .cloned()
                else {
                    let mut known: Vec<String> =
                        self.granted.iter().map(|t| wire_name(t.name())).collect();
                    known.push(tools::LAUNCH_TEAM.into());
                    known.push(tools::TEAM_STATUS.into());
                    known.push(tools::FOLLOW_UP.into());
                    return Err(format!(
                        "unknown tool '{name}': the partner's tools are {}",
                        known.join(", ")
                    ));
                };
                let args: serde_json::Value = if call.arguments.trim().is_empty() {
                    serde_json::json!({})
                } else {
                    serde_json::from_str(&call.arguments)
                        .map_err(|e| format!("the arguments are not JSON: {e}"))?
                };
                // `approve:` holds for the partner too: in a chat the user
                // decides at once, by a yes/no question.
                if self
                    .runtime
                    .team()
                    .needs_approval(&self.partner, tool.name())
                {
                    let shown = crate::util::secrets::mask(&call.arguments).into_owned();
                    let question = format!(
                        "The partner asks to run {} with {}: run it? [y/N]",
                        tool.name(),
                        shown.trim()
                    );
                    if !self.ask(io, &question) {
                        return Err(format!(
                            "the user denied this call of '{}'; it did not run.",
                            tool.name()
                        ));
                    }
                }
                let ctx = ToolContext::new(&self.partner.name).with_plan(&self.plan);
                tool.call(args, &ctx).map_err(|e| e.to_string())
            }
        }
    }

    /// `launch_team`: checks there is something to launch, asks the user,
    /// launches on yes.
    fn launch_tool(&mut self, arguments: &str, io: &mut dyn ChatIo) -> Result<String, String> {
        if let Some(id) = self.running() {
            return Err(format!(
                "run {id} is still under way: wait for it to end (team_status tells how it stands)"
            ));
        }
        let brief = tools::brief_of(arguments)?;
        let open = tools::check_launchable(&self.plan.lock())?;
        // The team's make-up: the associates (by profile) the modules
        // need; a principal team's every module names one.
        let team = self.runtime.team();
        let members: Vec<(String, String)> = team
            .members()
            .map(|m| (m.name.clone(), m.description.clone()))
            .collect();
        let required = team.config().process == crate::team::Process::Principal;
        let chosen = tools::team_make_up(&self.plan.lock(), &members, required)?;
        let names: Vec<&str> = chosen.iter().map(|(n, _)| n.as_str()).collect();
        let question = if names.is_empty() {
            format!(
                "Launch the team on these {open} module{}? [y/N]",
                if open == 1 { "" } else { "s" }
            )
        } else {
            format!(
                "Launch the team on these {open} module{} with {}? [y/N]",
                if open == 1 { "" } else { "s" },
                names.join(", ")
            )
        };
        // What the user consents to is shown by the program, from the plan
        // and the brief the team will get: the model's own list may differ.
        let modules = tools::module_lines(&self.plan.lock());
        let make_up: String = chosen
            .iter()
            .map(|(n, d)| format!("- {n}: {d}\n"))
            .collect();
        let make_up = if make_up.is_empty() {
            String::new()
        } else {
            format!("these associates:\n{make_up}")
        };
        self.show(
            io,
            ChatEvent::Notice {
                text: format!(
                    "the team would get these modules:\n{modules}{make_up}and this brief: {}",
                    brief.trim()
                ),
            },
        );
        if !self.ask(io, &question) {
            return Ok(
                "the user declined: nothing was launched. Ask what to change in the \
                       modules or the brief."
                    .into(),
            );
        }
        let plan = self.plan.lock().clone();
        let seed = plan.clone();
        match self.start(io, plan, |rt| rt.clone().modules(seed).start(&brief)) {
            Ok(id) => Ok(format!(
                "launched run {id}: the team is working on {open} modules. Its news will reach \
                 you as <team_event> messages; team_status tells how it stands."
            )),
            Err(e) => Err(format!("the team could not be launched: {e}")),
        }
    }

    /// `follow_up` while run `id` works: on the user's yes, the message
    /// waits for the run to finish ([`Chat::send_queued`] sends it then).
    fn queue_follow_up(
        &mut self,
        id: &str,
        message: String,
        io: &mut dyn ChatIo,
    ) -> Result<String, String> {
        self.show(
            io,
            ChatEvent::Notice {
                text: format!(
                    "run {id} is still working; once it has finished, the team would get this \
                     follow-up: {message}"
                ),
            },
        );
        if !self.ask(
            io,
            &format!("Send this follow-up to run {id} when it finishes? [y/N]"),
        ) {
            return Ok("the user declined: no follow-up was queued.".into());
        }
        self.queued.push(message);
        Ok(format!(
            "follow-up queued: run {id} is still working; the message goes to it as a new round \
             as soon as it finishes, and its news will reach you as <team_event> messages."
        ))
    }

    /// Run `run_id` has ended with `status`: the follow-ups queued while it
    /// worked go to it now, as one new round (the user agreed to each), or
    /// are dropped, said, when it did not finish. What happened is
    /// returned, for the partner.
    fn send_queued(
        &mut self,
        run_id: &str,
        status: RunStatus,
        io: &mut dyn ChatIo,
    ) -> Option<String> {
        if self.queued.is_empty() {
            return None;
        }
        if status == RunStatus::AwaitingUser {
            // The run is not over: it asks the user first. The follow-ups
            // stay queued and go to it when it finishes after the answer.
            let text = format!(
                "run {run_id} asks you a question first; your queued follow-up stays queued \
                 and goes to it when the run finishes"
            );
            self.show(io, ChatEvent::Notice { text: text.clone() });
            return Some(format!("Note: {text}."));
        }
        let message = std::mem::take(&mut self.queued).join("\n");
        if status != RunStatus::Done {
            let text = format!(
                "the follow-up queued for run {run_id} was not sent: the run ended {} \
                 (boardroom resume {run_id} --message {} sends it)",
                status.as_str(),
                shell_quoted(&message)
            );
            self.show(io, ChatEvent::Notice { text: text.clone() });
            return Some(format!("The user's {text}."));
        }
        self.show(
            io,
            ChatEvent::Notice {
                text: format!(
                    "run {run_id} has finished; your follow-up goes to it now: {message}"
                ),
            },
        );
        // The run's watcher has delivered its last news: joined, not dropped.
        self.wait_run();
        let dir = self.runs_dir.join(run_id);
        let plan = crate::store::load_run(&dir)
            .map(|r| r.state.plan)
            .unwrap_or_default();
        Some(
            match self.start(io, plan, |rt| rt.start_resume_with_message(&dir, &message)) {
                Ok(id) => format!(
                    "The follow-up the user asked for while the team worked was sent: run {id} \
                     works on it in a new round; its news will reach you as <team_event> \
                     messages."
                ),
                Err(e) => {
                    self.show(
                        io,
                        ChatEvent::Notice {
                            text: format!(
                                "the follow-up could not be started: {e} (boardroom resume \
                                 {run_id} --message {} sends it)",
                                shell_quoted(&message)
                            ),
                        },
                    );
                    format!("The follow-up the user asked for could not be started: {e}")
                }
            },
        )
    }

    /// `follow_up`: a new round on the last run, once it has finished, on
    /// the user's yes.
    fn follow_up_tool(&mut self, arguments: &str, io: &mut dyn ChatIo) -> Result<String, String> {
        let message = tools::message_of(arguments)?;
        if let Some(id) = self.running().map(str::to_string) {
            return self.queue_follow_up(&id, message, io);
        }
        let Some(run_id) = self.runs.last().cloned() else {
            return Err(format!(
                "no run to follow up: launch the team first with {}",
                tools::LAUNCH_TEAM
            ));
        };
        let dir = self.runs_dir.join(&run_id);
        let state = crate::store::load_run(&dir)
            .map_err(|e| format!("run {run_id} cannot be read: {e}"))?
            .state;
        if state.phase != crate::record::RunPhase::Finished
            || matches!(
                state.status,
                RunStatus::Cancelled | RunStatus::Failed | RunStatus::AwaitingUser
            )
        {
            return Err(format!(
                "run {run_id} is {}, not finished: a follow-up needs a finished run",
                state.status.as_str()
            ));
        }
        // The message is the model's wording: the user sees what is sent.
        self.show(
            io,
            ChatEvent::Notice {
                text: format!("the team would get this follow-up: {message}"),
            },
        );
        if !self.ask(io, &format!("Send this follow-up to run {run_id}? [y/N]")) {
            return Ok("the user declined: no follow-up was sent.".into());
        }
        match self.start(io, state.plan, |rt| {
            rt.start_resume_with_message(&dir, &message)
        }) {
            Ok(id) => Ok(format!(
                "follow-up sent: run {id} works on it in a new round; its news will reach you as \
                 <team_event> messages."
            )),
            Err(e) => Err(format!("the follow-up could not be started: {e}")),
        }
    }
}

/// `text` as one single-quoted shell word, for a command the user can copy.
fn shell_quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}
