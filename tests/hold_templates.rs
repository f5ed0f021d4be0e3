//! Issue 28, finding 2: a template may not produce more than a hard bound,
//! in a task, a soul or a condition, by `run` as by `check`.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// The peak resident memory a run may reach in these tests: an ordinary
/// run of the sim model peaks near 25 MiB.
const LIMIT_MIB: u64 = 60;

/// Runs the binary, polling its peak resident memory (`VmHWM`) until it
/// exits or passes [`LIMIT_MIB`] (then it is killed, so that a failing
/// test fails fast): (exit code, stderr, peak MiB).
fn boardroom(args: &[&str], dir: &Path, runs: &Path) -> (Option<i32>, String, u64) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_boardroom"))
        .args(args)
        .current_dir(dir)
        .env("BOARDROOM_RUNS_DIR", runs)
        .env_remove("BOARDROOM_MODEL")
        .env_remove("RUST_LOG")
        .env_remove("OPENAI_BASE_URL")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let status_path = format!("/proc/{}/status", child.id());
    let mut peak_kib = 0u64;
    let status = loop {
        if let Ok(text) = std::fs::read_to_string(&status_path)
            && let Some(kib) = text
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        {
            peak_kib = peak_kib.max(kib);
        }
        if peak_kib / 1024 > LIMIT_MIB {
            let _ = child.kill();
        }
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    (status.code(), stderr, peak_kib / 1024)
}

fn team(soul_extra: &str, yaml_extra: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("agents")).unwrap();
    std::fs::create_dir(dir.path().join("souls")).unwrap();
    for (name, role) in [("lead", "master"), ("scribe", "member")] {
        std::fs::write(
            dir.path().join(format!("agents/{name}.md")),
            format!("---\nname: {name}\nrole: {role}\ndescription: the team's {name}\n---\n"),
        )
        .unwrap();
        let extra = if name == "scribe" { soul_extra } else { "" };
        std::fs::write(
            dir.path().join(format!("souls/{name}.md")),
            format!("You are the {name}. Write for {{{{ audience }}}}.\n{extra}"),
        )
        .unwrap();
    }
    std::fs::write(
        dir.path().join("team.yaml"),
        format!("name: vars\ncontext_variables:\n  audience: adults\n{yaml_extra}"),
    )
    .unwrap();
    dir
}

/// A task that repeats text is used as written: the run neither expands
/// it nor aborts, and holds memory near an ordinary run's.
#[test]
fn a_task_that_repeats_text_is_not_expanded() {
    let dir = team("", "");
    let runs = tempfile::tempdir().unwrap();
    // 30 MB if rendered, copied into every prompt and record.
    let bomb = "Say hi. {{ 'x' * 30000000 }}";
    let (code, stderr, peak) = boardroom(
        &["run", "--team", ".", "--no-memory", bomb],
        dir.path(),
        runs.path(),
    );
    assert!(
        peak <= LIMIT_MIB,
        "peak RSS {peak} MiB for a task that would expand to 30 MB"
    );
    assert_eq!(code, Some(0), "{stderr}");
    let run = std::fs::read_dir(runs.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.join("turns.jsonl").exists())
        .expect("a run directory");
    let turns = std::fs::read_to_string(run.join("turns.jsonl")).unwrap();
    assert!(
        turns.contains("{{ 'x' * 30000000 }}"),
        "the task as written"
    );
}

/// A soul that doubles text in a loop is refused by `check` and `run`
/// with its file and line, exit 2, before any of it is built.
#[test]
fn a_soul_that_doubles_text_is_refused_with_its_line() {
    let soul = "{% set ns = namespace(s='x') %}\n{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}\n";
    let dir = team(soul, "");
    let runs = tempfile::tempdir().unwrap();
    for args in [
        &["check", "--team", "."][..],
        &["run", "--team", ".", "--no-memory", "hi"][..],
    ] {
        let (code, stderr, peak) = boardroom(args, dir.path(), runs.path());
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains("2: template: '{% set %}' is not allowed here"),
            "{args:?}: {stderr}"
        );
        assert!(peak <= LIMIT_MIB, "{args:?}: peak RSS {peak} MiB");
    }
}

/// A soul whose loop writes more than the bound stops at the bound with a
/// message that says so; `check` reports it the same way.
#[test]
fn a_soul_whose_output_passes_the_bound_is_refused() {
    // 100000 × 40 bytes: 4 MB from a 100-byte template.
    let soul = "{% for i in range(100000) %}0123456789012345678901234567890123456789{% endfor %}\n";
    let dir = team(soul, "");
    let runs = tempfile::tempdir().unwrap();
    let (code, stderr, _) = boardroom(&["check", "--team", "."], dir.path(), runs.path());
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("souls/scribe.md: template: the output would pass"),
        "{stderr}"
    );
}

/// A rule's condition on a handoff team is bounded the same way.
#[test]
fn a_condition_that_repeats_text_is_refused() {
    let dir = team(
        "",
        "process: handoff\nhandoffs:\n  - from_agent: lead\n    to_agent: scribe\n    condition: \"{{ audience * 100000000 }}\"\n",
    );
    let runs = tempfile::tempdir().unwrap();
    let (code, stderr, peak) = boardroom(&["check", "--team", "."], dir.path(), runs.path());
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("'*' may only multiply numbers"), "{stderr}");
    assert!(peak <= LIMIT_MIB, "peak RSS {peak} MiB");
}
