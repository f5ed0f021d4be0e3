//! Persistence of a run: the run directory opened at start, every event
//! teed into `events.jsonl`, every board entry journaled the moment it
//! lands, a snapshot (`run.json`, `workspace/plan.json`) after every
//! phase, `report.md` at the end; and resuming from all of that.
//!
//! Why a journal rather than rewriting `run.json` per entry: members land
//! drafts from several threads while the driver owns the state; an append
//! of one line per entry is cheap, needs no snapshot of the whole run, and
//! a SIGKILL leaves at worst a torn last line, which is skipped. A resume
//! takes the last snapshot and replays the journal records of the phase
//! that was cut off (only a members phase: its drafts are what must not be
//! redone; any other phase simply runs again).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use parking_lot::Mutex;

use super::state::{RunPhase, RunState};
use super::turns::TurnTracker;
use super::{RunError, RunOutcome, Runtime, run::Run};
use crate::board::{Entry, EntryKind};
use crate::event::{Event, RunStatus, now_ms};
use crate::memory::MasterMemory;
use crate::store::{
    self, JournalRecord, RUN_FORMAT_VERSION, RunDir, RunRecord, RunSettings, StoreError,
    TeamSnapshot, write_atomic, write_replace,
};

/// How a run comes to its directory.
#[derive(Debug)]
pub(crate) enum Opening {
    /// A new run: the directory must not exist yet.
    New,
    /// A resume of a directory whose lock the resume took before it read
    /// the run.
    Resume(std::sync::Arc<store::RunLock>),
    /// [`Runtime::drive`] from a caller's snapshot: either.
    Either,
}

/// What a run keeps for persistence.
#[derive(Debug, Default)]
pub(crate) struct Persist {
    /// The run directory, when the runtime has a runs directory.
    pub(crate) dir: Option<RunDir>,
    /// Turn ids and parents.
    pub(crate) tracker: Mutex<TurnTracker>,
    /// Where each ongoing module's archive of this round starts.
    pub(crate) archive_from: Mutex<HashMap<String, usize>>,
    created_ms: u64,
}

impl Persist {
    /// Opens (or reopens, on resume) the run directory and writes a first
    /// snapshot when there is none.
    pub(crate) fn open(
        rt: &Runtime,
        state: &RunState,
        opening: Opening,
    ) -> Result<Persist, RunError> {
        let Some(runs_dir) = &rt.runs_dir else {
            return Ok(Persist {
                created_ms: now_ms(),
                ..Persist::default()
            });
        };
        let path = runs_dir.join(&state.run_id);
        let dir = match opening {
            Opening::New => RunDir::create(&path),
            Opening::Resume(lock) => RunDir::open_locked(&path, lock),
            Opening::Either if path.is_dir() => RunDir::open(&path),
            Opening::Either => RunDir::create(&path),
        }
        .map_err(RunError::Store)?;
        let previous = store::load_run(&path).ok();
        let turns = store::read_turns(&path).map_err(RunError::Store)?;
        for w in &turns.warnings {
            log::warn!("{}: {w}", path.display());
        }
        let persist = Persist {
            dir: Some(dir),
            tracker: Mutex::new(TurnTracker::from_turns(&turns.items)),
            archive_from: Mutex::default(),
            created_ms: previous.as_ref().map_or_else(now_ms, |r| r.created_ms),
        };
        if previous.is_none() {
            let record = persist.record(rt, state.clone());
            persist.save(&record, None).map_err(RunError::Store)?;
        }
        Ok(persist)
    }

    /// The run directory's lock, to hold until the run's last word is
    /// written.
    pub(crate) fn lock(&self) -> Option<std::sync::Arc<store::RunLock>> {
        self.dir.as_ref().map(RunDir::lock)
    }

    fn record(&self, rt: &Runtime, state: RunState) -> RunRecord {
        RunRecord {
            version: RUN_FORMAT_VERSION,
            created_ms: self.created_ms,
            saved_ms: now_ms(),
            team: TeamSnapshot::of(&rt.team),
            journal_len: Some(self.dir.as_ref().map_or(0, RunDir::journal_len)),
            settings: RunSettings {
                model: rt.model.name(),
                model_spec: rt.model_spec.as_deref().map(crate::model::redact_url),
                max_rounds: rt.rounds_cap(),
                max_parallel: rt.parallel_cap(),
                memory: rt.master_memory.is_some(),
                token_budget: rt.token_budget,
                protocol: rt.protocol,
            },
            state,
        }
    }

