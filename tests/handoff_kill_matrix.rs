//! Issue 28, finding 11: a handoff run killed with SIGKILL at any moment
//! and resumed calls no completed step's model again — counted at the
//! server. The run goes over HTTP to a server started by the test that
//! answers each step after 60 ms (researcher → analyst → editor → writer,
//! by the handoff tool, then the writer's answer); the real binary is
//! killed at moments spread over the whole chain, then resumed to the end.
//!
//! A step's call counts as completed once its turn is in `turns.jsonl`
//! (the client took the answer in); such a step asked again after the kill
//! is the failure. A call cut off in flight is asked again, rightly; one
//! the server answered but the client had not taken in when it was killed
//! (a loaded machine: the answer still in the socket) is said on stderr.
//! Seen failing (four completed steps called again in 24 kills) with the
//! step neither journaled nor saved after it, and once in CI (kill 17 of
//! b1c1d50) with a kill between the step's turn and its journal record,
//! which a resume now answers from the turn
//! (`handoff_resume::a_kill_between_a_steps_turn_and_its_journal_record_does_not_call_it_again`
//! aborts right there).

mod support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use support::handoff::write_team;
use support::{Reply, Server};

const BIN: &str = env!("CARGO_BIN_EXE_boardroom");
const CHAIN: [&str; 4] = ["researcher", "analyst", "editor", "writer"];
const LATENCY: Duration = Duration::from_millis(60);

fn team(dir: &Path) {
    write_team(
        dir,
        &[
            ("researcher", "master"),
            ("analyst", "member"),
            ("editor", "member"),
            ("writer", "member"),
        ],
        |_| "You help.".into(),
        "name: chain\nprocess: handoff\nentry: researcher\nafter_work_behavior: terminate\n",
    );
}

fn handoff(to: &str) -> Reply {
    Reply::status(
        200,
        &serde_json::json!({
            "id": "x", "object": "chat.completion",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": format!("notes for {to}"),
                "tool_calls": [{"id": "call_1", "type": "function",
                    "function": {"name": "handoff", "arguments":
                        serde_json::json!({"destination_agent": to, "reason": "next"}).to_string()}}]}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        })
        .to_string(),
    )
}

/// Each step's call: (agent, when its answer was sent).
type Calls = Arc<Mutex<Vec<(String, Instant)>>>;

fn server(calls: Calls) -> Server {
    Server::start(move |req| {
        let text = req.all_text();
        if text.contains("<candidates>") || text.contains("<routing_rules") {
            return Reply::completion("NONE");
        }
        let Some(i) = CHAIN
            .iter()
            .position(|a| text.contains(&format!("It is your turn, {a}")))
        else {
            // The master's memory note and anything else: answered at once.
            return Reply::completion("noted");
        };
        calls
            .lock()
            .unwrap()
            .push((CHAIN[i].to_string(), Instant::now() + LATENCY));
        let reply = match CHAIN.get(i + 1) {
            Some(next) => handoff(next),
            None => Reply::completion("# Tea\n\nThe article."),
        };
        Reply::Delayed(LATENCY, Box::new(reply))
    })
}

fn boardroom(args: &[&str], runs: &Path) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .arg("--runs-dir")
        .arg(runs)
        .arg("--no-memory")
        .env_remove("BOARDROOM_TEST_CRASH_AT")
        .env_remove("BOARDROOM_MODEL")
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    cmd
}

#[test]
fn issue28_finding11_a_handoff_run_killed_anywhere_calls_no_completed_step_again() {
    let mut violations = Vec::new();
    let mut cut_in_flight = 0;
    for k in 0..24u64 {
        let calls: Calls = Arc::default();
        let server = server(Arc::clone(&calls));
        let tmp = tempfile::tempdir().unwrap();
        let (team_dir, runs) = (tmp.path().join("team"), tmp.path().join("runs"));
        team(&team_dir);
        let model = format!("{}#m", server.base_url());
        let mut child = boardroom(
            &[
                "run",
                "--team",
                team_dir.to_str().unwrap(),
                "--model",
                &model,
                "Explain tea",
            ],
            &runs,
        )
        .spawn()
        .unwrap();
        // Spread over the chain: its four steps take about 4 × 60 ms.
        std::thread::sleep(Duration::from_millis(20 + k * 11));
        let _ = child.kill();
        let killed_at = Instant::now();
        let _ = child.wait();
        let Some(dir) = std::fs::read_dir(&runs).ok().and_then(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.path())
                .find(|p| p.join("run.json").is_file())
        }) else {
            // Killed before its first save: nothing to resume.
            continue;
        };
        let id = dir.file_name().unwrap().to_str().unwrap().to_string();
        let before: Vec<(String, Instant)> = calls.lock().unwrap().clone();
        // The steps whose answer the client had taken in: their turns.
        let filed: Vec<String> = boardroom::store::read_turns(&dir)
            .unwrap()
            .items
            .into_iter()
            .filter(|t| t.phase == boardroom::Phase::Converse)
            .map(|t| t.agent)
            .collect();
        let out = boardroom(&["resume", &id], &runs).output().unwrap();
        assert!(
            out.status.success(),
            "kill {k}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let after: Vec<String> = calls.lock().unwrap()[before.len()..]
            .iter()
            .map(|(a, _)| a.clone())
            .collect();
        for (agent, answered) in &before {
            let done = *answered + Duration::from_millis(50) <= killed_at;
            if after.contains(agent) {
                if filed.contains(agent) {
                    violations.push(format!(
                        "kill {k}: {agent}'s turn was saved and it was called again"
                    ));
                } else if done {
                    eprintln!(
                        "kill {k}: {agent} answered by the server, not taken in before the kill"
                    );
                } else {
                    cut_in_flight += 1;
                }
            }
        }
        // Every step ran, once after its last cut.
        let mut all: Vec<String> = before.iter().map(|(a, _)| a.clone()).collect();
        all.extend(after);
        for agent in CHAIN {
            assert!(
                all.iter().any(|a| a == agent),
                "kill {k}: {agent} never ran: {all:?}"
            );
        }
    }
    eprintln!("calls cut in flight and made again: {cut_in_flight}");
    assert!(violations.is_empty(), "{violations:#?}");
}
