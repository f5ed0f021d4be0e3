//! Command-line arguments.

use std::path::PathBuf;

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
    Run(RunArgs),
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

#[derive(Debug, clap::Args)]
pub(crate) struct RunArgs {
    /// The task (`-`: read it from stdin).
    #[arg(required_unless_present = "task_file", conflicts_with = "task_file")]
    pub(crate) task: Option<String>,
    /// Read the task from this file (`-`: from stdin), for tasks too long
    /// for the command line.
    #[arg(long, value_name = "PATH")]
    pub(crate) task_file: Option<PathBuf>,
    /// The team directory (default: ./ if it has agents/, else the built-in team).
    #[arg(long)]
    pub(crate) team: Option<PathBuf>,
    /// The default model: `sim`, `sim:latency=50ms,challenge=1`, `openai:gpt-4o-mini`,
    /// `http://127.0.0.1:8080/v1#model`, or a name from team.yaml (default: team.yaml's
    /// `default`, else `openai` when OPENAI_BASE_URL is set, else `sim`).
    #[arg(long, env = "BOARDROOM_MODEL")]
    pub(crate) model: Option<String>,
    /// Rounds of members before the master must answer (at least 1;
    /// blackboard teams only: a handoff team's caps are in team.yaml).
    #[arg(long, value_parser = at_least_one::<u32>)]
    pub(crate) rounds: Option<u32>,
    /// Members that run at once (at least 1; blackboard teams only).
    #[arg(long, value_parser = at_least_one::<usize>)]
    pub(crate) parallel: Option<usize>,
    /// What runs the members: `auto` (rayon for narrow rounds, the own
    /// pool for wide ones), `rayon` or `threads` (default: team.yaml's
    /// `executor`, else auto).
    #[arg(long, value_name = "auto|rayon|threads")]
    pub(crate) executor: Option<boardroom::Executor>,
    /// End the run with the best answer so far once it has used this many
    /// tokens, all calls together (not a per-reply limit; at least 1).
    #[arg(long = "token-budget", alias = "max-tokens", value_name = "N", value_parser = at_least_one::<u64>)]
    pub(crate) token_budget: Option<u64>,
    /// End the run with the best answer so far after this much wall-clock
    /// time: 90s, 10m, 1h (default: team.yaml's `timeout`, else none).
    #[arg(long, value_name = "DUR", value_parser = boardroom::config::parse_timeout)]
    pub(crate) timeout: Option<std::time::Duration>,
    /// How the master and challengers write decisions: `line` (default) or `json`.
    #[arg(long, value_name = "line|json")]
    pub(crate) protocol: Option<boardroom::protocol::Protocol>,
    /// Print events as JSON lines on stdout instead of the live view.
    #[arg(long)]
    pub(crate) json: bool,
    /// Where runs are saved (one directory per run; default: runs/ in
    /// $BOARDROOM_HOME, else ~/.local/share/boardroom).
    #[arg(long, env = "BOARDROOM_RUNS_DIR", default_value_os_t = super::home::runs_dir(), hide_default_value = true)]
    pub(crate) runs_dir: PathBuf,
    /// Neither use nor update the master's memory of earlier runs.
    #[arg(long)]
    pub(crate) no_memory: bool,
    /// Serve the run's live page on 127.0.0.1 (a free port; the URL is
    /// printed) and keep serving after the run until Ctrl-C (then exit
    /// with the run's code).
    #[arg(long)]
    pub(crate) view: bool,
    /// Send the run's trace to this OTLP/HTTP collector (default:
    /// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else OTEL_EXPORTER_OTLP_ENDPOINT).
    #[arg(long, value_name = "URL")]
    pub(crate) otlp: Option<String>,
    /// Put prompts, answers and tool arguments and results into the spans.
    #[arg(long)]
    pub(crate) otlp_content: bool,
    /// Set a context variable of the team for this run, over its
    /// default in team.yaml: `--var max_revisions=3` (repeatable).
    #[arg(long = "var", value_name = "NAME=VALUE")]
    pub(crate) vars: Vec<String>,
}

/// A whole number of at least 1: clap reports an error with the flag's
/// name and exit code 2.
fn at_least_one<T>(value: &str) -> Result<T, String>
where
    T: std::str::FromStr + TryFrom<u64>,
{
    let n: u64 = value
        .trim()
        .parse()
        .map_err(|_| format!("'{value}' is not a whole number (allowed 1 or more)"))?;
    if n == 0 {
        return Err("0 is not allowed (allowed 1 or more)".into());
    }
    T::try_from(n).map_err(|_| format!("{n} is too large"))
}