    /// Writes `run.json` (when the run has a directory), then `plan.json`
    /// and, at the end, `report.md` into the workspace (when there is one).
    fn save(&self, record: &RunRecord, workspace: Option<&Path>) -> Result<(), StoreError> {
        if let Some(dir) = &self.dir {
            let path = dir.path().join(store::RUN_FILE);
            write_atomic(&path, &to_json(&path, record)?)?;
        }
        let Some(ws) = workspace else { return Ok(()) };
        std::fs::create_dir_all(ws).map_err(|e| StoreError::io(ws, e))?;
        let plan_path = ws.join("plan.json");
        write_replace(&plan_path, &to_json(&plan_path, &record.state.plan)?)?;
        if record.state.phase == RunPhase::Finished {
            if let Some(answer) = &record.state.answer {
                let report = format!("# {}\n\n{}\n", record.state.task.trim(), answer.trim());
                write_replace(&ws.join("report.md"), report.as_bytes())?;
            }
        }
        Ok(())
    }
}

fn to_json(path: &Path, value: &impl serde::Serialize) -> Result<Vec<u8>, StoreError> {
    serde_json::to_vec_pretty(value).map_err(|e| StoreError::Corrupt {
        path: path.to_path_buf(),
        detail: format!("cannot serialise: {e}"),
    })
}

impl Run<'_> {
    /// Tees an event into `events.jsonl`.
    pub(crate) fn persist_event(&self, event: &Event) {
        if let Some(dir) = &self.persist.dir {
            if let Err(e) = dir.append_event(event) {
                log::error!("cannot save event: {e}");
            }
        }
    }

    /// Journals a change made in the middle of a phase.
    pub(crate) fn journal(&self, record: &JournalRecord) {
        if let Some(dir) = &self.persist.dir {
            if let Err(e) = dir.append_journal(record) {
                log::error!("cannot journal: {e}");
            }
        }
    }

    /// The body of the `checkpoint` hook: settle the plan at the end, then
    /// write `run.json` and `plan.json` (and `report.md` at the end).
    pub(crate) fn checkpoint_impl(&self) {
        if self.state.phase == RunPhase::Finished
            && matches!(
                self.state.status,
                RunStatus::Done
                    | RunStatus::RoundLimit
                    | RunStatus::BudgetExhausted
                    | RunStatus::TimedOut
            )
        {
            self.complete_reviewed_modules();
        }
        let workspace = self.workspace_dir();
        if self.persist.dir.is_none() && workspace.is_none() {
            return;
        }
        let mut state = self.state.clone();
        state.board = self.board.snapshot();
        state.plan = self.plan.lock().clone();
        {
            let usage = self.usage.lock();
            state.usage = usage.0;
            state.usage_by_agent = usage.1.clone();
        }
        let record = self.persist.record(self.rt, state);
        if let Err(e) = self.persist.save(&record, workspace.as_deref()) {
            log::error!("cannot save the run: {e}");
        }
    }

    /// The body of the `on_entry` hook: the entry goes to the journal at
    /// once, and a member's draft moves its module to `pending_review`.
    pub(crate) fn on_entry_impl(&self, entry: &Entry) {
        let (round, phase) = (self.state.round, self.state.phase);
        self.journal(&JournalRecord::Entry {
            round,
            phase,
            entry: entry.clone(),
        });
        if matches!(entry.kind, EntryKind::Draft | EntryKind::Error) {
            if let Some(task) = &entry.task {
                self.module_drafted(entry, task);
            }
        }
    }

    /// After the loop: ask the master what to remember, then save.
    pub(crate) fn after_run(&mut self) {
        self.update_memory();
        self.checkpoint_impl();
    }
}

