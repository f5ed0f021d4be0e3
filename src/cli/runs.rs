//! The commands that work on saved runs: `runs` (list.rs), `show`,
//! `resume` and `memory`, one file each, and what they share: finding a
//! run by id, prefix or `last`, and saying how a run stands. Everything
//! they read comes from the library's run store; broken files are
//! reported, never a crash.

use std::path::{Path, PathBuf};

use boardroom::RunStatus;
use boardroom::store::{RunPhase, RunRecord, list_runs, run_holder};

mod list;
mod memory;
mod resume;
mod show;

pub(crate) use list::{RunsArgs, list};
pub(crate) use memory::{MemoryArgs, memory};
pub(crate) use resume::{ResumeArgs, resume};
pub(crate) use show::{ShowArgs, show};

/// Where a run was saved, on stderr after its answer.
pub(crate) fn saved_note(runs_dir: &Path, run_id: &str) {
    eprintln!("saved in {}", runs_dir.join(run_id).display());
}

/// `YYYYMMDD-HHMMSS-...` → `YYYY-MM-DD HH:MM:SS`; `-` for a folder
/// name of another shape (any characters: never a slice inside one).
fn time_of(id: &str) -> String {
    let b = id.as_bytes();
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    if b.len() >= 15 && b[8] == b'-' && digits(0..8) && digits(9..15) {
        format!(
            "{}-{}-{} {}:{}:{}",
            &id[0..4],
            &id[4..6],
            &id[6..8],
            &id[9..11],
            &id[11..13],
            &id[13..15]
        )
    } else {
        "-".into()
    }
}

/// How a run stands: `running` while a process holds its directory's
/// lock (whatever its last snapshot says), else what `run.json` says, with
/// `interrupted` for a run that stopped mid-way without a word.
fn status_of(r: &RunRecord, dir: &Path) -> &'static str {
    if run_holder(dir).is_some() {
        return "running";
    }
    match (r.state.status(), r.state.phase()) {
        (RunStatus::Running, RunPhase::Finished) => "finished",
        (RunStatus::Running, _) => "interrupted",
        // Stopped by Ctrl-C: saved where it stood.
        (RunStatus::Cancelled, p) if p != RunPhase::Finished => "stopped",
        (s, _) => s.as_str(),
    }
}

/// The run directory for an id, a unique prefix, `last`, or a path.
pub(crate) fn find_run(runs_dir: &Path, run: &str) -> Result<PathBuf, String> {
    let as_path = Path::new(run);
    if as_path.join("run.json").is_file() {
        return Ok(as_path.to_path_buf());
    }
    let ids: Vec<PathBuf> = list_runs(runs_dir)
        .map_err(|e| e.to_string())?
        .into_iter()
        .map(|r| r.path)
        .collect();
    let name = |p: &PathBuf| p.file_name().map(|n| n.to_string_lossy().into_owned());
    if run == "last" {
        return ids
            .last()
            .cloned()
            .ok_or_else(|| format!("no runs in {}", runs_dir.display()));
    }
    let matches: Vec<&PathBuf> = ids
        .iter()
        .filter(|p| name(p).is_some_and(|n| n.starts_with(run)))
        .collect();
    match matches.as_slice() {
        [one] => Ok((*one).clone()),
        [] => Err(format!("run '{run}': not found in {}", runs_dir.display())),
        many => Err(format!(
            "run '{run}': {} runs start with it; give more of the id",
            many.len()
        )),
    }
}
