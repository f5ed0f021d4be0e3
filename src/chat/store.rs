//! A chat on disk: `chats/<id>/chat.json` (the conversation the partner
//! sees, its draft plan and the runs it launched; rewritten atomically
//! after every turn) and `transcript.jsonl` (what the user saw, one
//! [`ChatEvent`](super::ChatEvent) a line, appended). `chat.lock` holds
//! an OS lock for as long as a process has the chat open, as `run.lock`
//! does for a run: a second process is refused, naming the first one.
//! [`ChatStore::load`] reads a chat without the lock, to look at one
//! another handle has open.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::ChatError;
use crate::model::Message;
use crate::plan::Plan;
use crate::store::{RunLock, StoreError};

/// The saved state of a chat.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatRecord {
    /// The chat's id (its directory).
    pub id: String,
    /// When it began, in milliseconds since the Unix epoch.
    pub created_ms: u64,
    /// When it was last saved.
    pub saved_ms: u64,
    /// Where its runs are saved.
    pub runs_dir: PathBuf,
    /// The runs it launched, oldest first.
    pub runs: Vec<String>,
    /// The partner's draft plan.
    pub plan: Plan,
    /// The partner's conversation (system prompt excluded).
    pub messages: Vec<Message>,
}

/// A chat's directory, locked for this handle while any clone of it
/// lives.
///
/// One handle at a time has a chat open: while one lives, any other
/// `create`/`open` of the same chat is refused with
/// [`ChatError::InUse`], whether it comes from another process or from
/// this one (an OS file lock, held per open file). Clone the handle to
/// share it; use [`ChatStore::load`] to read a chat without opening it.
#[derive(Debug, Clone)]
pub struct ChatStore {
    dir: PathBuf,
    _lock: Arc<RunLock>,
}

/// The lock file's name inside a chat directory.
const LOCK_FILE: &str = "chat.lock";

/// Takes the lock of chat `id` in `dir` without waiting.
fn lock(dir: &Path, id: &str) -> Result<Arc<RunLock>, ChatError> {
    match RunLock::acquire_file(dir, LOCK_FILE) {
        Ok(lock) => Ok(Arc::new(lock)),
        Err(StoreError::InUse { pid, .. }) => Err(ChatError::InUse {
            chat: id.to_string(),
            pid,
        }),
        // Its text names the lock file already.
        Err(StoreError::Io { path, source }) => Err(io_err(&path, source)),
        Err(e) => Err(ChatError::Store {
            path: dir.to_path_buf(),
            source: e.into(),
        }),
    }
}

/// The directory of chat `id` under `chats_dir`, when `id` can name one
/// (not empty, no separator, not hidden).
fn chat_dir(chats_dir: &Path, id: &str) -> Result<PathBuf, ChatError> {
    let dir = chats_dir.join(id);
    if id.is_empty() || id.contains(['/', '\\']) || id.starts_with('.') {
        return Err(no_such_chat(&dir));
    }
    Ok(dir)
}

fn no_such_chat(dir: &Path) -> ChatError {
    io_err(dir, "no such chat (see the ids under the chats directory)")
}

/// Reads `chat.json` in `dir`.
fn read_record(dir: &Path) -> Result<ChatRecord, ChatError> {
    let path = dir.join("chat.json");
    let text = crate::store::read_text_lossy(&path, crate::store::MAX_RECORD_FILE)
        .map_err(|e| io_err(&path, e))?;
    serde_json::from_str(&text).map_err(|e| io_err(&path, e))
}

