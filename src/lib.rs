//! boardroom runs a team of LLM agents around a shared blackboard, on plain
//! OS threads, with no async runtime.
//!
//! A master splits the task into assignments; the members of a round work
//! in parallel, each on its own thread, and put their drafts on the board;
//! members that may challenge read the board and object or agree; the
//! master reviews the board and gives the answer or assigns another round.
//! A team with `process: handoff` works one agent at a time instead.
//!
//! ```
//! use boardroom::{Runtime, Team};
//! use boardroom::testing::Sim;
//!
//! let team = Team::builtin()?;                    // or Team::load(dir), Team::new(..)
//! let run = Runtime::new(team, Sim::new())        // the offline model; or an OpenAi
//!     .max_rounds(3)
//!     .run("Write a short guide to brewing green tea")?;
//! println!("{}", run.answer);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The [`guide`] is a tutorial: a team in code, events on a plain thread,
//! a tool of your own, cancelling and resuming a saved run, the handoff
//! process, a chat with the partner.
//!
//! At the root: the team and its configuration ([`Team`], [`AgentSpec`],
//! [`TeamConfig`]), the run ([`Runtime`], [`RunHandle`], [`RunOutcome`],
//! [`Event`]), the model ([`ChatModel`], [`OpenAi`], [`Anthropic`]) and tools ([`Tool`]).
//! The rest lives in modules: [`config`] the parts of `team.yaml` below
//! [`TeamConfig`], [`board`] a run's board ([`board::Entry`]), [`tools`]
//! the [`tools::ToolRegistry`], [`store`] reads saved runs, [`testing`] has
//! the offline models, [`mcp`] the MCP clients, [`chat`] the partner,
//! [`openai`] the OpenAI-compatible model's options, [`template`] the
//! templates and variables, [`plan`] the work modules, [`protocol`] the
//! master's and reviewers' reply parsers, [`bench`](mod@bench) the round benchmark.

#![forbid(unsafe_code)]
#![warn(
    missing_docs,
    missing_debug_implementations,
    unreachable_pub,
    unnameable_types
)]
#![warn(clippy::must_use_candidate, clippy::return_self_not_must_use)]

pub mod bench;
pub mod board;
pub mod chat;
mod connect;
mod core;
#[cfg(test)]
mod error_chains;
mod event;
pub mod guide;
mod memory;
mod model;
mod observe;
pub mod plan;
mod process;
pub mod protocol;
mod record;
mod runtime;
#[cfg(feature = "serve")]
pub mod serve;
mod team;

pub mod testing;
pub mod tools;
mod util;

/// The channels events travel on: `crossbeam-channel`, re-exported so a
/// program can follow the examples without adding it.
pub use crossbeam_channel as channel;

/// The OpenAI-compatible model's long tail: the retry policy, the adaptive
/// limit's watch, the default base URL and resolving a model spec
/// (`sim`, `openai:gpt-4o-mini`, ...) to a model.
///
/// [`OpenAi`](crate::OpenAi) lives at the crate root; its builder
/// ([`OpenAiBuilder`](openai::OpenAiBuilder), from `OpenAi::builder`) and
/// the error of a bad model spec ([`ModelSpecError`](openai::ModelSpecError))
/// live here.
pub mod openai {
    pub use crate::connect::resolve_model;
    pub use crate::model::{
        LimitChange, LimitReason, LimitWatch, LimitWatcher, ModelSpecError,
        OPENAI_DEFAULT_BASE_URL, OpenAiBuilder, RetryPolicy,
    };
}

/// The Anthropic model's builder ([`AnthropicBuilder`](anthropic::AnthropicBuilder),
/// from `Anthropic::builder`) and its defaults; [`Anthropic`] lives at the
/// crate root.
pub mod anthropic {
    pub use crate::model::{ANTHROPIC_DEFAULT_BASE_URL, AnthropicBuilder, DEFAULT_MAX_TOKENS};
}

/// The MCP clients (also at [`tools::mcp`]).
pub use tools::mcp;

pub mod store {
    //! The run directory: everything a run leaves on disk, and reading it back.
    //!
    //! ```text
    //! runs/<run-id>/
    //!   run.json        a summary after every phase: status, phase, settings, totals,
    //!                   how much of state.jsonl it covers (temp file, fsync, rename)
    //!   team.json       the team, written once
    //!   state.jsonl     what each checkpoint changed (board, plan, usage, steps)
    //!   events.jsonl    every event, one JSON object a line (buffered, from a writer thread)
    //!   turns.jsonl     every model call (a Turn record a line)
    //!   journal.jsonl   board entries and work modules as they land mid-phase
    //!   run.lock        the OS lock of the process working on the run, and its pid
    //!   workspace/      plan.json, report.md, files the agents write
    //! ```
    //!
    //! Readers are tolerant: a half-written last line is skipped with a
    //! warning, a `run.json` from a newer version is an error that says so.
    //!
    //! [`load_run`] gives a [`RunRecord`]; its [`RunState`] (read through
    //! accessors) holds the board, the plan, the usage and, for a handoff run,
    //! the [`HandoffState`]; [`read_turns`] gives every model call as a
    //! [`Turn`]. [`MasterMemory`] is the master's notes kept across runs.

