//! `boardroom runs`: the saved runs, one line each (or `--json`).

use std::path::{Path, PathBuf};

use boardroom::RunStatus;
use boardroom::store::{RunPhase, RunRecord, list_runs};

use super::{status_of, time_of};
use crate::cli::exit::{CliError, Outcome};
use crate::cli::text::{one_line, terminal_safe};

#[derive(Debug, clap::Args)]
pub(crate) struct RunsArgs {
    /// Where runs are saved (default: runs/ in
    /// $BOARDROOM_HOME, else ~/.local/share/boardroom).
    #[arg(long, env = "BOARDROOM_RUNS_DIR", default_value_os_t = crate::cli::home::runs_dir(), hide_default_value = true)]
    runs_dir: PathBuf,
    /// Print the runs as one JSON array on stdout, oldest first.
    #[arg(long)]
    json: bool,
}

/// The status as `runs` lists it: a run that `resume` can go on with says so.
fn listed_status(r: &RunRecord, dir: &Path) -> String {
    let status = status_of(r, dir);
    if r.state.status() == RunStatus::AwaitingUser && status != "running" {
        "waiting for the user (resume --message)".to_string()
    } else if r.state.phase() != RunPhase::Finished && status != "running" {
        format!("{status}, resumable")
    } else {
        status.to_string()
    }
}

pub(crate) fn list(args: &RunsArgs) -> Result<Outcome, CliError> {
    let runs = list_runs(&args.runs_dir).map_err(CliError::failed)?;
    old_runs_here_note(&args.runs_dir);
    if args.json {
        let listed: Vec<serde_json::Value> = runs.iter().map(run_json).collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&listed).unwrap_or_else(|_| "[]".into())
        );
        return Ok(Outcome::Done);
    }
    if runs.is_empty() {
        eprintln!("no runs in {}", args.runs_dir.display());
    }
    let count = runs.len();
    // Columns as wide as their longest value, so long statuses align.
    let statuses: Vec<Option<String>> = runs
        .iter()
        .map(|run| {
            run.record
                .as_ref()
                .ok()
                .map(|r| listed_status(r, &run.path))
        })
        .collect();
    let id_width = runs.iter().map(|r| r.id.chars().count()).max().unwrap_or(0);
    let status_width = statuses
        .iter()
        .flatten()
        .map(|s| s.chars().count())
        .max()
        .unwrap_or(0);
    for (run, status) in runs.into_iter().zip(statuses) {
        match (run.record, status) {
            (Ok(r), Some(status)) => println!(
                "{:<id_width$}  {}  {status:<status_width$}  {:>2} rounds  {:>7} tokens  {}",
                terminal_safe(&run.id),
                time_of(&run.id),
                r.state.round(),
                r.state.usage().total(),
                terminal_safe(&one_line(r.state.task(), 60))
            ),
            (Err(e), _) => println!(
                "{:<id_width$}  {}  unreadable: {}",
                terminal_safe(&run.id),
                time_of(&run.id),
                terminal_safe(&e.to_string())
            ),
            (Ok(_), None) => {}
        }
    }
    // Where it looked, under the listing (on stderr: stdout stays the
    // listing; after it: a reader that closed stdout ended us already).
    match count {
        0 => {}
        1 => eprintln!("(1 run in {})", args.runs_dir.display()),
        n => eprintln!("({n} runs in {})", args.runs_dir.display()),
    }
    Ok(Outcome::Done)
}

/// One run as `runs --json` lists it. The field names are part of the
/// CLI's interface (docs/notes-clihabits.md lists them): add, never rename.
fn run_json(run: &boardroom::store::RunListing) -> serde_json::Value {
    let mut v = serde_json::json!({
        "id": run.id,
        "dir": run.path.display().to_string(),
        "time": Some(time_of(&run.id)).filter(|t| t != "-"),
    });
    match &run.record {
        Ok(r) => {
            let usage = r.state.usage();
            let status = status_of(r, &run.path);
            let extra = serde_json::json!({
                "status": status,
                "resumable": r.state.phase() != RunPhase::Finished && status != "running",
                "awaiting_user": r.state.status() == RunStatus::AwaitingUser,
                "awaiting_approval": r.state.status() == RunStatus::AwaitingApproval,
                "team": r.team.name,
                "rounds": r.state.round(),
                "tokens": {
                    "prompt": usage.prompt_tokens,
                    "completion": usage.completion_tokens,
                    "total": usage.total(),
                },
                "task": r.state.task(),
                "error": null,
            });
            if let (Some(v), serde_json::Value::Object(extra)) = (v.as_object_mut(), extra) {
                v.extend(extra);
            }
        }
        Err(e) => {
            v["status"] = "unreadable".into();
            v["error"] = e.to_string().into();
        }
    }
    v
}

/// Runs saved in `./runs` before boardroom had one home: say where they
/// are when the home is listed instead.
fn old_runs_here_note(listed: &Path) {
    let here = Path::new("runs");
    if listed == here || listed != crate::cli::home::runs_dir() {
        return;
    }
    let same = |a: &Path, b: &Path| matches!((a.canonicalize(), b.canonicalize()), (Ok(a), Ok(b)) if a == b);
    let count = list_runs(here).map_or(0, |r| r.len());
    if count > 0 && !same(here, listed) {
        eprintln!(
            "note: ./runs holds {count} more (saved before runs had one home): \
             boardroom runs --runs-dir runs"
        );
    }
}
