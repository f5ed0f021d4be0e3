//! The run directory: everything a run leaves on disk, and reading it back.
//!
//! ```text
//! runs/<run-id>/
//!   run.json        snapshot after every phase (temp file, fsync, rename)
//!   events.jsonl    every event, one JSON object a line (buffered, from a writer thread)
//!   turns.jsonl     every model call (a Turn record a line)
//!   journal.jsonl   board entries and work modules as they land mid-phase
//!   run.lock        the OS lock of the process working on the run, and its pid
//!   workspace/      plan.json, report.md, files the agents write
//! ```
//!
//! Readers are tolerant: a half-written last line is skipped with a
//! warning, a `run.json` from a newer version is an error that says so.
//!
//! [`load_run`] gives a [`RunRecord`]; its [`RunState`] (read through
//! accessors) holds the board, the plan, the usage and, for a handoff run,
//! the [`HandoffState`]; [`read_turns`] gives every model call as a
//! [`Turn`]. [`MasterMemory`] is the master's notes kept across runs.

mod crash;
mod error;
mod lock;
mod read;
mod record;
mod write;

pub use error::StoreError;
pub use lock::run_holder;
pub use read::{Lines, RunListing, list_runs, load_run, read_events, read_turns};
pub use record::{RUN_FORMAT_VERSION, RunRecord, RunSettings, TeamSnapshot};

pub use crate::memory::{DEFAULT_MEMORY_CHARS, MasterMemory};
pub use crate::process::handoff::{HandoffState, HandoffStep};
pub use crate::runtime::{ParseTurnIdError, RunPhase, RunState, Turn, TurnId, UserNote};

pub(crate) use crate::util::fs::{
    MAX_LOG_FILE, MAX_RECORD_FILE, open_regular, read_capped, read_capped_from, read_text_lossy,
};
pub(crate) use crash::crash_point;
pub(crate) use lock::RunLock;
pub(crate) use read::{MAX_SEQ, read_journal};
pub(crate) use record::JournalRecord;
pub(crate) use write::{EventLog, RunDir, write_atomic, write_replace};

/// File names inside a run directory.
pub(crate) const RUN_FILE: &str = "run.json";
pub(crate) const EVENTS_FILE: &str = "events.jsonl";
pub(crate) const TURNS_FILE: &str = "turns.jsonl";
pub(crate) const JOURNAL_FILE: &str = "journal.jsonl";
pub(crate) const WORKSPACE_DIR: &str = "workspace";

#[cfg(test)]
mod tests;
