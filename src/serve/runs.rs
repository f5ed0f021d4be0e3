//! The runs a server drives: each on its own [`RunHandle`], watched by a
//! supervisor thread of its own that wakes the run's streams on every
//! event and takes the run off the live list when it ends. At most
//! `max_runs` are live at once.
//!
//! A run started here is an ordinary run in the runs directory: `runs`,
//! `show` and `resume` see it, and the API reads every run from there
//! (`run.json`, `events.jsonl`), live or not.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use crate::RunStatus;
use crate::core::{ApprovalError, Approvals, Cancel};
use crate::memory::MasterMemory;
use crate::record::Decision;
use crate::record::RunPhase;
use crate::runtime::{RunHandle, Runtime};
use crate::store::{RunRecord, list_runs, load_run, run_holder};
use crate::team::Team;

/// Whether the last event saved in `dir` ends a run (`run_finished`, or
/// `awaiting_user` just before it).
fn last_event_ends(dir: &Path) -> bool {
    let path = dir.join("events.jsonl");
    let len = std::fs::metadata(&path).map_or(0, |m| m.len());
    let tail = crate::util::fs::read_capped_from(&path, len.saturating_sub(64 << 10), 64 << 10)
        .unwrap_or_default();
    let text = String::from_utf8_lossy(&tail);
    text.lines().next_back().is_some_and(|l| {
        l.contains("\"type\":\"run_finished\"") || l.contains("\"type\":\"awaiting_user\"")
    })
}

/// Whether the run saved in `dir` has its answer (phase finished).
fn saved_finished(dir: &Path) -> bool {
    load_run(dir).is_ok_and(|r| r.state.phase() == RunPhase::Finished)
}

/// How long a reply waits for a run that ended to close (its memory notes
/// take a model call for the master and each member).
const SETTLE: Duration = Duration::from_secs(30);

/// The name a request gives the built-in team.
pub(super) const BUILTIN: &str = "builtin";

/// What a request to start a run asks for.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct NewRun {
    pub(super) task: String,
    #[serde(default)]
    pub(super) team: Option<String>,
    #[serde(default)]
    pub(super) model: Option<String>,
    #[serde(default)]
    pub(super) vars: BTreeMap<String, String>,
    #[serde(default)]
    pub(super) max_rounds: Option<u32>,
}

/// Why a run could not be started, resumed, messaged or cancelled.
#[derive(Debug)]
pub(super) enum Refused {
    /// `max_runs` runs are live.
    Full(usize),
    /// `max_chats` chats are open.
    ChatsFull(usize),
    /// The request asks for something that cannot be (400).
    BadInput(String),
    /// No such run (404).
    NotFound(String),
    /// The run is not in a state to do that (409).
    Conflict(String),
    /// Starting failed on this side (500).
    Failed(String),
}

/// A change counter a stream waits on.
#[derive(Debug, Default)]
pub(super) struct Signal {
    seq: Mutex<u64>,
    cv: Condvar,
}

impl Signal {
    pub(super) fn seq(&self) -> u64 {
        *self.seq.lock()
    }

    fn bump(&self) {
        *self.seq.lock() += 1;
        self.cv.notify_all();
    }

    /// Waits until the counter passes `seen`, at most `timeout`.
    pub(super) fn wait_past(&self, seen: u64, timeout: Duration) {
        let mut seq = self.seq.lock();
        if *seq == seen {
            let _ = self.cv.wait_for(&mut seq, timeout);
        }
    }
}

/// A run driven by this server right now.
#[derive(Debug, Default)]
pub(super) struct Live {
    cancel: Mutex<Option<(Cancel, Approvals)>>,
    pub(super) signal: Signal,
}

type LiveMap = Arc<Mutex<HashMap<String, Arc<Live>>>>;

