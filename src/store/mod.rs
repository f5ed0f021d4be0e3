//! The run directory (the public face is `crate::store` in lib.rs, which
//! adds the saved types of `crate::record` and the master's memory).

mod crash;
mod disk;
mod error;
mod events;
mod lock;
mod long_task;
mod read;
mod record;
mod snapshot;
mod snapshot_load;
mod transcripts;
mod write;

pub use error::StoreError;
pub use lock::run_holder;
pub use read::{Lines, RunListing, list_runs, load_run, read_events, read_turns};
pub use record::{RUN_FORMAT_VERSION, RunRecord, TeamSnapshot};

pub(crate) use crate::util::fs::{
    MAX_LOG_FILE, MAX_RECORD_FILE, open_regular, read_capped, read_capped_from, read_text_lossy,
};
pub(crate) use crash::crash_point;
pub(crate) use disk::{write_atomic, write_replace};
pub(crate) use events::EventLog;
pub(crate) use lock::RunLock;
pub(crate) use read::{MAX_SEQ, read_journal};
pub(crate) use record::JournalRecord;
pub(crate) use snapshot::mark_failed;
pub(crate) use write::{Checkpoint, RunDir};

/// File names inside a run directory.
pub(crate) const RUN_FILE: &str = "run.json";
pub(crate) const EVENTS_FILE: &str = "events.jsonl";
pub(crate) const TURNS_FILE: &str = "turns.jsonl";
pub(crate) const JOURNAL_FILE: &str = "journal.jsonl";
pub(crate) const WORKSPACE_DIR: &str = "workspace";

#[cfg(test)]
mod behind_tests;
#[cfg(test)]
mod snapshot_tests;
#[cfg(test)]
mod tests;