/// The last snapshot of a run, with the journal records written after it
/// (from byte `journal_len`) replayed on top: for a members phase, the
/// entries, modules and usage of the drafts that landed (they are not
/// asked for again); for any other phase, which simply runs again, the
/// usage of the calls that finished before the cut, so that the totals
/// always equal the sum over `turns.jsonl`. A snapshot without
/// `journal_len` (an older file) replays a members phase only.
pub(crate) fn replay(
    dir: &Path,
    mut state: RunState,
    journal_len: Option<u64>,
) -> Result<RunState, StoreError> {
    if journal_len.is_none() && state.phase != RunPhase::Members {
        return Ok(state);
    }
    let journal = store::read_journal(dir, journal_len.unwrap_or(0))?;
    for w in &journal.warnings {
        log::warn!("{}: {w}", dir.display());
    }
    let members = state.phase == RunPhase::Members;
    // Entries are numbered under the board's lock but journaled after it,
    // so members that land together can be journaled out of order: keep
    // every entry the snapshot lacks, then restore the board's order.
    let mut on_board: std::collections::HashSet<u64> = state.board.iter().map(|e| e.seq).collect();
    for record in journal.items {
        match record {
            JournalRecord::Entry {
                round,
                phase,
                entry,
            } if members
                && round == state.round
                && phase == state.phase
                && !on_board.contains(&entry.seq) =>
            {
                // Never written by boardroom, and the next entry's number
                // would overflow: not taken.
                if entry.seq == 0 || entry.seq >= store::MAX_SEQ {
                    log::warn!(
                        "{}: journal entry #{} is out of range; skipped",
                        dir.display(),
                        entry.seq
                    );
                    continue;
                }
                on_board.insert(entry.seq);
                state.board.push(entry);
            }
            JournalRecord::Module {
                round,
                phase,
                module,
            } if members && round == state.round && phase == state.phase => {
                match state.plan.get_mut(&module.task_id) {
                    Some(m) => *m = module,
                    None => state.plan.tasks.push(module),
                }
            }
            JournalRecord::Usage {
                round,
                phase,
                agent,
                usage,
            } if round == state.round && phase == state.phase => {
                state.usage.add(usage);
                state.usage_by_agent.entry(agent).or_default().add(usage);
            }
            _ => {}
        }
    }
    state.board.sort_by_key(|e| e.seq);
    Ok(state)
}

/// Whether a call's error means the assignment was never answered, so a
/// resume runs it again: the model was not reached (no connection, a cut
/// stream, the call's deadline), the server refused the call with an HTTP
/// error (408, 429 or 5xx after the retries, and also 401, 403 or 404,
/// which a user fixes — a key, a model name — before resuming), or the
/// call was cancelled before it was sent (the run was stopped). A model
/// that answered, however badly, did its turn. Every variant is named, so
/// a new one must be classified here.
pub(crate) fn is_transport(e: &crate::model::ModelError) -> bool {
    use crate::model::ModelError;
    match e {
        ModelError::Transport { .. } | ModelError::Cancelled | ModelError::Http { .. } => true,
        ModelError::BadResponse { .. }
        | ModelError::BudgetExhausted { .. }
        | ModelError::Simulated { .. } => false,
    }
}

/// The assignments of the current round still to run, and among them the
/// ones that ran before and failed (to run again). An assignment is done
/// once the board holds its draft, or an error that was not a transport
/// failure (a model that answered badly would again) — unless a failed
/// run is being resumed ([`RunState::rerun_errors`]): then every error
/// runs again, so a run that failed for want of a usable draft can go on.
pub(crate) fn still_to_do(
    state: &RunState,
    board: &[Entry],
) -> (
    Vec<crate::protocol::Assignment>,
    Vec<crate::protocol::Assignment>,
) {
    let round = state.round;
    let mut todo = Vec::new();
    let mut again = Vec::new();
    for a in &state.assignments {
        let of: Vec<&Entry> = board
            .iter()
            .filter(|e| {
                e.round == round
                    && e.author == a.member
                    && e.task.as_deref() == Some(a.task.as_str())
            })
            .collect();
        let final_error =
            |e: &&Entry| e.kind == EntryKind::Error && !e.transport && !state.rerun_errors;
        let done = of
            .iter()
            .any(|e| e.kind == EntryKind::Draft || final_error(e));
        if done {
            continue;
        }
        if of.iter().any(|e| e.kind == EntryKind::Error) {
            again.push(a.clone());
        }
        todo.push(a.clone());
    }
    (todo, again)
}

/// A run that failed after its round's members failed on the transport
/// goes back to that round's members phase on resume: the failed
/// assignments run again, instead of the run answering from a board with
/// no drafts. Returns whether it went back.
fn back_to_failed_members(state: &mut RunState) -> bool {
    let after_members = matches!(
        state.phase,
        RunPhase::Challenge | RunPhase::Review | RunPhase::Final
    );
    if !after_members || state.round == 0 || state.assignments.is_empty() {
        return false;
    }
    let (_, again) = still_to_do(state, &state.board);
    if again.is_empty() {
        return false;
    }
    log::info!(
        "run {}: round {} runs again for {} assignment(s) whose calls failed or got no answer",
        state.run_id,
        state.round,
        again.len()
    );
    state.phase = RunPhase::Members;
    state.answer = None;
    true
}

