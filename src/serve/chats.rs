//! The chats a server holds with a team's partner: each a library
//! [`Chat`] driven on a thread of its own, as `boardroom chat` drives one
//! through a pipe. A request hands the thread a message (or the answer to
//! the partner's yes/no question) and waits for the partner's turn to end
//! or to ask; at most `max` chats are open at once.
//!
//! The runs a chat launches are ordinary runs in the server's runs
//! directory (`GET /v1/runs` lists them); the chat is saved in the chats
//! directory, as `boardroom chat` saves one (`chat --resume ID` goes on
//! with it once the server has closed it).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use parking_lot::{Condvar, Mutex};
use serde_json::{Value, json};

use super::runs::{Refused, Runs};
use crate::chat::{Chat, ChatEvent, ChatIo, ChatStore};
use crate::runtime::{Cancel, Runtime};

/// How long a request waits for the partner's turn before it answers
/// with what has been said so far (`state: working`).
const REPLY_WAIT: Duration = Duration::from_secs(120);

/// How often a waiting chat thread looks at the stop flag.
const TICK: Duration = Duration::from_millis(200);

/// What a request to start a chat asks for.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct NewChat {
    #[serde(default)]
    team: Option<String>,
    #[serde(default)]
    model: Option<String>,
    /// The user's first message.
    #[serde(default)]
    message: Option<String>,
}

/// What a request hands a chat's thread.
enum Input {
    Say(String),
    Consent(bool),
    Close,
}

/// What a chat shows, and where it stands.
#[derive(Debug, Default)]
struct Shared {
    events: Vec<Value>,
    /// Inputs sent to the thread, and taken by it.
    sent: u64,
    taken: u64,
    /// A partner turn is under way (or an input waits for one).
    busy: bool,
    /// The yes/no question the partner waits on.
    question: Option<String>,
    runs: Vec<String>,
    running: Option<String>,
    closed: bool,
}

/// One chat open here.
#[derive(Debug)]
struct Open {
    team: String,
    shared: Mutex<Shared>,
    changed: Condvar,
    inputs: Sender<Input>,
}

impl Open {
    fn update(&self, f: impl FnOnce(&mut Shared)) {
        f(&mut self.shared.lock());
        self.changed.notify_all();
    }
}

/// The chats of one server.
#[derive(Debug)]
pub(super) struct Chats {
    dir: PathBuf,
    max: usize,
    open: Mutex<HashMap<String, Arc<Open>>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    stop: Arc<AtomicBool>,
}

impl Chats {
    pub(super) fn new(dir: PathBuf, max: usize) -> Self {
        Chats {
            dir,
            max: max.max(1),
            open: Mutex::default(),
            threads: Mutex::default(),
            stop: Arc::default(),
        }
    }

    fn get(&self, id: &str) -> Option<Arc<Open>> {
        self.open.lock().get(id).cloned()
    }

    /// Starts a chat with a team's partner; with a first message, answers
    /// once the partner's turn has ended (or asks).
    pub(super) fn start(&self, runs: &Runs, new: NewChat) -> Result<Value, Refused> {
        let team = runs.team(new.team.as_deref())?.clone();
        let Some(partner) = team.partner().cloned() else {
            return Err(Refused::BadInput(format!(
                "team: '{}' has no partner (an agent with 'role: partner') to chat with",
                team.name()
            )));
        };
        let first = match new.message.as_deref().map(str::trim) {
            Some("") => return Err(Refused::BadInput("message: the message is empty".into())),
            m => m.map(str::to_string),
        };
        let spec = runs.spec(&team, new.model.as_deref());
        let model = team
            .model(&spec)
            .map_err(|e| Refused::BadInput(format!("model: {e}")))?;
        team.check_models()
            .map_err(|e| Refused::BadInput(format!("team: {e}")))?;
        let partner_model = match partner.model.as_deref().filter(|m| *m != "default") {
            Some(p) => team
                .model(p)
                .map_err(|e| Refused::BadInput(format!("the partner's model '{p}': {e}")))?,
            None => Arc::clone(&model),
        };
        let name = team.name().to_string();
        let mut runtime = Runtime::with_shared_model(team, model)
            .runs_dir(runs.dir())
            .model_spec(&spec);
        if runs.memory() {
            let memory = crate::memory::MasterMemory::for_team(runs.dir(), &name);
            runtime = runtime.master_memory(memory);
        }
        let mut open = self.open.lock();
        if open.len() >= self.max {
            return Err(Refused::ChatsFull(self.max));
        }
        let (store, id) =
            ChatStore::create(&self.dir).map_err(|e| Refused::Failed(e.to_string()))?;
        let chat = Chat::new(runtime, partner_model, runs.dir())
            .map_err(|e| Refused::BadInput(e.to_string()))?
            .saved_in(store, &id);
        let (tx, rx) = crossbeam_channel::unbounded();
        let entry = Arc::new(Open {
            team: name,
            shared: Mutex::default(),
            changed: Condvar::new(),
            inputs: tx,
        });
        let io = Io {
            open: Arc::clone(&entry),
            inputs: rx,
            stop: Arc::clone(&self.stop),
            deferred: Vec::new(),
            closing: false,
        };
        let thread = std::thread::Builder::new()
            .name("boardroom-serve-chat".into())
            .spawn(move || drive(chat, io))
            .map_err(|e| Refused::Failed(format!("cannot start the chat's thread: {e}")))?;
        open.insert(id.clone(), Arc::clone(&entry));
        drop(open);
        let mut threads = self.threads.lock();
        threads.retain(|t| !t.is_finished());
        threads.push(thread);
        drop(threads);
        match first {
            Some(text) => Ok(self.send(&id, &entry, Input::Say(text))),
            None => Ok(view(&id, &entry, 0)),
        }
    }

