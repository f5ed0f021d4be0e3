use std::fmt;
use std::io;

use crate::event::RunStatus;
use crate::model::{ModelError, ModelSpecError};
use crate::record::RunPhase;
use crate::team::{Process, TemplateError, VarError};

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
    /// The user's message to a saved run was empty.
    EmptyMessage,
    /// A run id that is not one directory name (empty, `.`, `..`, or
    /// holding a `/`): a caller's state for a saved run.
    BadRunId {
        /// The id.
        run_id: String,
    },
    /// The saved run is of another process than the runtime's team.
    WrongProcess {
        /// The saved run.
        run_id: String,
        /// The saved run's process.
        saved: Process,
        /// The runtime's team.
        team: String,
        /// The runtime's team's process.
        ours: Process,
    },
    /// A context variable set for the run that the team does not declare,
    /// or a bad value.
    Variables(VarError),
    /// A template of the team (a soul, a handoff rule's condition) does not
    /// render over the run's variables.
    Template {
        /// Which template.
        place: TemplatePlace,
        /// Why.
        source: TemplateError,
    },
    /// A saved state holds a phase its process does not have (a
    /// hand-edited `run.json`).
    ForeignPhase {
        /// The run.
        run_id: String,
        /// The phase it was saved in.
        phase: RunPhase,
    },
    /// A handover protocol did not render for a briefing.
    Protocol {
        /// The protocol.
        name: String,
        /// What went wrong.
        detail: String,
    },
    /// A handoff run whose team has no handoff settings.
    NotAHandoffTeam {
        /// The team.
        team: String,
    },
    /// The agent a handoff run made active is not in the team.
    UnknownAgent {
        /// The agent.
        agent: String,
    },
    /// The saved run does not take a message as it stands.
    MessageRefused {
        /// The run.
        run_id: String,
        /// Its status as saved.
        status: RunStatus,
        /// Why.
        why: Refusal,
    },
    /// The run is already under way (a second start of one saved run).
    StillRunning {
        /// The run.
        run_id: String,
    },
    /// A decision given with a resume names no tool call that waits in
    /// the saved run.
    Approval {
        /// The run.
        run_id: String,
        /// What is wrong.
        source: super::ApprovalError,
    },
}

/// Which template failed ([`RunError::Template`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TemplatePlace {
    /// The soul of this agent.
    Soul(String),
    /// A handoff rule's condition.
    Condition,
}

impl fmt::Display for TemplatePlace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TemplatePlace::Soul(agent) => write!(f, "the soul of '{agent}'"),
            TemplatePlace::Condition => f.write_str("a handoff rule's condition"),
        }
    }
}

/// Why a saved run does not take a message ([`RunError::MessageRefused`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refusal {
    /// A blackboard run that neither waits for its user nor has finished:
    /// it must be resumed first.
    NotFinished,
    /// A handoff run that neither waits for its user nor has finished.
    NotWaiting,
    /// Its token budget is spent.
    BudgetSpent,
    /// A handoff run saved without its handoff state.
    NoHandoffState,
}

