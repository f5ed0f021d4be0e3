//! Saved data: what a run is and was, as `run.json`, `turns.jsonl` and
//! `events.jsonl` hold it — plain types with no behaviour beyond reading
//! and writing themselves.
//!
//! [`RunState`] is a run between phases: the shared part (task, round,
//! board, plan, usage, status, answer) and its process's own part, a
//! [`ProcessState`] (a handoff run's [`HandoffState`]). [`Turn`] is one
//! model call, named by a [`TurnId`]. [`RunSettings`] are the settings a
//! run was started with. [`RunStatus`] says how a run stands,
//! [`Executor`] what runs a round's members.

pub(crate) mod approval;
mod executor;
mod handoff;
mod principal;
mod settings;
mod state;
mod status;
pub(crate) mod turn;

pub(crate) use approval::PausedTurn;
pub use approval::{Decision, PendingApproval};
pub use executor::{Executor, ParseExecutorError};
pub use handoff::{HandoffHow, HandoffState, HandoffStep};
pub use principal::{InboxItem, InboxKind, PrincipalState};
pub use settings::RunSettings;
pub use state::{ProcessKind, ProcessState, RunPhase, RunState, UserNote};
pub use status::RunStatus;
pub use turn::{AgentRole, ParseTurnIdError, Turn, TurnId};
