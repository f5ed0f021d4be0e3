//! The first answer a new user sees (issue 21): `boardroom run "Write a
//! short guide to brewing green tea"` on the offline sim says it is
//! simulated (in the answer, `report.md` and `show`), reads as one
//! document (no stack of `## From member` blocks, no instructions meant
//! for a model), `report.md` has one title, and a follow-up visibly
//! changes the answer.

use std::path::Path;

mod support;

use support::cli::{text, with_runs_dir};

const TASK: &str = "Write a short guide to brewing green tea";
const SIMULATED: &str = "> Simulated answer: boardroom's offline `sim` model wrote this";

/// Text the sim once wrote into answers: instructions to a model, and the
/// critic's checklist.
const TEMPLATE_PHRASES: &[&str] = &[
    "state the figure or rule a reader can act on",
    "is it stated plainly",
    "what to do, in one sentence",
    "the usual choice, what it gains, what it costs",
    "Start with what matters most, in one sentence",
];

/// The id of the only run under `runs`.
fn only_run(runs: &Path) -> String {
    let ids: Vec<String> = std::fs::read_dir(runs)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("run.json").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(ids.len(), 1, "{ids:?}");
    ids[0].clone()
}

fn report(runs: &Path, id: &str) -> String {
    std::fs::read_to_string(runs.join(id).join("workspace/report.md")).unwrap()
}

fn assert_one_document(answer: &str) {
    assert_eq!(answer.matches(SIMULATED).count(), 1, "{answer}");
    assert!(!answer.contains("## From "), "{answer}");
    for phrase in TEMPLATE_PHRASES {
        assert!(!answer.contains(phrase), "{phrase}: {answer}");
    }
}

#[test]
fn the_first_answer_says_it_is_simulated_and_reads_as_one_document() {
    let runs = tempfile::tempdir().unwrap();
    let out = with_runs_dir(&["run", TASK], runs.path());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let answer = text(&out.stdout);
    assert_one_document(&answer);
    assert!(
        answer.starts_with("# A short guide to brewing green tea\n\n> Simulated answer:"),
        "{answer}"
    );
    assert!(answer.contains("## What matters most"), "{answer}");

    let id = only_run(runs.path());
    let report = report(runs.path(), &id);
    assert_one_document(&report);
    let titles: Vec<&str> = report.lines().filter(|l| l.starts_with("# ")).collect();
    assert_eq!(titles, ["# A short guide to brewing green tea"], "{report}");

    let shown = with_runs_dir(&["show", &id], runs.path());
    assert_eq!(shown.status.code(), Some(0), "{}", text(&shown.stderr));
    assert_one_document(&text(&shown.stdout));
}

#[test]
fn a_follow_up_changes_the_answer() {
    let runs = tempfile::tempdir().unwrap();
    let out = with_runs_dir(&["run", TASK], runs.path());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let first = text(&out.stdout);
    let id = only_run(runs.path());

    let out = with_runs_dir(
        &["resume", &id, "--message", "make it shorter"],
        runs.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let shorter = text(&out.stdout);
    assert_one_document(&shorter);
    assert!(
        shorter.len() * 2 < first.len(),
        "shorter means shorter:\n{shorter}\n---\n{first}"
    );
    assert_eq!(report(runs.path(), &id).trim(), shorter.trim());

    let out = with_runs_dir(
        &["resume", &id, "--message", "Add a section on storing tea."],
        runs.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let added = text(&out.stdout);
    assert!(added.contains("## Storing tea\n"), "{added}");
    assert_one_document(&added);
}
