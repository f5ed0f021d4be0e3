//! What can go wrong in a chat.

use std::fmt;
use std::path::PathBuf;

/// A chat's error.
#[derive(Debug)]
#[non_exhaustive]
pub enum ChatError {
    /// The team has no agent with `role: partner`.
    NoPartner {
        /// The team's name.
        team: String,
    },
    /// The partner's `tools:` grants a tool no registry has.
    Tools(crate::tools::ToolError),
    /// The partner's model failed after its retries.
    Model(crate::model::ModelError),
    /// A run could not be started or resumed.
    Run(crate::runtime::RunError),
    /// The chat's directory could not be read or written.
    Store {
        /// The file.
        path: PathBuf,
        /// What went wrong (an I/O or JSON error, or why the chat was
        /// not found).
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// Another handle has the chat open (a second `chat --resume` of it,
    /// or a second [`ChatStore`](super::ChatStore) of it in this
    /// process): one handle at a time appends to a chat.
    InUse {
        /// The chat's id.
        chat: String,
        /// The holder's pid, where its lock file says.
        pid: Option<u32>,
    },
}

impl fmt::Display for ChatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChatError::NoPartner { team } => write!(
                f,
                "team '{team}' has no partner: add an agent with 'role: partner' \
                 (agents/partner.md and souls/partner.md) to talk with the team"
            ),
            ChatError::Tools(e) => write!(f, "the partner's tools: {e}"),
            ChatError::Model(e) => write!(f, "the partner's model: {e}"),
            ChatError::Run(e) => write!(f, "the team's run: {e}"),
            ChatError::Store { path, source } => write!(f, "{}: {source}", path.display()),
            ChatError::InUse { chat, pid } => match pid {
                Some(pid) if *pid == std::process::id() => {
                    write!(f, "chat {chat}: in use by another handle (this process)")
                }
                Some(pid) => write!(f, "chat {chat}: in use by another boardroom (pid {pid})"),
                None => write!(f, "chat {chat}: in use by another boardroom"),
            },
        }
    }
}

impl std::error::Error for ChatError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ChatError::Tools(e) => Some(e),
            ChatError::Model(e) => Some(e),
            ChatError::Run(e) => Some(e),
            ChatError::Store { source, .. } => Some(source.as_ref()),
            _ => None,
        }
    }
}

impl From<crate::runtime::RunError> for ChatError {
    fn from(e: crate::runtime::RunError) -> Self {
        ChatError::Run(e)
    }
}
