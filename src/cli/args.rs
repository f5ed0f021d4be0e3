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
    /// The default model: `sim`, `sim:latency=50ms,challenge=1`, or a name from team.yaml.
    #[arg(long, env = "BOARDROOM_MODEL")]
    pub(crate) model: Option<String>,
    /// Rounds of members before the master must answer.
    #[arg(long)]
    pub(crate) rounds: Option<u32>,
    /// Members that run at once.
    #[arg(long)]
    pub(crate) parallel: Option<usize>,
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
