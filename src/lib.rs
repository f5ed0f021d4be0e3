//! boardroom runs a team of LLM agents around a shared blackboard, on plain
//! OS threads, with no async runtime.
//!
//! A master splits the task into `ASSIGN:<member>:<task>` lines; the members
//! of a round work in parallel, each on its own thread, and put their drafts
//! on a lock-guarded [`SharedBoard`]; members that may challenge read the
//! board and object (`CHALLENGE:`) or `AGREE`; the master reviews the board
//! and says `DONE` with the answer or assigns another round.
//!
//! # A run in five lines
//!
//! ```
//! use boardroom::{Runtime, Sim, Team};
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
//! use boardroom::{EventKind, Runtime, Sim, Team};
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
//! use boardroom::{RunStatus, Runtime, Sim, Team};
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

pub mod bench;
mod board;
mod event;
mod memory;
mod model;
mod observe;
mod partner;
mod plan;
mod process;
mod protocol;
mod runtime;
mod store;
mod team;
mod tools;

/// The channels events travel on: `crossbeam-channel`, re-exported so a
/// program can follow the examples without adding it.
pub use crossbeam_channel as channel;

/// The README's code blocks, compiled and run by `cargo test --doc`.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
mod readme {}

pub use board::{Entry, EntryKind, NewEntry, SharedBoard, escape_xml, render_context};
pub use event::{Event, EventKind, RoomStatus, RunStatus};
pub use memory::{DEFAULT_MEMORY_CHARS, MasterMemory};
pub use model::{
    ChatModel, ChatRequest, ChatResponse, FinishReason, Message, ModelError, ModelSpecError,
    OPENAI_DEFAULT_BASE_URL, OpenAi, OpenAiBuilder, OutputSchema, Phase, RetryPolicy, Role,
    Scripted, ScriptedReply, SharedModel, Sim, SimOptions, SimStats, SimToolCall, ToolCall,
    ToolSpec, Usage, resolve_model,
};
pub use model::{LimitChange, LimitReason, LimitWatch, LimitWatcher};
#[cfg(feature = "otlp")]
pub use observe::otlp::{ExportReport, OtlpConfig, OtlpError, OtlpExporter, export_run};
#[cfg(feature = "view")]
pub use observe::view::{ViewError, ViewServer};
pub use partner::{
    Chat, ChatError, ChatEvent, ChatIo, ChatRecord, ChatStore, Inbox, InboxItem, TeamNews, TurnEnd,
    ingest,
};
pub use plan::{ModuleStatus, Plan, WorkModule};
pub use process::handoff::{HandoffState, HandoffStep};
/// The handoff protocol's pure pieces: the `handoff` / `set_variable` tools,
/// the `HANDOFF:` line, the turn and routing prompts and their parsers.
pub use protocol::{
    AGENT_CHOICE_SCHEMA, HANDOFF_TOOL, HandoffDirective, HistoryStep, RULE_CHOICE_SCHEMA,
    RoutingRule, SET_VARIABLE_TOOL, TurnInput, agent_choice_schema, check_destination,
    handoff_tool_spec, parse_agent_choice, parse_handoff_args, parse_handoff_line,
    parse_rule_choice, parse_set_variable_args, render_history, resolve_destination,
    roster_routing_prompt, rule_choice_schema, rule_routing_prompt, set_variable_tool_spec,
    strip_handoff_lines, turn_prompt,
};
pub use protocol::{
    Assignment, Decision, MasterReply, Protocol, ProtocolError, Verdict, parse_ask, parse_ask_json,
    parse_master, parse_master_json, parse_verdict, parse_verdict_json,
};
pub use runtime::{
    Cancel, DEFAULT_MAX_ROUNDS, RunError, RunHandle, RunOutcome, RunPhase, RunState, Runtime, Turn,
    UserNote, parse_timeout,
};
pub use store::{
    Lines, RUN_FORMAT_VERSION, RunListing, RunRecord, RunSettings, StoreError, TeamSnapshot,
    list_runs, load_run, read_events, read_turns, run_holder,
};
pub use team::{
    AfterWork, AgentModel, AgentRole, AgentSpec, DEFAULT_MAX_HANDOFFS, DEFAULT_MAX_TURNS,
    EndpointConfig, HandoffRule, HandoffRuleConfig, HandoffSettings, ModelConfig, Process, Team,
    TeamConfig, TeamError, TemplateError, VarError, Variables, apply_var_flags, check_template,
    parse_var_flag, render, render_task,
};
pub use tools::{
    Elicitation, McpError, McpPool, McpServerConfig, McpToolInfo, Tool, ToolContext, ToolError,
    ToolRegistry,
};

// Issue 15 (types, not strings): new public types, kept apart from the
// curated lists above for the lead to place.
pub use event::ReviewVerdict;
pub use runtime::{MasterPhase, ParseTurnIdError, ThreadError, TurnId};
