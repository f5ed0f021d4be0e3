//! A handoff run killed with SIGKILL in the middle of its chain resumes
//! with no completed step run again (issue 11 §2, "Persistence"): the real
//! binary, a real kill, the model calls counted in `turns.jsonl`.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use boardroom::store::{load_run, read_turns};
use boardroom::{Phase, RunStatus};
use support::handoff::write_team;

const BIN: &str = env!("CARGO_BIN_EXE_boardroom");
const AGENTS: [(&str, &str); 4] = [
    ("analyst", "member"),
    ("editor", "member"),
    ("researcher", "master"),
    ("writer", "member"),
];

fn team(dir: &Path) {
    write_team(
        dir,
        &AGENTS,
        |_| "You help.".into(),
        "name: chain\nprocess: handoff\nentry: researcher\nafter_work_behavior: terminate\n",
    );
}

fn run_dir(runs: &Path) -> Option<PathBuf> {
    std::fs::read_dir(runs)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.join("run.json").is_file())
}

fn steps(dir: &Path) -> usize {
    load_run(dir)
        .ok()
        .and_then(|r| r.state.handoff().cloned())
        .map_or(0, |h| h.steps.len())
}

fn turns_by_agent(dir: &Path) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for t in read_turns(dir).unwrap().items {
        if t.phase == Phase::Converse {
            *out.entry(t.agent).or_insert(0) += 1;
        }
    }
    out
}

