//! `boardroom chat` in a real terminal (issue 12): tmux runs the chat, the
//! test types a request, answers the consent prompt, presses Ctrl-C while
//! the team runs, confirms the stop, ends the chat with Ctrl-D, and
//! `boardroom runs` lists the run as resumable. Needs tmux
//! (`scripts/setup-tmux.sh`).
//!
//! Most text is typed one character per `send-keys`, as a human types;
//! `a_line_sent_in_one_burst_is_taken_whole_and_answered` sends a whole
//! line, and a paste, in one write.

use std::process::Command;
use std::time::{Duration, Instant};

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
    // Ctrl-C between partner turns. A press that lands while the partner's
    // turn is still ending goes to that turn (cancelling it, or unseen if
    // it had already answered): press again until the question shows.
    // Not sooner than 10 s after a press: a press at the question answers
    // it no.
    s.wait_for("partner: The team is on it");
    let question = format!("Stop the team? Run {run_id} is saved and can be resumed. [y/N]");
    let cancelled = "the partner's turn was cancelled";
    let deadline = Instant::now() + Duration::from_secs(60);
    'asked: loop {
        let screen = s.screen();
        if screen.contains(&question) {
            break;
        }
        assert!(Instant::now() < deadline, "no {question:?} on:\n{screen}");
        let before = screen.matches(cancelled).count();
        s.key("C-c");
        let pressed = Instant::now();
        while pressed.elapsed() < Duration::from_secs(10) {
            let screen = s.screen();
            if screen.contains(&question) {
                break 'asked;
            }
            if screen.matches(cancelled).count() > before {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
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

/// Issue 21: a line that reaches the terminal in one burst (a paste, fast
/// typing, tmux's whole-string `send-keys`) is taken whole. rustyline 17
/// with an external printer read the first key of the burst and waited
/// on the terminal for the rest, already in its buffer (rustyline #976):
/// the screen showed `you> P` until another key came.
#[test]
fn a_line_sent_in_one_burst_is_taken_whole_and_answered() {
    let tmp = tempfile::tempdir().unwrap();
    let name = format!("boardroom-burst-{}", std::process::id());
    let script = format!(
        "cd '{dir}' && '{bin}' chat --model sim 2>/dev/null; echo \"EXIT:$?\"; sleep 60",
        dir = tmp.path().display(),
        bin = env!("CARGO_BIN_EXE_boardroom"),
    );
    let s = Session::start(&name, "200", &script);
    s.wait_for("you>");
    // The whole line and its Enter in ONE send-keys: one write to the
    // terminal.
    let sent = support::tmux::tmux(&[
        "send-keys",
        "-t",
        &name,
        "Plan a team offsite for about 20 people over two days",
        "Enter",
    ]);
    assert!(sent.status.success(), "{sent:?}");
    // The partner's answer comes with no further key.
    s.wait_for("Launch the team on these 4 modules? [y/N]");
    s.type_line("n");
    s.wait_for("partner: All right, nothing was launched.");
    // A paste: one burst of text and its carriage return (tmux's
    // paste-buffer turns the buffer's newline into Enter).
    let set = support::tmux::tmux(&["set-buffer", "-b", "burst", "launch\n"]);
    assert!(set.status.success(), "{set:?}");
    let pasted = support::tmux::tmux(&["paste-buffer", "-b", "burst", "-t", &name]);
    assert!(pasted.status.success(), "{pasted:?}");
    // The partner proposes the launch again: the question shows twice.
    let question = "Launch the team on these 4 modules? [y/N]";
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while s.screen().matches(question).count() < 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "the pasted line was not answered:\n{}",
            s.screen()
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    s.type_line("n");
    s.key("C-d");
    let screen = s.wait_for("EXIT:");
    assert!(screen.contains("EXIT:0"), "{screen}");
}
