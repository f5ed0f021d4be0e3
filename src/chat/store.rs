//! A chat on disk: `chats/<id>/chat.json` (the conversation the partner
//! sees, its draft plan and the runs it launched; rewritten atomically
//! after every turn) and `transcript.jsonl` (what the user saw, one
//! [`ChatEvent`](super::ChatEvent) a line, appended). `chat.lock` holds
//! an OS lock for as long as a process has the chat open, as `run.lock`
//! does for a run: a second process is refused, naming the first one.

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

/// A chat's directory, locked for this process while any clone of it
/// lives.
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
        Err(e) => Err(io_err(&dir.join(LOCK_FILE), e)),
    }
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
    /// [`ChatError::Store`] when the directory cannot be created.
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
    /// cannot be read; [`ChatError::InUse`] when another process has it
    /// open.
    pub fn open(chats_dir: &Path, id: &str) -> Result<(ChatStore, ChatRecord), ChatError> {
        let dir = chats_dir.join(id);
        let path = dir.join("chat.json");
        if id.is_empty() || id.contains(['/', '\\']) || id.starts_with('.') || !path.is_file() {
            return Err(io_err(
                &dir,
                "no such chat (see the ids under the chats directory)",
            ));
        }
        // Locked before it is read: what the holder saves next is not lost.
        let _lock = lock(&dir, id)?;
        let text = std::fs::read_to_string(&path).map_err(|e| io_err(&path, e))?;
        let record: ChatRecord = serde_json::from_str(&text).map_err(|e| io_err(&path, e))?;
        Ok((ChatStore { dir, _lock }, record))
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
        std::fs::read_to_string(self.dir.join("transcript.jsonl"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
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
        assert_eq!(
            err,
            format!(
                "chat {id}: in use by another boardroom (pid {})",
                std::process::id()
            )
        );
        drop(store);
        let _again = ChatStore::open(tmp.path(), &id).unwrap();
    }
}
