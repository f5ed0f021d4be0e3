//! `boardroom chat` in a real terminal (issue 12): tmux runs the chat, the
//! test types a request, answers the consent prompt, presses Ctrl-C while
//! the team runs, confirms the stop, ends the chat with Ctrl-D, and
//! `boardroom runs` lists the run as resumable. Needs tmux
//! (`scripts/setup-tmux.sh`).
//!
//! Text is typed one character per `send-keys`: rustyline 17, with an
//! external printer, waits on the terminal's file descriptor and does not
//! see bytes it has already buffered, so a burst of keys in one read (what
//! tmux sends for a whole string; a human's keys come one by one) would sit
//! unread until the next key.

use std::process::Command;

mod support;

use support::tmux::Session;

#[test]
fn ctrl_c_during_a_run_asks_then_stops_the_team_and_the_run_stays_resumable() {
    let tmp = tempfile::tempdir().unwrap();
    // The members' drafts wait for `go`, made once the stop is confirmed:
    // the Ctrl-C lands while the team works, by construction.
    let go = tmp.path().join("go");
    let name = format!("boardroom-chat-{}", std::process::id());
    let script = format!(
        "cd '{dir}' && BOARDROOM_RUNS_DIR=runs BOARDROOM_CHATS_DIR=chats '{bin}' chat --model 'sim:latency=1s,hold={go}' 2>/dev/null; echo \"EXIT:$?\"; sleep 60",
        dir = tmp.path().display(),
        bin = env!("CARGO_BIN_EXE_boardroom"),
        go = go.display(),
    );
    let s = Session::start(&name, "200", &script);
    s.wait_for("you>");
    s.type_line("Plan a team offsite for about 20 people over two days");
    s.wait_for("Launch the team on these 4 modules? [y/N]");
    s.type_line("y");
    let screen = s.wait_for("[team] run ");
    let run_id = screen
        .split("[team] run ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .unwrap()
        .to_string();
    // Ctrl-C between partner turns (during one, it cancels the turn).
    s.wait_for("partner: The team is on it");
    s.key("C-c");
    s.wait_for(&format!(
        "Stop the team? Run {run_id} is saved and can be resumed. [y/N]"
    ));
    s.type_line("y");
    s.wait_for(&format!("[boardroom] stopping run {run_id}"));
    std::fs::write(&go, "").unwrap();
    s.wait_for("The run finished with status cancelled.");
    s.key("C-d");
    let screen = s.wait_for("EXIT:");
    assert!(screen.contains("EXIT:0"), "{screen}");
    assert!(
        !screen.contains("──── report"),
        "a stopped run shows no report: {screen}"
    );

    let out = Command::new(env!("CARGO_BIN_EXE_boardroom"))
        .arg("runs")
        .current_dir(tmp.path())
        .env("BOARDROOM_HOME", tmp.path())
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&out.stdout);
    let line = listed
        .lines()
        .find(|l| l.starts_with(&run_id))
        .unwrap_or_else(|| panic!("{run_id} not in:\n{listed}"));
    assert!(line.contains("stopped, resumable"), "{line}");

    // `chat --resume` offers to go on with the stopped run, and finishes it.
    let chat_id = std::fs::read_dir(tmp.path().join("chats"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .file_name()
        .to_string_lossy()
        .into_owned();
    let mut child = Command::new(env!("CARGO_BIN_EXE_boardroom"))
        .args(["chat", "--resume", &chat_id, "--model", "sim"])
        .current_dir(tmp.path())
        .env("BOARDROOM_HOME", tmp.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), b"y\n").unwrap();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains(&format!("[boardroom] run {run_id} was stopped")),
        "{text}"
    );
    assert!(
        text.contains(&format!("──── report (runs/{run_id}/workspace/report.md)")),
        "{text}"
    );
}

#[test]
fn boardroom_run_on_a_terminal_asks_the_masters_question_inline() {
    let tmp = tempfile::tempdir().unwrap();
    let name = format!("boardroom-ask-{}", std::process::id());
    let script = format!(
        "cd '{dir}' && BOARDROOM_RUNS_DIR=runs BOARDROOM_CHATS_DIR=chats '{bin}' run 'Plan a picnic' --model 'sim:ask=Which city?' >/dev/null; \
         echo \"EXIT:$?\"; sleep 60",
        dir = tmp.path().display(),
        bin = env!("CARGO_BIN_EXE_boardroom"),
    );
    let s = Session::start(&name, "200", &script);
    s.wait_for("master asks you: Which city?");
    s.wait_for("your answer (empty: answer later with resume --message)>");
    s.type_line("Lisbon");
    let screen = s.wait_for("EXIT:");
    assert!(screen.contains("EXIT:0"), "{screen}");
    let runs = tmp.path().join("runs");
    let id = std::fs::read_dir(&runs)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .find(|n| n != "memory")
        .unwrap();
    let turns = std::fs::read_to_string(runs.join(&id).join("turns.jsonl")).unwrap();
    assert!(turns.contains("The user answered: Lisbon"));
    let run = std::fs::read_to_string(runs.join(&id).join("run.json")).unwrap();
    assert!(run.contains("\"status\": \"done\""), "{run}");
}
