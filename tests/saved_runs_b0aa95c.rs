//! Issue 25: run directories written by main at b0aa95c, the last build
//! that wrote format 1 (one `run.json` holding the whole run), still
//! load, show and resume after `run.json` became a summary (format 2), and
//! a resumed one goes on in format 2 with nothing lost.
//!
//! The fixtures (`tests/fixtures/saved-runs-b0aa95c/`), made with that
//! build's release binary: a finished sim run of the built-in team
//! (`boardroom run --model sim --rounds 1 "Plan a picnic"`) and a handoff
//! run of `examples/teams/sequential` killed right after its second step
//! was journaled (`BOARDROOM_TEST_CRASH_AT=handoff-step-journaled:2`).

use std::path::{Path, PathBuf};

use boardroom::store::{RUN_FORMAT_VERSION, RunPhase, load_run, read_turns};
use boardroom::{Phase, RunStatus};

mod support;

use support::cli::text;

const FINISHED: &str = "20261126-131847-281-76c5877880500604e2eb";
const KILLED: &str = "20261126-131850-213-72d0bef22383d9a4c3bd";

fn runs() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path().join("runs");
    copy(
        &support::cli::repo().join("tests/fixtures/saved-runs-b0aa95c"),
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

#[test]
fn issue25_a_run_dir_of_format_1_loads_whole() {
    let (_tmp, runs) = runs();
    let record = load_run(&runs.join(FINISHED)).unwrap();
    assert_eq!(record.version, 1);
    assert_eq!(record.team.name, "default");
    assert_eq!(record.team.agents.len(), 6);
    let state = &record.state;
    assert_eq!(state.status(), RunStatus::Done);
    assert_eq!(state.board().len(), 5);
    assert_eq!(state.plan().tasks.len(), 4);
    assert!(
        state.answer().unwrap().contains("picnic"),
        "{:?}",
        state.answer()
    );
    // Written back as it serialises, it is the same file.
    let again = serde_json::to_vec_pretty(&record).unwrap();
    let before = std::fs::read(runs.join(FINISHED).join("run.json")).unwrap();
    assert!(again == before, "the record writes back otherwise");

    let killed = load_run(&runs.join(KILLED)).unwrap().state;
    assert_eq!(
        (killed.status(), killed.phase()),
        (RunStatus::Running, RunPhase::Step)
    );
    assert_eq!(killed.handoff().unwrap().steps.len(), 1);
}

#[test]
fn issue25_a_run_dir_of_format_1_shows() {
    let (_tmp, runs) = runs();
    for id in [FINISHED, KILLED] {
        let out = support::cli::with_runs_dir(&["show", id, "--board", "--turns", "--plan"], &runs);
        assert!(out.status.success(), "{id}: {}", text(&out.stderr));
        assert!(text(&out.stdout).starts_with(&format!("run {id} · ")));
    }
    let out = support::cli::with_runs_dir(&["runs"], &runs);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains(FINISHED) && text(&out.stdout).contains(KILLED));
}

#[test]
fn issue25_a_run_dir_of_format_1_resumes_into_format_2() {
    let (_tmp, runs) = runs();
    // The killed handoff run: its second step was journaled, so no step
    // is called again, and it is saved in format 2 from then on.
    let dir = runs.join(KILLED);
    let out =
        support::cli::with_runs_dir(&["resume", KILLED, "--no-memory", "--model", "sim"], &runs);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let record = load_run(&dir).unwrap();
    assert_eq!(record.version, RUN_FORMAT_VERSION);
    assert_eq!(record.team.name, "sequential");
    let state = record.state;
    assert_eq!(
        (state.status(), state.phase()),
        (RunStatus::Done, RunPhase::Finished)
    );
    let steps = &state.handoff().unwrap().steps;
    let mut agents: Vec<&str> = steps.iter().map(|s| s.agent.as_str()).collect();
    let calls: Vec<String> = read_turns(&dir)
        .unwrap()
        .items
        .into_iter()
        .filter(|t| t.phase == Phase::Converse)
        .map(|t| t.agent)
        .collect();
    assert_eq!(calls.len(), steps.len(), "one call a step: {calls:?}");
    agents.dedup();
    assert_eq!(agents.len(), steps.len(), "no step twice: {agents:?}");
    let summary = std::fs::read_to_string(dir.join("run.json")).unwrap();
    assert!(summary.contains("\"state_len\""), "{summary}");
    assert!(!summary.contains("step_id"), "{summary}");

    // The finished run gives its answer again; a follow-up goes on in
    // format 2 with the old board kept.
    let out = support::cli::with_runs_dir(
        &[
            "resume",
            FINISHED,
            "--no-memory",
            "--message",
            "Shorter please",
        ],
        &runs,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let state = load_run(&runs.join(FINISHED)).unwrap().state;
    assert_eq!(state.status(), RunStatus::Done);
    assert!(state.board().len() > 5, "{}", state.board().len());
    assert_eq!(state.user_notes().len(), 1);
}
