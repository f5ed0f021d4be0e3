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
    Check {
        /// The team directory (holding agents/ and souls/).
        #[arg(long)]
        team: Option<PathBuf>,
    },
    /// List the saved runs: id, time, status, rounds, tokens, task.
    Runs(super::runs::RunsArgs),
    /// Show a saved run: its answer and a summary, and more on request.
    Show(super::runs::ShowArgs),
    /// Continue an interrupted run from its last completed phase.
    Resume(super::runs::ResumeArgs),
    /// Show or clear the master's memory of earlier runs.
    Memory(super::runs::MemoryArgs),
}

#[derive(Debug, clap::Args)]
pub(crate) struct RunArgs {
    /// The task.
    pub(crate) task: String,
    /// The team directory (default: ./ if it has agents/, else the built-in team).
    #[arg(long)]
    pub(crate) team: Option<PathBuf>,
    /// The default model: `sim`, `sim:latency=50ms,challenge=1`, `openai:gpt-4o-mini`,
    /// `http://127.0.0.1:8080/v1#model`, or a name from team.yaml (default: team.yaml's
    /// `default`, else `openai` when OPENAI_BASE_URL is set, else `sim`).
    #[arg(long, env = "BOARDROOM_MODEL")]
    pub(crate) model: Option<String>,
    /// Rounds of members before the master must answer.
    #[arg(long)]
    pub(crate) rounds: Option<u32>,
    /// Members that run at once.
    #[arg(long)]
    pub(crate) parallel: Option<usize>,
    /// End the run with the best answer so far once it has used this many
    /// tokens, all calls together (not a per-reply limit).
    #[arg(long = "token-budget", alias = "max-tokens", value_name = "N")]
    pub(crate) token_budget: Option<u64>,
    /// End the run with the best answer so far after this much wall-clock
    /// time: 90s, 10m, 1h (default: team.yaml's `timeout`, else none).
    #[arg(long, value_name = "DUR", value_parser = boardroom::parse_timeout)]
    pub(crate) timeout: Option<std::time::Duration>,
    /// How the master and challengers write decisions: `line` (default) or `json`.
    #[arg(long, value_name = "line|json")]
    pub(crate) protocol: Option<boardroom::Protocol>,
    /// Print events as JSON lines on stdout instead of the live view.
    #[arg(long)]
    pub(crate) json: bool,
    /// Where runs are saved (one directory per run).
    #[arg(long, env = "BOARDROOM_RUNS_DIR", default_value = "runs")]
    pub(crate) runs_dir: PathBuf,
    /// Neither use nor update the master's memory of earlier runs.
    #[arg(long)]
    pub(crate) no_memory: bool,
}
