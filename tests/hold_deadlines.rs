//! Issue 28, finding 8: a run's time limit holds against a call in
//! flight. A server that accepts and never answers cannot keep a run
//! with `--timeout` past it (bounds here are generous: they prove "does
//! not hang", not speed).

mod support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use support::cli::{exit_within, text};
use support::{Reply, Server};

fn boardroom(args: &[&str], dir: &Path) -> Command {
    let mut cmd = Command::new(support::cli::bin());
    cmd.args(args)
        .current_dir(dir)
        .env("BOARDROOM_RUNS_DIR", dir.join("runs"))
        .env("BOARDROOM_HOME", dir.join("home"))
        .env_remove("BOARDROOM_MODEL")
        .env_remove("RUST_LOG")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// Reads the child's output after it exited.
fn output(child: std::process::Child) -> (String, String) {
    let out = child.wait_with_output().unwrap();
    (text(&out.stdout), text(&out.stderr))
}

/// The plan call hangs: `--timeout 2s` ends the run (about 2 s, bounded
/// here by 60 s; the model's own call deadline is 300 s) as failed, exit
/// 1, with a message that names the time limit.
#[test]
fn finding8_run_timeout_bounds_a_call_in_flight() {
    let server = Server::start(|_| Reply::Hang);
    let dir = tempfile::tempdir().unwrap();
    let url = server.base_url();
    let mut child = boardroom(
        &[
            "run",
            "Say hello",
            "--model",
            &format!("{url}#m"),
            "--timeout",
            "2s",
        ],
        dir.path(),
    )
    .spawn()
    .unwrap();
    let status = exit_within(
        &mut child,
        Duration::from_secs(60),
        "the run outlived its --timeout 2s by a minute",
    );
    let (_, stderr) = output(child);
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("time limit"), "{stderr}");
    assert!(server.requests() >= 1 || server.connections() >= 1);
}

/// The master has answered; the memory note's call hangs. The answer is
/// printed and the run exits 0 within a bound far below the model's call
/// deadline (300 s).
#[test]
fn finding8_a_hanging_memory_note_does_not_hold_the_answer() {
    let server = Server::start(|req| {
        if req.all_text().contains("worth remembering") {
            Reply::Hang
        } else {
            Reply::one_round(req, "writer", "The answer.")
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let url = server.base_url();
    let mut child = boardroom(
        &["run", "Say hello", "--model", &format!("{url}#m")],
        dir.path(),
    )
    .spawn()
    .unwrap();
    let status = exit_within(
        &mut child,
        Duration::from_secs(120),
        "a hanging memory note held the answer for two minutes",
    );
    let (stdout, stderr) = output(child);
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(stdout.contains("The answer."), "{stdout}\n{stderr}");
    assert!(
        server
            .seen()
            .iter()
            .any(|r| r.all_text().contains("worth remembering")),
        "the memory call was made"
    );
}
