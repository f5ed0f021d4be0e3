//! The handoff process from the command line: a run that returns to its
//! user exits 3, is listed and shown as waiting, and `resume --message`
//! continues it with the user's words; `--var` is checked; `show` lists
//! the steps.

mod support;

use std::path::Path;

use boardroom::store::{load_run, read_turns};
use boardroom::{Phase, RunStatus};
use support::handoff::{TRIO, boardroom, only_run, text, write_team};

/// A handoff team of three on disk that returns to its user.
fn team(dir: &Path, extra: &str) {
    write_team(
        dir,
        &TRIO,
        |name| format!("You are the {name}. Write for {{{{ audience }}}}."),
        &format!(
            "name: chain\nprocess: handoff\nentry: researcher\ncontext_variables:\n  audience: everyone\n{extra}"
        ),
    );
}

#[test]
fn a_run_that_returns_to_its_user_exits_3_and_resume_message_continues_it() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, runs) = (tmp.path().join("team"), tmp.path().join("runs"));
    team(&dir, "");
    let team = dir.to_str().unwrap();
    let out = boardroom(
        &["run", "--team", team, "--model", "sim", "Explain tea"],
        &runs,
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let run = only_run(&runs);
    let id = run.file_name().unwrap().to_str().unwrap().to_string();
    assert!(
        text(&out).contains(&format!("waiting for your reply: boardroom resume {id}")),
        "{}",
        text(&out)
    );
    assert!(text(&out).contains("--message"));
    assert_eq!(
        load_run(&run).unwrap().state.status(),
        RunStatus::AwaitingUser
    );

    let listed = boardroom(&["runs"], &runs);
    assert!(
        text(&listed).contains("waiting for the user"),
        "{}",
        text(&listed)
    );
    let shown = boardroom(&["show", &id], &runs);
    assert!(
        text(&shown).contains(&format!("reply with: boardroom resume {id}")),
        "{}",
        text(&shown)
    );
    assert!(text(&shown).contains("== steps"), "{}", text(&shown));
    assert!(text(&shown).contains("s1 researcher"), "{}", text(&shown));

    // No message: it still waits. An empty one is bad input.
    let again = boardroom(&["resume", &id], &runs);
    assert_eq!(again.status.code(), Some(3), "{}", text(&again));
    let empty = boardroom(&["resume", &id, "--message", " "], &runs);
    assert_eq!(empty.status.code(), Some(2), "{}", text(&empty));
    assert!(text(&empty).contains("--message"), "{}", text(&empty));

    let turns_before = read_turns(&run).unwrap().items.len();
    let replied = boardroom(
        &["resume", &id, "--message", "only green tea, please"],
        &runs,
    );
    assert_eq!(replied.status.code(), Some(3), "{}", text(&replied));
    let turns = read_turns(&run).unwrap().items;
    let next = turns[turns_before..]
        .iter()
        .find(|t| t.phase == Phase::Converse)
        .expect("an agent took a turn after the message");
    let shown_to_it = next
        .messages
        .iter()
        .map(|m| m.content.as_str())
        .collect::<String>();
    assert!(
        shown_to_it.contains("only green tea, please"),
        "{shown_to_it}"
    );
    let saved = load_run(&run).unwrap().state;
    let steps = saved.handoff().unwrap().steps.clone();
    assert!(
        steps
            .iter()
            .any(|s| s.agent == "user" && s.text == "only green tea, please")
    );
}

#[test]
fn var_flags_are_checked_and_change_the_souls() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, runs) = (tmp.path().join("team"), tmp.path().join("runs"));
    team(&dir, "after_work_behavior: terminate\n");
    let team = dir.to_str().unwrap();
    let bad = boardroom(
        &[
            "run",
            "--team",
            team,
            "--model",
            "sim",
            "--var",
            "audiance=kids",
            "x",
        ],
        &runs,
    );
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad));
    assert!(
        text(&bad).contains("--var 'audiance=kids'") && text(&bad).contains("audience"),
        "{}",
        text(&bad)
    );
    assert!(!runs.exists() || std::fs::read_dir(&runs).unwrap().next().is_none());

    let ok = boardroom(
        &[
            "run",
            "--team",
            team,
            "--model",
            "sim",
            "--var",
            "audience=tea lovers",
            "Explain tea",
        ],
        &runs,
    );
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok));
    let run = only_run(&runs);
    let first = &read_turns(&run).unwrap().items[0];
    assert!(first.messages[0].content.contains("Write for tea lovers."));
}

#[test]
fn json_prints_the_handoff_events() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, runs) = (tmp.path().join("team"), tmp.path().join("runs"));
    team(&dir, "after_work_behavior: terminate\n");
    let out = boardroom(
        &[
            "run",
            "--team",
            dir.to_str().unwrap(),
            "--model",
            "sim",
            "--json",
            "Explain tea",
        ],
        &runs,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let handoffs: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["type"] == "handoff")
        .collect();
    assert!(!handoffs.is_empty());
    assert_eq!(handoffs[0]["from"], "researcher");
    assert!(handoffs[0]["how"].is_string());
}
