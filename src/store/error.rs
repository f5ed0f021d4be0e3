//! Why a run directory could not be written or read.

use std::fmt;
use std::io;
use std::path::PathBuf;

/// Why a run directory could not be written or read.
#[derive(Debug)]
#[non_exhaustive]
pub enum StoreError {
    /// A file or directory could not be created, written or read.
    Io {
        /// The path.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// A file is not what it should be (bad JSON, a missing field).
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong, lowercase.
        detail: String,
    },
    /// A file's JSON could not be read or written: not JSON, not the
    /// record it should be, or a value that cannot be serialised.
    Json {
        /// The file.
        path: PathBuf,
        /// What was being done, lowercase (`not valid json`, `not a run
        /// record`, `cannot serialise`).
        what: &'static str,
        /// The parser's or serialiser's error.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// `run.json` was written by a newer version of boardroom.
    NewerVersion {
        /// The file.
        path: PathBuf,
        /// The version it says it is.
        found: u64,
        /// The newest version this build reads.
        supported: u32,
    },
    /// No run with this id (or path) exists.
    NotFound {
        /// The run id or path that was asked for.
        run: String,
    },
    /// Another process (or another run in this one) holds the run
    /// directory's lock: it is running that run now.
    InUse {
        /// The run id.
        run: String,
        /// The pid written in the lock file by its holder, when readable.
        pid: Option<u32>,
    },
    /// A new run's directory already exists: run ids are never reused.
    Exists {
        /// The directory.
        path: PathBuf,
    },
}

impl StoreError {
    /// A JSON error on `path` while doing `what`.
    pub(crate) fn json(
        path: impl Into<PathBuf>,
        what: &'static str,
        source: serde_json::Error,
    ) -> Self {
        StoreError::Json {
            path: path.into(),
            what,
            source: Box::new(source),
        }
    }

    pub(crate) fn io(path: impl Into<PathBuf>, source: io::Error) -> Self {
        StoreError::Io {
            path: path.into(),
            source,
        }
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            StoreError::Corrupt { path, detail } => write!(f, "{}: {detail}", path.display()),
            StoreError::Json { path, what, source } => {
                write!(f, "{}: {what}: {source}", path.display())
            }
            StoreError::NewerVersion {
                path,
                found,
                supported,
            } => write!(
                f,
                "{}: written by a newer boardroom (format version {found}, this build reads up to {supported})",
                path.display()
            ),
            StoreError::NotFound { run } => write!(f, "run '{run}': not found"),
            StoreError::InUse {
                run,
                pid: Some(pid),
            } => {
                write!(f, "run {run}: in use by another boardroom (pid {pid})")
            }
            StoreError::InUse { run, pid: None } => {
                write!(f, "run {run}: in use by another boardroom")
            }
            StoreError::Exists { path } => write!(
                f,
                "{}: already exists; a new run never reuses a directory",
                path.display()
            ),
        }
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StoreError::Io { source, .. } => Some(source),
            StoreError::Json { source, .. } => Some(source.as_ref()),
            _ => None,
        }
    }
}
