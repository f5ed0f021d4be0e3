//! One conversation with the partner: its turns (a small tool loop fed by
//! the inbox), the launch with the user's consent, and the run it launched.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use super::inbox::{Inbox, InboxItem, TeamNews};
use super::news::{NewsTracker, recent_line};
use super::store::{ChatRecord, ChatStore};
use super::{ChatError, ingest, tools};
use crate::event::{Event, RunStatus};
use crate::model::{ChatRequest, ChatResponse, Message, ModelError, Phase, SharedModel, ToolCall};
use crate::plan::Plan;
use crate::runtime::{Cancel, Runtime};
use crate::team::AgentSpec;
use crate::tools::{Tool, ToolContext, ToolRegistry, spec_of, wire_name};

/// Tool steps in one partner turn before it must answer.
const MAX_STEPS: usize = 12;
/// Events kept for `team_status`.
const RECENT: usize = 8;

/// What the user is shown (and what the transcript keeps).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ChatEvent {
    /// The user said something.
    UserMessage {
        /// The text.
        text: String,
    },
    /// The partner said something.
    PartnerMessage {
        /// The text.
        text: String,
    },
    /// The user is asked a yes/no question (to launch, to stop, to resume).
    ConsentAsked {
        /// The question.
        question: String,
    },
    /// The user's answer.
    Consent {
        /// Yes or no.
        granted: bool,
    },
    /// A run was launched (or resumed) on a background thread.
    RunLaunched {
        /// The run.
        run_id: String,
        /// Its work modules.
        modules: usize,
    },
    /// A run's report, shown to the user when it ends.
    Report {
        /// The run.
        run_id: String,
        /// Where it is saved.
        path: String,
        /// The report.
        text: String,
    },
    /// A note from the program (not the partner).
    Notice {
        /// The note.
        text: String,
    },
}

/// The user's side of a chat: where its events go, and the yes/no answers.
pub trait ChatIo {
    /// Shows an event.
    fn emit(&mut self, event: &ChatEvent);
    /// Asks the user a yes/no question; `false` unless the user said yes.
    fn consent(&mut self, question: &str) -> bool;
}

/// How a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TurnEnd {
    /// The inbox was empty: nothing to answer.
    Idle,
    /// The partner answered.
    Answered,
    /// The turn was cancelled; what it had said is dropped.
    Cancelled,
}

/// A run launched from the chat.
struct ActiveRun {
    run_id: String,
    cancel: Cancel,
    watcher: JoinHandle<()>,
}

/// A conversation between the user and the team's partner.
///
/// # Examples
///
/// ```
/// use boardroom::{Cancel, Runtime, Team};
/// use boardroom::chat::{Chat, ChatEvent, ChatIo};
/// use boardroom::testing::Sim;
///
/// /// Prints what the user would see; says no to every question.
/// struct Quiet;
/// impl ChatIo for Quiet {
///     fn emit(&mut self, event: &ChatEvent) {
///         println!("{event:?}");
///     }
///     fn consent(&mut self, _question: &str) -> bool {
///         false
///     }
/// }
///
/// let runs = std::env::temp_dir().join(format!("boardroom-chat-doc-{}", std::process::id()));
/// let runtime = Runtime::new(Team::builtin()?, Sim::new()).runs_dir(&runs);
/// let mut chat = Chat::new(runtime, std::sync::Arc::new(Sim::new()), &runs)?;
/// chat.user_says("Plan a team offsite for about 20 people over two days", &mut Quiet);
/// chat.turn(&mut Quiet, &Cancel::new())?;
/// assert_eq!(chat.plan().tasks.len(), 4, "the partner drafted four modules");
/// assert!(chat.runs().is_empty(), "the user said no: nothing was launched");
/// chat.close();
/// # std::fs::remove_dir_all(&runs).ok();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Chat {
    runtime: Runtime,
    runs_dir: PathBuf,
    partner: AgentSpec,
    model: SharedModel,
    granted: Vec<Arc<dyn Tool>>,
    plan: Mutex<Plan>,
    system: Message,
    messages: Vec<Message>,
    inbox: Arc<Inbox>,
    wake: (Sender<()>, Receiver<()>),
    active: Option<ActiveRun>,
    runs: Vec<String>,
    recent: Arc<Mutex<VecDeque<String>>>,
    abandoned: Vec<JoinHandle<()>>,
    store: Option<(ChatStore, String, u64)>,
    events_out: Option<Sender<Event>>,
    /// A run of this chat that waits for the user's answer.
    awaiting: Option<String>,
}

