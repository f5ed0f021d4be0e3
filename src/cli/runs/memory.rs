//! `boardroom memory`: what the master of a team remembers from earlier
//! runs, or `--clear` to forget it.

use std::path::PathBuf;

use boardroom::store::MasterMemory;

use crate::cli::exit::{CliError, Outcome};
use crate::cli::setup::load_team;
use crate::cli::text::terminal_safe;

#[derive(Debug, clap::Args)]
pub(crate) struct MemoryArgs {
    /// The team directory (default: ./ if it has agents/, else the built-in team).
    #[arg(long)]
    team: Option<PathBuf>,
    /// Where runs (and memory/) are saved (default: runs/ in
    /// $BOARDROOM_HOME, else ~/.local/share/boardroom).
    #[arg(long, env = "BOARDROOM_RUNS_DIR", default_value_os_t = crate::cli::home::runs_dir(), hide_default_value = true)]
    runs_dir: PathBuf,
    /// Forget everything.
    #[arg(long)]
    clear: bool,
}

pub(crate) fn memory(args: &MemoryArgs) -> Result<Outcome, CliError> {
    let team = load_team(args.team.as_deref()).map_err(CliError::bad_input)?;
    let memory = MasterMemory::for_team(&args.runs_dir, team.name());
    if args.clear {
        if memory.clear().map_err(CliError::failed)? {
            eprintln!("cleared {}", memory.path().display());
        } else {
            eprintln!(
                "nothing to clear ({} does not exist)",
                memory.path().display()
            );
        }
        return Ok(Outcome::Done);
    }
    let text = memory.load().map_err(CliError::failed)?;
    if text.trim().is_empty() {
        eprintln!(
            "team '{}' remembers nothing yet ({})",
            team.name(),
            memory.path().display()
        );
    } else {
        eprintln!(
            "what the master of team '{}' remembers from earlier runs ({} lines, {} of at most {} characters; `boardroom memory --clear` forgets it), in {}:",
            team.name(),
            text.lines().count(),
            text.chars().count(),
            boardroom::store::DEFAULT_MEMORY_CHARS,
            memory.path().display()
        );
        print!("{}", terminal_safe(&text));
    }
    Ok(Outcome::Done)
}
