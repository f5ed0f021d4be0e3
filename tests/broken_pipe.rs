//! Issue 15: stdout closed by its reader (`boardroom run .. | head -c1`)
//! ends the program quietly with exit 0, through the write's
//! `ErrorKind::BrokenPipe`, not by matching a panic's text. The reader is
//! a real pipe whose reading end is closed before boardroom starts, so no
//! byte can land in the pipe's buffer first (closing it after the spawn
//! raced with a quick `runs`, which then wrote its listing and went on).

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs boardroom with `args`, its stdout a pipe whose reading end is
/// closed before it starts; returns the exit code and stderr.
fn with_closed_stdout(args: &[&str], runs: &Path) -> (Option<i32>, String) {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader); // the reader goes away before any output
    let mut child = Command::new(env!("CARGO_BIN_EXE_boardroom"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("BOARDROOM_RUNS_DIR", runs)
        .env_remove("BOARDROOM_MODEL")
        .env_remove("RUST_LOG")
        .env_remove("OPENAI_BASE_URL")
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let mut stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        stderr.read_to_string(&mut text).ok();
        text
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            child.kill().ok();
            child.wait().ok();
            panic!("boardroom {args:?} did not end with its stdout closed");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (status.code(), reader.join().unwrap())
}

#[test]
fn a_closed_stdout_ends_run_and_runs_quietly() {
    let runs = tempfile::tempdir().unwrap();
    let (code, stderr) = with_closed_stdout(&["run", "Plan a picnic"], runs.path());
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("master reviewed round 1"),
        "the run ran: {stderr}"
    );
    for noise in ["panicked", "Broken pipe", "cannot write"] {
        assert!(!stderr.contains(noise), "{noise}: {stderr}");
    }

    let (code, stderr) = with_closed_stdout(&["runs"], runs.path());
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stderr, "");
}
