//! Writing a run directory: atomic snapshots and append-only logs.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
#[cfg(test)]
use std::sync::atomic::AtomicU64;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use parking_lot::{Condvar, Mutex};
use serde::Serialize;

use super::disk::DiskPart;
use super::record::{JournalRecord, TeamSnapshot};
use super::snapshot::{STATE_FILE, Summary, TEAM_FILE, Written};
use super::{
    EVENTS_FILE, EventLog, JOURNAL_FILE, RUN_FILE, RunLock, StoreError, TURNS_FILE, WORKSPACE_DIR,
};
use crate::record::{RunSettings, RunState};

/// An open run directory, locked for this process while it lives. The
/// turn and journal logs are appended from any thread, one whole line per
/// `write` under a short lock; events go through an [`EventLog`]; the
/// snapshots go to `state.jsonl` and `run.json` ([`RunDir::checkpoint`]).
#[derive(Debug)]
pub(crate) struct RunDir {
    path: PathBuf,
    lock: Arc<RunLock>,
    turns: Mutex<File>,
    /// The highest turn id in `turns.jsonl`: a checkpoint says which
    /// turns it covers, and a resume answers a call made again from a
    /// turn filed after it.
    last_turn: AtomicU32,
    journal: Mutex<Journal>,
    /// Where this process journaled each board entry (by number): a
    /// checkpoint points there instead of writing the entry again.
    journaled: Mutex<std::collections::HashMap<u64, u64>>,
    /// Where this process last journaled each module (by id), and the
    /// module then: a checkpoint points there while it is unchanged.
    modules: Mutex<std::collections::HashMap<String, (u64, crate::plan::WorkModule)>>,
    state: Mutex<StateLog>,
    /// The run's task when it is long: cut out of the turns that hold it
    /// (it is in `state.jsonl` once).
    long_task: parking_lot::RwLock<Option<super::long_task::LongTask>>,
    /// The disk part of the checkpoint taken behind the run, if one is
    /// under way.
    behind: Arc<Behind>,
}

/// The disk part of a checkpoint that the run does not wait for
/// ([`RunDir::checkpoint_behind`]): the logs' fsyncs and `run.json`,
/// written on a thread of their own (`boardroom-save`) while the run goes
/// on to its next model call. Until they are done no append to the turns
/// or the journal begins (one begun just before may land meanwhile, as
/// it could beside a checkpoint on the run's thread: `run.json` holds the
/// journal's length from before), and no other checkpoint: a kill at any
/// moment finds what it would have found then.
#[derive(Debug, Default)]
struct Behind {
    /// A disk part is under way (what every append looks at first).
    busy: AtomicBool,
    state: Mutex<BehindState>,
    done: Condvar,
    /// Holds every disk part, the ones written on the run's own thread
    /// too, until opened (a test's slow disk).
    #[cfg(test)]
    gate: Mutex<Option<Arc<Gate>>>,
    /// The next disk part fails before it writes anything (a test's full
    /// disk).
    #[cfg(test)]
    fail_next: AtomicBool,
}

/// A test's slow disk: disk parts wait until it opens.
#[cfg(test)]
#[derive(Debug, Default)]
pub(crate) struct Gate {
    open: Mutex<bool>,
    opened: Condvar,
    /// Disk parts that came to the gate.
    pub(crate) arrived: AtomicU64,
}

#[cfg(test)]
impl Gate {
    pub(crate) fn open(&self) {
        *self.open.lock() = true;
        self.opened.notify_all();
    }

    /// Waits until the gate opens, or 60 s: a test that fails before it
    /// opens its gate fails, it does not hang.
    fn pass(&self) {
        self.arrived.fetch_add(1, Ordering::SeqCst);
        let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let mut open = self.open.lock();
        while !*open && !self.opened.wait_until(&mut open, until).timed_out() {}
    }
}

#[derive(Debug, Default)]
struct BehindState {
    /// The last disk part failed (and said so in the log): the next
    /// checkpoint syncs every log and writes `team.json` again.
    failed: bool,
}

