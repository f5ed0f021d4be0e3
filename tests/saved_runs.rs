//! Issue 22: runs saved by the build before the saved data moved to
//! `record/` (main at 1bda0fa, `tests/fixtures/saved-runs/`) still load,
//! show and resume, and a snapshot written now reads as it did then.
//!
//! The fixtures: a blackboard run whose writer panicked and critic failed
//! (done, partial); the same team cut to two members, both failing (failed:
//! no usable draft); a blackboard run waiting for its user; a finished
//! handoff run; a handoff run killed in the middle of its third step.

use std::path::{Path, PathBuf};
use std::process::Output;

use boardroom::RunStatus;
use boardroom::board::{EntryKind, Failure};
use boardroom::store::{ProcessKind, RunPhase, load_run};

mod support;

use support::cli::text;

const PARTIAL: &str = "20261126-101609-548-7206be2e1148420e82a1";
const FAILED: &str = "20261126-101619-040-759bbe376be95228e09f";
const HANDOFF: &str = "20261126-101621-393-762e82b066c9cdaa5755";
const ASKING: &str = "20261126-101621-739-72de9dafea80ce4c884a";
const KILLED: &str = "20261126-101637-160-7746a48a573d6e1bf6ba";
const ALL: [&str; 5] = [PARTIAL, FAILED, HANDOFF, ASKING, KILLED];

/// A copy of the fixtures in a temp directory (a resume writes to its run).
fn runs() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path().join("runs");
    copy(
        &support::cli::repo().join("tests/fixtures/saved-runs"),
        &runs,
    );
    (tmp, runs)
}

fn copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

fn boardroom(runs: &Path, args: &[&str]) -> Output {
    support::cli::with_runs_dir(args, runs)
}

#[test]
fn old_runs_load_and_write_back_byte_for_byte() {
    let (_tmp, runs) = runs();
    for id in ALL {
        let path = runs.join(id).join("run.json");
        let record = load_run(&runs.join(id)).unwrap();
        let again = serde_json::to_vec_pretty(&record).unwrap();
        let before = std::fs::read(&path).unwrap();
        assert!(
            again == before,
            "{id}: the snapshot writes back otherwise:\n{}",
            String::from_utf8_lossy(&again)
        );
    }
    let kind = |id: &str| load_run(&runs.join(id)).unwrap().state.process().kind();
    assert_eq!(kind(PARTIAL), ProcessKind::Blackboard);
    assert_eq!(kind(HANDOFF), ProcessKind::Handoff);
    let killed = load_run(&runs.join(KILLED)).unwrap();
    let state = &killed.state;
    assert_eq!(
        (state.status(), state.phase()),
        (RunStatus::Running, RunPhase::Step)
    );
    let hs = state.handoff().expect("a handoff run's state");
    assert_eq!(hs.steps.len(), 2);
    let asking = load_run(&runs.join(ASKING)).unwrap();
    assert_eq!(asking.state.status(), RunStatus::AwaitingUser);
    assert!(asking.state.handoff().is_none());
}

#[test]
fn old_error_entries_still_say_how_they_failed() {
    let (_tmp, runs) = runs();
    for id in [PARTIAL, FAILED] {
        let record = load_run(&runs.join(id)).unwrap();
        let mut failures: Vec<(String, Failure)> = record
            .state
            .board()
            .iter()
            .filter(|e| e.kind == EntryKind::Error)
            .map(|e| (e.author.clone(), e.failed_by().unwrap()))
            .collect();
        failures.dedup();
        assert!(
            failures.contains(&("writer".into(), Failure::Panicked)),
            "{id}: {failures:?}"
        );
        assert!(
            failures.contains(&("critic".into(), Failure::Model)),
            "{id}: {failures:?}"
        );
    }
}

#[test]
fn old_runs_show() {
    let (_tmp, runs) = runs();
    for id in ALL {
        let out = boardroom(&runs, &["show", id, "--board", "--turns", "--tree"]);
        assert!(out.status.success(), "{id}: {}", text(&out.stderr));
        assert!(text(&out.stdout).starts_with(&format!("run {id} · ")));
    }
    let shown = text(&boardroom(&runs, &["show", KILLED, "--tree"]).stdout);
    assert!(shown.contains("team 'sequential'"), "{shown}");
    assert!(shown.contains(" · interrupted · "), "{shown}");
    assert!(shown.contains("handoff · 2 steps · 2 handoffs"), "{shown}");
}

#[test]
fn old_blackboard_runs_resume() {
    let (_tmp, runs) = runs();
    // A finished run gives its answer again.
    let out = boardroom(&runs, &["resume", PARTIAL, "--no-memory"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).starts_with("# Plan a picnic\n"));
    assert!(text(&out.stderr).contains("is already finished (done)"));

    // The failed run, its members failing again: the old entries and the
    // new count alike.
    let failing = "sim:panic=writer,fail=critic";
    let out = boardroom(
        &runs,
        &["resume", FAILED, "--no-memory", "--model", failing],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains(
            "failed: no member produced a usable draft (1 of 2 failed at the model, 1 of 2 panicked)"
        ),
        "{}",
        text(&out.stderr)
    );
    // And with members that work: done.
    let out = boardroom(&runs, &["resume", FAILED, "--no-memory", "--model", "sim"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).starts_with("# Plan a picnic\n"));
    assert_eq!(
        load_run(&runs.join(FAILED)).unwrap().state.status(),
        RunStatus::Done
    );

    // The run that asked its user takes the answer.
    let out = boardroom(
        &runs,
        &["resume", ASKING, "--no-memory", "--message", "20 euros"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("Based on your answer to \"What b"));
    let state = load_run(&runs.join(ASKING)).unwrap().state;
    assert_eq!(state.status(), RunStatus::Done);
    assert_eq!(state.user_notes().len(), 1);
}

#[test]
fn old_handoff_runs_resume() {
    let (_tmp, runs) = runs();
    let out = boardroom(&runs, &["resume", KILLED, "--no-memory", "--model", "sim"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).starts_with("# A note on coffee\n"));
    let state = load_run(&runs.join(KILLED)).unwrap().state;
    assert_eq!(
        (state.status(), state.phase()),
        (RunStatus::Done, RunPhase::Finished)
    );
    assert!(state.handoff().unwrap().steps.len() > 2);

    let out = boardroom(
        &runs,
        &[
            "resume",
            HANDOFF,
            "--no-memory",
            "--message",
            "Shorter please",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).starts_with("# A note on tea\n"));
    let hs = load_run(&runs.join(HANDOFF)).unwrap().state;
    let steps = &hs.handoff().unwrap().steps;
    assert!(
        steps
            .iter()
            .any(|s| s.agent == "user" && s.text == "Shorter please")
    );
}
