//! Command-line arguments.

use clap::{Parser, Subcommand};

/// A team of LLM agents around a shared blackboard.
#[derive(Debug, Parser)]
#[command(name = "boardroom", version, about)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Run the team on a task: the answer goes to stdout, progress to stderr.
    Run(super::run::RunArgs),
    /// Check a team directory and list its agents.
    Check(super::check::CheckArgs),
    /// List the saved runs: id, time, status, rounds, tokens, task.
    Runs(super::runs::RunsArgs),
    /// Show a saved run: its answer and a summary, and more on request.
    Show(super::runs::ShowArgs),
    /// Continue an interrupted run from its last completed phase.
    Resume(super::runs::ResumeArgs),
    /// Show or clear the master's memory of earlier runs.
    Memory(super::runs::MemoryArgs),
    /// Serve a web page that draws runs (call graph, board, plan, turns), live.
    View(super::observe::ViewArgs),
    /// Serve an HTTP API that starts runs and steers them (SSE, WebSocket),
    /// many at once, behind a bearer token.
    Serve(super::serve::ServeArgs),
    /// Send a saved run's trace to an OpenTelemetry collector (OTLP/HTTP).
    Export(super::observe::ExportArgs),
    /// Talk with the team's partner: it drafts the work and launches the team.
    Chat(super::chat::ChatArgs),
    /// Time whole runs of generated teams of N members (sim or any endpoint):
    /// wall/ideal, members/s, p50/p99 latency, peak in flight, peak RSS.
    Bench(super::bench::BenchArgs),
    /// Print a shell completion script: `boardroom completions bash >
    /// ~/.local/share/bash-completion/completions/boardroom`.
    Completions(super::shell::CompletionsArgs),
    /// Print the man page (roff): `man -l <(boardroom man)`; `boardroom man
    /// run` for one command's page.
    Man(super::shell::ManArgs),
}
