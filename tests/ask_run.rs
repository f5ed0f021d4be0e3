//! A run asks its user (issue 12): the master's `ASK:` (or `ask_user` in
//! JSON mode) pauses a blackboard run as `awaiting_user`, saved, with the
//! question as an event; `resume --message` continues it with the answer
//! in the master's next prompt; a message on a finished run starts a
//! follow-up round on the same board.

use std::path::Path;
use std::process::Command;

use boardroom::protocol::Protocol;
use boardroom::store::{load_run, read_events, read_turns};
use boardroom::testing::{Sim, SimOptions};
use boardroom::{EventKind, Phase, RunStatus, Runtime, Team};

fn asking_sim() -> Sim {
    Sim::with_options(SimOptions {
        ask: Some("Which city?".into()),
        ..SimOptions::default()
    })
}

fn run_dir(runs: &Path, id: &str) -> std::path::PathBuf {
    runs.join(id)
}

#[test]
fn ask_pauses_the_run_and_the_answer_reaches_the_masters_next_prompt() {
    let tmp = tempfile::tempdir().unwrap();
    let rt = Runtime::new(Team::builtin().unwrap(), asking_sim()).runs_dir(tmp.path());
    let asked = rt.run("Plan a picnic").unwrap();
    assert_eq!(asked.status, RunStatus::AwaitingUser);
    assert_eq!(asked.answer, "Which city?");
    assert_eq!(asked.rounds, 0, "nobody worked: the master asked first");
    let dir = run_dir(tmp.path(), &asked.run_id);
    let saved = load_run(&dir).unwrap();
    assert_eq!(saved.state.status(), RunStatus::AwaitingUser);
    assert!(
        !dir.join("workspace/report.md").exists(),
        "a question is no report"
    );
    let events = read_events(&dir).unwrap().items;
    assert!(events.iter().any(|e| matches!(
        &e.kind,
        EventKind::AwaitingUser { question } if question == "Which city?"
    )));

    let done = rt.resume_with_message(&dir, "Lisbon, in May").unwrap();
    assert_eq!(done.status, RunStatus::Done);
    assert!(done.rounds >= 1);
    // The master's plan turns: the first asked, the next saw the answer.
    let plans: Vec<_> = read_turns(&dir)
        .unwrap()
        .items
        .into_iter()
        .filter(|t| t.phase == Phase::Plan)
        .collect();
    assert_eq!(plans.len(), 2, "{plans:?}");
    let first: String = plans[0]
        .messages
        .iter()
        .map(|m| m.content.clone())
        .collect();
    let second: String = plans[1]
        .messages
        .iter()
        .map(|m| m.content.clone())
        .collect();
    assert!(!first.contains("Lisbon"));
    assert!(
        second.contains("The master asked: Which city?\n  The user answered: Lisbon, in May"),
        "{second}"
    );
    let saved = load_run(&dir).unwrap();
    assert_eq!(saved.state.user_notes().len(), 1);
    assert_eq!(
        saved.state.user_notes()[0].question.as_deref(),
        Some("Which city?")
    );
    assert!(dir.join("workspace/report.md").is_file());
}

#[test]
fn the_users_answer_appears_in_the_answer() {
    // Issue 21: "Lisbon, in May" reached the master's prompt but never the
    // answer the user reads.
    let tmp = tempfile::tempdir().unwrap();
    for protocol in [Protocol::Line, Protocol::Json] {
        let rt = Runtime::new(Team::builtin().unwrap(), asking_sim())
            .runs_dir(tmp.path())
            .protocol(protocol);
        let asked = rt.run("Plan a picnic").unwrap();
        let done = rt
            .resume_with_message(run_dir(tmp.path(), &asked.run_id), "Lisbon, in May")
            .unwrap();
        assert_eq!(done.status, RunStatus::Done);
        assert!(
            done.answer
                .contains("Based on your answer to \"Which city?\": Lisbon, in May."),
            "{protocol:?}: {}",
            done.answer
        );
        assert!(
            done.answer.contains("> Simulated answer:"),
            "{}",
            done.answer
        );
    }
}

#[test]
fn ask_user_in_json_mode_pauses_the_run_too() {
    let tmp = tempfile::tempdir().unwrap();
    let rt = Runtime::new(Team::builtin().unwrap(), asking_sim())
        .runs_dir(tmp.path())
        .protocol(Protocol::Json);
    let asked = rt.run("Plan a picnic").unwrap();
    assert_eq!(asked.status, RunStatus::AwaitingUser);
    assert_eq!(asked.answer, "Which city?");
    let done = rt
        .resume_with_message(run_dir(tmp.path(), &asked.run_id), "Porto")
        .unwrap();
    assert_eq!(done.status, RunStatus::Done);
}