/// The runs of one server.
#[derive(Debug)]
pub(super) struct Runs {
    dir: PathBuf,
    max: usize,
    /// The teams a request may name, by name; the first is the default.
    teams: Vec<(String, Team)>,
    model: Option<String>,
    memory: bool,
    live: LiveMap,
    supervisors: Mutex<Vec<JoinHandle<()>>>,
    /// Event streams and WebSockets open now.
    streams: Arc<AtomicUsize>,
}

/// An open event stream or WebSocket, counted while it lives.
pub(super) struct StreamSlot(Arc<AtomicUsize>);

impl Drop for StreamSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Runs {
    pub(super) fn new(
        dir: PathBuf,
        max: usize,
        teams: Vec<(String, Team)>,
        model: Option<String>,
        memory: bool,
    ) -> Self {
        Runs {
            dir,
            max: max.max(1),
            teams,
            model,
            memory,
            live: Arc::default(),
            supervisors: Mutex::new(Vec::new()),
            streams: Arc::default(),
        }
    }

    /// A slot for one more event stream or WebSocket; `None` when
    /// [`MAX_STREAMS`](super::MAX_STREAMS) are open.
    pub(super) fn open_stream(&self) -> Option<StreamSlot> {
        let taken = self
            .streams
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < super::MAX_STREAMS).then_some(n + 1)
            })
            .is_ok();
        taken.then(|| StreamSlot(Arc::clone(&self.streams)))
    }

    pub(super) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether runs use and update the master's memory.
    pub(super) fn memory(&self) -> bool {
        self.memory
    }

    pub(super) fn team_names(&self) -> Vec<&str> {
        self.teams.iter().map(|(n, _)| n.as_str()).collect()
    }

    /// The run driven here under `id`, if it is live.
    pub(super) fn live(&self, id: &str) -> Option<Arc<Live>> {
        self.live.lock().get(id).cloned()
    }

    /// The directory of the run `id`: a run live here (its `run.json` may
    /// not be written yet), or a directory with a `run.json` (an id of
    /// plain characters only, so it never reaches outside the runs
    /// directory).
    pub(super) fn find(&self, id: &str) -> Option<PathBuf> {
        if self.live.lock().contains_key(id) {
            return Some(self.dir.join(id));
        }
        if !crate::util::httpd::plain_name(id) {
            return None;
        }
        let dir = self.dir.join(id);
        dir.join("run.json").is_file().then_some(dir)
    }

    /// Starts a new run.
    pub(super) fn start(&self, new: NewRun) -> Result<String, Refused> {
        if new.task.trim().is_empty() {
            return Err(Refused::BadInput("task: the task is empty".into()));
        }
        let team = self.team(new.team.as_deref())?;
        let flags: Vec<String> = new.vars.iter().map(|(k, v)| format!("{k}={v}")).collect();
        crate::team::apply_var_flags(team.variables(), &flags)
            .map_err(|e| Refused::BadInput(format!("vars: {}", e.replace("--var ", ""))))?;
        if new.max_rounds.is_some() && team.config().process == crate::team::Process::Handoff {
            return Err(Refused::BadInput(format!(
                "max_rounds: team '{}' runs the handoff process, which has no rounds: its caps are \
                 max_turns and max_handoffs in team.yaml",
                team.name()
            )));
        }
        if new.max_rounds == Some(0) {
            return Err(Refused::BadInput(
                "max_rounds: 0 is not allowed (allowed 1 or more)".into(),
            ));
        }
        let spec = self.spec(team, new.model.as_deref());
        let model = team
            .model(&spec)
            .map_err(|e| Refused::BadInput(format!("model: {e}")))?;
        team.check_models()
            .map_err(|e| Refused::BadInput(format!("team: {e}")))?;
        let mut runtime = Runtime::with_shared_model(team.clone(), model)
            .runs_dir(&self.dir)
            .model_spec(&spec)
            .events_per_run()
            .wait_for_approvals(true);
        if let Some(r) = new.max_rounds {
            runtime = runtime.max_rounds(r);
        }
        for (name, value) in new.vars {
            runtime = runtime.var(name, value);
        }
        if self.memory {
            let memory = MasterMemory::for_team(&self.dir, team.name());
            runtime = runtime.master_memory(memory);
        }
        let mut live = self.live.lock();
        if live.len() >= self.max {
            return Err(Refused::Full(self.max));
        }
        let handle = runtime
            .start(&new.task)
            .map_err(|e| Refused::Failed(e.to_string()))?;
        let id = handle.run_id().to_string();
        let entry = Arc::new(Live::default());
        live.insert(id.clone(), Arc::clone(&entry));
        drop(live);
        self.supervise(handle, entry);
        Ok(id)
    }

    /// Goes on with a saved run: the user's reply or a follow-up when
    /// `message` is given, else from where it stopped.
    pub(super) fn resume(&self, id: &str, message: Option<&str>) -> Result<(), Refused> {
        self.go_on(id, message, Vec::new())
    }

    /// Decides about the tool call `call` of run `id`: at once when the
    /// run is live here (its agent waits), else by resuming the saved run
    /// (status `awaiting_approval`) with the decision.
    pub(super) fn decide(&self, id: &str, call: &str, decision: Decision) -> Result<(), Refused> {
        if let Some(live) = self.live(id) {
            let approvals = live.cancel.lock().as_ref().map(|(_, a)| a.clone());
            return match approvals {
                Some(a) => a.decide(call, decision).map_err(|e| match e {
                    e @ ApprovalError::UnknownCall { .. } => Refused::NotFound(e.to_string()),
                    e => Refused::BadInput(e.to_string()),
                }),
                None => Err(Refused::Conflict(format!("run {id} is starting: retry"))),
            };
        }
        let dir = self
            .find(id)
            .ok_or_else(|| Refused::NotFound(format!("no run '{id}'")))?;
        let record = load_run(&dir).map_err(|e| Refused::Failed(e.to_string()))?;
        if !record
            .state
            .pending_approvals()
            .iter()
            .any(|p| p.call_id == call)
        {
            return Err(Refused::NotFound(format!(
                "no tool call '{call}' waits for a decision in run {id}"
            )));
        }
        self.go_on(id, None, vec![(call.to_string(), decision)])
    }

    fn go_on(
        &self,
        id: &str,
        message: Option<&str>,
        decisions: Vec<(String, Decision)>,
    ) -> Result<(), Refused> {
        let dir = self
            .find(id)
            .ok_or_else(|| Refused::NotFound(format!("no run '{id}'")))?;
        let message = message.map(str::trim);
        if message == Some("") {
            return Err(Refused::BadInput("text: the message is empty".into()));
        }
        self.settle(id, &dir);
        let record = load_run(&dir).map_err(|e| Refused::Failed(e.to_string()))?;
        let state = &record.state;
        if message.is_none() && decisions.is_empty() {
            if state.status() == RunStatus::AwaitingApproval {
                return Err(Refused::Conflict(format!(
                    "run {id} waits for decisions about tool calls: POST them to \
                     /v1/runs/{id}/approvals/CALL"
                )));
            }
            if state.status() == RunStatus::AwaitingUser {
                return Err(Refused::Conflict(format!(
                    "run {id} waits for its user: send the reply to /v1/runs/{id}/messages"
                )));
            }
            if state.phase() == RunPhase::Finished {
                return Err(Refused::Conflict(format!(
                    "run {id} is finished ({}): send a follow-up to /v1/runs/{id}/messages",
                    state.status().as_str()
                )));
            }
        }
        let team = record
            .team
            .to_team()
            .map_err(|e| Refused::Failed(format!("the saved team: {e}")))?;
        let spec = record
            .settings
            .model_spec
            .clone()
            .unwrap_or_else(|| self.spec(&team, None));
        let model = team
            .model(&spec)
            .map_err(|e| Refused::Failed(format!("the saved model: {e}")))?;
        let mut runtime = Runtime::for_saved(&record, model)
            .map_err(|e| Refused::Failed(format!("the saved team: {e}")))?
            .runs_dir(&self.dir)
            .model_spec(&spec)
            .events_per_run()
            .wait_for_approvals(true);
        if self.memory && record.settings.memory {
            runtime = runtime.master_memory(MasterMemory::for_team(&self.dir, team.name()));
        }
        let mut live = self.live.lock();
        if live.contains_key(id) {
            return Err(Refused::Conflict(format!(
                "run {id} is running: wait for it to end, or cancel it"
            )));
        }
        if let Some(pid) = run_holder(&dir) {
            let by = pid.map_or_else(String::new, |pid| format!(" (pid {pid})"));
            return Err(Refused::Conflict(format!(
                "run {id}: in use by another boardroom{by}"
            )));
        }
        if live.len() >= self.max {
            return Err(Refused::Full(self.max));
        }
        let handle = match message {
            Some(m) => runtime.start_resume_with_message(&dir, m),
            None if !decisions.is_empty() => runtime.start_resume_deciding(&dir, decisions),
            None => runtime.start_resume(&dir),
        }
        .map_err(|e| Refused::Failed(e.to_string()))?;
        let entry = Arc::new(Live::default());
        live.insert(id.to_string(), Arc::clone(&entry));
        drop(live);
        self.supervise(handle, entry);
        Ok(())
    }

    /// A live run whose last event says it ended (it asked its user, or
    /// finished), or whose saved phase is finished (its answer is saved and
    /// its memory notes are being written, `run_finished` comes after
    /// them), is still closing: a
    /// reply sent the moment its question arrived waits for that, at most
    /// [`SETTLE`], instead of being refused as too early.
    fn settle(&self, id: &str, dir: &Path) {
        let started = std::time::Instant::now();
        while let Some(live) = self.live(id) {
            let seen = live.signal.seq();
            let ended = last_event_ends(dir) || saved_finished(dir);
            if !ended || started.elapsed() > SETTLE {
                return;
            }
            live.signal.wait_past(seen, Duration::from_millis(100));
        }
    }

    /// Asks a live run to stop (it is saved where it stands).
    pub(super) fn cancel(&self, id: &str) -> Result<(), Refused> {
        match self.live(id) {
            Some(live) => {
                if let Some((c, a)) = live.cancel.lock().as_ref() {
                    c.cancel();
                    a.stop_waiting();
                }
                Ok(())
            }
            None if self.find(id).is_some() => {
                Err(Refused::Conflict(format!("run {id} is not running here")))
            }
            None => Err(Refused::NotFound(format!("no run '{id}'"))),
        }
    }

    /// The summaries of every run in the directory, oldest first.
    pub(super) fn list(&self) -> Result<Vec<serde_json::Value>, Refused> {
        let runs = list_runs(&self.dir).map_err(|e| Refused::Failed(e.to_string()))?;
        Ok(runs
            .into_iter()
            .map(|r| match r.record {
                Ok(record) => self.summary(&r.id, &r.path, &record),
                Err(e) => {
                    serde_json::json!({"id": r.id, "status": "unreadable", "error": e.to_string()})
                }
            })
            .collect())
    }

    /// One run's summary.
    pub(super) fn get(&self, id: &str) -> Result<serde_json::Value, Refused> {
        let dir = self
            .find(id)
            .ok_or_else(|| Refused::NotFound(format!("no run '{id}'")))?;
        match load_run(&dir) {
            Ok(record) => Ok(self.summary(id, &dir, &record)),
            // Started a moment ago: nothing saved yet.
            Err(_) if self.live(id).is_some() => Ok(serde_json::json!({
                "id": id, "status": "running", "live": true, "resumable": false,
            })),
            Err(e) => Err(Refused::Failed(e.to_string())),
        }
    }

    fn summary(&self, id: &str, dir: &Path, record: &RunRecord) -> serde_json::Value {
        let state = &record.state;
        let live = self.live.lock().contains_key(id);
        let held = !live && run_holder(dir).is_some();
        let status = match (state.status(), state.phase()) {
            _ if live || held => "running",
            (RunStatus::Running, RunPhase::Finished) => "finished",
            (RunStatus::Running, _) => "interrupted",
            (RunStatus::Cancelled, p) if p != RunPhase::Finished => "stopped",
            (s, _) => s.as_str(),
        };
        let waiting = state.status() == RunStatus::AwaitingUser;
        let deciding = state.status() == RunStatus::AwaitingApproval;
        let resumable =
            !live && !held && !waiting && !deciding && state.phase() != RunPhase::Finished;
        let pending = match self.live(id) {
            Some(l) => l
                .cancel
                .lock()
                .as_ref()
                .map(|(_, a)| a.pending())
                .unwrap_or_default(),
            None => state.pending_approvals(),
        };
        let mut out = serde_json::json!({
            "id": id,
            "status": status,
            "phase": state.phase(),
            "task": state.task(),
            "team": record.team.name,
            "rounds": state.round(),
            "tokens": state.usage().total(),
            "created_ms": record.created_ms,
            "saved_ms": record.saved_ms,
            "live": live,
            "resumable": resumable,
            "approvals": pending,
        });
        if let Some(answer) = state.answer().filter(|_| !live) {
            let key = if waiting { "question" } else { "answer" };
            out[key] = serde_json::Value::String(answer.to_string());
        }
        out
    }

    /// The team a request names (the default when none).
    pub(super) fn team(&self, name: Option<&str>) -> Result<&Team, Refused> {
        match name {
            None => Ok(&self.teams[0].1),
            Some(name) => self
                .teams
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, t)| t)
                .ok_or_else(|| {
                    Refused::BadInput(format!(
                        "team: '{name}' is not a team this server may use (allowed: {})",
                        self.team_names().join(", ")
                    ))
                }),
        }
    }

    /// The model spec a run uses: the request's, the server's, the team's
    /// `default`, else the offline `sim`.
    pub(super) fn spec(&self, team: &Team, asked: Option<&str>) -> String {
        match asked.or(self.model.as_deref()) {
            Some(spec) => spec.to_string(),
            None if team.config().models.contains_key("default") => "default".into(),
            None => "sim".into(),
        }
    }

    /// Watches `handle` on a thread of its own: every event wakes the
    /// run's streams; the end takes it off the live list.
    fn supervise(&self, mut handle: RunHandle, entry: Arc<Live>) {
        *entry.cancel.lock() = Some((handle.canceller(), handle.approvals()));
        let live = Arc::clone(&self.live);
        let id = handle.run_id().to_string();
        let key = id.clone();
        let events = handle.take_events();
        let watch = move || {
            if let Some(rx) = events {
                for _ in rx.iter() {
                    entry.signal.bump();
                }
            }
            match handle.wait() {
                Ok(outcome) => log::info!("serve: run {id} ended: {}", outcome.status.as_str()),
                Err(e) => log::warn!("serve: run {id}: {e}"),
            }
            live.lock().remove(&id);
            entry.signal.bump();
        };
        let mut supervisors = self.supervisors.lock();
        supervisors.retain(|t| !t.is_finished());
        match std::thread::Builder::new()
            .name("boardroom-serve-run".into())
            .spawn(watch)
        {
            Ok(t) => supervisors.push(t),
            // The closure (and the handle in it) is dropped: the run goes on
            // on its own thread, no longer counted here.
            Err(e) => {
                log::error!("serve: cannot watch run {key}: {e}");
                self.live.lock().remove(&key);
            }
        }
    }

    /// Stops every live run (each is saved where it stands, resumable)
    /// and joins their supervisors.
    pub(super) fn stop(&self) {
        for live in self.live.lock().values() {
            if let Some((c, a)) = live.cancel.lock().as_ref() {
                c.cancel();
                a.stop_waiting();
            }
        }
        let supervisors = std::mem::take(&mut *self.supervisors.lock());
        for t in supervisors {
            let _ = t.join();
        }
    }
}
