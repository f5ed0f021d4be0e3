use std::fmt;
use std::io;
use std::path::PathBuf;

/// Why a team could not be loaded or built.
#[derive(Debug)]
#[non_exhaustive]
pub enum TeamError {
    /// A file or directory could not be read.
    Io {
        /// The path.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// Something in a team file is wrong; `line` is 1-based where known.
    Invalid {
        /// The file (or, for team-wide problems, the directory).
        path: PathBuf,
        /// The line, where one is to blame.
        line: Option<usize>,
        /// What is wrong, lowercase.
        message: String,
        /// The parser's own error, where a YAML or JSON parser found it
        /// (its text is `message`'s source, in our words).
        source: Option<std::sync::Arc<dyn std::error::Error + Send + Sync>>,
    },
}

impl TeamError {
    pub(crate) fn at(path: impl Into<PathBuf>, line: usize, message: impl Into<String>) -> Self {
        TeamError::Invalid {
            path: path.into(),
            line: Some(line),
            message: message.into(),
            source: None,
        }
    }

    pub(crate) fn in_file(path: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        TeamError::Invalid {
            path: path.into(),
            line: None,
            message: message.into(),
            source: None,
        }
    }
}

impl fmt::Display for TeamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TeamError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            TeamError::Invalid {
                path,
                line: Some(line),
                message,
                ..
            } => write!(f, "{}:{line}: {message}", path.display()),
            TeamError::Invalid {
                path,
                line: None,
                message,
                ..
            } => write!(f, "{}: {message}", path.display()),
        }
    }
}

impl std::error::Error for TeamError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TeamError::Io { source, .. } => Some(source),
            TeamError::Invalid { source, .. } => source
                .as_deref()
                .map(|e| e as &(dyn std::error::Error + 'static)),
        }
    }
}
