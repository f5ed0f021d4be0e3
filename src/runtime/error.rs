use std::fmt;

use crate::model::{ModelError, ModelSpecError};

/// Why a run could not give an answer.
#[derive(Debug)]
#[non_exhaustive]
pub enum RunError {
    /// The task was empty.
    EmptyTask,
    /// An agent's model could not be built from its spec.
    Model {
        /// The agent.
        agent: String,
        /// Why.
        source: ModelSpecError,
    },
    /// The master's model failed where the run cannot go on without it.
    Master {
        /// The phase that failed (`plan` or `final`).
        phase: &'static str,
        /// Why.
        source: ModelError,
    },
    /// The board holds no usable draft to answer from: every member's
    /// answer was unusable or failed, or the budget or time ran out before
    /// any member produced one. The run is saved and can be resumed.
    NoUsableDraft {
        /// What happened, counted by cause: `no member produced a usable
        /// draft (4 of 4 cut off at the length limit)`.
        reason: String,
    },
    /// A thread could not be started (a member pool, the run's own), or
    /// the run's thread ended without an outcome.
    Pool(String),
    /// The run directory could not be written or read.
    Store(crate::store::StoreError),
    /// The run's tools could not be set up: an MCP server that does not
    /// start, or an agent granted a tool no one has.
    Tools(crate::tools::ToolError),
    /// The run cannot go on as asked: a message for a run that does not
    /// wait for one, a saved state its process cannot read.
    Process(String),
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::EmptyTask => write!(f, "the task is empty"),
            RunError::Model { agent, source } => write!(f, "agent '{agent}': {source}"),
            RunError::Master { phase, source } => write!(f, "master ({phase}): {source}"),
            RunError::NoUsableDraft { reason } => f.write_str(reason),
            RunError::Pool(e) => f.write_str(e),
            RunError::Store(e) => write!(f, "run directory: {e}"),
            RunError::Tools(e) => write!(f, "tools: {e}"),
            RunError::Process(e) => f.write_str(e),
        }
    }
}

impl std::error::Error for RunError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RunError::Model { source, .. } => Some(source),
            RunError::Master { source, .. } => Some(source),
            RunError::Store(source) => Some(source),
            RunError::Tools(e) => Some(e),
            _ => None,
        }
    }
}