impl Behind {
    /// Waits until no disk part is under way; whether the last one failed
    /// (forgotten once told).
    /// The caller holds the state log's lock or owns the directory, so
    /// no disk part starts meanwhile. The save thread is not joined: its
    /// part is written once `busy` is clear, and its exit (unmapping its
    /// stack) could wait behind a thousand member threads ending at the
    /// last review: the run's last save waited up to 115 ms for it.
    fn wait(&self) -> bool {
        self.settle();
        std::mem::take(&mut self.state.lock().failed)
    }

    /// An append's wait: nothing unless a disk part is under way.
    fn settle(&self) {
        if self.busy.load(Ordering::Acquire) {
            let mut s = self.state.lock();
            while self.busy.load(Ordering::Acquire) {
                self.done.wait(&mut s);
            }
        }
    }

    /// Writes `part` here, remembering a failure for the next checkpoint.
    fn write_now(&self, part: &DiskPart) -> Result<(), StoreError> {
        #[cfg(test)]
        if let Some(g) = self.gate.lock().clone() {
            g.pass();
        }
        let written = self.written(part);
        if written.is_err() {
            self.state.lock().failed = true;
        }
        written
    }

    /// `part` written (or, in a test, failed).
    fn written(&self, part: &DiskPart) -> Result<(), StoreError> {
        #[cfg(test)]
        if self.fail_next.swap(false, Ordering::SeqCst) {
            return Err(StoreError::io(
                part.dir.join(TEAM_FILE),
                std::io::Error::other("a test's full disk"),
            ));
        }
        part.write()
    }

    /// Remembers that what a checkpoint began may not be on disk.
    fn mark_failed(&self) {
        self.state.lock().failed = true;
    }

    /// Writes `part` on a thread of its own, or here when no thread can be
    /// started. The caller holds the state log's lock (no other checkpoint
    /// runs beside it) and has waited for the last disk part.
    fn start(self: &Arc<Self>, part: DiskPart) -> Result<(), StoreError> {
        let shared = Arc::new(Mutex::new(Some(part)));
        let (me, mine) = (Arc::clone(self), Arc::clone(&shared));
        #[cfg(test)]
        let gate = self.gate.lock().clone();
        let s = self.state.lock();
        self.busy.store(true, Ordering::Release);
        let spawned = std::thread::Builder::new()
            .name("boardroom-save".into())
            .spawn(move || {
                // Whatever happens here, even a panic, `busy` is cleared
                // on the way out: every append and the directory's drop
                // wait on it. A failure unless the part was written.
                let done = Done {
                    behind: &me,
                    failed: true,
                };
                #[cfg(test)]
                if let Some(g) = gate {
                    g.pass();
                }
                let part = mine.lock().take();
                match part.map_or(Ok(()), |p| me.written(&p)) {
                    Ok(()) => {
                        let mut done = done;
                        done.failed = false;
                    }
                    Err(e) => log::error!("cannot save the run: {e}"),
                }
            });
        match spawned {
            // Not joined (see `wait`): it ends on its own once written.
            Ok(_detached) => Ok(()),
            Err(e) => {
                self.busy.store(false, Ordering::Release);
                drop(s);
                log::debug!("no thread to save the run behind it ({e}): saved now");
                let part = shared.lock().take();
                part.map_or(Ok(()), |p| self.write_now(&p))
            }
        }
    }
}

/// The end of a disk part on its thread, however it ends: `busy` cleared
/// and the waiters woken, a failure remembered.
struct Done<'a> {
    behind: &'a Behind,
    failed: bool,
}

impl Drop for Done<'_> {
    fn drop(&mut self) {
        let mut s = self.behind.state.lock();
        if self.failed {
            s.failed = true;
        }
        self.behind.busy.store(false, Ordering::Release);
        drop(s);
        self.behind.done.notify_all();
    }
}

impl Drop for RunDir {
    /// Everything a checkpoint began is on disk before the directory is
    /// let go (and its lock with it).
    fn drop(&mut self) {
        self.behind.wait();
    }
}

/// `journal.jsonl`, open for appending, and its length.
#[derive(Debug)]
struct Journal {
    file: File,
    len: u64,
}