    #[path = "mod.rs"]
    mod run_dir;

    pub use crate::memory::{DEFAULT_MEMORY_CHARS, MasterMemory};
    pub use crate::record::{
        HandoffHow, HandoffState, HandoffStep, InboxItem, InboxKind, ParseTurnIdError,
        PrincipalState, ProcessKind, ProcessState, RunPhase, RunSettings, RunState, Turn, TurnId,
        UserNote,
    };
    pub use run_dir::*;
}

#[cfg(feature = "otlp")]
pub use observe::otlp;
#[cfg(feature = "view")]
pub use observe::view;

/// The internals stay internal (issue 15): each of these fails to compile.
///
/// ```compile_fail,E0432
/// use boardroom::{SharedBoard, escape_xml, render_context};
/// ```
///
/// ```compile_fail,E0432
/// use boardroom::Sim; // boardroom::testing::Sim
/// ```
///
/// ```compile_fail,E0624
/// use boardroom::{Runtime, Team};
/// # let record: boardroom::store::RunRecord = unimplemented!();
/// let runtime = Runtime::new(Team::builtin().unwrap(), boardroom::testing::Sim::new());
/// let _ = runtime.drive(record.state); // skips resume's checks
/// ```
///
/// ```compile_fail,E0616
/// # let record: boardroom::store::RunRecord = unimplemented!();
/// let _ = record.state.status; // record.state.status()
/// ```
///
/// ```compile_fail,E0599
/// # let ctx = boardroom::ToolContext::new("writer");
/// let _ = ctx.plan(); // ctx.plan_snapshot() / ctx.update_plan(..)
/// ```
#[cfg(doctest)]
mod internals_stay_internal {}

/// The README's code blocks, compiled and run by `cargo test --doc`.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
mod readme {}

/// The book's code blocks (`docs/*.md`), compiled and run like the README's.
#[cfg(doctest)]
mod book {
    #[doc = include_str!("../docs/README.md")]
    mod contents {}
    #[doc = include_str!("../docs/guide.md")]
    mod guide {}
    #[doc = include_str!("../docs/models.md")]
    mod models {}
    #[doc = include_str!("../docs/teams.md")]
    mod teams {}
    #[doc = include_str!("../docs/principal.md")]
    mod principal {}
    #[doc = include_str!("../docs/tools.md")]
    mod tools {}
    #[doc = include_str!("../docs/observing.md")]
    mod observing {}
    #[doc = include_str!("../docs/serving.md")]
    mod serving {}
    #[doc = include_str!("../docs/cli.md")]
    mod cli {}
    #[doc = include_str!("../docs/library.md")]
    mod library {}
    #[doc = include_str!("../docs/limits.md")]
    mod limits {}
    #[doc = include_str!("../docs/architecture.md")]
    mod architecture {}
    #[doc = include_str!("../docs/performance.md")]
    mod performance {}
}

pub use event::{Event, EventKind, LimitChangeReason, ReviewVerdict};
pub use model::{
    Anthropic, ChatModel, ChatRequest, ChatResponse, EndpointInfo, FinishReason, Message,
    ModelError, OpenAi, OutputSchema, Phase, Role, SharedModel, ToolCall, ToolSpec, Usage,
};
pub use record::{Decision, Executor, ParseExecutorError, PendingApproval, RunStatus};
pub use runtime::{
    ApprovalError, Approvals, Cancel, DraftFailures, MasterPhase, Refusal, RunError, RunHandle,
    RunOutcome, Runtime, TemplatePlace, ThreadError, panic_is_caught,
};
pub use team::{AgentRole, AgentSpec, Process, Team, TeamConfig, TeamError};
pub use tools::{Tool, ToolContext, ToolError};
pub use util::secrets::redact;

/// The parts of a team file (`team.yaml`) below [`TeamConfig`]: models and
/// endpoints, handoff rules and settings, and the duration syntax of
/// `timeout:` and `--timeout`.
pub mod config {
    pub use crate::model::{EndpointConfig, Provider};
    pub use crate::team::{
        AfterWork, HandoffRule, HandoffRuleConfig, HandoffSettings, ModelConfig,
    };
    pub use crate::util::duration::{TimeoutError, parse_timeout};
}

/// Handover protocols: which parts of a run's context go into a briefing
/// (a team's `protocols/*.yaml` over the built-in ones), and how it reads.
pub mod protocols {
    pub use crate::team::{
        ArchivedMessage, BriefingError, BriefingField, BriefingSource, HandoverProtocol,
        ModuleView, PARTNER_TO_PRINCIPAL, PRINCIPAL_TO_ASSOCIATE, Protocols,
    };
}

/// Agent profiles: the prompt segments, toolsets, flow decider and
/// observers an agent's front matter may declare (see the
/// book's Teams page, `docs/teams.md`).
pub mod profile {
    pub use crate::team::{AgentState, FlowAction, FlowRule, Observer, Profile, Segment};
}

/// Templates and variables: `{{ var }}` and `{% if %}` in souls, tasks and
/// handoff conditions, a team's declared variables, and the `--var
/// name=value` flags that set them.
pub mod template {
    pub use crate::team::{
        TemplateError, VarError, Variables, apply_var_flags, check_template, parse_var_flag,
        render, render_task,
    };
}