    /// The user's message; answers with what the partner said to it.
    pub(super) fn say(&self, id: &str, text: &str) -> Result<Value, Refused> {
        let open = self.live(id)?;
        let text = text.trim();
        if text.is_empty() {
            return Err(Refused::BadInput("text: the message is empty".into()));
        }
        if let Some(q) = &open.shared.lock().question {
            return Err(Refused::Conflict(format!(
                "the partner waits for a yes or no first: {q} (POST it to /v1/chats/{id}/consent)"
            )));
        }
        Ok(self.send(id, &open, Input::Say(text.to_string())))
    }

    /// The user's yes or no to the partner's question.
    pub(super) fn consent(&self, id: &str, granted: bool) -> Result<Value, Refused> {
        let open = self.live(id)?;
        if open.shared.lock().question.is_none() {
            return Err(Refused::Conflict(format!(
                "chat {id} asks no question now: send a message to /v1/chats/{id}/messages"
            )));
        }
        Ok(self.send(id, &open, Input::Consent(granted)))
    }

    /// Ends a chat: a run it launched is stopped (saved, resumable) and
    /// the chat is saved.
    pub(super) fn close(&self, id: &str) -> Result<Value, Refused> {
        let open = self.live(id)?;
        let answer = self.send(id, &open, Input::Close);
        self.open.lock().remove(id);
        Ok(answer)
    }

    /// A chat's state and events (those after the first `after`): live,
    /// or as saved.
    pub(super) fn show(&self, id: &str, after: usize) -> Result<Value, Refused> {
        if let Some(open) = self.get(id) {
            return Ok(view(id, &open, after));
        }
        if !crate::util::httpd::plain_name(id) {
            return Err(Refused::NotFound(format!("no chat '{id}'")));
        }
        let (record, transcript) = ChatStore::load(&self.dir, id)
            .map_err(|_| Refused::NotFound(format!("no chat '{id}'")))?;
        Ok(json!({
            "id": id,
            "state": "closed",
            "question": null,
            "runs": record.runs,
            "running": null,
            "events": transcript.into_iter().skip(after).collect::<Vec<_>>(),
        }))
    }

    fn live(&self, id: &str) -> Result<Arc<Open>, Refused> {
        match self.get(id) {
            Some(open) if !open.shared.lock().closed => Ok(open),
            Some(_) => Err(Refused::Conflict(format!("chat {id} is closed"))),
            None if crate::util::httpd::plain_name(id)
                && ChatStore::load(&self.dir, id).is_ok() =>
            {
                Err(Refused::Conflict(format!(
                    "chat {id} is not open on this server (boardroom chat --resume {id} goes on \
                     with it)"
                )))
            }
            None => Err(Refused::NotFound(format!("no chat '{id}'"))),
        }
    }

    /// Hands `input` to the chat's thread and waits until it is taken and
    /// the partner's turn has ended, or asks, or [`REPLY_WAIT`] passed;
    /// answers with the events shown meanwhile.
    fn send(&self, id: &str, open: &Open, input: Input) -> Value {
        let mut shared = open.shared.lock();
        let from = shared.events.len();
        shared.sent += 1;
        let seq = shared.sent;
        if open.inputs.send(input).is_err() {
            shared.closed = true;
        }
        let started = Instant::now();
        while !shared.closed
            && (shared.taken < seq || (shared.busy && shared.question.is_none()))
            && started.elapsed() < REPLY_WAIT
            && !self.stop.load(Ordering::Relaxed)
        {
            open.changed.wait_for(&mut shared, TICK);
        }
        drop(shared);
        view(id, open, from)
    }

