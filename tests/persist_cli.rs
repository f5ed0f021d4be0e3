//! Issue 4, through the binary: `runs`, `show` (and its views),
//! `resume` and `memory`, and files that are broken on disk.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Output;

use boardroom::Phase;
use boardroom::store::read_turns;

mod support;

use support::cli::text;

/// `boardroom ARGS --runs-dir RUNS`.
fn boardroom(runs: &Path, args: &[&str]) -> Output {
    support::cli::with_runs_dir(args, runs)
}

/// Runs the built-in team with the sim; returns the run directory.
fn run(runs: &Path, task: &str, extra: &[&str]) -> PathBuf {
    let mut args = vec!["run", task, "--model", "sim:challenge=1"];
    args.extend_from_slice(extra);
    let out = boardroom(runs, &args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let before: Vec<PathBuf> = boardroom::store::list_runs(runs)
        .unwrap()
        .into_iter()
        .map(|r| r.path)
        .collect();
    before.last().unwrap().clone()
}

#[test]
fn show_draws_the_call_graph_and_the_other_views() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = run(
        tmp.path(),
        "Write a short guide to brewing green tea",
        &["--no-memory"],
    );
    let id = dir.file_name().unwrap().to_str().unwrap();

    let out = boardroom(tmp.path(), &["runs"]);
    let listing = text(&out.stdout);
    assert!(out.status.success());
    assert!(listing.starts_with(id), "{listing}");
    assert!(listing.contains("done"));
    assert!(listing.contains(" 2 rounds"));
    assert!(listing.contains("Write a short guide to brewing green tea"));

    let out = boardroom(
        tmp.path(),
        &["show", &id[..12], "--tree", "--board", "--turns", "--plan"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let shown = text(&out.stdout);
    assert!(shown.contains(&format!("run {id}")));
    assert!(
        shown.contains("\n> Simulated answer: "),
        "the answer is shown"
    );
    assert!(shown.contains("== board\n#1 round 1 · draft · "));
    assert!(shown.contains("== plan\ntask_001 completed"));
    assert!(shown.contains("t0001 round 0 · plan · master"));
    let tree = &shown[shown.find("== call graph").unwrap()..];
    // Every round: the master, its members under it, challengers under them.
    for round in 1..=2 {
        let at = tree.find(&format!("round {round}\n")).unwrap();
        let part = &tree[at..];
        let members = part.find("  master → members\n").unwrap();
        let draft = part.find("    t").unwrap();
        let challengers = part.find("    members → challengers\n").unwrap();
        let challenge = part.find("· challenge · ").unwrap();
        let review = part.find("· review · master").unwrap();
        assert!(
            members < draft && draft < challengers && challengers < challenge && challenge < review,
            "{tree}"
        );
    }
}

#[test]
fn a_truncated_event_line_is_skipped_with_a_warning() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = run(tmp.path(), "A task", &["--no-memory"]);
    let lines = std::fs::read_to_string(dir.join("events.jsonl"))
        .unwrap()
        .lines()
        .count();
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(dir.join("events.jsonl"))
        .unwrap();
    f.write_all(b"{\"run_id\":\"x\",\"agent\":\"wri").unwrap();
    drop(f);
    let out = boardroom(tmp.path(), &["show", "last"]);
    assert!(out.status.success());
    assert_eq!(
        text(&out.stderr),
        format!(
            "warning: events.jsonl:{}: truncated line skipped\n",
            lines + 1
        )
    );
    assert!(text(&out.stdout).contains(&format!("{lines} events")));
}

#[test]
fn a_run_json_from_a_newer_version_is_reported_and_never_crashes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = run(tmp.path(), "A task", &["--no-memory"]);
    let id = dir.file_name().unwrap().to_str().unwrap();
    let mut v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("run.json")).unwrap()).unwrap();
    v["version"] = 7.into();
    std::fs::write(dir.join("run.json"), v.to_string()).unwrap();
    let why = "run.json: written by a newer boardroom (format version 7, this build reads up to 2)";

    let out = boardroom(tmp.path(), &["runs"]);
    assert!(out.status.success());
    assert!(text(&out.stdout).contains(&format!("{id}  ")));
    assert!(text(&out.stdout).contains(why), "{}", text(&out.stdout));

    let out = boardroom(tmp.path(), &["show", id]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains(why), "{}", text(&out.stderr));

    let out = boardroom(tmp.path(), &["resume", id]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains(why), "{}", text(&out.stderr));

    // Half a run.json: reported, not a crash.
    std::fs::write(dir.join("run.json"), "{\"version\": 1, \"run_").unwrap();
    let out = boardroom(tmp.path(), &["show", id]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("run.json: not valid json"));
    let out = boardroom(tmp.path(), &["show", "nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("run 'nope': not found"));
}

fn plan_system_prompt(dir: &Path) -> String {
    let turns = read_turns(dir).unwrap().items;
    let plan = turns.iter().find(|t| t.phase == Phase::Plan).unwrap();
    plan.messages[0].content.clone()
}

#[test]
fn memory_carries_over_to_the_next_run_unless_turned_off_and_can_be_cleared() {
    let tmp = tempfile::tempdir().unwrap();
    let first = run(tmp.path(), "Compare three teapots", &[]);
    assert!(!plan_system_prompt(&first).contains("<memory>"));
    let stored = std::fs::read_to_string(tmp.path().join("memory/default.md")).unwrap();
    assert!(stored.contains("Compare three teapots"), "{stored}");

    // The default team remembers per task (issue 21): the same task again
    // is given the note, an unrelated one is not.
    let again = run(tmp.path(), "Compare three teapots.", &[]);
    let system = plan_system_prompt(&again);
    assert!(system.contains("<memory>"), "{system}");
    assert!(system.contains("Compare three teapots"), "{system}");
    let second = run(tmp.path(), "Plan a tea party", &[]);
    let system = plan_system_prompt(&second);
    assert!(!system.contains("<memory>"), "{system}");

    let third = run(tmp.path(), "Plan a picnic", &["--no-memory"]);
    assert!(!plan_system_prompt(&third).contains("<memory>"));
    let after = std::fs::read_to_string(tmp.path().join("memory/default.md")).unwrap();
    assert!(
        !after.contains("Plan a picnic"),
        "--no-memory does not store either"
    );

    let out = boardroom(tmp.path(), &["memory"]);
    assert!(text(&out.stdout).contains("Plan a tea party"));
    let out = boardroom(tmp.path(), &["memory", "--clear"]);
    assert!(out.status.success());
    assert!(!tmp.path().join("memory/default.md").exists());
    let fourth = run(tmp.path(), "Plan a dinner", &[]);
    assert!(!plan_system_prompt(&fourth).contains("<memory>"));
}

#[test]
fn resuming_a_finished_run_gives_its_answer_without_calling_anyone() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = run(tmp.path(), "A task", &["--no-memory"]);
    let turns = read_turns(&dir).unwrap().items.len();
    let out = boardroom(tmp.path(), &["resume", "last"]);
    assert!(out.status.success());
    assert!(text(&out.stderr).contains("already finished (done)"));
    assert!(text(&out.stdout).contains("\n> Simulated answer: "));
    assert_eq!(read_turns(&dir).unwrap().items.len(), turns);
}

