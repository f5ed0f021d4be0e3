//! The run core: what every run has, whatever its process.
//!
//! ```text
//!             ┌──────────── process driver (blackboard, handoff) ────────────┐
//!             │ phases / steps, its own state, its own prompts and protocol  │
//!             └───────────────┬──────────────────────────────┬───────────────┘
//!                 call_until / emit / journal            save (checkpoint)
//!             ┌───────────────▼──────────────────────────────▼───────────────┐
//!   Core:     │ ids · models · tools + plan · usage & budget · deadline ·    │
//!             │ cancel · turn records · the run directory · the event bus    │
//!             └───────────────┬──────────────────────────────────────────────┘
//!                             │ events, turns, journal records (one way)
//!               caller's channel · run store (events.jsonl, turns, journal) · …
//! ```
//!
//! Here: the settings of a run ([`RunConfig`], frozen, shared) and what
//! each run has of its own ([`RunContext`]); the [`Core`] of one run over
//! both (`run.rs`); the [`Driver`] trait every process implements and the
//! shared loop ([`drive`]); the member pool (`pool/`, and the rule the
//! `auto` executor follows: `executor.rs`), the event bus, the one call
//! path (`call.rs`) and its tool loop, turn records and their parents
//! (`turns.rs`), every agent's inbox and its ingestors (`inbox.rs`,
//! `ingest.rs`: the chat partner's too), the budget and time limit, the run directory
//! (`persist.rs`), the models of a run's agents, the run's errors and
//! outcome, and panics made text (`unwind.rs`). No code
//! here branches on a process (the errors and the outcome still name the
//! handoff's parts: its steps, a phase it does not have).

pub(crate) mod approval;
pub(crate) mod budget;
mod bus;
pub(crate) mod call;
mod cancel;
pub(crate) mod config;
pub(crate) mod driver;
mod error;
mod executor;
pub(crate) mod inbox;
mod inboxes;
pub(crate) mod ingest;
mod models;
mod outcome;
pub(crate) mod persist;
pub(crate) mod pool;
mod run;
pub(crate) mod tool_loop;
mod turns;
pub(crate) mod unwind;

pub use approval::{ApprovalError, Approvals};
pub use cancel::Cancel;
#[cfg(test)]
pub(crate) use config::TestGate;
pub(crate) use config::{Ended, RunConfig, RunContext};
pub(crate) use driver::{Driver, Phases, drive};
pub use error::{MasterPhase, Refusal, RunError, TemplatePlace, ThreadError};
pub use inbox::{Inbox, InboxItem, Received, TeamNews};
pub use ingest::ingest;
pub(crate) use ingest::ingest_all;
pub use outcome::{DraftFailures, RunOutcome};
pub(crate) use run::Core;