impl Runtime {
    /// Writes the run to `<dir>/<run-id>/` (`run.json`, `events.jsonl`,
    /// `turns.jsonl`, `workspace/`). Without it nothing is written. The
    /// run's workspace is `<dir>/<run-id>/workspace` unless
    /// [`Runtime::workspace`] names another.
    pub fn runs_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.runs_dir = Some(dir.into());
        self
    }

    /// Gives the master the memory kept in `memory` and, after each run
    /// that ends with an answer, asks it what to add.
    pub fn master_memory(mut self, memory: MasterMemory) -> Self {
        match memory.load() {
            Ok(text) => self.memory = text,
            Err(e) => log::warn!("master memory not read: {e}"),
        }
        self.master_memory = Some(memory);
        self
    }

    /// Records the model spec the default model was built from, so that a
    /// resume can build it again (it goes into `run.json`).
    pub fn model_spec(mut self, spec: impl Into<String>) -> Self {
        self.model_spec = Some(spec.into());
        self
    }

    /// Continues the run saved in `run_dir` (`<runs-dir>/<run-id>`) from
    /// its last completed phase. Members whose drafts for the interrupted
    /// round are already on the board are not called again. The run keeps
    /// writing to the same directory.
    ///
    /// The runtime should hold the run's team: [`RunRecord::team`] via
    /// [`load_run`](crate::load_run) gives it back.
    ///
    /// # Errors
    ///
    /// [`RunError::Store`] when the run cannot be read; otherwise as
    /// [`Runtime::run`].
    ///
    /// # Examples
    ///
    /// ```
    /// use boardroom::{Runtime, Sim, Team, load_run};
    /// let runs = std::env::temp_dir().join(format!("boardroom-doc-{}", std::process::id()));
    /// let run = Runtime::new(Team::builtin()?, Sim::new())
    ///     .runs_dir(&runs)
    ///     .run("Plan a picnic")?;
    /// let dir = runs.join(&run.run_id);
    /// let saved = load_run(&dir)?;
    /// let again = Runtime::new(saved.team.to_team()?, Sim::new()).resume(&dir)?;
    /// assert_eq!(again.answer, run.answer);
    /// # std::fs::remove_dir_all(&runs).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn resume(&self, run_dir: impl AsRef<Path>) -> Result<RunOutcome, RunError> {
        let dir = run_dir.as_ref();
        // The lock first, then the state: what is read is what no other
        // process can change any more.
        let lock = match store::RunLock::acquire(dir) {
            Ok(lock) => std::sync::Arc::new(lock),
            // No directory at all: say the run is not there.
            Err(StoreError::Io { .. }) if !dir.join(store::RUN_FILE).is_file() => {
                return Err(RunError::Store(StoreError::NotFound {
                    run: dir.join(store::RUN_FILE).display().to_string(),
                }));
            }
            Err(e) => return Err(RunError::Store(e)),
        };
        let record = store::load_run(dir).map_err(RunError::Store)?;
        if dir.file_name().and_then(|n| n.to_str()) != Some(record.state.run_id.as_str()) {
            return Err(RunError::Store(StoreError::Corrupt {
                path: dir.join(store::RUN_FILE),
                detail: format!(
                    "run id '{}' does not match its directory",
                    record.state.run_id
                ),
            }));
        }
        let mut state = replay(dir, record.state, record.journal_len).map_err(RunError::Store)?;
        if matches!(state.status, RunStatus::Cancelled | RunStatus::Failed)
            && state.phase != RunPhase::Finished
        {
            state.rerun_errors = state.status == RunStatus::Failed;
            back_to_failed_members(&mut state);
            state.status = RunStatus::Running;
            state.error = None;
        }
        let mut rt = self.clone();
        rt.runs_dir = Some(dir.parent().map_or_else(PathBuf::new, Path::to_path_buf));
        rt.drive_in(state, Opening::Resume(lock))
    }

    /// Runs `state` in its directory, holding the directory's lock until
    /// the outcome is saved. A panic that escapes the driver still marks
    /// the run failed (never left `running`) before it goes on unwinding.
    pub(crate) fn drive_in(
        &self,
        state: RunState,
        opening: Opening,
    ) -> Result<RunOutcome, RunError> {
        let run_id = state.run_id.clone();
        let run = Run::start(self, state, opening)?;
        let _lock = run.persist.lock();
        let result = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run.drive())) {
            Ok(result) => result,
            Err(panic) => {
                let message = super::tool_loop::panic_text(panic.as_ref());
                mark_failed_with(self, &run_id, format!("the run panicked: {message}"));
                std::panic::resume_unwind(panic);
            }
        };
        if let Err(e) = &result {
            mark_failed(self, &run_id, e);
        }
        result
    }
}

