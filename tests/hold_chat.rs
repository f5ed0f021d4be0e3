//! Issue 28, finding 14: `chat --resume` after a kill between the run's
//! end and its report never showed the report and never took the memory
//! note. The crash point aborts the chat right after its run ended,
//! before the chat heard of it.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Output, Stdio};

mod support;

/// `boardroom chat ARGS` in `dir` told `input`, with `env` set; killed
/// (and failed) past 60 s.
fn chat(dir: &Path, args: &[&str], input: &str, env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(support::cli::BIN);
    cmd.arg("chat")
        .args(args)
        .current_dir(dir)
        .env("BOARDROOM_HOME", dir)
        .env("BOARDROOM_RUNS_DIR", "runs")
        .env("BOARDROOM_CHATS_DIR", "chats")
        .env_remove("BOARDROOM_MODEL")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("RUST_LOG")
        .env_remove("BOARDROOM_TEST_CRASH_AT")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).unwrap();
    drop(stdin);
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let o = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = out.read_to_end(&mut b);
        b
    });
    let e = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = err.read_to_end(&mut b);
        b
    });
    let status = support::cli::exit_within(
        &mut child,
        std::time::Duration::from_secs(60),
        "the chat did not end",
    );
    Output {
        status,
        stdout: o.join().unwrap(),
        stderr: e.join().unwrap(),
    }
}

fn only(dir: &Path) -> String {
    let names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "memory")
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
    names[0].clone()
}

#[test]
fn issue28_chat_resume_after_a_kill_before_the_report_shows_it_and_keeps_the_note() {
    let tmp = tempfile::tempdir().unwrap();
    let out = chat(
        tmp.path(),
        &["--model", "sim"],
        "Plan a team offsite\nabout 20 people, two days\ny\n",
        &[("BOARDROOM_TEST_CRASH_AT", "chat-run-ended")],
    );
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), None, "aborted: {said}");
    assert!(!said.contains("──── report"), "{said}");
    let chat_id = only(&tmp.path().join("chats"));
    let run_id = only(&tmp.path().join("runs"));
    // The kill came before the note too (as after the run's last
    // snapshot): the memory holds none.
    let memory = tmp.path().join("runs").join("memory");
    for e in std::fs::read_dir(&memory).unwrap() {
        std::fs::remove_file(e.unwrap().path()).unwrap();
    }

    let out = chat(
        tmp.path(),
        &["--resume", &chat_id, "--model", "sim"],
        "",
        &[],
    );
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{said}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        said.contains(&format!(
            "run {run_id} finished while the chat was away; its report follows"
        )),
        "{said}"
    );
    assert!(said.contains("──── report (runs/"), "{said}");
    let notes: String = std::fs::read_dir(&memory)
        .unwrap()
        .filter_map(|e| std::fs::read_to_string(e.unwrap().path()).ok())
        .collect();
    assert!(notes.contains(&format!("## run {run_id}")), "{notes}");

    // Shown once: a second resume has nothing more to report.
    let out = chat(
        tmp.path(),
        &["--resume", &chat_id, "--model", "sim"],
        "",
        &[],
    );
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(!said.contains("──── report"), "{said}");
}