    /// Closes every chat (their runs are stopped, resumable) and joins
    /// their threads.
    pub(super) fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
        self.open.lock().clear();
        for t in std::mem::take(&mut *self.threads.lock()) {
            let _ = t.join();
        }
    }
}

/// What a request is answered with: the chat's state and its events
/// from index `from` on.
fn view(id: &str, open: &Open, from: usize) -> Value {
    let shared = open.shared.lock();
    let state = if shared.closed {
        "closed"
    } else if shared.question.is_some() {
        "awaiting_consent"
    } else if shared.busy || shared.taken < shared.sent {
        "working"
    } else {
        "idle"
    };
    json!({
        "id": id,
        "team": open.team,
        "state": state,
        "question": shared.question,
        "runs": shared.runs,
        "running": shared.running,
        "events": shared.events.get(from..).unwrap_or_default(),
    })
}

/// The chat's side of the user, for a chat driven over HTTP.
struct Io {
    open: Arc<Open>,
    inputs: Receiver<Input>,
    stop: Arc<AtomicBool>,
    /// Messages that arrived while a question waited: said after it.
    deferred: Vec<String>,
    /// The chat was closed while a question waited.
    closing: bool,
}

impl ChatIo for Io {
    fn emit(&mut self, event: &ChatEvent) {
        let value = serde_json::to_value(event).unwrap_or_default();
        self.open.update(|s| s.events.push(value));
    }

    fn consent(&mut self, question: &str) -> bool {
        self.open
            .update(|s| s.question = Some(question.to_string()));
        let answer = loop {
            if self.stop.load(Ordering::Relaxed) {
                break false;
            }
            match self.inputs.recv_timeout(TICK) {
                Ok(Input::Consent(granted)) => break granted,
                Ok(Input::Say(text)) => {
                    self.open.update(|s| s.taken += 1);
                    self.deferred.push(text);
                }
                Ok(Input::Close) | Err(crossbeam_channel::RecvTimeoutError::Disconnected) => {
                    self.closing = true;
                    break false;
                }
                Err(crossbeam_channel::RecvTimeoutError::Timeout) => {}
            }
        };
        self.open.update(|s| {
            s.taken += 1;
            s.question = None;
        });
        answer
    }
}

/// The chat's thread: a partner turn whenever its inbox holds something,
/// else the next input or the team's news; closed on `Close` or when the
/// server stops.
fn drive(mut chat: Chat, mut io: Io) {
    let wake = chat.wakeups();
    let stop = Arc::clone(&io.stop);
    let mut closing = false;
    while !closing && !io.closing && !stop.load(Ordering::Relaxed) {
        for text in std::mem::take(&mut io.deferred) {
            chat.user_says(&text, &mut io);
        }
        if !chat.inbox().is_empty() {
            io.open.update(|s| s.busy = true);
            if let Err(e) = chat.turn(&mut io, &Cancel::new()) {
                chat.show(
                    &mut io,
                    ChatEvent::Notice {
                        text: format!("error: {e}"),
                    },
                );
            }
            publish(&chat, &io.open, true);
            continue;
        }
        let input = match io.inputs.try_recv() {
            Ok(input) => Some(input),
            Err(crossbeam_channel::TryRecvError::Disconnected) => break,
            Err(crossbeam_channel::TryRecvError::Empty) => {
                publish(&chat, &io.open, false);
                crossbeam_channel::select! {
                    recv(io.inputs) -> input => match input {
                        Ok(input) => Some(input),
                        Err(_) => break,
                    },
                    recv(wake) -> _ => None,
                    default(TICK) => None,
                }
            }
        };
        match input {
            Some(Input::Say(text)) => {
                io.open.update(|s| {
                    s.taken += 1;
                    s.busy = true;
                });
                chat.user_says(&text, &mut io);
            }
            // No question waits: nothing to answer.
            Some(Input::Consent(_)) => io.open.update(|s| s.taken += 1),
            Some(Input::Close) => closing = true,
            None => {}
        }
    }
    let stopped = chat.close();
    if let Some(run_id) = stopped {
        let text = format!("the chat was closed; run {run_id} was stopped (resumable)");
        io.emit(&ChatEvent::Notice { text });
    }
    io.open.update(|s| {
        s.taken = s.sent;
        s.busy = false;
        s.closed = true;
    });
}

/// Copies where the chat stands (its runs, the one under way) for
/// requests to read; `busy` as given.
fn publish(chat: &Chat, open: &Open, busy: bool) {
    let runs = chat.runs().to_vec();
    let running = chat.running().map(str::to_string);
    open.update(|s| {
        s.runs = runs;
        s.running = running;
        s.busy = busy;
    });
}