/// The parseable lines of `transcript.jsonl` in `dir`.
fn read_transcript(dir: &Path) -> Vec<serde_json::Value> {
    crate::store::read_text_lossy(&dir.join("transcript.jsonl"), crate::store::MAX_LOG_FILE)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn io_err(path: &Path, e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> ChatError {
    ChatError::Store {
        path: path.to_path_buf(),
        source: e.into(),
    }
}

impl ChatStore {
    /// A new chat directory under `chats_dir`, with a fresh id.
    ///
    /// # Errors
    ///
    /// [`ChatError::Store`] when the directory or its lock file cannot be
    /// created; [`ChatError::InUse`] should another handle hold the new
    /// chat's lock (never with a fresh id, in practice).
    pub fn create(chats_dir: &Path) -> Result<(ChatStore, String), ChatError> {
        // UUIDv7: sorts by creation time, never collides across processes.
        let id = uuid::Uuid::now_v7().simple().to_string();
        let dir = chats_dir.join(&id);
        std::fs::create_dir_all(&dir).map_err(|e| io_err(&dir, e))?;
        let _lock = lock(&dir, &id)?;
        Ok((ChatStore { dir, _lock }, id))
    }

    /// The chat `id` under `chats_dir`, with its saved record.
    ///
    /// # Errors
    ///
    /// [`ChatError::Store`] when there is no such chat or its record
    /// cannot be read; [`ChatError::InUse`] when another handle (of
    /// another process or of this one) has it open, a new chat in its
    /// first turn, before its record is saved, too.
    pub fn open(chats_dir: &Path, id: &str) -> Result<(ChatStore, ChatRecord), ChatError> {
        let dir = chat_dir(chats_dir, id)?;
        if !dir.is_dir() {
            return Err(no_such_chat(&dir));
        }
        // Locked first: a chat whose holder has not saved it yet is in
        // use, not missing, and what the holder saves next is not lost.
        let _lock = lock(&dir, id)?;
        if !dir.join("chat.json").is_file() {
            return Err(no_such_chat(&dir));
        }
        let record = read_record(&dir)?;
        Ok((ChatStore { dir, _lock }, record))
    }

    /// Chat `id`'s saved record and transcript, read without its lock:
    /// for looking at a chat that another handle (or process) may have
    /// open. What the holder is writing may be missing or one turn behind.
    ///
    /// # Errors
    ///
    /// [`ChatError::Store`] when there is no such chat or its record
    /// cannot be read.
    pub fn load(
        chats_dir: &Path,
        id: &str,
    ) -> Result<(ChatRecord, Vec<serde_json::Value>), ChatError> {
        let dir = chat_dir(chats_dir, id)?;
        if !dir.join("chat.json").is_file() {
            return Err(no_such_chat(&dir));
        }
        Ok((read_record(&dir)?, read_transcript(&dir)))
    }

    /// The chat's directory.
    #[must_use]
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Writes `chat.json` atomically (a temporary file, then a rename).
    ///
    /// # Errors
    ///
    /// [`ChatError::Store`] when it cannot be written.
    pub fn save(&self, record: &ChatRecord) -> Result<(), ChatError> {
        let path = self.dir.join("chat.json");
        let tmp = self.dir.join("chat.json.tmp");
        let text = serde_json::to_vec_pretty(record).map_err(|e| io_err(&path, e))?;
        std::fs::write(&tmp, text).map_err(|e| io_err(&tmp, e))?;
        std::fs::rename(&tmp, &path).map_err(|e| io_err(&path, e))
    }

    /// Appends one line to `transcript.jsonl`.
    ///
    /// # Errors
    ///
    /// [`ChatError::Store`] when it cannot be written.
    pub fn append(&self, line: &serde_json::Value) -> Result<(), ChatError> {
        let path = self.dir.join("transcript.jsonl");
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| io_err(&path, e))?;
        writeln!(f, "{line}").map_err(|e| io_err(&path, e))
    }

    /// The lines of `transcript.jsonl` (unreadable lines are skipped).
    #[must_use]
    pub fn transcript(&self) -> Vec<serde_json::Value> {
        read_transcript(&self.dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_saves_and_opens_again() {
        let tmp = tempfile::tempdir().unwrap();
        let (store, id) = ChatStore::create(tmp.path()).unwrap();
        let mut record = ChatRecord {
            id: id.clone(),
            runs: vec!["r1".into()],
            ..ChatRecord::default()
        };
        record.plan.add("Find a venue", None);
        record.messages.push(Message::user("Plan a team offsite"));
        store.save(&record).unwrap();
        store
            .append(&serde_json::json!({"type": "user_message", "text": "hi"}))
            .unwrap();
        drop(store);
        let (again, back) = ChatStore::open(tmp.path(), &id).unwrap();
        assert_eq!(back, record);
        assert_eq!(again.transcript().len(), 1);
        let err = ChatStore::open(tmp.path(), "nope").unwrap_err().to_string();
        assert!(
            err.ends_with("nope: no such chat (see the ids under the chats directory)"),
            "{err}"
        );
        assert!(ChatStore::open(tmp.path(), "../x").is_err());
    }

    #[test]
    fn a_chat_open_in_one_place_is_refused_in_another_until_it_is_closed() {
        let tmp = tempfile::tempdir().unwrap();
        let (store, id) = ChatStore::create(tmp.path()).unwrap();
        store.save(&ChatRecord::default()).unwrap();
        let err = ChatStore::open(tmp.path(), &id).unwrap_err().to_string();
        // Our own pid is not "another boardroom".
        assert_eq!(
            err,
            format!("chat {id}: in use by another handle (this process)")
        );
        drop(store);
        let _again = ChatStore::open(tmp.path(), &id).unwrap();
    }

    #[test]
    fn another_pid_is_named_as_another_boardroom() {
        let other = ChatError::InUse {
            chat: "c1".into(),
            pid: Some(std::process::id().wrapping_add(1)),
        };
        assert_eq!(
            other.to_string(),
            format!(
                "chat c1: in use by another boardroom (pid {})",
                std::process::id().wrapping_add(1)
            )
        );
    }

    #[test]
    fn a_new_chat_not_saved_yet_is_in_use_not_missing() {
        let tmp = tempfile::tempdir().unwrap();
        // In its first turn: the directory and lock, no chat.json yet.
        let (store, id) = ChatStore::create(tmp.path()).unwrap();
        let err = ChatStore::open(tmp.path(), &id).unwrap_err();
        assert!(matches!(err, ChatError::InUse { .. }), "{err}");
        drop(store);
        // Its holder gone and nothing saved: no such chat.
        let err = ChatStore::open(tmp.path(), &id).unwrap_err().to_string();
        assert!(
            err.ends_with(": no such chat (see the ids under the chats directory)"),
            "{err}"
        );
    }

    #[test]
    fn load_reads_a_chat_another_handle_has_open() {
        let tmp = tempfile::tempdir().unwrap();
        let (store, id) = ChatStore::create(tmp.path()).unwrap();
        let record = ChatRecord {
            id: id.clone(),
            messages: vec![Message::user("Plan a team offsite")],
            ..ChatRecord::default()
        };
        store.save(&record).unwrap();
        store
            .append(&serde_json::json!({"type": "user_message", "text": "hi"}))
            .unwrap();
        let (back, transcript) = ChatStore::load(tmp.path(), &id).unwrap();
        assert_eq!(back, record);
        assert_eq!(transcript.len(), 1);
        // The holder keeps it: loading took no lock of its own.
        store.save(&record).unwrap();
        assert!(ChatStore::open(tmp.path(), &id).is_err(), "still held");
        assert!(ChatStore::load(tmp.path(), "nope").is_err());
        assert!(ChatStore::load(tmp.path(), "../x").is_err());
    }

    #[test]
    fn a_lock_file_that_cannot_be_opened_is_named_once() {
        let tmp = tempfile::tempdir().unwrap();
        let (store, id) = ChatStore::create(tmp.path()).unwrap();
        store.save(&ChatRecord::default()).unwrap();
        drop(store);
        // A read-only directory does not stop root: a directory where the
        // lock file should be stops everyone.
        let lock = tmp.path().join(&id).join(LOCK_FILE);
        std::fs::remove_file(&lock).unwrap();
        std::fs::create_dir(&lock).unwrap();
        let err = ChatStore::open(tmp.path(), &id).unwrap_err();
        assert!(matches!(err, ChatError::Store { .. }), "{err:?}");
        let text = err.to_string();
        assert_eq!(
            text.matches(&lock.display().to_string()).count(),
            1,
            "the lock file named once: {text}"
        );
    }
}