/// `state.jsonl`, open for appending, and what it holds.
#[derive(Debug)]
struct StateLog {
    file: File,
    written: Written,
    /// The last `run.json` written, without its `saved_ms`: a checkpoint
    /// that changes nothing writes nothing (the end of a run saves once
    /// after its last phase and once more as it wraps up).
    summary: Option<Vec<u8>>,
}

/// What a checkpoint saves besides the state.
pub(crate) struct Checkpoint<'a> {
    /// When the run started.
    pub(crate) created_ms: u64,
    /// The settings it runs with.
    pub(crate) settings: RunSettings,
    /// The team's name.
    pub(crate) team_name: &'a str,
    /// The team, made only when `team.json` is not written yet.
    pub(crate) team: &'a dyn Fn() -> TeamSnapshot,
    /// The journal length the snapshot covers, when not the journal's
    /// length now (a process that saves while calls finish on other
    /// threads keeps the length it began with).
    pub(crate) journal_len: Option<u64>,
    /// The last turn the snapshot covers, when not the last turn filed
    /// now (a checkpoint written beside the next call keeps the turn it
    /// was taken at: a turn that call files is after it).
    pub(crate) last_turn: Option<u32>,
}

impl std::fmt::Debug for Checkpoint<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checkpoint")
            .field("created_ms", &self.created_ms)
            .field("team_name", &self.team_name)
            .finish_non_exhaustive()
    }
}

pub(super) fn open_append(path: &Path) -> Result<File, StoreError> {
    super::open_regular(path, OpenOptions::new().create(true).append(true))
        .map_err(|e| StoreError::io(path, e))
}

/// A log line cut short by a crash: the next line starts on a fresh line.
/// Reads the last byte only: `events.jsonl` holds every delta of a run.
fn end_with_newline(path: &Path) -> Result<(), StoreError> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = match super::open_regular(path, OpenOptions::new().read(true)) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(StoreError::io(path, e)),
    };
    let mut last = [0u8; 1];
    let torn =
        f.seek(SeekFrom::End(-1)).is_ok() && f.read_exact(&mut last).is_ok() && last[0] != b'\n';
    if torn {
        let mut f = open_append(path)?;
        f.write_all(b"\n").map_err(|e| StoreError::io(path, e))?;
    }
    Ok(())
}

