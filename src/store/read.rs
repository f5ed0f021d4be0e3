//! Reading run directories back, tolerantly: what can be read is read,
//! what cannot is reported, nothing panics.

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

use super::record::{JournalRecord, RUN_FORMAT_VERSION, RunRecord};
use super::{EVENTS_FILE, JOURNAL_FILE, RUN_FILE, StoreError, TURNS_FILE};
use crate::event::Event;
use crate::record::{RunPhase, Turn};

/// The readable lines of a JSON-lines file, and a warning for each line
/// that was skipped (`events.jsonl:17: truncated last line skipped`).
#[derive(Debug, Clone, PartialEq)]
pub struct Lines<T> {
    /// What could be read, in file order.
    pub items: Vec<T>,
    /// One message per skipped line.
    pub warnings: Vec<String>,
}

/// Reads `<dir>/run.json`.
///
/// # Errors
///
/// [`StoreError::NotFound`] when there is no such file,
/// [`StoreError::NewerVersion`] for a file from a newer boardroom,
/// [`StoreError::Json`] for one that is not a run record.
pub fn load_run(dir: &Path) -> Result<RunRecord, StoreError> {
    let (mut record, _) = load_raw(dir)?;
    count_late_calls(dir, &mut record);
    Ok(record)
}

/// `run.json` as saved (with, from format 2 on, `team.json` and the part
/// of `state.jsonl` it covers, whose length comes back too), before the
/// late calls of a finished run are counted.
pub(crate) fn load_raw(dir: &Path) -> Result<(RunRecord, Option<u64>), StoreError> {
    let path = dir.join(RUN_FILE);
    let text = match super::read_capped(&path, super::MAX_RECORD_FILE)
        .and_then(|b| String::from_utf8(b).map_err(std::io::Error::other))
    {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(StoreError::NotFound {
                run: path.display().to_string(),
            });
        }
        Err(e) => return Err(StoreError::io(&path, e)),
    };
    let corrupt = |detail: String| StoreError::Corrupt {
        path: path.clone(),
        detail,
    };
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| StoreError::json(&path, "not valid json", e))?;
    let version = value
        .get("version")
        .and_then(serde_json::Value::as_u64)
        .ok_or_else(|| corrupt("no format 'version'".into()))?;
    if version > u64::from(RUN_FORMAT_VERSION) {
        return Err(StoreError::NewerVersion {
            path,
            found: version,
            supported: RUN_FORMAT_VERSION,
        });
    }
    // Format 2 is a summary that says how much of `state.jsonl` it covers;
    // anything else is a whole record (format 1, or a `RunRecord` written
    // out as it serialises).
    let (record, state_len) = if value.get("state_len").is_some() {
        let (record, len) = super::snapshot_load::load(dir, value)?;
        (record, Some(len))
    } else {
        let record: RunRecord = serde_json::from_value(value)
            .map_err(|e| StoreError::json(&path, "not a run record", e))?;
        (record, None)
    };
    // Entries are numbered 1, 2, 3, ... in board order: anything else was
    // not written by boardroom (and a number at the top of the range
    // would overflow the next entry's).
    let mut last = 0u64;
    for e in &record.state.board {
        if e.seq <= last || e.seq >= MAX_SEQ {
            return Err(corrupt(format!(
                "board entry #{} is out of order or out of range (after #{last})",
                e.seq
            )));
        }
        last = e.seq;
    }
    Ok((record, state_len))
}

/// A finished run's calls after its last snapshot (the memory note's, when
/// a kill came between the note and the snapshot after it) count in its
/// totals, as they do in `turns.jsonl`: their usage is in the journal past
/// the snapshot's `journal_len`, and the record read back moves its
/// `journal_len` past them so that nothing counts them twice.
fn count_late_calls(dir: &Path, record: &mut RunRecord) {
    if record.state.phase != RunPhase::Finished {
        return;
    }
    let Some(from) = record.journal_len else {
        return;
    };
    let path = dir.join(JOURNAL_FILE);
    let Ok(len) = std::fs::metadata(&path).map(|m| m.len()) else {
        return;
    };
    if len <= from {
        return;
    }
    let Ok(journal) = read_journal(dir, from) else {
        return;
    };
    for r in journal.items {
        if let JournalRecord::Usage { agent, usage, .. } = r {
            record.state.usage.add(usage);
            record
                .state
                .usage_by_agent
                .entry(agent)
                .or_default()
                .add(usage);
        }
    }
    record.journal_len = Some(len);
}

/// Past any board a run could write (2^53: exact in every JSON reader).
pub(crate) const MAX_SEQ: u64 = 1 << 53;

/// Reads `<dir>/events.jsonl`; a missing file reads as empty.
///
/// # Errors
///
/// A [`StoreError::Io`] when the file exists but cannot be read.
pub fn read_events(dir: &Path) -> Result<Lines<Event>, StoreError> {
    read_lines(&dir.join(EVENTS_FILE))
}

/// Reads `<dir>/turns.jsonl`; a missing file reads as empty.
///
/// # Errors
///
/// A [`StoreError::Io`] when the file exists but cannot be read.
pub fn read_turns(dir: &Path) -> Result<Lines<Turn>, StoreError> {
    read_turns_for(dir, None)
}