#[test]
fn the_callers_budget_and_protocol_are_saved_for_resume() {
    let runs = tempfile::tempdir().unwrap();
    let dir = run(
        runs.path(),
        "Plan a picnic",
        &["--max-tokens", "900000", "--protocol", "json"],
    );
    let record = boardroom::store::load_run(&dir).unwrap();
    assert_eq!(record.settings.token_budget, Some(900_000));
    assert_eq!(
        record.settings.protocol,
        Some(boardroom::protocol::Protocol::Json)
    );
    assert_eq!(record.state.status(), boardroom::RunStatus::Done);
}

#[test]
fn a_run_that_spends_its_budget_is_finished_with_a_report() {
    // Review finding: a budget stop left the run half-open (no report.md,
    // `show` offering a resume that only hit the budget again).
    let runs = tempfile::tempdir().unwrap();
    let dir = run(runs.path(), "Plan a picnic", &["--max-tokens", "2000"]);
    let record = boardroom::store::load_run(&dir).unwrap();
    assert_eq!(record.state.status(), boardroom::RunStatus::BudgetExhausted);
    assert_eq!(record.state.phase(), boardroom::store::RunPhase::Finished);
    let report = std::fs::read_to_string(dir.join("workspace/report.md")).unwrap();
    assert!(report.contains("The token budget ran out"), "{report}");
}