#[test]
fn a_handoff_run_killed_mid_chain_resumes_without_running_a_completed_step_again() {
    let tmp = tempfile::tempdir().unwrap();
    let (team_dir, runs) = (tmp.path().join("team"), tmp.path().join("runs"));
    team(&team_dir);
    let mut child = Command::new(BIN)
        .args([
            "run",
            "--team",
            team_dir.to_str().unwrap(),
            "--model",
            // Steps of 2 s: the kill must land within two steps of the
            // second (steps of 400 ms raced with it on a loaded machine).
            "sim:latency=2s,latency_phases=converse",
            "--json",
            "Explain tea",
        ])
        .arg("--runs-dir")
        .arg(&runs)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let dir = loop {
        if let Some(dir) = run_dir(&runs)
            && steps(&dir) >= 2
        {
            child.kill().unwrap();
            child.wait().unwrap();
            break dir;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("the run ended before it could be killed: {status}");
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no steps appeared"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    let before = load_run(&dir).unwrap().state;
    assert_eq!(before.status(), RunStatus::Running);
    let done_before = before.handoff().as_ref().unwrap().steps.clone();
    assert!(
        (2..AGENTS.len()).contains(&done_before.len()),
        "killed mid-chain"
    );
    for (agent, n) in turns_by_agent(&dir) {
        assert_eq!(n, 1, "{agent} before the kill");
    }

    let id = dir.file_name().unwrap().to_str().unwrap();
    let out = Command::new(BIN)
        .args(["resume", id, "--json"])
        .arg("--runs-dir")
        .arg(&runs)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let after = load_run(&dir).unwrap().state;
    assert_eq!(after.status(), RunStatus::Done);
    let steps_after = after.handoff().unwrap().steps.clone();
    assert_eq!(steps_after.len(), AGENTS.len(), "each agent acted once");
    assert_eq!(&steps_after[..done_before.len()], &done_before[..]);
    // One model call per agent turn: no completed step ran again.
    let turns = turns_by_agent(&dir);
    assert_eq!(turns.len(), AGENTS.len(), "{turns:?}");
    for (agent, n) in turns {
        assert_eq!(n, 1, "{agent} was called again");
    }
    assert_eq!(
        after.usage().total(),
        turns_usage(&dir),
        "usage equals the sum over turns.jsonl"
    );
}

/// `boardroom ARGS --runs-dir RUNS`, with `env` set.
fn boardroom_env(args: &[&str], runs: &Path, env: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .arg("--runs-dir")
        .arg(runs)
        .env_remove("BOARDROOM_TEST_CRASH_AT")
        .env_remove("BOARDROOM_MODEL")
        .env_remove("RUST_LOG");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

/// Runs the chain on the sim with `extra` arguments, aborted at crash
/// point `crash`, the `nth` step's; checks the snapshot lacks that step
/// while `turns.jsonl` holds `nth` calls (the step's own among them); resumes it (with
/// `extra` too) and checks each agent was called once over both processes.
/// Returns the run's directory (in the temporary folder returned with it).
fn crashed_then_resumed(crash: &str, nth: usize, extra: &[&str]) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let (team_dir, runs) = (tmp.path().join("team"), tmp.path().join("runs"));
    team(&team_dir);
    let mut args = vec![
        "run",
        "--team",
        team_dir.to_str().unwrap(),
        "--model",
        "sim",
    ];
    args.extend(extra);
    args.push("Explain tea");
    let out = boardroom_env(&args, &runs, &[("BOARDROOM_TEST_CRASH_AT", crash)]);
    assert_eq!(
        out.status.code(),
        None,
        "aborted at {crash}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = run_dir(&runs).unwrap();
    // The snapshot does not hold the step the crash cut off.
    assert_eq!(steps(&dir), nth - 1, "{crash}");
    let before = turns_by_agent(&dir);
    assert_eq!(before.values().sum::<usize>(), nth, "{crash}: {before:?}");

    let id = dir.file_name().unwrap().to_str().unwrap().to_string();
    let mut args = vec!["resume", id.as_str()];
    args.extend(extra);
    let out = boardroom_env(&args, &runs, &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{crash}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let after = load_run(&dir).unwrap().state;
    assert_eq!(after.status(), RunStatus::Done, "{crash}");
    assert_eq!(
        after.handoff().unwrap().steps.len(),
        AGENTS.len(),
        "{crash}"
    );
    // The calls as made: one per agent, none again.
    let turns = turns_by_agent(&dir);
    assert_eq!(turns.len(), AGENTS.len(), "{crash}: {turns:?}");
    for (agent, n) in turns {
        assert_eq!(n, 1, "{crash}: {agent} was called again");
    }
    (tmp, dir)
}

/// The sum of the usage of every call in `turns.jsonl`.
fn turns_usage(dir: &Path) -> u64 {
    read_turns(dir)
        .unwrap()
        .items
        .iter()
        .map(|t| t.usage.total())
        .sum()
}

#[test]
fn issue28_a_kill_between_a_steps_call_and_its_snapshot_does_not_call_it_again() {
    // Finding 11: in 3 of 42 kills a completed step's model call ran
    // again after resume. The window is between the call's end and the
    // step's snapshot; the crash point aborts the process right there,
    // at each step of the chain in turn.
    for nth in 1..=3 {
        let crash = format!("handoff-step-journaled:{nth}");
        crashed_then_resumed(&crash, nth, &[]);
    }
}

#[test]
fn a_kill_between_a_steps_turn_and_its_journal_record_does_not_call_it_again() {
    // The CI run of b1c1d50 caught it in the kill matrix: a step's turn
    // is in `turns.jsonl` as soon as its answer is in, its step record in
    // the journal a moment later; a kill between the two made the resume
    // call the step again. The crash point aborts right after each step's
    // turn is filed, the last one (the writer's answer) too.
    for nth in 1..=AGENTS.len() {
        let crash = format!("turn-filed:{nth}");
        let (_tmp, dir) = crashed_then_resumed(&crash, nth, &["--no-memory"]);
        assert_eq!(
            load_run(&dir).unwrap().state.usage().total(),
            turns_usage(&dir),
            "{crash}: usage is the turns' sum"
        );
    }
}

#[test]
fn issue28_a_kill_after_the_memory_note_keeps_its_call_in_the_totals() {
    // Finding 12: after a kill near the memory note, `run.json` totals
    // stayed below the sum over `turns.jsonl` for good. The crash point
    // aborts between the note (its call filed, its note kept) and the
    // snapshot after it.
    let tmp = tempfile::tempdir().unwrap();
    let (team_dir, runs) = (tmp.path().join("team"), tmp.path().join("runs"));
    team(&team_dir);
    let out = boardroom_env(
        &[
            "run",
            "--team",
            team_dir.to_str().unwrap(),
            "--model",
            "sim",
            "Explain tea",
        ],
        &runs,
        &[("BOARDROOM_TEST_CRASH_AT", "memory-noted")],
    );
    assert_eq!(
        out.status.code(),
        None,
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = run_dir(&runs).unwrap();
    let turns = read_turns(&dir).unwrap().items;
    assert!(
        turns.iter().any(|t| t.phase == Phase::Memory),
        "the note was asked for"
    );
    let sum: u64 = turns.iter().map(|t| t.usage.total()).sum();
    // Loaded: the totals are the turns' sum.
    assert_eq!(load_run(&dir).unwrap().state.usage().total(), sum);
    // Resumed: nothing owed (the note is kept), the totals still agree,
    // and no call is made again.
    let id = dir.file_name().unwrap().to_str().unwrap();
    let out = boardroom_env(&["resume", id], &runs, &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(read_turns(&dir).unwrap().items.len(), turns.len());
    assert_eq!(load_run(&dir).unwrap().state.usage().total(), sum);
}

/// A reply with these tool calls (name, arguments), OpenAI's shape.
fn tool_reply(calls: &[(&str, serde_json::Value)]) -> support::Reply {
    let calls: Vec<serde_json::Value> = calls
        .iter()
        .enumerate()
        .map(|(i, (name, args))| {
            serde_json::json!({"id": format!("call_{i}"), "type": "function",
                "function": {"name": name, "arguments": args.to_string()}})
        })
        .collect();
    support::Reply::status(
        200,
        &serde_json::json!({
            "id": "x", "object": "chat.completion",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": "notes", "tool_calls": calls}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        })
        .to_string(),
    )
}

#[test]
fn a_step_taken_from_its_turn_on_resume_sets_the_variables_its_reply_set() {
    // The researcher's reply sets a variable and hands off in one: the
    // process reads both as the reply comes. Killed right after its turn
    // is filed, the resumed run takes the step from the turn, and must
    // read the variable from it as well (the writer's prompt shows it).
    let prompts: std::sync::Arc<std::sync::Mutex<Vec<(String, String)>>> = Default::default();
    let seen = std::sync::Arc::clone(&prompts);
    let server = support::Server::start(move |req| {
        let text = req.all_text();
        let agent = ["researcher", "writer"]
            .into_iter()
            .find(|a| text.contains(&format!("It is your turn, {a}")));
        let Some(agent) = agent else {
            return support::Reply::completion("NONE");
        };
        seen.lock().unwrap().push((agent.to_string(), text.clone()));
        if agent == "researcher" {
            tool_reply(&[
                (
                    "set_variable",
                    serde_json::json!({"name": "mode", "value": "strict"}),
                ),
                (
                    "handoff",
                    serde_json::json!({"destination_agent": "writer", "reason": "write"}),
                ),
            ])
        } else {
            support::Reply::completion("# Tea\n\nThe article.")
        }
    });
    let tmp = tempfile::tempdir().unwrap();
    let (team_dir, runs) = (tmp.path().join("team"), tmp.path().join("runs"));
    write_team(
        &team_dir,
        &[("researcher", "master"), ("writer", "member")],
        |_| "You help.".into(),
        "name: pair\nprocess: handoff\nentry: researcher\nafter_work_behavior: terminate\ncontext_variables:\n  mode: lenient\n",
    );
    let model = format!("{}#m", server.base_url());
    let out = boardroom_env(
        &[
            "run",
            "--team",
            team_dir.to_str().unwrap(),
            "--model",
            &model,
            "--no-memory",
            "Explain tea",
        ],
        &runs,
        &[("BOARDROOM_TEST_CRASH_AT", "turn-filed:1")],
    );
    assert_eq!(
        out.status.code(),
        None,
        "aborted: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = run_dir(&runs).unwrap();
    let id = dir.file_name().unwrap().to_str().unwrap();
    let out = boardroom_env(&["resume", id, "--no-memory"], &runs, &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let prompts = prompts.lock().unwrap();
    let agents: Vec<&str> = prompts.iter().map(|(a, _)| a.as_str()).collect();
    assert_eq!(agents, ["researcher", "writer"], "each called once");
    assert!(
        prompts[1].1.contains("mode: strict"),
        "the writer reads the variable the taken step set: {}",
        prompts[1].1
    );
    let after = load_run(&dir).unwrap().state;
    assert_eq!(after.status(), RunStatus::Done);
}