#[test]
fn a_message_on_a_done_run_starts_a_follow_up_round_on_the_same_board() {
    let tmp = tempfile::tempdir().unwrap();
    // One round a stretch: the follow-up's round needs the cap counted
    // again from where the run stood.
    let rt = Runtime::new(Team::builtin().unwrap(), Sim::new())
        .runs_dir(tmp.path())
        .max_rounds(1);
    let first = rt.run("Plan a picnic").unwrap();
    assert_eq!((first.status, first.rounds), (RunStatus::Done, 1));
    let dir = run_dir(tmp.path(), &first.run_id);
    let again = rt.resume_with_message(&dir, "make it shorter").unwrap();
    assert_eq!(again.status, RunStatus::Done);
    assert_eq!(again.run_id, first.run_id, "the same run, a new round");
    assert_eq!(again.rounds, 2);
    // The board kept round 1 and has round 2's drafts for the follow-up.
    let round1 = first.board.len();
    assert_eq!(&again.board[..round1], &first.board[..]);
    let followed: Vec<_> = again
        .board
        .iter()
        .filter(|e| {
            e.round == 2
                && e.task
                    .as_deref()
                    .is_some_and(|t| t.contains("make it shorter"))
        })
        .collect();
    assert_eq!(followed.len(), 4, "{:?}", again.board);
    let reviews: Vec<String> = read_turns(&dir)
        .unwrap()
        .items
        .into_iter()
        .filter(|t| t.phase == Phase::Review)
        .map(|t| t.messages.iter().map(|m| m.content.clone()).collect())
        .collect();
    assert!(
        reviews
            .last()
            .unwrap()
            .contains("- Follow-up from the user: make it shorter"),
        "{reviews:?}"
    );
}

#[test]
fn a_message_on_a_stopped_run_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let rt = Runtime::new(Team::builtin().unwrap(), asking_sim()).runs_dir(tmp.path());
    let asked = rt.run("Plan a picnic").unwrap();
    let dir = run_dir(tmp.path(), &asked.run_id);
    // Made to look interrupted mid-run.
    let mut record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    record["status"] = "running".into();
    record["phase"] = "members".into();
    std::fs::write(dir.join("run.json"), record.to_string()).unwrap();
    let err = rt
        .resume_with_message(&dir, "hello")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("is running and not finished: resume it without --message first"),
        "{err}"
    );
}

#[test]
fn a_message_on_a_failed_run_is_refused_and_says_it_failed() {
    let tmp = tempfile::tempdir().unwrap();
    let failing = Sim::with_options(SimOptions {
        fail_agent: Some("master".into()),
        ..SimOptions::default()
    });
    let rt = Runtime::new(Team::builtin().unwrap(), failing).runs_dir(tmp.path());
    assert!(rt.run("Plan a picnic").is_err());
    let id = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .find(|n| n != "memory")
        .unwrap();
    let dir = run_dir(tmp.path(), &id);
    assert_eq!(load_run(&dir).unwrap().state.status(), RunStatus::Failed);
    let rt = Runtime::new(Team::builtin().unwrap(), Sim::new()).runs_dir(tmp.path());
    let err = rt
        .resume_with_message(&dir, "hello")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(&format!(
            "run {id} failed and has not finished: resume it without --message first"
        )),
        "{err}"
    );
    // Nothing was changed: it is still failed, and resumable.
    assert_eq!(load_run(&dir).unwrap().state.status(), RunStatus::Failed);
}

fn boardroom(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_boardroom"))
        .args(args)
        .current_dir(dir)
        .env("BOARDROOM_HOME", dir)
        .env_remove("BOARDROOM_MODEL")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn without_a_terminal_the_cli_exits_3_and_resume_message_finishes() {
    let tmp = tempfile::tempdir().unwrap();
    let out = boardroom(
        tmp.path(),
        &["run", "Plan a picnic", "--model", "sim:ask=Which city?"],
    );
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "Which city?");
    let id = std::fs::read_dir(tmp.path().join("runs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .find(|n| n != "memory")
        .unwrap();
    let listed = boardroom(tmp.path(), &["runs"]);
    assert!(
        String::from_utf8_lossy(&listed.stdout).contains("waiting for the user"),
        "{listed:?}"
    );
    let out = boardroom(
        tmp.path(),
        &[
            "resume",
            &id,
            "--message",
            "Lisbon",
            "--model",
            "sim:ask=Which city?",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let turns =
        std::fs::read_to_string(tmp.path().join("runs").join(&id).join("turns.jsonl")).unwrap();
    assert!(turns.contains("The user answered: Lisbon"));
}
