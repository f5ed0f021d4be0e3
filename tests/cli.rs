//! The binary as a user meets it: exit codes, stdout vs stderr, JSON lines,
//! and error messages that name the file and line.

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

fn boardroom(args: &[&str], dir: &Path) -> Output {
    // Each call saves its run (and the master's memory) in a fresh place, so
    // tests never see each other's runs.
    let runs = tempfile::tempdir().unwrap();
    Command::new(env!("CARGO_BIN_EXE_boardroom"))
        .args(args)
        .current_dir(dir)
        .env("BOARDROOM_RUNS_DIR", runs.path())
        .env_remove("BOARDROOM_MODEL")
        .env_remove("RUST_LOG")
        .env_remove("OPENAI_BASE_URL")
        .output()
        .expect("the binary runs")
}

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn run_prints_progress_on_stderr_and_the_answer_on_stdout() {
    let out = boardroom(&["run", "Write a short guide to brewing green tea"], repo());
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.starts_with("boardroom: no model configured, using the offline 'sim' model"),
        "{stderr}"
    );
    assert!(
        stderr.contains("round 1 · 4 assignments on 4 threads"),
        "{stderr}"
    );
    assert!(
        stderr.contains("✓ writer put a draft on the board"),
        "{stderr}"
    );
    assert!(stderr.contains("master reviewed round 1: DONE"), "{stderr}");
    assert!(
        stdout.starts_with("# Write a short guide to brewing green tea"),
        "{stdout}"
    );
    assert!(!stdout.contains("round 1"), "progress stays off stdout");
}

#[test]
fn json_prints_one_event_per_line() {
    let out = boardroom(
        &[
            "run",
            "--json",
            "--model",
            "sim:challenge=1",
            "Plan a picnic",
        ],
        repo(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let events: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let of = |t: &str| events.iter().filter(|e| e["type"] == t).collect::<Vec<_>>();
    let assigned: Vec<String> = of("task_assigned")
        .iter()
        .filter(|e| e["round"] == 1)
        .map(|e| e["member"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(assigned, ["analyst", "critic", "researcher", "writer"]);
    assert_eq!(
        of("challenge").len(),
        2,
        "both challengers objected in round 1"
    );
    let finished = of("run_finished");
    assert_eq!(finished.len(), 1);
    assert_eq!(finished[0]["status"], "done");
    assert_eq!(finished[0]["rounds"], 2);
    assert!(
        finished[0]["answer"]
            .as_str()
            .unwrap()
            .starts_with("# Plan a picnic")
    );
    let run_id = &events[0]["run_id"];
    assert!(
        events
            .iter()
            .all(|e| &e["run_id"] == run_id && e["agent"].is_string())
    );
}

#[test]
fn check_names_the_file_and_line_of_a_typo() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join("agents")).unwrap();
    fs::create_dir_all(dir.path().join("souls")).unwrap();
    fs::write(
        dir.path().join("agents/master.md"),
        "---\nname: master\nrole: master\n---\n",
    )
    .unwrap();
    fs::write(
        dir.path().join("agents/writer.md"),
        "---\nname: writer\nrole: member\ndescripton: Writes\n---\n",
    )
    .unwrap();
    fs::write(dir.path().join("souls/master.md"), "Lead.").unwrap();
    fs::write(dir.path().join("souls/writer.md"), "Write.").unwrap();
    let out = boardroom(&["check", "--team", "."], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr).trim(),
        "./agents/writer.md:4: unknown key 'descripton' (did you mean 'description'?)"
    );
    let out = boardroom(&["run", "--team", ".", "x"], dir.path());
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn check_lists_the_shipped_team() {
    let out = boardroom(&["check"], repo());
    assert_eq!(out.status.code(), Some(0));
    let stdout = text(&out.stdout);
    assert!(
        stdout.starts_with("team 'default' (.): 5 agents"),
        "{stdout}"
    );
    assert!(stdout.contains("critic") && stdout.contains("[can challenge]"));
}

#[test]
fn the_built_in_team_is_used_outside_a_team_directory() {
    let dir = tempfile::tempdir().unwrap();
    let out = boardroom(&["check"], dir.path());
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stdout).starts_with("team 'default' (built in): 5 agents"));
    let out = boardroom(&["run", "Name three teas"], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[test]
fn bad_input_exits_2_and_a_failed_run_exits_1() {
    let out = boardroom(&["run", "--model", "gpt-5", "x"], repo());
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr).trim(),
        "error: model spec 'gpt-5': unknown provider 'gpt-5' (known: sim, openai, http, https)"
    );
    let out = boardroom(&["run", "  "], repo());
    assert_eq!(out.status.code(), Some(2));
    let out = boardroom(&["run", "--rounds", "many", "x"], repo());
    assert_eq!(out.status.code(), Some(2));
    // The master's model fails: no answer is possible.
    let out = boardroom(&["run", "--model", "sim:fail=master", "x"], repo());
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("error: master (plan): simulated failure for 'master'"));
}

#[test]
fn rounds_flag_caps_the_rounds() {
    let out = boardroom(
        &[
            "run",
            "--json",
            "--rounds",
            "2",
            "--model",
            "sim:never_done",
            "x",
        ],
        repo(),
    );
    assert_eq!(out.status.code(), Some(0));
    let last = text(&out.stdout).lines().last().unwrap().to_string();
    let v: serde_json::Value = serde_json::from_str(&last).unwrap();
    assert_eq!(v["type"], "run_finished");
    assert_eq!(v["status"], "round_limit");
    assert_eq!(v["rounds"], 2);
}

#[test]
fn no_async_runtime_in_the_dependency_tree() {
    let lock = fs::read_to_string(repo().join("Cargo.lock")).expect("Cargo.lock is committed");
    for name in [
        "tokio",
        "async-std",
        "smol",
        "futures-executor",
        "async-executor",
    ] {
        assert!(
            !lock.contains(&format!("name = \"{name}\"")),
            "{name} is in Cargo.lock: find what pulls it in with `cargo tree -i {name}`"
        );
    }
}

#[test]
fn a_panicking_member_is_an_error_line_not_a_backtrace() {
    let out = boardroom(
        &["run", "--model", "sim:panic=writer", "Plan a picnic"],
        repo(),
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("✗ writer: writer panicked: sim: simulated panic in 'writer'"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("panicked at"),
        "no raw panic report: {stderr}"
    );
}
