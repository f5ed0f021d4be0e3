//! One conversation with the partner: what a chat is, what the user sees
//! of it and how it is saved. Its turns (a small tool loop fed by the inbox,
//! the launch with the user's consent) are in `turn`, the run it launched
//! in `team_run`.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use super::ChatError;
use super::store::{ChatRecord, ChatStore};
use crate::core::{Inbox, InboxItem, TeamNews};
use crate::event::{Event, RunStatus};
use crate::model::{Message, SharedModel};
use crate::plan::Plan;
use crate::runtime::Runtime;
use crate::team::AgentSpec;
use crate::tools::{Tool, ToolRegistry};

mod team_run;
mod turn;

use team_run::ActiveRun;

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
    /// Follow-ups the user agreed to while the run under way worked: sent
    /// to it as its next round once it has finished.
    queued: Vec<String>,
    /// Whether the warning that the partner's model has no tool calling
    /// was logged (once a chat).
    tools_warned: bool,
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
            queued: Vec::new(),
            tools_warned: false,
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
        if let Some(run_id) = self.runs.last()
            && let Ok(r) = crate::store::load_run(&self.runs_dir.join(run_id))
            && r.state.status == RunStatus::AwaitingUser
        {
            self.inbox
                .push(InboxItem::TeamEvent(TeamNews::AwaitingUser {
                    run_id: run_id.clone(),
                    question: r.state.answer.unwrap_or_default(),
                }));
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

    /// The follow-ups waiting for the run under way to finish, in the
    /// order the user agreed to them.
    pub fn queued_follow_ups(&self) -> &[String] {
        &self.queued
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

    /// Ends the chat: stops a run still under way (it stays resumable),
    /// joins the chat's own threads, saves. Returns the run stopped, if
    /// any. A team run, once closed and saved, may still be ending its
    /// member threads on its own thread.
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
/// launched outlives it unsaved or still working (a closed run's thread
/// may still be ending its member threads).
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
         (the user is asked too; while the team works, a change the user asks for is a \
         follow_up too: it is queued and goes to the team when its run finishes).",
    );
    s.push_str(
        " Before launching, agree the team's make-up with the user: propose which member \
         (by its description above) each module needs, set it as the module's assigned_agent, \
         and show the modules with their members; the user's yes to the launch covers both.",
    );
    if team.config().process == crate::team::Process::Principal {
        s.push_str(
            " This team works by a principal: every module goes to one associate (a member \
             above), so every module needs one.",
        );
    }
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
