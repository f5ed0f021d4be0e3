//! A run that fails still tells its subscribers how it ended: the last
//! event of `events.jsonl` is `run_finished` with status `failed`, as the
//! event channel, the live view and the trace exporter read it.

use std::process::Command;

#[test]
fn a_failed_run_ends_its_events_with_run_finished_failed() {
    let home = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_boardroom"))
        .args(["run", "--model", "sim:fail=master", "plan a picnic"])
        .env("BOARDROOM_HOME", home.path())
        .env_remove("BOARDROOM_MODEL")
        .current_dir(home.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let runs = home.path().join("runs");
    let run = std::fs::read_dir(&runs)
        .unwrap_or_else(|e| panic!("{}: {e}", runs.display()))
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir())
        .expect("a run directory");
    let events = std::fs::read_to_string(run.join("events.jsonl")).unwrap();
    let last: serde_json::Value =
        serde_json::from_str(events.lines().last().expect("an event")).unwrap();
    assert_eq!(last["type"], "run_finished", "{last}");
    assert_eq!(last["status"], "failed", "{last}");
}

#[test]
fn a_run_stopped_by_its_time_limit_before_any_draft_ends_with_run_finished_failed() {
    let home = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_boardroom"))
        .args([
            "run",
            "--model",
            "sim:latency=3s",
            "--timeout",
            "1s",
            "plan a picnic",
        ])
        .env("BOARDROOM_HOME", home.path())
        .env_remove("BOARDROOM_MODEL")
        .current_dir(home.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let runs = home.path().join("runs");
    let run = std::fs::read_dir(&runs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir())
        .expect("a run directory");
    let events = std::fs::read_to_string(run.join("events.jsonl")).unwrap();
    let finished: Vec<serde_json::Value> = events
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|e| e["type"] == "run_finished")
        .collect();
    assert_eq!(finished.len(), 1, "one run_finished: {finished:?}");
    assert_eq!(finished[0]["status"], "failed", "{finished:?}");
}
