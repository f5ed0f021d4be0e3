//! boardroom runs a team of LLM agents around a shared blackboard, on plain
//! OS threads, with no async runtime.
//!
//! A master splits the task into `ASSIGN:<member>:<task>` lines; the members
//! of a round work in parallel, each on its own thread, and put their drafts
//! on a lock-guarded board; members that may challenge read the
//! board and object (`CHALLENGE:`) or `AGREE`; the master reviews the board
//! and says `DONE` with the answer or assigns another round.
//!
//! # A run in five lines
//!
//! ```
//! use boardroom::{Runtime, Team};
//! use boardroom::testing::Sim;
//!
//! let team = Team::load(".")?;                    // agents/ + souls/ (+ team.yaml)
//! let run = Runtime::new(team, Sim::new())        // the offline model
//!     .max_rounds(3)
//!     .run("Write a short guide to brewing green tea")?;
//! println!("{}", run.answer);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Watching it happen
//!
//! Give the runtime a `crossbeam_channel::Sender<Event>` and read events on
//! any thread while it works; nothing needs an async context.
//!
//! ```
//! use boardroom::{EventKind, Runtime, Team};
//! use boardroom::testing::Sim;
//!
//! let (tx, rx) = boardroom::channel::unbounded();   // crossbeam-channel, re-exported
//! let runtime = Runtime::new(Team::load(".")?, Sim::new()).events(tx);
//! let handle = std::thread::spawn(move || runtime.run("Plan a picnic"));
//! for event in rx {                                // ends when the run drops its sender
//!     if let EventKind::TaskAssigned { member, .. } = &event.kind {
//!         println!("{member} got work");
//!     }
//! }
//! let run = handle.join().unwrap()?;
//! assert!(!run.answer.is_empty());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Stopping a run
//!
//! [`Runtime::start`] runs the task on its own thread and returns a
//! [`RunHandle`] with a stop flag of its own: `cancel` stops that run (no
//! new calls; the calls in flight return; the state is saved and
//! [`Runtime::resume`] goes on with it), never a later one.
//!
//! ```
//! use boardroom::{RunStatus, Runtime, Team};
//! use boardroom::testing::Sim;
//!
//! let handle = Runtime::new(Team::builtin()?, Sim::new()).start("Plan a picnic")?;
//! handle.cancel();
//! assert_eq!(handle.wait()?.status, RunStatus::Cancelled);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

//!
//! # How a run is built
//!
//! A run is a process driver over a shared core. The core owns what every
//! run has; a process drives phases or steps through it and knows nothing
//! of the other process. Events flow one way, from the run to its
//! subscribers.
//!
//! ```text
//!   blackboard (process: blackboard, the default)     handoff (process: handoff)
//!   plan -> [members ‖ -> challenge ‖ -> review]*      active agent -> step -> handoff
//!   -> answer                                          | rules | router | after-work
//!            \                                          /
//!             +--------------- the run core -----------+
//!             | ids, models, tools and the plan, token budget and usage,
//!             | deadline and cancellation, turn records, the run directory
//!             +------------------ event bus ----------------------------+
//!                   |                    |                      |
//!           your channel      run store (events.jsonl,     the CLI's live view,
//!           (Runtime::events)  turns.jsonl, journal,        traces, the web page
//!                              run.json after each phase)
//! ```
//!
//! [`Runtime::start`] runs a task on its own thread and returns a
//! [`RunHandle`]; [`Runtime::resume`] goes on with a saved run, and
//! [`Runtime::resume_with_message`] gives a run that waits for its user
//! ([`RunStatus::AwaitingUser`]) the user's reply.

#![forbid(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]
#![warn(clippy::must_use_candidate, clippy::return_self_not_must_use)]

pub mod bench;
mod board;
pub mod chat;
mod event;
mod memory;
mod model;
mod observe;
pub mod plan;
mod process;
pub mod protocol;
mod runtime;
pub mod store;
mod team;
mod tools;

pub mod openai;
pub mod template;
pub mod testing;

/// The channels events travel on: `crossbeam-channel`, re-exported so a
/// program can follow the examples without adding it.
pub use crossbeam_channel as channel;

pub use tools::mcp;

#[cfg(feature = "otlp")]
pub use observe::otlp;
#[cfg(feature = "view")]
pub use observe::view;

/// The README's code blocks, compiled and run by `cargo test --doc`.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
mod readme {}

pub use board::{Entry, EntryKind};
pub use event::{Event, EventKind, RoomStatus, RunStatus};
pub use model::{
    ChatModel, ChatRequest, ChatResponse, FinishReason, Message, ModelError, ModelSpecError,
    OpenAi, OpenAiBuilder, OutputSchema, Phase, Role, SharedModel, ToolCall, ToolSpec, Usage,
};
pub use runtime::{Cancel, RunError, RunHandle, RunOutcome, Runtime, parse_timeout};
pub use team::{
    AfterWork, AgentRole, AgentSpec, EndpointConfig, HandoffRule, HandoffRuleConfig,
    HandoffSettings, ModelConfig, Process, Team, TeamConfig, TeamError,
};
pub use tools::{Tool, ToolContext, ToolError, ToolRegistry};
