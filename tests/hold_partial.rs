//! Issue 28, finding 6: no silent partial success. A run in which some
//! members' drafts failed still gives the master's answer, but says so:
//! `partial: N of M drafts failed; ...` on stderr and exit code 4.

mod support;

use std::process::{Command, Stdio};

use support::cli::text;
use support::{Reply, Server};

/// Two assignments; the critic's draft call is refused (400, not retried),
/// the writer's arrives and the master answers from it.
#[test]
fn finding6_a_run_with_failed_drafts_says_so_and_exits_4() {
    let server = Server::start(|req| {
        let text = req.all_text();
        if text.contains("Split this task") {
            Reply::answer(req, "ASSIGN:writer:write it\nASSIGN:critic:check it")
        } else if text.contains("<assignment>") && text.contains("check it") {
            Reply::status(400, r#"{"error":{"message":"no such luck"}}"#)
        } else if text.contains("Reply CHALLENGE:<...> or AGREE") {
            Reply::answer(req, "AGREE")
        } else if text.contains("<assignment>") {
            Reply::answer(req, "A draft.")
        } else if text.contains("worth remembering") {
            Reply::answer(req, "- nothing")
        } else {
            Reply::answer(req, "DONE\nThe answer.")
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(support::cli::bin())
        .args([
            "run",
            "Write x",
            "--rounds",
            "1",
            "--model",
            &format!("{}#m", server.base_url()),
        ])
        .current_dir(dir.path())
        .env("BOARDROOM_RUNS_DIR", dir.path().join("runs"))
        .env("BOARDROOM_HOME", dir.path().join("home"))
        .env_remove("BOARDROOM_MODEL")
        .env_remove("RUST_LOG")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(stdout.contains("The answer."), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("partial: 1 of 2 drafts failed; the answer was made from the rest"),
        "{stderr}"
    );
    // The failure's own text is on its ✗ line, once.
    assert_eq!(stderr.matches("no such luck").count(), 1, "{stderr}");
    assert_eq!(out.status.code(), Some(4), "{stderr}");
}
