//! The live view in a real terminal (issue 9): tmux runs `boardroom run`
//! with a slow sim, and the test captures the screen as the run goes. Every
//! phase shows a live line (agent, what it does, elapsed time), a log line
//! prints whole above the live lines (never through them), and nothing is
//! left spinning when the run ends. Needs tmux (`scripts/setup-tmux.sh`).

use std::time::{Duration, Instant};

mod support;

use support::tmux::{Session, tmux};

const SPINNER: &[char] = &['⠁', '⠂', '⠄', '⡀', '⢀', '⠠', '⠐', '⠈'];

#[test]
fn every_phase_shows_a_live_line_and_log_lines_never_tear_it() {
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path().join("runs");
    let name = format!("boardroom-live-{}", std::process::id());
    // never_done: plan, round 1, challenge, review, then the final answer at
    // the round cap, and the memory note; fail=writer: a WARN log line.
    // Each call takes 3 s: the screen is sampled every 150 ms, and a phase
    // shown for under a second could be missed by a sampler held up on a
    // loaded machine.
    let script = format!(
        "RUST_LOG=warn '{bin}' run 'Write a short guide to brewing green tea' \
         --model 'sim:latency=3s,never_done,fail=writer' --rounds 1 --runs-dir '{runs}' \
         >/dev/null; echo \"EXIT:$?\"; sleep 60",
        bin = env!("CARGO_BIN_EXE_boardroom"),
        runs = runs.display()
    );
    let _session = Session::start(&name, "160", &script);

    let mut screens: Vec<String> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let out = tmux(&["capture-pane", "-p", "-t", &name]);
        let screen = String::from_utf8_lossy(&out.stdout).into_owned();
        let over = screen.contains("EXIT:");
        screens.push(screen);
        if over {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the run did not end: {screens:?}"
        );
        std::thread::sleep(Duration::from_millis(150));
    }
    let last = screens.last().unwrap().clone();
    // fail=writer: a partial success, exit 4.
    assert!(last.contains("EXIT:4"), "{last}");

    // A live line during each phase: agent · what it does · elapsed.
    for (phase, what) in [
        ("plan", "master · planning the work"),
        ("round", " · r1 drafting: "),
        ("challenge", " · reading the board of round 1"),
        ("review", "master · reviewing round 1"),
        ("final", "master · writing the final answer"),
    ] {
        let live = screens
            .iter()
            .flat_map(|s| s.lines())
            .find(|l| l.contains(what) && l.trim_start().starts_with(SPINNER) && l.contains('s'));
        assert!(
            live.is_some(),
            "no live line during {phase} ({what}): {screens:#?}"
        );
    }

    // The log line is whole, on a line of its own, never inside a live line.
    let warns: Vec<&str> = screens
        .iter()
        .flat_map(|s| s.lines())
        .filter(|l| l.contains("WARN"))
        .collect();
    assert!(
        !warns.is_empty(),
        "the failing writer logs a warning: {last}"
    );
    for w in &warns {
        assert!(
            w.starts_with("WARN  boardroom") && w.contains("writer (draft) round 1: "),
            "torn log line: {w:?}"
        );
    }
    // Nothing left spinning once the run is over.
    assert!(
        !last.lines().any(|l| l.trim_start().starts_with(SPINNER)),
        "a frozen live line: {last}"
    );
}

/// A log line carries a server's text (a WARN for a refused call): on the
/// live view it prints above the live lines with escape sequences shown
/// escaped, never obeyed by the terminal (a screen clear, colours).
#[test]
fn a_log_line_with_escape_sequences_is_shown_escaped() {
    let server = support::Server::start(|req| {
        if req.all_text().contains("Split this task") {
            support::Reply::answer(req, "ASSIGN:writer:write it")
        } else {
            support::Reply::status(
                400,
                r#"{"error":{"message":"\u001b[2J\u001b[31mRED-ALERT\u001b[0m"}}"#,
            )
        }
    });
    let tmp = tempfile::tempdir().unwrap();
    let name = format!("boardroom-esc-{}", std::process::id());
    let script = format!(
        "RUST_LOG=warn '{bin}' run 'Write x' --model '{url}#m' --rounds 1 \
         --runs-dir '{runs}' >/dev/null; echo \"EXIT:$?\"; sleep 60",
        bin = env!("CARGO_BIN_EXE_boardroom"),
        url = server.base_url(),
        runs = tmp.path().join("runs").display()
    );
    let _session = Session::start(&name, "400", &script);
    let deadline = Instant::now() + Duration::from_secs(60);
    let screen = loop {
        let out = tmux(&["capture-pane", "-p", "-J", "-S", "-", "-t", &name]);
        let screen = String::from_utf8_lossy(&out.stdout).into_owned();
        if screen.contains("EXIT:") {
            break screen;
        }
        assert!(Instant::now() < deadline, "the run did not end: {screen}");
        std::thread::sleep(Duration::from_millis(150));
    };
    // A log line that follows a progress line of the pane's full width is
    // on the next row, but `capture-pane -J` joins the soft wrap: read the
    // WARN line from where it starts.
    let warn = screen
        .lines()
        .find_map(|l| l.find("WARN").map(|at| &l[at..]));
    assert!(
        warn.is_some_and(|w| w.contains("\\u{1b}[31mRED-ALERT")),
        "the WARN line shows the escapes: {screen}"
    );
}