/// Marks a saved run as failed when the loop stopped with an error.
pub(crate) fn mark_failed(rt: &Runtime, run_id: &str, error: &RunError) {
    mark_failed_with(rt, run_id, error.to_string());
}

fn mark_failed_with(rt: &Runtime, run_id: &str, error: String) {
    let Some(runs_dir) = &rt.runs_dir else { return };
    let dir = runs_dir.join(run_id);
    let Ok(mut record) = store::load_run(&dir) else {
        return;
    };
    record.state.status = RunStatus::Failed;
    record.state.error = Some(error);
    record.saved_ms = now_ms();
    if let Ok(json) = serde_json::to_vec_pretty(&record) {
        if let Err(e) = write_atomic(&dir.join(store::RUN_FILE), &json) {
            log::error!("cannot save the failed run: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::ModuleStatus;

    fn entry(seq: u64, author: &str) -> Entry {
        Entry {
            seq,
            round: 1,
            author: author.into(),
            kind: EntryKind::Draft,
            task: Some("t".into()),
            text: format!("draft {seq}"),
            transport: false,
        }
    }

    #[test]
    fn replay_applies_only_the_cut_off_members_phase() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = RunDir::open(tmp.path()).unwrap();
        let mut state = RunState::new("r".into(), "task".into());
        state.round = 1;
        state.phase = RunPhase::Members;
        state.board.push(entry(1, "writer"));
        let id = state.plan.add("t", Some("critic".into()));
        let mut module = state.plan.get(&id).unwrap().clone();
        module.status = ModuleStatus::PendingReview;
        let members = |entry| JournalRecord::Entry {
            round: 1,
            phase: RunPhase::Members,
            entry,
        };
        dir.append_journal(&members(entry(1, "writer"))).unwrap();
        dir.append_journal(&members(entry(2, "critic"))).unwrap();
        dir.append_journal(&JournalRecord::Module {
            round: 1,
            phase: RunPhase::Members,
            module,
        })
        .unwrap();
        // From another phase or round: not replayed.
        dir.append_journal(&JournalRecord::Entry {
            round: 0,
            phase: RunPhase::Members,
            entry: entry(3, "analyst"),
        })
        .unwrap();
        let replayed = replay(tmp.path(), state.clone(), None).unwrap();
        let seqs: Vec<u64> = replayed.board.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, vec![1, 2]);
        assert_eq!(replayed.plan.tasks[0].status, ModuleStatus::PendingReview);

        state.phase = RunPhase::Review;
        assert_eq!(replay(tmp.path(), state.clone(), None).unwrap(), state);
    }

    #[test]
    fn replay_keeps_entries_journaled_out_of_order() {
        // Review finding: seq 3 journaled before seq 2 used to drop seq 2.
        let tmp = tempfile::tempdir().unwrap();
        let dir = RunDir::open(tmp.path()).unwrap();
        let mut state = RunState::new("r".into(), "task".into());
        state.round = 1;
        state.phase = RunPhase::Members;
        state.board.push(entry(1, "writer"));
        for (seq, who) in [(3, "analyst"), (2, "critic"), (1, "writer")] {
            dir.append_journal(&JournalRecord::Entry {
                round: 1,
                phase: RunPhase::Members,
                entry: entry(seq, who),
            })
            .unwrap();
        }
        let replayed = replay(tmp.path(), state, None).unwrap();
        let board: Vec<(u64, &str)> = replayed
            .board
            .iter()
            .map(|e| (e.seq, e.author.as_str()))
            .collect();
        assert_eq!(board, vec![(1, "writer"), (2, "critic"), (3, "analyst")]);
    }

    #[test]
    fn replay_skips_journal_entries_numbered_out_of_range() {
        // A damaged journal: an entry numbered u64::MAX made the next
        // entry's number overflow (a panic on resume).
        let tmp = tempfile::tempdir().unwrap();
        let dir = RunDir::open(tmp.path()).unwrap();
        let mut state = RunState::new("r".into(), "task".into());
        state.round = 1;
        state.phase = RunPhase::Members;
        for (seq, who) in [(1, "writer"), (u64::MAX, "critic"), (0, "analyst")] {
            dir.append_journal(&JournalRecord::Entry {
                round: 1,
                phase: RunPhase::Members,
                entry: entry(seq, who),
            })
            .unwrap();
        }
        let replayed = replay(tmp.path(), state, None).unwrap();
        let seqs: Vec<u64> = replayed.board.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, vec![1]);
    }

    #[test]
    fn replay_counts_the_usage_of_calls_that_finished_before_the_cut() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = RunDir::open(tmp.path()).unwrap();
        let mut state = RunState::new("r".into(), "task".into());
        state.round = 1;
        state.phase = RunPhase::Members;
        let usage = |n| crate::model::Usage {
            prompt_tokens: n,
            completion_tokens: 1,
        };
        for (phase, agent, n) in [
            (RunPhase::Members, "writer", 10),
            (RunPhase::Members, "critic", 20),
            (RunPhase::Plan, "master", 99),
        ] {
            dir.append_journal(&JournalRecord::Usage {
                round: 1,
                phase,
                agent: agent.into(),
                usage: usage(n),
            })
            .unwrap();
        }
        let replayed = replay(tmp.path(), state, None).unwrap();
        assert_eq!(replayed.usage.total(), 32);
        assert_eq!(replayed.usage_by_agent["critic"].prompt_tokens, 20);
        assert!(!replayed.usage_by_agent.contains_key("master"));
    }

    #[test]
    fn replay_counts_usage_of_any_cut_off_phase_after_the_snapshot_only() {
        // Issue 8: a kill in a non-member phase lost the usage of the calls
        // that finished before it; usage journaled before the snapshot is
        // already in it and must not count twice.
        let tmp = tempfile::tempdir().unwrap();
        let dir = RunDir::open(tmp.path()).unwrap();
        let mut state = RunState::new("r".into(), "task".into());
        state.round = 1;
        state.phase = RunPhase::Finished;
        let usage = |n| crate::model::Usage {
            prompt_tokens: n,
            completion_tokens: 0,
        };
        let record = |n| JournalRecord::Usage {
            round: 1,
            phase: RunPhase::Finished,
            agent: "master".into(),
            usage: usage(n),
        };
        dir.append_journal(&record(100)).unwrap();
        let snapshot_at = dir.journal_len();
        dir.append_journal(&record(7)).unwrap();
        let replayed = replay(tmp.path(), state.clone(), Some(snapshot_at)).unwrap();
        assert_eq!(replayed.usage.total(), 7);
        assert_eq!(replayed.usage_by_agent["master"].total(), 7);
        // An old run.json without the offset: only a members phase replays.
        assert_eq!(replay(tmp.path(), state.clone(), None).unwrap(), state);
    }

    #[test]
    fn only_assignments_that_failed_on_the_transport_run_again() {
        let mut state = RunState::new("r".into(), "task".into());
        state.round = 1;
        state.phase = RunPhase::Final;
        for m in ["a", "b", "c", "d"] {
            state.assignments.push(crate::protocol::Assignment {
                member: m.into(),
                task: "t".into(),
            });
        }
        let mut e = |seq, author: &str, kind, transport| {
            let mut x = entry(seq, author);
            x.kind = kind;
            x.transport = transport;
            state.board.push(x);
        };
        e(1, "a", EntryKind::Draft, false);
        e(2, "b", EntryKind::Error, false);
        e(3, "c", EntryKind::Error, true);
        let (todo, again) = still_to_do(&state, &state.board);
        let names = |v: &[crate::protocol::Assignment]| -> Vec<String> {
            v.iter().map(|a| a.member.clone()).collect()
        };
        assert_eq!(names(&todo), ["c", "d"]);
        assert_eq!(names(&again), ["c"]);
        assert!(back_to_failed_members(&mut state));
        assert_eq!(state.phase, RunPhase::Members);
    }
}
