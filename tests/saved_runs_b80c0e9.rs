//! Issue 25: run directories of format 2 written by main at b80c0e9, the
//! last build that saved each module's transcript whole (in the journal,
//! `state.jsonl` and `plan.json`), still load, show and resume now that a
//! transcript is saved as the ids of its turns in `turns.jsonl`: every
//! module reads back with its whole `context_archive`.
//!
//! The fixtures (`tests/fixtures/saved-runs-b80c0e9/`), made with that
//! build's release binary: a finished sim run of the built-in team
//! (`boardroom run --model sim --rounds 1 "Plan a picnic"`) and one killed
//! with SIGKILL mid-round once two drafts were journaled (`--model
//! sim:latency=1500ms,latency_phases=draft --parallel 2 --no-memory`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use boardroom::plan::{Plan, WorkModule};
use boardroom::store::{load_run, read_turns};
use boardroom::{Phase, RunStatus};

mod support;

use support::cli::text;

const FINISHED: &str = "20261126-163611-853-7602b228119142ce159b";
const KILLED: &str = "20261126-163632-510-74f1b8372545a1e20a61";

fn runs() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path().join("runs");
    copy(
        &support::cli::repo().join("tests/fixtures/saved-runs-b80c0e9"),
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

/// The plan as the fixture's `plan.json` holds it, transcripts whole.
fn plan_json(dir: &Path) -> Plan {
    serde_json::from_slice(&std::fs::read(dir.join("workspace/plan.json")).unwrap()).unwrap()
}

#[test]
fn issue25_a_run_dir_of_b80c0e9_loads_with_whole_transcripts() {
    let (_tmp, runs) = runs();
    let dir = runs.join(FINISHED);
    let record = load_run(&dir).unwrap();
    assert_eq!(record.version, 2);
    let state = &record.state;
    assert_eq!(state.status(), RunStatus::Done);
    assert_eq!(state.plan().tasks.len(), 4);
    for m in &state.plan().tasks {
        assert_eq!(m.context_archive.len(), 3, "{}", m.task_id);
    }
    assert_eq!(*state.plan(), plan_json(&dir));
    let killed = load_run(&runs.join(KILLED)).unwrap().state;
    assert_eq!(killed.status(), RunStatus::Running);
    for id in [FINISHED, KILLED] {
        let out = support::cli::with_runs_dir(&["show", id, "--board", "--turns", "--plan"], &runs);
        assert!(out.status.success(), "{id}: {}", text(&out.stderr));
        let shown = text(&out.stdout);
        assert!(shown.starts_with(&format!("run {id} · ")), "{shown}");
    }
}

#[test]
fn issue25_a_killed_run_of_b80c0e9_resumes_with_transcripts_saved_once() {
    let (_tmp, runs) = runs();
    let dir = runs.join(KILLED);
    // The modules of the two drafts that landed, as that build journaled
    // them (transcripts whole).
    let journal = std::fs::read_to_string(dir.join("journal.jsonl")).unwrap();
    let landed: BTreeMap<String, _> = journal
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|r| r["record"] == "module")
        .map(|r| serde_json::from_value::<WorkModule>(r["module"].clone()).unwrap())
        .map(|m| (m.task_id.clone(), m.context_archive))
        .collect();
    assert_eq!(landed.len(), 2, "two drafts landed before the kill");
    let out =
        support::cli::with_runs_dir(&["resume", KILLED, "--no-memory", "--model", "sim"], &runs);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let record = load_run(&dir).unwrap();
    let state = &record.state;
    assert_eq!(state.status(), RunStatus::Done);
    // No member was asked twice; the totals are the sum over the turns.
    let turns = read_turns(&dir).unwrap().items;
    let mut drafts = BTreeMap::new();
    for t in turns.iter().filter(|t| t.phase == Phase::Draft) {
        *drafts.entry(t.agent.clone()).or_insert(0) += 1;
    }
    assert!(drafts.values().all(|n| *n == 1), "{drafts:?}");
    let sum = turns.iter().fold(0, |n, t| n + t.usage.total());
    assert_eq!(state.usage().total(), sum);
    // Every module has its transcript; the two from before the kill as
    // they were.
    for m in &state.plan().tasks {
        assert_eq!(m.context_archive.len(), 3, "{}", m.task_id);
        if let Some(was) = landed.get(&m.task_id) {
            assert_eq!(&m.context_archive, was, "{}", m.task_id);
        }
    }
    // The modules drafted after the resume are saved as turn ids; read
    // back, plan.json is the plan.
    let plan = std::fs::read_to_string(dir.join("workspace/plan.json")).unwrap();
    assert!(plan.contains("\"context_turns\""), "{plan}");
    let mut saved = plan_json(&dir);
    assert_ne!(saved, *state.plan(), "plan.json names the turns");
    for m in &mut saved.tasks {
        let whole = state.plan().get(&m.task_id).unwrap();
        if m.context_archive.is_empty() {
            m.context_archive = whole.context_archive.clone();
        }
    }
    assert_eq!(saved, *state.plan());
}