impl std::fmt::Debug for Chat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Chat")
            .field("partner", &self.partner.name)
            .field("messages", &self.messages.len())
            .field("runs", &self.runs)
            .finish_non_exhaustive()
    }
}

impl Chat {
    /// A new chat with `runtime`'s team partner, whose model is `model`;
    /// runs it launches are saved under `runs_dir` (give the same
    /// directory to `runtime.runs_dir`).
    ///
    /// # Errors
    ///
    /// [`ChatError::NoPartner`]; [`ChatError::Tools`] when the partner's
    /// `tools:` grants an unknown tool.
    pub fn new(runtime: Runtime, model: SharedModel, runs_dir: &Path) -> Result<Chat, ChatError> {
        let team = runtime.team();
        let partner = team
            .partner()
            .cloned()
            .ok_or_else(|| ChatError::NoPartner {
                team: team.name().to_string(),
            })?;
        let granted = ToolRegistry::builtin()
            .granted(&partner)
            .map_err(ChatError::Tools)?;
        let system = Message::system(system_prompt(&runtime, &partner));
        Ok(Chat {
            runtime,
            runs_dir: runs_dir.to_path_buf(),
            partner,
            model,
            granted,
            plan: Mutex::new(Plan::default()),
            system,
            messages: Vec::new(),
            inbox: Arc::new(Inbox::new()),
            wake: crossbeam_channel::unbounded(),
            active: None,
            runs: Vec::new(),
            recent: Arc::default(),
            abandoned: Vec::new(),
            store: None,
            events_out: None,
            awaiting: None,
        })
    }

    /// Saves the chat in `store` (after every turn), as chat `id`.
    #[must_use]
    pub fn saved_in(mut self, store: ChatStore, id: &str) -> Self {
        self.store = Some((store, id.to_string(), crate::event::now_ms()));
        self
    }

    /// Continues a saved chat: its conversation, plan and runs.
    #[must_use]
    pub fn restore(mut self, record: ChatRecord) -> Self {
        self.messages = record.messages;
        *self.plan.lock() = record.plan;
        self.runs = record.runs;
        if let Some((_, _, created)) = &mut self.store {
            *created = record.created_ms;
        }
        // A run that still waits for the user's answer asks again.
        if let Some(run_id) = self.runs.last() {
            if let Ok(r) = crate::store::load_run(&self.runs_dir.join(run_id)) {
                if r.state.status == RunStatus::AwaitingUser {
                    self.inbox
                        .push(InboxItem::TeamEvent(TeamNews::AwaitingUser {
                            run_id: run_id.clone(),
                            question: r.state.answer.unwrap_or_default(),
                        }));
                }
            }
        }
        self
    }

    /// Sends every event of the runs it launches to `sender` too.
    #[must_use]
    pub fn run_events(mut self, sender: Sender<Event>) -> Self {
        self.events_out = Some(sender);
        self
    }

    /// The partner's inbox.
    pub fn inbox(&self) -> &Arc<Inbox> {
        &self.inbox
    }

    /// Ticks whenever something lands in the inbox from a run.
    pub fn wakeups(&self) -> Receiver<()> {
        self.wake.1.clone()
    }

    /// The partner's draft plan.
    pub fn plan(&self) -> Plan {
        self.plan.lock().clone()
    }

    /// The runs the chat launched, oldest first.
    pub fn runs(&self) -> &[String] {
        &self.runs
    }

    /// The run under way, if any.
    pub fn running(&self) -> Option<&str> {
        self.active
            .as_ref()
            .filter(|r| !r.watcher.is_finished())
            .map(|r| r.run_id.as_str())
    }

    /// The conversation so far (without the system prompt).
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// The user said `text`: it is shown, recorded and put in the inbox.
    /// When a run of the chat waits for the user (its master asked), the
    /// text is the answer: the run is resumed with it.
    pub fn user_says(&mut self, text: &str, io: &mut dyn ChatIo) {
        self.show(
            io,
            ChatEvent::UserMessage {
                text: text.to_string(),
            },
        );
        if let Some(run_id) = self.awaiting.take() {
            let dir = self.runs_dir.join(&run_id);
            let plan = crate::store::load_run(&dir)
                .map(|r| r.state.plan)
                .unwrap_or_default();
            let answer = text.to_string();
            let note = match self.start(io, plan, |rt| rt.start_resume_with_message(&dir, &answer))
            {
                Ok(_) => format!(
                    "The user's message was passed to run {run_id} as the answer to its question; \
                     the team goes on."
                ),
                Err(e) => format!("The user's answer could not be passed to run {run_id}: {e}"),
            };
            self.inbox.push(InboxItem::Briefing { text: note });
        }
        self.inbox.push(InboxItem::user(text));
    }