#[test]
fn runs_lists_folders_with_any_name_without_a_panic() {
    // Issue 8: `runs` sliced the bytes of a folder name and panicked
    // (exit 101) on a non-ASCII character.
    let tmp = tempfile::tempdir().unwrap();
    let dir = run(tmp.path(), "Plan a picnic", &["--no-memory"]);
    let names = [
        "é",
        "2026112é-000000-x",
        "20261122-00000é-x",
        "20261122-0000é0-x",
        "日本語のフォルダ名です-ok",
    ];
    for name in names {
        let copy = tmp.path().join(name);
        std::fs::create_dir(&copy).unwrap();
        std::fs::copy(dir.join("run.json"), copy.join("run.json")).unwrap();
    }
    let out = boardroom(tmp.path(), &["runs"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let listed = text(&out.stdout);
    for name in names {
        assert!(
            // The id column is as wide as the longest id.
            listed.lines().any(|l| {
                l.strip_prefix(name).is_some_and(|rest| {
                    rest.starts_with("  ") && rest.trim_start().starts_with("-  ")
                })
            }),
            "{name} in {listed}"
        );
    }
}

#[test]
fn show_makes_terminal_escape_sequences_in_model_text_visible() {
    // Issue 8: model text went to the terminal raw, escape sequences and all.
    let tmp = tempfile::tempdir().unwrap();
    let dir = run(tmp.path(), "Plan a picnic", &["--no-memory"]);
    let id = dir.file_name().unwrap().to_str().unwrap();
    let path = dir.join("run.json");
    // The whole run as one run.json (format 1: board and all), edited.
    let mut record = serde_json::to_value(boardroom::store::load_run(&dir).unwrap()).unwrap();
    let hostile = "ok\u{1b}[2J\u{1b}]0;pwned\u{7}\r\u{9b}31mred \u{202e}desrever\u{2066}";
    record["board"][0]["text"] = hostile.into();
    record["answer"] = format!("answer {hostile}").into();
    std::fs::write(&path, serde_json::to_vec(&record).unwrap()).unwrap();

    let out = boardroom(tmp.path(), &["show", id, "--board"]);
    assert!(out.status.success());
    let shown = text(&out.stdout);
    assert!(
        !shown
            .chars()
            .any(|c| c.is_control() && c != '\n' && c != '\t'),
        "a control character reached the terminal: {shown:?}"
    );
    // Bidirectional overrides too: they reorder what the terminal shows.
    let visible = "ok\\u{1b}[2J\\u{1b}]0;pwned\\u{7}\\u{d}\\u{9b}31mred \\u{202e}desrever\\u{2066}";
    assert!(shown.contains(&format!("answer {visible}")), "{shown}");
    assert!(shown.contains(&format!("    {visible}")), "{shown}");
}

#[test]
fn a_saved_run_with_absurd_numbers_never_panics_on_resume() {
    // A hand-edited or damaged run.json: token counts at the top of the
    // range overflowed when the replay added to them, and an entry number
    // there overflowed the next entry's (exit 101 both).
    let tmp = tempfile::tempdir().unwrap();
    let dir = run(
        tmp.path(),
        "Plan a picnic",
        &["--no-memory", "--rounds", "1"],
    );
    let id = dir.file_name().unwrap().to_str().unwrap().to_string();
    let path = dir.join("run.json");
    // The whole run as one run.json (format 1: board and all), edited.
    let original = serde_json::to_value(boardroom::store::load_run(&dir).unwrap()).unwrap();

    let mut record = original.clone();
    record["phase"] = "review".into();
    record["status"] = "running".into();
    record["usage"]["prompt_tokens"] = u64::MAX.into();
    std::fs::write(&path, serde_json::to_vec(&record).unwrap()).unwrap();
    let out = boardroom(tmp.path(), &["resume", &id]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(saved["usage"]["prompt_tokens"], u64::MAX, "saturated");

    let mut record = original.clone();
    record["phase"] = "members".into();
    record["status"] = "running".into();
    record["board"][0]["seq"] = u64::MAX.into();
    std::fs::write(&path, serde_json::to_vec(&record).unwrap()).unwrap();
    let out = boardroom(tmp.path(), &["resume", &id]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stderr).trim_end(),
        format!(
            "error: {}: board entry #18446744073709551615 is out of order or out of range (after #0)",
            path.display()
        )
    );
}