/// `blackboard`, `handoff`: as `team.yaml` writes it.
fn process_name(p: Process) -> String {
    format!("{p:?}").to_lowercase()
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
            RunError::EmptyMessage => f.write_str("the message is empty"),
            RunError::BadRunId { run_id } => write!(
                f,
                "run id '{run_id}': must be one directory name (not empty, '.' or '..', no '/')"
            ),
            RunError::WrongProcess {
                run_id,
                saved,
                team,
                ours,
            } => write!(
                f,
                "run {run_id} is a {} run and this runtime's team '{team}' is a {} team: resume it with the run's own team (load_run(dir).team.to_team())",
                process_name(*saved),
                process_name(*ours),
            ),
            RunError::Variables(e) => write!(f, "variables: {e}"),
            RunError::Template { place, source } => write!(f, "{place}: {source}"),
            RunError::ForeignPhase { run_id, phase } => match phase {
                RunPhase::Step => write!(f, "run {run_id}: a handoff step in a blackboard run"),
                other => write!(
                    f,
                    "run {run_id}: a blackboard phase ({other:?}) in a handoff run"
                ),
            },
            RunError::Protocol { name, detail } => {
                write!(f, "handover protocol '{name}': {detail}")
            }
            RunError::NotAHandoffTeam { team } => {
                write!(f, "team '{team}' is not a handoff team")
            }
            RunError::UnknownAgent { agent } => {
                write!(f, "the active agent '{agent}' is not in the team")
            }
            RunError::MessageRefused {
                run_id,
                status,
                why,
            } => match why {
                Refusal::NotFinished => {
                    let how = match status {
                        RunStatus::Failed => "failed and has not finished".to_string(),
                        RunStatus::Cancelled => "was stopped and has not finished".to_string(),
                        other => format!("is {} and not finished", other.as_str()),
                    };
                    // The tests of the library read this sentence (issue 22
                    // keeps it): the flag is the CLI's way to send one.
                    write!(f, "run {run_id} {how}: resume it without --message first")
                }
                Refusal::NotWaiting => write!(
                    f,
                    "run {run_id} is {}: only a finished run or one that waits for its user takes a message (resume it without --message)",
                    status.as_str()
                ),
                Refusal::BudgetSpent => write!(
                    f,
                    "run {run_id} is {}: its token budget is spent, so it takes no more messages",
                    status.as_str()
                ),
                Refusal::NoHandoffState => {
                    write!(f, "run {run_id}: no handoff state to continue")
                }
            },
            RunError::StillRunning { run_id } => write!(f, "run {run_id} is still under way"),
            RunError::Approval { run_id, source } => write!(f, "run {run_id}: {source}"),
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
            RunError::Variables(e) => Some(e),
            RunError::Template { source, .. } => Some(source),
            RunError::Approval { source, .. } => Some(source),
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
    /// A turn of a principal team's principal.
    PrincipalTurn,
}

impl MasterPhase {
    /// The phase as messages name it: `plan`, `final`, `handoff step`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            MasterPhase::Plan => "plan",
            MasterPhase::Final => "final",
            MasterPhase::HandoffStep => "handoff step",
            MasterPhase::PrincipalTurn => "principal turn",
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

    /// Issue 22: the errors that were `RunError::Process(String)` are
    /// typed, keep their cause, and read as the strings did.
    #[test]
    fn typed_run_errors_keep_their_cause_and_their_text() {
        let vars = RunError::Variables(VarError::Unknown {
            name: "tone".into(),
            known: vec!["audience".into()],
        });
        assert_eq!(
            vars.to_string(),
            "variables: unknown context variable 'tone' (known: audience)"
        );
        let cause = vars.source().expect("the variable error");
        assert!(cause.downcast_ref::<VarError>().is_some());
        let soul = RunError::Template {
            place: TemplatePlace::Soul("writer".into()),
            source: TemplateError::Undeclared {
                name: "x".into(),
                line: 1,
                known: Vec::new(),
            },
        };
        assert!(
            soul.to_string().starts_with("the soul of 'writer': "),
            "{soul}"
        );
        assert!(soul.source().is_some_and(|c| c.is::<TemplateError>()));
        let refused = |status, why| {
            RunError::MessageRefused {
                run_id: "r1".into(),
                status,
                why,
            }
            .to_string()
        };
        assert_eq!(
            refused(RunStatus::Failed, Refusal::NotFinished),
            "run r1 failed and has not finished: resume it without --message first"
        );
        assert_eq!(
            refused(RunStatus::BudgetExhausted, Refusal::BudgetSpent),
            "run r1 is budget_exhausted: its token budget is spent, so it takes no more messages"
        );
        assert_eq!(
            RunError::ForeignPhase {
                run_id: "r1".into(),
                phase: RunPhase::Step,
            }
            .to_string(),
            "run r1: a handoff step in a blackboard run"
        );
        assert_eq!(
            RunError::ForeignPhase {
                run_id: "r1".into(),
                phase: RunPhase::Plan,
            }
            .to_string(),
            "run r1: a blackboard phase (Plan) in a handoff run"
        );
        assert_eq!(
            RunError::WrongProcess {
                run_id: "r1".into(),
                saved: Process::Handoff,
                team: "t".into(),
                ours: Process::Blackboard,
            }
            .to_string(),
            "run r1 is a handoff run and this runtime's team 't' is a blackboard team: resume it with the run's own team (load_run(dir).team.to_team())"
        );
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
