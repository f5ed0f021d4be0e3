//! A tutorial, from a team built in code to the handoff process and the
//! partner. Every example here runs under `cargo test --doc`, offline, on
//! the [`Sim`](crate::testing::Sim) model; swap in an
//! [`OpenAi`](crate::OpenAi) (or your own [`ChatModel`](crate::ChatModel))
//! for real answers.
//!
//! # 1. A team in code, and a run
//!
//! A team is a master, which splits the task and reviews the board, and
//! members, which draft in parallel. No files are needed.
//!
//! ```
//! use boardroom::{AgentSpec, Runtime, Team, TeamConfig};
//! use boardroom::testing::Sim;
//!
//! let team = Team::new(
//!     "pair",
//!     TeamConfig::default(),
//!     vec![
//!         AgentSpec::master("lead", "You lead the team."),
//!         AgentSpec::member("writer", "Writes drafts", "You write clearly."),
//!         AgentSpec::member("critic", "Checks drafts", "You find mistakes.").challenger(),
//!     ],
//! )?;
//! let run = Runtime::new(team, Sim::new()).max_rounds(3).run("Write a haiku about tea")?;
//! assert!(!run.answer.is_empty());
//! println!("{} after {} round(s), {} tokens", run.answer, run.rounds, run.usage.total());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # 2. Events on a plain thread
//!
//! Give the runtime a [`channel`](crate::channel) sender and read events on
//! any thread while it works; the loop ends when the run drops its sender.
//! Nothing needs an async context.
//!
//! ```
//! use boardroom::{EventKind, Runtime, Team};
//! use boardroom::testing::Sim;
//!
//! let (tx, rx) = boardroom::channel::unbounded();
//! let runtime = Runtime::new(Team::builtin()?, Sim::new()).events(tx);
//! let worker = std::thread::spawn(move || runtime.run("Plan a picnic"));
//! let mut assigned = 0;
//! for event in rx {
//!     if let EventKind::TaskAssigned { member, .. } = &event.kind {
//!         println!("{member} got work");
//!         assigned += 1;
//!     }
//! }
//! let run = worker.join().expect("the run thread panicked")?;
//! assert!(assigned > 0 && !run.answer.is_empty());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # 3. A tool of your own
//!
//! A [`Tool`](crate::Tool) has a name, a description, a JSON schema of its
//! arguments and a blocking call. Register it on the runtime and list it
//! in the agents that may use it. (The sim calls tools only when told to,
//! with [`SimToolCall`](crate::testing::SimToolCall); a real model decides
//! by itself.)
//!
//! ```
//! use std::sync::atomic::{AtomicUsize, Ordering};
//! use std::sync::Arc;
//! use boardroom::{AgentSpec, Runtime, Team, TeamConfig, Tool, ToolContext, ToolError};
//! use boardroom::testing::{Sim, SimOptions, SimToolCall};
//! use serde_json::{Value, json};
//!
//! #[derive(Debug)]
//! struct Clock(Arc<AtomicUsize>);
//!
//! impl Tool for Clock {
//!     fn name(&self) -> &str { "clock" }
//!     fn description(&self) -> &str { "Tells the time (always noon here)" }
//!     fn parameters(&self) -> Value { json!({"type": "object", "properties": {}}) }
//!     fn call(&self, _args: Value, ctx: &ToolContext<'_>) -> Result<String, ToolError> {
//!         self.0.fetch_add(1, Ordering::SeqCst);
//!         Ok(format!("{}: it is 12:00", ctx.agent()))
//!     }
//! }
//!
//! let team = Team::new(
//!     "timed",
//!     TeamConfig::default(),
//!     vec![
//!         AgentSpec::master("lead", "You lead the team."),
//!         AgentSpec::member("writer", "Writes drafts", "You write.").with_tools(["clock"]),
//!     ],
//! )?;
//! let sim = Sim::with_options(SimOptions {
//!     tool_calls: vec![SimToolCall::new("writer", "clock", json!({}))],
//!     ..SimOptions::default()
//! });
//! let calls = Arc::new(AtomicUsize::new(0));
//! let run = Runtime::new(team, sim).tool(Clock(calls.clone())).run("Plan lunch")?;
//! assert_eq!(calls.load(Ordering::SeqCst), 1);
//! assert!(!run.answer.is_empty());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # 4. Cancel a run, and resume it
//!
//! [`Runtime::start`](crate::Runtime::start) runs a task on its own thread
//! and returns a [`RunHandle`](crate::RunHandle). `cancel` stops that run
//! only: no new calls, the calls in flight return, the state is saved.
//! [`store::load_run`](crate::store::load_run) reads a saved run back and
//! [`Runtime::for_saved`](crate::Runtime::for_saved) +
//! [`resume`](crate::Runtime::resume) go on from where it stopped.
//!
//! ```
//! use std::sync::Arc;
//! use boardroom::{RunStatus, Runtime, Team};
//! use boardroom::store::load_run;
//! use boardroom::testing::Sim;
//!
//! let runs = std::env::temp_dir().join(format!("boardroom-guide-{}", std::process::id()));
//! let handle = Runtime::new(Team::builtin()?, Sim::new()).runs_dir(&runs).start("Plan a picnic")?;
//! handle.cancel();
//! let stopped = handle.wait()?;
//! assert_eq!(stopped.status, RunStatus::Cancelled);
//!
//! let dir = runs.join(&stopped.run_id);
//! let saved = load_run(&dir)?;
//! assert_eq!(saved.state.status(), RunStatus::Cancelled);
//! let done = Runtime::for_saved(&saved, Arc::new(Sim::new()))?.resume(&dir)?;
//! assert_eq!(done.status, RunStatus::Done);
//! # std::fs::remove_dir_all(&runs).ok();
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # 5. The handoff process
//!
//! A team with `process: handoff` works one agent at a time: the active
//! agent does its part and hands off (a `handoff` tool call, a rule, or
//! the router), until the team's `after_work_behavior` ends the run. The
//! example teams of the repository show the rules; this one is the
//! writer ⇄ reviewer → publisher loop.
//!
//! ```
//! use boardroom::{Process, RunStatus, Runtime, Team};
//! use boardroom::testing::Sim;
//!
//! let team = Team::load("examples/teams/iterative")?;
//! assert_eq!(team.config().process, Process::Handoff);
//! let run = Runtime::new(team, Sim::new()).run("Explain why the sky is blue")?;
//! assert_eq!(run.status, RunStatus::Done);
//! let agents: Vec<&str> = run.steps.iter().map(|s| s.agent.as_str()).collect();
//! assert_eq!(agents.first(), Some(&"writer"));
//! println!("{}", agents.join(" -> "));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # 6. A chat with the partner
//!
//! [`chat::Chat`](crate::chat::Chat) is the team's front desk: the partner
//! clarifies the request and drafts work modules, and launches the team
//! only with the user's consent ([`ChatIo::consent`](crate::chat::ChatIo::consent)).
//!
//! ```
//! use boardroom::{Cancel, Runtime, Team};
//! use boardroom::chat::{Chat, ChatEvent, ChatIo};
//! use boardroom::testing::Sim;
//!
//! struct Quiet;
//! impl ChatIo for Quiet {
//!     fn emit(&mut self, event: &ChatEvent) { println!("{event:?}"); }
//!     fn consent(&mut self, _question: &str) -> bool { false }
//! }
//!
//! let runs = std::env::temp_dir().join(format!("boardroom-guide-chat-{}", std::process::id()));
//! let runtime = Runtime::new(Team::builtin()?, Sim::new()).runs_dir(&runs);
//! let mut chat = Chat::new(runtime, std::sync::Arc::new(Sim::new()), &runs)?;
//! chat.user_says("Plan a team offsite for about 20 people over two days", &mut Quiet);
//! chat.turn(&mut Quiet, &Cancel::new())?;
//! assert!(!chat.plan().tasks.is_empty(), "the partner drafted work modules");
//! assert!(chat.runs().is_empty(), "the user said no: nothing was launched");
//! chat.close();
//! # std::fs::remove_dir_all(&runs).ok();
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # 7. How a run is built
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
//! [`Runtime::start`](crate::Runtime::start) runs a task on its own thread and returns a
//! [`RunHandle`](crate::RunHandle); [`Runtime::resume`](crate::Runtime::resume) goes on with a saved run, and
//! [`Runtime::resume_with_message`](crate::Runtime::resume_with_message) gives a run that waits for its user
//! ([`RunStatus::AwaitingUser`](crate::RunStatus::AwaitingUser)) the user's reply.
