//! Memory as seed 004 has it (issue 23): a member's prompt in a second run
//! carries the note it gave after the first; the master's note is taken
//! after the answer is on stdout and the run is reported done.

mod support;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use support::{Reply, Request, Server};

fn team(dir: &Path) {
    let t = dir.join("team");
    std::fs::create_dir_all(t.join("agents")).unwrap();
    std::fs::create_dir_all(t.join("souls")).unwrap();
    std::fs::write(
        t.join("agents/lead.md"),
        "---\nname: lead\nrole: master\n---\n",
    )
    .unwrap();
    std::fs::write(
        t.join("agents/scribe.md"),
        "---\nname: scribe\nrole: member\ndescription: writes\n---\n",
    )
    .unwrap();
    std::fs::write(t.join("souls/lead.md"), "You are the lead.\n").unwrap();
    std::fs::write(t.join("souls/scribe.md"), "You are the scribe.\n").unwrap();
}

fn command(dir: &Path, server: &Server, task: &str) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_boardroom"));
    c.args(["run", "--team", "team", "--model"])
        .arg(format!("{}#tiny", server.base_url()))
        .arg(task)
        .env("BOARDROOM_RUNS_DIR", dir.join("runs"))
        .current_dir(dir)
        .env_remove("BOARDROOM_MODEL")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("RUST_LOG");
    c
}

fn run(dir: &Path, server: &Server, task: &str) -> Output {
    command(dir, server, task).output().unwrap()
}

/// The answers of a one-round team; `member_note` is the scribe's note.
fn answer(req: &Request, member_note: &str) -> Reply {
    let text = req.all_text();
    let reply = if text.contains("Split this task") {
        "ASSIGN:scribe:write the note".to_string()
    } else if text.contains("is over. This is the board") {
        "DONE\nThe final note.".to_string()
    } else if text.contains("your future assignments") {
        member_note.to_string()
    } else if text.contains("worth remembering") {
        "- the lead's note".to_string()
    } else {
        "A draft.".to_string()
    };
    Reply::answer(req, &reply)
}

#[test]
fn a_members_prompt_in_a_second_run_carries_its_memory() {
    let dir = tempfile::tempdir().unwrap();
    team(dir.path());
    let server = Server::start(|req| answer(req, "- SCRIBE-NOTE: cite every source"));
    let first = run(dir.path(), &server, "Write a note");
    assert_eq!(
        first.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let file = dir.path().join("runs/memory/team.scribe.md");
    let kept = std::fs::read_to_string(&file).unwrap();
    assert!(kept.contains("SCRIBE-NOTE"), "{kept}");
    let before = server.seen().len();
    let second = run(dir.path(), &server, "Write another note");
    assert_eq!(second.status.code(), Some(0));
    let seen = server.seen();
    let draft = seen[before..]
        .iter()
        .find(|r| r.all_text().contains("<assignment>"))
        .expect("a draft in the second run");
    let system = draft.body["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.starts_with(
            "You are the scribe.\n\n## What you remember from earlier runs\n\n<memory>\n"
        ) && system.contains("SCRIBE-NOTE: cite every source"),
        "{system}"
    );
    // The master's memory is its own: the scribe's note is not in it.
    let lead = std::fs::read_to_string(dir.path().join("runs/memory/team.md")).unwrap();
    assert!(!lead.contains("SCRIBE-NOTE"), "{lead}");
}

#[test]
fn the_answer_is_on_stdout_before_the_memory_call_ends() {
    let dir = tempfile::tempdir().unwrap();
    team(dir.path());
    // The master's memory call: 0 not yet asked, 1 in flight, 2 answered.
    let note = Arc::new(AtomicU8::new(0));
    let (release, released) = crossbeam_channel::bounded::<()>(1);
    let flag = Arc::clone(&note);
    let server = Server::start(move |req| {
        let text = req.all_text();
        if text.contains("worth remembering for future tasks") {
            // The master's note: held until the test has read the answer
            // (at most 15 s, below the note's own deadline).
            flag.store(1, Ordering::SeqCst);
            let _ = released.recv_timeout(Duration::from_secs(15));
            flag.store(2, Ordering::SeqCst);
        }
        answer(req, "- a note")
    });
    let mut child = command(dir.path(), &server, "Write a note")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    assert_eq!(first, "The final note.");
    assert_ne!(
        note.load(Ordering::SeqCst),
        2,
        "the answer came after the memory call ended"
    );
    release.send(()).unwrap();
    assert!(child.wait().unwrap().success());
    // Events: the room done before the memory call started and ended;
    // run_finished, the run's last event, after it.
    let run_dir = std::fs::read_dir(dir.path().join("runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.join("events.jsonl").exists())
        .unwrap();
    let events = std::fs::read_to_string(run_dir.join("events.jsonl")).unwrap();
    let at = |what: &dyn Fn(&serde_json::Value) -> bool| {
        events
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .position(|e| what(&e))
            .unwrap_or_else(|| panic!("{events}"))
    };
    let done = at(&|e| e["type"] == "room_status" && e["status"] == "done");
    let started = at(&|e| e["type"] == "call_started" && e["phase"] == "memory");
    let ended = at(&|e| e["type"] == "call_ended" && e["phase"] == "memory");
    let finished = at(&|e| e["type"] == "run_finished");
    assert!(
        done < started && started < ended && ended < finished,
        "{events}"
    );
    assert_eq!(finished, events.lines().count() - 1, "{events}");
    let lead = std::fs::read_to_string(dir.path().join("runs/memory/team.md")).unwrap();
    assert!(lead.contains("the lead's note"), "{lead}");
}
