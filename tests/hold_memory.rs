//! Issue 28, finding 4: a long task (allowed: the cap is 64 MiB) against
//! a model with short answers. The run's peak memory stays a small
//! multiple of the task, and its directory holds a few copies, not one
//! per prompt and record. Measured on the `boardroom run` child itself
//! (`VmHWM` from `/proc/<pid>/status`), against a real HTTP server on
//! 127.0.0.1. The numbers are in docs/limits.md.

mod support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::{Reply, Server};

/// The task: 8 MiB of words (a 60 MiB one takes minutes in a debug build;
/// the copies are the same).
const TASK: usize = 8 << 20;

/// The built-in team's members: each gets the task in its prompt, and
/// all four call at once.
const MEMBERS: u64 = 4;

/// Peak resident memory (kB) of `boardroom run` on `task`, and its exit
/// status, read from `/proc` while it runs.
fn run_peak(task: &Path, url: &str, runs: &Path) -> (u64, std::process::ExitStatus) {
    let mut child = Command::new(support::cli::bin())
        .args(["run", "--no-memory", "--task-file"])
        .arg(task)
        .args(["--model", &format!("{url}#m"), "--runs-dir"])
        .arg(runs)
        .env("BOARDROOM_HOME", runs)
        .env_remove("BOARDROOM_MODEL")
        .env_remove("RUST_LOG")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        // Blocks of 1 MiB and more are mapped and given back when freed,
        // as glibc always does for blocks over 32 MiB (a 60 MiB task's):
        // an 8 MiB task then costs what a 60 MiB one does, in proportion,
        // not what the heap happens to keep (13 or 16 copies, run to run).
        .env("MALLOC_MMAP_THRESHOLD_", "1048576")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let status_file = format!("/proc/{}/status", child.id());
    let started = Instant::now();
    let mut peak = 0;
    loop {
        // VmHWM only grows; the last reading before the exit is the peak
        // (a finished child has no memory left to read).
        if let Ok(s) = std::fs::read_to_string(&status_file)
            && let Some(kb) = s
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        {
            peak = peak.max(kb);
        }
        if let Some(status) = child.try_wait().unwrap() {
            return (peak, status);
        }
        assert!(
            started.elapsed() < Duration::from_secs(600),
            "the run did not end in 10 minutes"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Bytes under `dir`, recursively.
fn size(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let m = e.metadata().unwrap();
            if m.is_dir() { size(&e.path()) } else { m.len() }
        })
        .sum()
}

#[test]
fn finding4_a_long_task_costs_a_few_copies_in_memory_and_on_disk() {
    let server = Server::start(|req| Reply::one_round(req, "writer", "The parts, merged."));
    let url = server.base_url();
    let tmp = tempfile::tempdir().unwrap();
    let short = tmp.path().join("short.txt");
    std::fs::write(&short, "Plan a picnic.").unwrap();
    let long = tmp.path().join("long.txt");
    std::fs::write(&long, "word ".repeat(TASK / 5)).unwrap();
    let task_kb = std::fs::metadata(&long).unwrap().len() / 1024;

    let (base, status) = run_peak(&short, &url, &tmp.path().join("runs-short"));
    assert!(status.success(), "the short run failed: {status}");
    let runs = tmp.path().join("runs-long");
    let (peak, status) = run_peak(&long, &url, &runs);
    assert!(status.success(), "the long run failed: {status}");

    // What the run needs: the task as read, as the run's state and its
    // saved copy, as the phase's text; each member calling at once holds
    // its prompt and the request body. Before (issue 28): 25 copies.
    let allowed = (6 + 2 * MEMBERS) * task_kb;
    let grew = peak.saturating_sub(base);
    eprintln!(
        "task {task_kb} kB: peak {base} kB -> {peak} kB ({:.1} copies)",
        grew as f64 / task_kb as f64
    );
    assert!(
        grew <= allowed,
        "a {task_kb} kB task took the run from {base} kB to {peak} kB: {:.1} copies \
         (at most {} allowed)",
        grew as f64 / task_kb as f64,
        6 + 2 * MEMBERS
    );

    // On disk: the task once, in state.jsonl (before: also in the
    // run_started event, in report.md's title, and once per member's
    // transcript in journal.jsonl and in workspace/plan.json).
    let run = std::fs::read_dir(&runs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir())
        .expect("a run directory");
    let on_disk = size(&run) / 1024;
    eprintln!("on disk: {on_disk} kB");
    assert!(
        on_disk <= task_kb * 3 / 2,
        "a {task_kb} kB task left {on_disk} kB in {}: {:.1} copies",
        run.display(),
        on_disk as f64 / task_kb as f64
    );
}