    /// The run that waits for the user's answer, if any.
    pub fn awaiting(&self) -> Option<&str> {
        self.awaiting.as_deref()
    }

    /// Shows an event and keeps it in the transcript.
    pub fn show(&mut self, io: &mut dyn ChatIo, event: ChatEvent) {
        if let Some((store, _, _)) = &self.store {
            let mut line = serde_json::to_value(&event).unwrap_or_default();
            if let Some(map) = line.as_object_mut() {
                map.insert("time_ms".into(), crate::event::now_ms().into());
            }
            if let Err(e) = store.append(&line) {
                log::warn!("{e}");
            }
        }
        io.emit(&event);
    }

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
            for item in &items {
                if let InboxItem::TeamEvent(TeamNews::AwaitingUser { run_id, .. }) = item {
                    self.awaiting = Some(run_id.clone());
                }
                if let InboxItem::TeamEvent(TeamNews::RunFinished {
                    run_id,
                    report: Some(path),
                    ..
                }) = item
                {
                    let text = std::fs::read_to_string(path).unwrap_or_default();
                    self.show(
                        io,
                        ChatEvent::Report {
                            run_id: run_id.clone(),
                            path: path.clone(),
                            text,
                        },
                    );
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
        req.tools = self.granted.iter().map(|t| spec_of(t.as_ref())).collect();
        req.tools.push(tools::launch_team_spec());
        req.tools.push(tools::team_status_spec());
        req.tools.push(tools::follow_up_spec());
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
                        Err(panic) => crate::runtime::tool_loop::panic_text(panic.as_ref()),
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
                let Some(tool) = self.granted.iter().find(|t| wire_name(t.name()) == name) else {
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
        let question = format!(
            "Launch the team on these {open} module{}? [y/N]",
            if open == 1 { "" } else { "s" }
        );
        // What the user consents to is shown by the program, from the plan
        // and the brief the team will get: the model's own list may differ.
        let modules = tools::module_lines(&self.plan.lock());
        self.show(
            io,
            ChatEvent::Notice {
                text: format!(
                    "the team would get these modules:\n{modules}and this brief: {}",
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

    /// `follow_up`: a new round on the last run, once it has finished, on
    /// the user's yes.
    fn follow_up_tool(&mut self, arguments: &str, io: &mut dyn ChatIo) -> Result<String, String> {
        let message = tools::message_of(arguments)?;
        if let Some(id) = self.running() {
            return Err(format!(
                "run {id} is still under way: a follow-up waits until it has finished"
            ));
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
        if state.phase != crate::runtime::RunPhase::Finished
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

    /// Asks the user a yes/no question, shown and recorded.
    pub fn ask(&mut self, io: &mut dyn ChatIo, question: &str) -> bool {
        self.show(
            io,
            ChatEvent::ConsentAsked {
                question: question.to_string(),
            },
        );
        let granted = io.consent(question);
        self.show(io, ChatEvent::Consent { granted });
        granted
    }

    /// Resumes run `run_id` of this chat on a background thread (after the
    /// user said yes).
    ///
    /// # Errors
    ///
    /// [`ChatError::Run`] when a run is already under way or the thread
    /// cannot be started.
    pub fn resume_run(&mut self, run_id: &str, io: &mut dyn ChatIo) -> Result<(), ChatError> {
        if let Some(id) = self.running() {
            return Err(ChatError::Run(crate::runtime::RunError::Process(format!(
                "run {id} is still under way"
            ))));
        }
        let dir = self.runs_dir.join(run_id);
        let plan = crate::store::load_run(&dir)
            .map(|r| r.state.plan)
            .unwrap_or_default();
        self.start(io, plan, |rt| rt.start_resume(&dir))?;
        Ok(())
    }

    /// The runs of this chat that can be resumed, with how they ended:
    /// `interrupted` (cut off: a `running` snapshot that no process holds)
    /// or `stopped` (stopped before they finished).
    pub fn interrupted_runs(&self) -> Vec<(String, &'static str)> {
        self.runs
            .iter()
            .filter_map(|id| {
                let dir = self.runs_dir.join(id);
                let state = crate::store::load_run(&dir).ok()?.state;
                if crate::store::run_holder(&dir).is_some() {
                    return None;
                }
                match (state.status, state.phase) {
                    (RunStatus::Running, _) => Some((id.clone(), "interrupted")),
                    (RunStatus::Cancelled, p) if p != crate::runtime::RunPhase::Finished => {
                        Some((id.clone(), "stopped"))
                    }
                    _ => None,
                }
            })
            .collect()
    }

    fn start(
        &mut self,
        io: &mut dyn ChatIo,
        plan: Plan,
        go: impl FnOnce(&Runtime) -> Result<crate::runtime::RunHandle, crate::runtime::RunError>,
    ) -> Result<String, ChatError> {
        self.reap();
        let (tx, rx) = crossbeam_channel::unbounded::<Event>();
        let rt = self.runtime.clone().events(tx).parent(&self.partner.name);
        let handle = go(&rt)?;
        // The run's thread holds the only other sender: the forwarder ends
        // when the run does.
        drop(rt);
        let run_id = handle.run_id().to_string();
        let modules = plan.tasks.len();
        let recent = Arc::clone(&self.recent);
        recent.lock().clear();
        let inbox = Arc::clone(&self.inbox);
        let wake = self.wake.0.clone();
        let out = self.events_out.clone();
        let forwarder = {
            let inbox = Arc::clone(&inbox);
            let wake = wake.clone();
            std::thread::Builder::new()
                .name("boardroom-chat-events".into())
                .spawn(move || {
                    let mut tracker = NewsTracker::new(plan);
                    for e in rx {
                        if let Some(line) = recent_line(&e) {
                            let mut r = recent.lock();
                            if r.len() == RECENT {
                                r.pop_front();
                            }
                            r.push_back(line);
                        }
                        for news in tracker.observe(&e) {
                            inbox.push(InboxItem::TeamEvent(news));
                            let _ = wake.send(());
                        }
                        if let Some(out) = &out {
                            let _ = out.send(e);
                        }
                    }
                })
                .map_err(chat_thread_error)?
        };
        let cancel = handle.canceller();
        let report = self
            .runs_dir
            .join(&run_id)
            .join("workspace")
            .join("report.md");
        let watched = run_id.clone();
        let watcher = std::thread::Builder::new()
            .name("boardroom-chat-run".into())
            .spawn(move || {
                let outcome = handle.wait();
                let _ = forwarder.join();
                let news = match outcome {
                    Ok(o) if o.status == RunStatus::AwaitingUser => TeamNews::AwaitingUser {
                        run_id: watched,
                        question: o.answer,
                    },
                    Ok(o) => TeamNews::RunFinished {
                        run_id: watched,
                        status: o.status,
                        report: (o.status != RunStatus::Cancelled && report.is_file())
                            .then(|| report.display().to_string()),
                    },
                    Err(e) => TeamNews::RunFailed {
                        run_id: watched,
                        error: e.to_string(),
                    },
                };
                inbox.push(InboxItem::TeamEvent(news));
                let _ = wake.send(());
            })
            .map_err(chat_thread_error)?;
        if !self.runs.contains(&run_id) {
            self.runs.push(run_id.clone());
        }
        self.active = Some(ActiveRun {
            run_id: run_id.clone(),
            cancel,
            watcher,
        });
        self.show(
            io,
            ChatEvent::RunLaunched {
                run_id: run_id.clone(),
                modules,
            },
        );
        self.save();
        Ok(run_id)
    }

    /// `team_status`: the run's snapshot (status, round, modules) and its
    /// recent events, in a `<team_status>` element; before a launch, the
    /// draft plan.
    fn status(&self) -> String {
        let Some(run_id) = self.runs.last() else {
            let plan = self.plan.lock();
            return format!(
                "no team has been launched yet. The draft plan has {} modules:\n{}",
                plan.tasks.len(),
                tools::module_lines(&plan)
            );
        };
        let running = self.running().is_some();
        let mut out = match crate::store::load_run(&self.runs_dir.join(run_id)) {
            Ok(r) => {
                let s = &r.state;
                let done = s
                    .plan
                    .tasks
                    .iter()
                    .filter(|m| m.status == crate::plan::ModuleStatus::Completed)
                    .count();
                format!(
                    "run {run_id}: {}, round {} of at most {}; {done} of {} modules completed:\n{}",
                    if running {
                        "working".to_string()
                    } else {
                        s.status.as_str().to_string()
                    },
                    s.round,
                    r.settings.max_rounds,
                    s.plan.tasks.len(),
                    tools::module_lines(&s.plan)
                )
            }
            Err(_) => format!(
                "run {run_id}: {}; it has not saved its first phase yet. The plan it was given:\n{}",
                if running { "starting" } else { "not found" },
                tools::module_lines(&self.plan.lock())
            ),
        };
        let recent = self.recent.lock();
        if !recent.is_empty() {
            out.push_str("recent events:\n");
            for line in recent.iter() {
                out.push_str("- ");
                out.push_str(line);
                out.push('\n');
            }
        }
        // The run's text (module descriptions, assignments) is data from
        // the team, not instructions: escaped in its element, as a
        // `<team_event>` is.
        format!(
            "<team_status run=\"{}\">\n{}\n</team_status>",
            crate::board::escape_xml(run_id),
            crate::board::escape_xml(out.trim_end())
        )
    }

    /// Asks the run under way to stop (it stays resumable) and waits for
    /// it to end; the id of the run stopped (`None` when no run was under
    /// way: one that had already ended is not "stopped").
    pub fn stop_run(&mut self) -> Option<String> {
        let run = self.active.take()?;
        let under_way = !run.watcher.is_finished();
        run.cancel.cancel();
        let _ = run.watcher.join();
        under_way.then_some(run.run_id)
    }

    /// Waits for the run under way to end (its news lands in the inbox).
    pub fn wait_run(&mut self) {
        if let Some(run) = self.active.take() {
            let _ = run.watcher.join();
        }
    }

    /// Joins the threads of a run that has ended.
    fn reap(&mut self) {
        if self
            .active
            .as_ref()
            .is_some_and(|r| r.watcher.is_finished())
        {
            self.wait_run();
        }
        let (done, alive): (Vec<_>, Vec<_>) = std::mem::take(&mut self.abandoned)
            .into_iter()
            .partition(JoinHandle::is_finished);
        for t in done {
            let _ = t.join();
        }
        self.abandoned = alive;
    }

    /// Ends the chat: stops a run still under way (it stays resumable),
    /// joins every thread, saves. Returns the run stopped, if any.
    pub fn close(mut self) -> Option<String> {
        let stopped = self.stop_run();
        for t in std::mem::take(&mut self.abandoned) {
            let _ = t.join();
        }
        self.save();
        stopped
    }

    fn save(&self) {
        let Some((store, id, created)) = &self.store else {
            return;
        };
        let record = ChatRecord {
            id: id.clone(),
            created_ms: *created,
            saved_ms: crate::event::now_ms(),
            runs_dir: self.runs_dir.clone(),
            runs: self.runs.clone(),
            plan: self.plan.lock().clone(),
            messages: self.messages.clone(),
        };
        if let Err(e) = store.save(&record) {
            log::warn!("{e}");
        }
    }
}

/// A chat dropped without [`Chat::close`] ends the same way: no run it
/// launched, and no thread of it, outlives it.
impl Drop for Chat {
    fn drop(&mut self) {
        if self.active.is_some() || !self.abandoned.is_empty() {
            self.stop_run();
            for t in std::mem::take(&mut self.abandoned) {
                let _ = t.join();
            }
            self.save();
        }
    }
}

/// The partner's system prompt: its soul, the team it fronts, its tools.
fn system_prompt(runtime: &Runtime, partner: &AgentSpec) -> String {
    use std::fmt::Write as _;
    let team = runtime.team();
    let mut s = format!("{}\n\n## The team you front\n\n", partner.soul.trim());
    let _ = writeln!(s, "- {} (leads the team)", team.master().name);
    for m in team.members() {
        let _ = writeln!(s, "- {}: {}", m.name, m.description);
    }
    s.push_str(
        "\nYou are the team's partner. Your tools: the plan tools to draft work modules, \
         launch_team(brief) to propose the launch (the user is asked for consent), team_status \
         for how a launched run stands, follow_up(message) for a new round on a finished run \
         (the user is asked too).",
    );
    s
}

/// A chat thread the system refused to start.
fn chat_thread_error(source: std::io::Error) -> ChatError {
    ChatError::Run(crate::runtime::RunError::Pool(
        crate::runtime::ThreadError::Spawn {
            thread: "a chat thread",
            source,
        },
    ))
}
