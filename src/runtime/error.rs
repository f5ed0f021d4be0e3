use std::fmt;
use std::io;

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
        /// The phase that failed.
        phase: MasterPhase,
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
    Pool(ThreadError),
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
            RunError::Pool(e) => write!(f, "{e}"),
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
            // Displayed as its own text: its cause comes next, not itself
            // again.
            RunError::Pool(e) => e.source(),
            _ => None,
        }
    }
}

/// The phase in which the master's model failed ([`RunError::Master`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum MasterPhase {
    /// Splitting the task into assignments.
    Plan,
    /// Writing the final answer.
    Final,
    /// A turn of a handoff team's agent.
    HandoffStep,
}

impl MasterPhase {
    /// The phase as messages name it: `plan`, `final`, `handoff step`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            MasterPhase::Plan => "plan",
            MasterPhase::Final => "final",
            MasterPhase::HandoffStep => "handoff step",
        }
    }
}

impl fmt::Display for MasterPhase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a run's threads failed ([`RunError::Pool`]).
#[derive(Debug)]
#[non_exhaustive]
pub enum ThreadError {
    /// The system refused to start a thread.
    Spawn {
        /// Which thread: `the run thread`, `a thread`.
        thread: &'static str,
        /// The system's error.
        source: io::Error,
    },
    /// A member pool could not start any of its threads.
    Pool {
        /// The pool's own account.
        detail: String,
    },
    /// A thread panicked; `message` is the panic's text.
    Panicked {
        /// Which thread.
        thread: &'static str,
        /// The panic message.
        message: String,
    },
    /// A thread ended without handing over its outcome.
    Ended {
        /// Which thread.
        thread: &'static str,
    },
}

impl fmt::Display for ThreadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ThreadError::Spawn { thread, source } => write!(f, "cannot start {thread}: {source}"),
            ThreadError::Pool { detail } => write!(f, "cannot start member threads: {detail}"),
            ThreadError::Panicked { thread, message } => write!(f, "{thread} panicked: {message}"),
            ThreadError::Ended { thread } => write!(f, "{thread} ended"),
        }
    }
}

impl std::error::Error for ThreadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ThreadError::Spawn { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl From<super::pool::PoolError> for ThreadError {
    fn from(e: super::pool::PoolError) -> Self {
        ThreadError::Pool { detail: e.0 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    /// Issue 15: the pool's cause is a type with a source, and messages
    /// read as they did when they were strings.
    #[test]
    fn thread_errors_keep_their_cause() {
        let e = RunError::Pool(ThreadError::Spawn {
            thread: "the run thread",
            source: io::Error::new(io::ErrorKind::WouldBlock, "no more threads"),
        });
        assert_eq!(
            e.to_string(),
            "cannot start the run thread: no more threads"
        );
        // RunError::Pool prints the thread error's own line, so its source
        // is the thread error's cause (issue 15: the same line twice when
        // a caller walked the chain).
        let io = e.source().expect("the io error");
        assert_ne!(io.to_string(), e.to_string());
        assert_eq!(
            io.downcast_ref::<io::Error>().map(io::Error::kind),
            Some(io::ErrorKind::WouldBlock)
        );
        let pool: ThreadError =
            super::super::pool::PoolError("member: no thread could be started".into()).into();
        assert_eq!(
            RunError::Pool(pool).to_string(),
            "cannot start member threads: member: no thread could be started"
        );
        let e = RunError::Pool(ThreadError::Panicked {
            thread: "the run thread",
            message: "boom".into(),
        });
        assert_eq!(e.to_string(), "the run thread panicked: boom");
        assert!(e.source().is_none(), "a panic has no cause under it");
        assert!(matches!(e, RunError::Pool(ThreadError::Panicked { .. })));
    }

    #[test]
    fn master_phases_read_as_before() {
        let names: Vec<String> = [
            MasterPhase::Plan,
            MasterPhase::Final,
            MasterPhase::HandoffStep,
        ]
        .iter()
        .map(ToString::to_string)
        .collect();
        assert_eq!(names, ["plan", "final", "handoff step"]);
    }
}