impl RunDir {
    /// Creates the directory of a new run at `path` (its parents as
    /// needed) and locks it. An existing directory is never reused.
    ///
    /// The directory is made and locked under a hidden name beside it
    /// (`.<id>.new`) and then renamed into place, so a run directory never
    /// appears unlocked: one without `run.json` whose lock nobody holds is
    /// what a kill before the first save left, and [`super::list_runs`]
    /// cleans it up.
    pub(crate) fn create(path: &Path) -> Result<Self, StoreError> {
        let exists = || StoreError::Exists {
            path: path.to_path_buf(),
        };
        let parent = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or_else(|| Path::new("."));
        std::fs::create_dir_all(parent).map_err(|e| StoreError::io(parent, e))?;
        if path.symlink_metadata().is_ok() {
            return Err(exists());
        }
        let name = path
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        let staging = parent.join(format!(".{name}{STAGING_SUFFIX}"));
        match std::fs::create_dir(&staging) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Err(exists()),
            Err(e) => return Err(StoreError::io(&staging, e)),
        }
        let lock = match RunLock::acquire(&staging) {
            Ok(lock) => lock,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&staging);
                return Err(e);
            }
        };
        if path.symlink_metadata().is_ok() {
            let _ = std::fs::remove_dir_all(&staging);
            return Err(exists());
        }
        if let Err(e) = std::fs::rename(&staging, path) {
            let _ = std::fs::remove_dir_all(&staging);
            return Err(StoreError::io(path, e));
        }
        Self::open_locked(path, Arc::new(lock))
    }

    /// Opens an existing run directory again (to resume it) and locks it.
    ///
    /// # Errors
    ///
    /// [`StoreError::InUse`] when another process (or run) holds it.
    pub(crate) fn open(path: &Path) -> Result<Self, StoreError> {
        Self::open_locked(path, Arc::new(RunLock::acquire(path)?))
    }

    /// Opens an existing run directory whose lock the caller holds.
    pub(crate) fn open_locked(path: &Path, lock: Arc<RunLock>) -> Result<Self, StoreError> {
        let workspace = path.join(WORKSPACE_DIR);
        std::fs::create_dir_all(&workspace).map_err(|e| StoreError::io(&workspace, e))?;
        for name in [EVENTS_FILE, TURNS_FILE, JOURNAL_FILE] {
            end_with_newline(&path.join(name))?;
        }
        let journal_path = path.join(JOURNAL_FILE);
        let journal = open_append(&journal_path)?;
        let len = journal
            .metadata()
            .map_err(|e| StoreError::io(&journal_path, e))?
            .len();
        // Going on from a snapshot of format 2: the log is what it covers
        // (a checkpoint killed before its `run.json` appended more).
        let (written, task) = match super::read::load_raw(path) {
            Ok((record, Some(state_len))) => (
                Written::of(&record.state, state_len),
                super::long_task::LongTask::of(&record.state.task),
            ),
            _ => (Written::default(), None),
        };
        let state_path = path.join(STATE_FILE);
        let state = open_append(&state_path)?;
        state
            .set_len(written.state_len)
            .map_err(|e| StoreError::io(&state_path, e))?;
        Ok(RunDir {
            path: path.to_path_buf(),
            lock,
            turns: Mutex::new(open_append(&path.join(TURNS_FILE))?),
            last_turn: AtomicU32::new(0),
            journal: Mutex::new(Journal { file: journal, len }),
            journaled: Mutex::new(std::collections::HashMap::new()),
            modules: Mutex::new(std::collections::HashMap::new()),
            state: Mutex::new(StateLog {
                file: state,
                written,
                summary: None,
            }),
            long_task: parking_lot::RwLock::new(task),
            behind: Arc::default(),
        })
    }

    /// Holds the disk parts of later checkpoints until the gate opens.
    #[cfg(test)]
    pub(crate) fn hold_disk_parts(&self) -> Arc<Gate> {
        let gate = Arc::new(Gate::default());
        *self.behind.gate.lock() = Some(Arc::clone(&gate));
        gate
    }

    /// Fails the next disk part before it writes anything.
    #[cfg(test)]
    pub(crate) fn fail_next_disk_part(&self) {
        self.behind.fail_next.store(true, Ordering::SeqCst);
    }

    /// The directory's lock, to hold past the `RunDir` itself (to write
    /// the last word on a failed run).
    pub(crate) fn lock(&self) -> Arc<RunLock> {
        Arc::clone(&self.lock)
    }

    /// The run is over and its last word written: waits for a checkpoint
    /// still under way, then gives the directory's lock back. Nothing is
    /// written here after this.
    pub(crate) fn close(&self) {
        self.behind.wait();
        self.lock.release();
    }

    /// The journal's length in bytes: where the records after a snapshot
    /// start.
    pub(crate) fn journal_len(&self) -> u64 {
        self.journal.lock().len
    }

    /// A checkpoint that stopped half way (it panicked): the next one
    /// writes `team.json` and `run.json` again and flushes every log, as
    /// after one whose disk part failed (its line is what changed since
    /// the last line written, as always).
    pub(crate) fn write_all_next_time(&self) {
        self.behind.mark_failed();
    }

    /// The highest turn id filed so far.
    pub(crate) fn last_turn(&self) -> u32 {
        self.last_turn.load(Ordering::SeqCst)
    }

    /// The run's workspace.
    pub(crate) fn workspace(&self) -> PathBuf {
        self.path.join(WORKSPACE_DIR)
    }

    /// Opens the event log (one per run: the run's bus holds it).
    pub(crate) fn event_log(&self) -> Result<EventLog, StoreError> {
        EventLog::start(self.path.join(EVENTS_FILE))
    }

    /// Appends one event and waits until it is written (tests).
    #[cfg(test)]
    pub(crate) fn append_event(&self, event: &crate::event::Event) -> Result<(), StoreError> {
        self.event_log()?.append(event.clone());
        Ok(())
    }

    /// Appends one turn; a long task is cut out of its messages.
    pub(crate) fn append_turn(&self, turn: &crate::record::Turn) -> Result<(), StoreError> {
        let path = self.path.join(TURNS_FILE);
        let mut line = super::long_task::turn_line(turn, self.long_task.read().as_ref())
            .map_err(|e| StoreError::json(&path, "cannot serialise", e))?;
        line.push(b'\n');
        self.behind.settle();
        let mut f = self.turns.lock();
        f.write_all(&line)
            .and_then(|()| f.flush())
            .map_err(|e| StoreError::io(&path, e))?;
        self.filed_up_to(turn.turn_id.number());
        Ok(())
    }

    /// Takes note that `turns.jsonl` holds turns up to id `last` (those
    /// read back when a run is resumed).
    pub(crate) fn filed_up_to(&self, last: u32) {
        self.last_turn.fetch_max(last, Ordering::SeqCst);
    }

    /// Appends one journal record; a board entry's place is remembered
    /// for the next checkpoint.
    pub(crate) fn append_journal(&self, record: &JournalRecord) -> Result<(), StoreError> {
        let path = self.path.join(JOURNAL_FILE);
        let line = line(&path, record)?;
        self.behind.settle();
        let mut j = self.journal.lock();
        j.file
            .write_all(&line)
            .map_err(|e| StoreError::io(&path, e))?;
        let at = j.len;
        j.len += line.len() as u64;
        match record {
            JournalRecord::Entry { entry, .. } => {
                self.journaled.lock().insert(entry.seq, at);
            }
            JournalRecord::Module { module, .. } => {
                self.modules
                    .lock()
                    .insert(module.task_id.clone(), (at, module.clone()));
            }
            _ => {}
        }
        Ok(())
    }

    /// Saves a snapshot of the run: `team.json` once, what changed since
    /// the last checkpoint as one line of `state.jsonl`, then `run.json`.
    /// The line, and the logs it points into, are on disk before the
    /// `run.json` that covers it replaces the old one; all of it before
    /// this returns.
    pub(crate) fn checkpoint(&self, state: &RunState, c: Checkpoint<'_>) -> Result<(), StoreError> {
        self.save(state, c, false)
    }

    /// As [`RunDir::checkpoint`], but returns once the line is written:
    /// the fsyncs and `run.json` follow on a thread of their own while the
    /// run goes on (see [`Behind`]). For a phase that is followed by a
    /// model call; a run's last snapshot is taken with `checkpoint`, so a
    /// run reported done is on disk.
    pub(crate) fn checkpoint_behind(
        &self,
        state: &RunState,
        c: Checkpoint<'_>,
    ) -> Result<(), StoreError> {
        self.save(state, c, true)
    }

    /// A checkpoint, start to end under the state log's lock: checkpoints
    /// run one at a time (the principal's associates save from their own
    /// threads), and each `run.json` is written in the order of the lines
    /// it covers.
    fn save(&self, state: &RunState, c: Checkpoint<'_>, behind: bool) -> Result<(), StoreError> {
        let mut log = self.state.lock();
        let failed = self.behind.wait();
        let part = match self.snapshot(&mut log, failed, state, c) {
            Ok(Some(part)) => part,
            Ok(None) => return Ok(()),
            Err(e) => {
                // Made good by the next checkpoint: whatever this one
                // began (a line, the bookkeeping) may not be on disk.
                self.behind.mark_failed();
                return Err(e);
            }
        };
        if behind {
            self.behind.start(part)
        } else {
            self.behind.write_now(&part)
        }
    }

    /// A checkpoint's own part, under the state log's lock once the last
    /// disk part is done: what changed, written to `state.jsonl` (not yet
    /// synced), and what is left to write (`None`: nothing changed).
    fn snapshot(
        &self,
        log: &mut StateLog,
        failed: bool,
        state: &RunState,
        c: Checkpoint<'_>,
    ) -> Result<Option<DiskPart>, StoreError> {
        if failed {
            // Written again, from the start of what the last one did.
            log.written.team = false;
            log.summary = None;
        }
        let team = if log.written.team {
            None
        } else {
            let path = self.path.join(TEAM_FILE);
            Some(
                (c.team)()
                    .to_saved_json()
                    .map_err(|e| StoreError::json(&path, "cannot serialise", e))?,
            )
        };
        let state_path = self.path.join(STATE_FILE);
        let journaled = |seq: u64| self.journaled.lock().get(&seq).copied();
        let journaled_module = |m: &crate::plan::WorkModule| {
            let modules = self.modules.lock();
            let (at, kept) = modules.get(&m.task_id)?;
            (kept == m).then_some(*at)
        };
        let delta = log
            .written
            .delta(state, &journaled, &journaled_module)
            .map_err(|e| StoreError::json(&state_path, "cannot serialise", e))?;
        let wrote_line = delta.is_some();
        let mut sync = Vec::new();
        let handle = |f: &File, name: &'static str| {
            f.try_clone()
                .map(|f| (f, name))
                .map_err(|e| StoreError::io(self.path.join(name), e))
        };
        if let Some((line, points_to)) = delta {
            if points_to.journal || failed {
                sync.push(handle(&self.journal.lock().file, JOURNAL_FILE)?);
            }
            if points_to.turns || failed {
                sync.push(handle(&self.turns.lock(), TURNS_FILE)?);
            }
            // Taken before the line is written: an error after it would
            // leave a line the next checkpoint does not know of.
            let state_file = handle(&log.file, STATE_FILE)?;
            let before = log.written.state_len;
            if let Err(e) = log.file.write_all(&line) {
                // No torn line for the next checkpoint to follow.
                let _ = log.file.set_len(before);
                return Err(StoreError::io(&state_path, e));
            }
            sync.push(state_file);
            log.written.wrote(state, line.len() as u64);
            // Masked and copied only when the task is new (not at every
            // checkpoint of a run).
            let same = self
                .long_task
                .read()
                .as_ref()
                .is_some_and(|t| t.is(&state.task));
            if !same {
                *self.long_task.write() = super::long_task::LongTask::of(&state.task);
            }
        } else if failed {
            sync.push(handle(&self.journal.lock().file, JOURNAL_FILE)?);
            sync.push(handle(&self.turns.lock(), TURNS_FILE)?);
            sync.push(handle(&log.file, STATE_FILE)?);
        }
        let mut summary = Summary::of(
            state,
            c.created_ms,
            c.team_name.to_string(),
            c.settings,
            c.journal_len.unwrap_or_else(|| self.journal_len()),
            log.written.state_len,
            c.last_turn
                .unwrap_or_else(|| self.last_turn.load(Ordering::SeqCst)),
        );
        let path = self.path.join(RUN_FILE);
        let saved_ms = std::mem::take(&mut summary.saved_ms);
        let same = serde_json::to_vec(&summary)
            .map_err(|e| StoreError::json(&path, "cannot serialise", e))?;
        if !wrote_line && team.is_none() && log.summary.as_deref() == Some(&same[..]) {
            return Ok(None);
        }
        summary.saved_ms = saved_ms;
        let run = serde_json::to_vec_pretty(&summary)
            .map_err(|e| StoreError::json(&path, "cannot serialise", e))?;
        log.written.team = true;
        log.summary = Some(same);
        Ok(Some(DiskPart {
            dir: self.path.clone(),
            team,
            sync,
            run,
        }))
    }
}

/// The end of a new run directory's name while it is being made.
pub(crate) const STAGING_SUFFIX: &str = ".new";

/// `value` as one JSON line, known secrets masked.
fn line(path: &Path, value: &impl Serialize) -> Result<Vec<u8>, StoreError> {
    let line =
        serde_json::to_vec(value).map_err(|e| StoreError::json(path, "cannot serialise", e))?;
    let mut line = crate::util::secrets::mask_json(&line).into_owned();
    line.push(b'\n');
    Ok(line)
}