/// Reads `<dir>/turns.jsonl`, with the run's task when the caller has it
/// (else read from the run, if a turn needs it).
pub(crate) fn read_turns_for(dir: &Path, known: Option<&str>) -> Result<Lines<Turn>, StoreError> {
    // A long task was cut out of the turns that held it: put back from
    // the run's state, read once and only if a turn needs it.
    let mut task: Option<Result<String, String>> = known.map(|t| Ok(t.to_string()));
    read_lines_with(&dir.join(TURNS_FILE), 0, |line| {
        if !super::long_task::has_task_cut(line) {
            return serde_json::from_str(line).map_err(|e| e.to_string());
        }
        let task = task.get_or_insert_with(|| {
            load_raw(dir)
                .map(|(r, _)| r.state.task)
                .map_err(|e| format!("its task could not be read: {e}"))
        });
        match task {
            Ok(task) => super::long_task::turn_with_task(line, task).map_err(|e| e.to_string()),
            Err(e) => Err(e.clone()),
        }
    })
}

/// The journal's records from byte `from` on (where the last snapshot
/// left it).
pub(crate) fn read_journal(dir: &Path, from: u64) -> Result<Lines<JournalRecord>, StoreError> {
    let mut lines: Lines<JournalRecord> = read_lines_from(&dir.join(JOURNAL_FILE), from)?;
    // Modules' transcripts saved as turn ids, read back whole.
    let modules = lines.items.iter_mut().filter_map(|r| match r {
        JournalRecord::Module { module, .. } => Some(module),
        _ => None,
    });
    super::transcripts::read_back(dir, None, modules)?;
    Ok(lines)
}

fn read_lines<T: DeserializeOwned>(path: &Path) -> Result<Lines<T>, StoreError> {
    read_lines_from(path, 0)
}

fn read_lines_from<T: DeserializeOwned>(path: &Path, from: u64) -> Result<Lines<T>, StoreError> {
    read_lines_with(path, from, |line| {
        serde_json::from_str(line).map_err(|e| {
            if e.is_eof() {
                EOF.to_string()
            } else {
                e.to_string()
            }
        })
    })
}

/// What a parser says of a line cut short.
const EOF: &str = "EOF while parsing";

fn read_lines_with<T>(
    path: &Path,
    from: u64,
    mut parse: impl FnMut(&str) -> Result<T, String>,
) -> Result<Lines<T>, StoreError> {
    let bytes = match super::read_capped_from(path, from, super::MAX_LOG_FILE) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(StoreError::io(path, e)),
    };
    let text = String::from_utf8_lossy(&bytes);
    let name = path
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let complete = text.ends_with('\n');
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Lines {
        items: Vec::new(),
        warnings: Vec::new(),
    };
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match parse(line) {
            Ok(item) => out.items.push(item),
            Err(e) => {
                let last = i + 1 == lines.len() && !complete;
                let why = if last || e.contains(EOF) {
                    "truncated line skipped".to_string()
                } else {
                    format!("unreadable line skipped: {e}")
                };
                out.warnings.push(format!("{name}:{}: {why}", i + 1));
            }
        }
    }
    Ok(out)
}

/// Removes `dir` when it is what a kill left before a run's first save: a
/// run directory (or one being made, `.<id>.new`) with a `run.lock` that
/// nobody holds, no `run.json` and no model call recorded. Nothing was
/// done in it, so there is nothing to list or resume. Returns whether it
/// was removed; anything else is left alone.
fn clean_early_kill(dir: &Path) -> bool {
    if !dir.join(super::lock::LOCK_FILE).is_file() {
        return false;
    }
    let empty = |name: &str| {
        dir.join(name)
            .symlink_metadata()
            .map_or(true, |m| m.is_file() && m.len() == 0)
    };
    if !(empty(TURNS_FILE) && empty(JOURNAL_FILE)) {
        return false;
    }
    let Ok(_lock) = super::RunLock::try_acquire(dir) else {
        return false;
    };
    // Under the lock: a run cannot have started saving since the checks.
    if dir.join(RUN_FILE).symlink_metadata().is_ok() {
        return false;
    }
    match std::fs::remove_dir_all(dir) {
        Ok(()) => {
            log::info!(
                "removed {}: a run stopped before its first save",
                dir.display()
            );
            true
        }
        Err(e) => {
            log::warn!("cannot remove {}: {e}", dir.display());
            false
        }
    }
}

/// One directory under the runs directory.
#[derive(Debug)]
#[non_exhaustive]
pub struct RunListing {
    /// The run id (the directory's name).
    pub id: String,
    /// The run directory.
    pub path: PathBuf,
    /// Its `run.json`, or why it could not be read.
    pub record: Result<RunRecord, StoreError>,
}

/// Every run under `runs_dir`, oldest first (run ids sort by time).
/// Directories without a `run.json` (such as `memory/`) are left out;
/// unreadable ones are listed with their error.
///
/// # Errors
///
/// A [`StoreError::Io`] when `runs_dir` exists but cannot be listed; a
/// missing `runs_dir` lists no runs.
pub fn list_runs(runs_dir: &Path) -> Result<Vec<RunListing>, StoreError> {
    let read = match std::fs::read_dir(runs_dir) {
        Ok(r) => r,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(StoreError::io(runs_dir, e)),
    };
    let mut dirs: Vec<PathBuf> = read
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        // Whatever is there (a FIFO too) is listed, with its error; a
        // directory a kill left before its first save is cleaned up.
        .filter(|p| {
            if p.join(RUN_FILE).symlink_metadata().is_ok() {
                return true;
            }
            clean_early_kill(p);
            false
        })
        .collect();
    dirs.sort();
    Ok(dirs
        .into_iter()
        .map(|path| RunListing {
            id: path
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
            record: load_run(&path),
            path,
        })
        .collect())
}
