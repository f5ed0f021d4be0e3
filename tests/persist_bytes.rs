//! Issue 25: a saved run costs little. The bytes a 256-member sim run
//! writes, counted by the kernel (`wchar` in `/proc/self/io`: every byte
//! handed to `write`, rewrites included), and what its directory holds.
//! One test in this file: the count is the process's.
//!
//! Measured with main before the change (format 1, the whole run in
//! `run.json`, rewritten after every phase): 5.62 MB written for a
//! directory of 3.00 MB, `run.json` 712 KB. With format 2 (main at
//! b80c0e9): 2,571,676 B written for a directory of 2,567,220 B, `run.json`
//! 1.5 KB. With each transcript stored once (a module names its turns) and
//! the events' repeats left out: 1,807,817 B written for 1,803,363 B.

use boardroom::bench::bench_team;
use boardroom::store::load_run;
use boardroom::testing::{Sim, SimOptions};
use boardroom::{RunStatus, Runtime};

fn written_bytes() -> u64 {
    let io = std::fs::read_to_string("/proc/self/io").expect("/proc/self/io");
    io.lines()
        .find_map(|l| l.strip_prefix("wchar: "))
        .and_then(|n| n.trim().parse().ok())
        .expect("wchar in /proc/self/io")
}

fn dir_bytes(dir: &std::path::Path) -> u64 {
    let mut total = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let m = e.metadata().unwrap();
        total += if m.is_dir() {
            dir_bytes(&e.path())
        } else {
            m.len()
        };
    }
    total
}

#[test]
fn issue25_a_256_member_run_writes_each_fact_about_once() {
    let tmp = tempfile::tempdir().unwrap();
    let team = bench_team(256).unwrap();
    let sim = Sim::with_options(SimOptions::default());
    let runtime = Runtime::new(team, sim).runs_dir(tmp.path()).max_rounds(1);
    let before = written_bytes();
    let outcome = runtime.run("Write a short guide in parts.").unwrap();
    let written = written_bytes() - before;
    let dir = tmp.path().join(&outcome.run_id);
    let run_json = std::fs::metadata(dir.join("run.json")).unwrap().len();
    let on_disk = dir_bytes(&dir);
    eprintln!("written {written} B, run.json {run_json} B, directory {on_disk} B");
    if std::env::var_os("KEEP_RUN").is_some() {
        let keep = std::env::temp_dir().join("persist-bytes-run");
        let _ = std::fs::remove_dir_all(&keep);
        std::fs::rename(&dir, &keep).unwrap();
        return;
    }
    let record = load_run(&dir).unwrap();
    assert_eq!(record.state.status(), RunStatus::Done);
    assert_eq!(record.state.board().len(), outcome.board.len());
    // run.json is a summary: no board, no turns, no team.
    assert!(run_json <= 16 * 1024, "run.json is {run_json} bytes");
    // Each fact about once: what was written is close to what is kept
    // (format 1 wrote 1.7 times the directory).
    assert!(
        written <= on_disk + on_disk / 4,
        "{written} bytes written for a directory of {on_disk}"
    );
    // Each transcript once: in turns.jsonl, named by the modules (the
    // directory was 2.57 MB when the journal, state.jsonl and plan.json
    // each held them too).
    assert!(on_disk <= 2_000_000, "the directory is {on_disk} bytes");
}
