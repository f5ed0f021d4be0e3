//! Writing a run directory: atomic snapshots and append-only logs.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use parking_lot::Mutex;
use serde::Serialize;

use super::{EVENTS_FILE, JOURNAL_FILE, StoreError, TURNS_FILE, WORKSPACE_DIR};

/// An open run directory. The logs are appended from any thread, one
/// whole line per `write` under a short lock.
#[derive(Debug)]
pub(crate) struct RunDir {
    path: PathBuf,
    events: Mutex<File>,
    turns: Mutex<File>,
    journal: Mutex<File>,
}

fn open_append(path: &Path) -> Result<File, StoreError> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| StoreError::io(path, e))
}

/// A log line cut short by a crash: the next line starts on a fresh line.
fn end_with_newline(path: &Path) -> Result<(), StoreError> {
    let Ok(bytes) = std::fs::read(path) else {
        return Ok(());
    };
    if bytes.last().is_some_and(|b| *b != b'\n') {
        let mut f = open_append(path)?;
        f.write_all(b"\n").map_err(|e| StoreError::io(path, e))?;
    }
    Ok(())
}

impl RunDir {
    /// Creates (or opens again, to resume) the run directory at `path`.
    pub(crate) fn open(path: &Path) -> Result<Self, StoreError> {
        let workspace = path.join(WORKSPACE_DIR);
        std::fs::create_dir_all(&workspace).map_err(|e| StoreError::io(&workspace, e))?;
        for name in [EVENTS_FILE, TURNS_FILE, JOURNAL_FILE] {
            end_with_newline(&path.join(name))?;
        }
        Ok(RunDir {
            path: path.to_path_buf(),
            events: Mutex::new(open_append(&path.join(EVENTS_FILE))?),
            turns: Mutex::new(open_append(&path.join(TURNS_FILE))?),
            journal: Mutex::new(open_append(&path.join(JOURNAL_FILE))?),
        })
    }

    /// The directory.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The run's workspace.
    pub(crate) fn workspace(&self) -> PathBuf {
        self.path.join(WORKSPACE_DIR)
    }

    pub(crate) fn append_event(&self, value: &impl Serialize) -> Result<(), StoreError> {
        append(&self.events, &self.path.join(EVENTS_FILE), value)
    }

    pub(crate) fn append_turn(&self, value: &impl Serialize) -> Result<(), StoreError> {
        append(&self.turns, &self.path.join(TURNS_FILE), value)
    }

    pub(crate) fn append_journal(&self, value: &impl Serialize) -> Result<(), StoreError> {
        append(&self.journal, &self.path.join(JOURNAL_FILE), value)
    }
}

/// One JSON line, written with a single `write` and flushed, so a crash
/// leaves at worst a torn last line that readers skip.
fn append(file: &Mutex<File>, path: &Path, value: &impl Serialize) -> Result<(), StoreError> {
    let mut line = serde_json::to_vec(value).map_err(|e| StoreError::Corrupt {
        path: path.to_path_buf(),
        detail: format!("cannot serialise: {e}"),
    })?;
    line.push(b'\n');
    let mut f = file.lock();
    f.write_all(&line)
        .and_then(|()| f.flush())
        .map_err(|e| StoreError::io(path, e))
}

/// Writes `bytes` to `path` so that readers see the old file or the new
/// one, never half of one, and the new one survives a power cut: a temp
/// file beside it, fsync, rename, fsync of the directory.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    replace(path, bytes, true)
}

/// As [`write_atomic`] without the fsyncs: for files that can be made
/// again from `run.json` (`plan.json`, `report.md`).
pub(crate) fn write_replace(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    replace(path, bytes, false)
}

fn replace(path: &Path, bytes: &[u8], durable: bool) -> Result<(), StoreError> {
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    let name = path
        .file_name()
        .map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned());
    let tmp = dir.join(format!(".{name}.tmp"));
    let mut f = File::create(&tmp).map_err(|e| StoreError::io(&tmp, e))?;
    f.write_all(bytes)
        .and_then(|()| if durable { f.sync_all() } else { Ok(()) })
        .map_err(|e| StoreError::io(&tmp, e))?;
    drop(f);
    std::fs::rename(&tmp, path).map_err(|e| StoreError::io(path, e))?;
    // Make the rename itself durable. Not every platform can open a
    // directory; the rename is still atomic there.
    if durable {
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
    }
    Ok(())
}
