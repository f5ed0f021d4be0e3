//! Issue 27, tool-call approval on the command line: a writer whose
//! `workspace_write` needs approval (`approve:` in its front matter) is
//! driven by a loopback OpenAI-compatible server the test starts. On a
//! terminal (tmux) `boardroom run` asks inline; without one the run exits
//! 3, saved, and `resume --approve` / `--deny` goes on. A denied write
//! never creates its file (counted at the tool: the workspace). `check`
//! names the file and line of a bad pattern. Needs tmux
//! (`scripts/setup-tmux.sh`).

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::json;
use support::tmux::Session;
use support::{Reply, Request, Server};

/// The loopback model: the lead assigns; the writer (offered its tools)
/// asks to write `secret.txt`, then drafts what the tool answered; the
/// lead is done once a draft is on the board.
fn brain(req: &Request) -> Reply {
    let has_tools = req.body["tools"].as_array().is_some_and(|t| !t.is_empty());
    let messages = req.body["messages"].as_array().cloned().unwrap_or_default();
    let tool_result = messages
        .iter()
        .find(|m| m["role"] == "tool")
        .and_then(|m| m["content"].as_str().map(str::to_string));
    if has_tools {
        return match tool_result {
            Some(text) => Reply::completion(&format!("Draft: {text}")),
            None => Reply::status(
                200,
                &json!({"id": "x", "object": "chat.completion",
                    "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                        "role": "assistant", "content": null,
                        "tool_calls": [{"id": "call-w1", "type": "function", "function": {
                            "name": "workspace_write",
                            "arguments": "{\"path\":\"secret.txt\",\"content\":\"launch codes\"}"}}]}}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
                .to_string(),
            ),
        };
    }
    if req.all_text().contains("Draft: ") {
        Reply::completion("DONE\nThe writer is finished.")
    } else {
        Reply::completion("ASSIGN:writer:Write the file")
    }
}

/// A team whose writer may write files, each write approved first.
fn team(dir: &Path) -> PathBuf {
    let team = dir.join("team");
    std::fs::create_dir_all(team.join("agents")).unwrap();
    std::fs::create_dir_all(team.join("souls")).unwrap();
    std::fs::write(
        team.join("agents/lead.md"),
        "---\nname: lead\nrole: master\n---\n",
    )
    .unwrap();
    std::fs::write(
        team.join("agents/writer.md"),
        "---\nname: writer\nrole: member\ndescription: Writes files\n\
         tools: [workspace_write]\napprove:\n  - workspace_write\n---\n",
    )
    .unwrap();
    std::fs::write(team.join("souls/lead.md"), "You lead.").unwrap();
    std::fs::write(team.join("souls/writer.md"), "You write.").unwrap();
    team
}

fn model(server: &Server) -> String {
    format!("{}#m,stream=false", server.base_url())
}

/// `boardroom ARGS` with stdin closed (no terminal).
fn boardroom(args: &[&str], home: &Path) -> Output {
    support::cli::hermetic(args, home, home)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

fn the_run(runs: &Path) -> PathBuf {
    std::fs::read_dir(runs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.join("run.json").is_file())
        .expect("a saved run")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Without a terminal: exit 3 and the run saved as awaiting_approval,
/// then `resume --deny` (the file is never written, the model reads the
/// reason) and, on a second run, `resume --approve` (it is).
#[test]
fn without_a_terminal_the_run_exits_3_and_resume_decides() {
    let server = Server::start(brain);
    let tmp = tempfile::tempdir().unwrap();
    let team = team(tmp.path());
    let (team_arg, model) = (team.to_str().unwrap(), model(&server));
    for (flag, written) in [("--deny", false), ("--approve", true)] {
        let runs = tmp.path().join(format!("runs{flag}"));
        let runs_arg = runs.to_str().unwrap();
        let out = boardroom(
            &[
                "run",
                "--team",
                team_arg,
                "--model",
                &model,
                "--no-memory",
                "--runs-dir",
                runs_arg,
                "Write it",
            ],
            tmp.path(),
        );
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{err}");
        assert!(
            err.contains("waiting for approval of 1 tool call(s):"),
            "{err}"
        );
        assert!(err.contains("call-w1: writer → workspace_write"), "{err}");
        assert!(err.contains("--approve call-w1"), "{err}");
        let dir = the_run(&runs);
        let run = std::fs::read_to_string(dir.join("run.json")).unwrap();
        assert!(run.contains("\"status\": \"awaiting_approval\""), "{run}");
        let events = std::fs::read_to_string(dir.join("events.jsonl")).unwrap();
        assert!(
            events.contains("\"type\":\"approval_requested\""),
            "{events}"
        );
        assert!(!dir.join("workspace/secret.txt").exists());

        // A call the run does not wait for is bad input.
        let id = dir.file_name().unwrap().to_str().unwrap().to_string();
        let out = boardroom(
            &[
                "resume",
                &id,
                "--runs-dir",
                runs_arg,
                "--approve",
                "call-zz",
            ],
            tmp.path(),
        );
        assert_eq!(out.status.code(), Some(2));
        assert!(
            text(&out.stderr).contains("no tool call 'call-zz' waits for a decision"),
            "{}",
            text(&out.stderr)
        );

        let mut args = vec!["resume", &id, "--runs-dir", runs_arg, flag, "call-w1"];
        if flag == "--deny" {
            args.extend(["--reason", "not in this workspace"]);
        }
        let out = boardroom(&args, tmp.path());
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let run = std::fs::read_to_string(dir.join("run.json")).unwrap();
        assert!(run.contains("\"status\": \"done\""), "{run}");
        assert_eq!(dir.join("workspace/secret.txt").exists(), written, "{flag}");
        let turns = std::fs::read_to_string(dir.join("turns.jsonl")).unwrap();
        if written {
            assert_eq!(
                std::fs::read_to_string(dir.join("workspace/secret.txt")).unwrap(),
                "launch codes"
            );
        } else {
            assert!(
                turns.contains("the user denied this call of 'workspace_write'; it did not run. Their reason: not in this workspace"),
                "{turns}"
            );
        }
        // A decision for a finished run is refused, never ignored.
        let out = boardroom(
            &["resume", &id, "--runs-dir", runs_arg, flag, "call-w1"],
            tmp.path(),
        );
        assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
        assert!(
            text(&out.stderr).contains("no tool call 'call-w1' waits for a decision"),
            "{}",
            text(&out.stderr)
        );
        let events = std::fs::read_to_string(dir.join("events.jsonl")).unwrap();
        let decided = if written { "approved" } else { "denied" };
        assert!(
            events.contains(&format!("\"type\":\"approval_decided\",\"id\":\"call-w1\",\"tool\":\"workspace_write\",\"decision\":\"{decided}\"")),
            "{events}"
        );
    }
}

/// On a terminal the run asks inline and goes on with the answer: a
/// denial (the file is never written), an edit (the edited write runs),
/// and an empty line (decide later: the run saves, exit 3).
#[test]
fn on_a_terminal_run_asks_inline() {
    let server = Server::start(brain);
    let tmp = tempfile::tempdir().unwrap();
    let team = team(tmp.path());
    for (answer, file, content) in [
        ("", None, None),
        ("d not today", None, None),
        (
            r#"e {"path":"other.txt","content":"edited"}"#,
            Some("other.txt"),
            Some("edited"),
        ),
    ] {
        let runs = tempfile::tempdir().unwrap();
        let name = format!("boardroom-approve-{}-{}", std::process::id(), answer.len());
        let script = format!(
            "cd '{dir}' && '{bin}' run --team '{team}' --model '{model}' --no-memory --runs-dir '{runs}' 'Write it' >/dev/null; \
             echo \"EXIT:$?\"; sleep 60",
            dir = tmp.path().display(),
            bin = env!("CARGO_BIN_EXE_boardroom"),
            team = team.display(),
            model = model(&server),
            runs = runs.path().display(),
        );
        let s = Session::start(&name, "200", &script);
        s.wait_for("writer asks to run workspace_write with");
        s.wait_for("    {\"content\":\"launch codes\",\"path\":\"secret.txt\"}");
        s.wait_for("call-w1: [a]pprove, [d]eny [REASON], [e]dit [JSON], empty: decide later");
        s.type_line(answer);
        let screen = s.wait_for("EXIT:");
        let dir = the_run(runs.path());
        assert!(!dir.join("workspace/secret.txt").exists(), "{screen}");
        if answer.is_empty() {
            assert!(screen.contains("EXIT:3"), "{screen}");
            let run = std::fs::read_to_string(dir.join("run.json")).unwrap();
            assert!(run.contains("\"status\": \"awaiting_approval\""), "{run}");
            continue;
        }
        assert!(screen.contains("EXIT:0"), "{screen}");
        if let (Some(file), Some(content)) = (file, content) {
            assert_eq!(
                std::fs::read_to_string(dir.join("workspace").join(file)).unwrap(),
                content
            );
        } else {
            let turns = std::fs::read_to_string(dir.join("turns.jsonl")).unwrap();
            assert!(turns.contains("Their reason: not today"), "{turns}");
        }
    }
}

/// `check` names the file and line of a bad pattern (exit 2).
#[test]
fn check_names_the_line_of_a_bad_pattern() {
    let tmp = tempfile::tempdir().unwrap();
    let team = team(tmp.path());
    std::fs::write(
        team.join("agents/writer.md"),
        "---\nname: writer\nrole: member\ntools: [workspace_write]\napprove:\n  - workspace_write\n  - \"remote tools\"\n---\n",
    )
    .unwrap();
    let out = Command::new(support::cli::bin())
        .args(["check", "--team", team.to_str().unwrap()])
        .env("BOARDROOM_HOME", tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    let file = team.join("agents/writer.md");
    assert!(
        err.contains(&format!(
            "{}:7: approve: bad pattern 'remote tools': ' ' is not allowed",
            file.display()
        )),
        "{err}"
    );
    std::fs::write(
        team.join("agents/writer.md"),
        "---\nname: writer\nrole: member\ntools: [workspace_write]\n---\n",
    )
    .unwrap();
    std::fs::write(team.join("team.yaml"), "name: t\napprove: [\"\"]\n").unwrap();
    let out = Command::new(support::cli::bin())
        .args(["check", "--team", team.to_str().unwrap()])
        .env("BOARDROOM_HOME", tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!(
            "{}:2: approve: an empty pattern",
            team.join("team.yaml").display()
        )),
        "{err}"
    );
    // A pattern that matches no granted tool (a typo) is warned about.
    std::fs::write(team.join("team.yaml"), "name: t\n").unwrap();
    std::fs::write(
        team.join("agents/writer.md"),
        "---\nname: writer\nrole: member\ntools: [workspace_write]\napprove: [workspace_wrte]\n---\n",
    )
    .unwrap();
    let out = Command::new(support::cli::bin())
        .args(["check", "--team", team.to_str().unwrap()])
        .env("BOARDROOM_HOME", tmp.path())
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains(&format!(
            "warning: {}:5: approve: pattern 'workspace_wrte' matches no tool granted to any \
             agent (granted: workspace_write); its tool would run without approval",
            file.display()
        )),
        "{err}"
    );
}

/// Ctrl-C while a call waits stops the run as usual (exit 130), saved with
/// the call still waiting: `resume` asks about it again.
#[test]
fn ctrl_c_while_a_call_waits_leaves_it_waiting_in_the_saved_run() {
    let server = Server::start(brain);
    let tmp = tempfile::tempdir().unwrap();
    let team = team(tmp.path());
    let runs = tmp.path().join("runs");
    let name = format!("boardroom-approve-stop-{}", std::process::id());
    let script = format!(
        "cd '{dir}' && '{bin}' run --team '{team}' --model '{model}' --no-memory --runs-dir '{runs}' 'Write it' >/dev/null; \
         echo \"EXIT:$?\"; sleep 60",
        dir = tmp.path().display(),
        bin = env!("CARGO_BIN_EXE_boardroom"),
        team = team.display(),
        model = model(&server),
        runs = runs.display(),
    );
    let s = Session::start(&name, "200", &script);
    s.wait_for("call-w1: [a]pprove, [d]eny [REASON], [e]dit [JSON], empty: decide later");
    s.key("C-c");
    let screen = s.wait_for("EXIT:");
    assert!(screen.contains("EXIT:130"), "{screen}");
    let dir = the_run(&runs);
    let saved = boardroom::store::load_run(&dir).unwrap();
    assert_eq!(saved.state.status(), boardroom::RunStatus::Cancelled);
    let pending = saved.state.pending_approvals();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].call_id, "call-w1");
    assert!(!dir.join("workspace/secret.txt").exists());
}

/// Arguments that hold a known secret (the model's API key here) are
/// masked in `approval_requested` and in the saved run, which says so;
/// a resume that would approve the masked call as it is is refused
/// (exit 2): it would run with `***`.
#[test]
fn a_call_saved_with_a_masked_secret_is_not_approved_as_it_is() {
    let server = Server::start(brain);
    let tmp = tempfile::tempdir().unwrap();
    let team = team(tmp.path());
    let runs = tmp.path().join("runs");
    let runs_arg = runs.to_str().unwrap();
    let model = format!(
        "{}#m,stream=false,key_env=APPROVE_TEST_KEY",
        server.base_url()
    );
    let run = |args: &[&str]| {
        support::cli::hermetic(args, tmp.path(), tmp.path())
            .env("APPROVE_TEST_KEY", "launch")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    };
    let out = run(&[
        "run",
        "--team",
        team.to_str().unwrap(),
        "--model",
        &model,
        "--no-memory",
        "--runs-dir",
        runs_arg,
        "Write it",
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let dir = the_run(&runs);
    let events = std::fs::read_to_string(dir.join("events.jsonl")).unwrap();
    assert!(
        events.contains(r#""type":"approval_requested","round":1,"id":"call-w1","tool":"workspace_write","arguments":"{\"path\":\"secret.txt\",\"content\":\"*** codes\"}","masked":true"#),
        "{events}"
    );
    // The paused turn is saved in state.jsonl (run.json is the summary).
    let saved = std::fs::read_to_string(dir.join("run.json")).unwrap()
        + &std::fs::read_to_string(dir.join("state.jsonl")).unwrap();
    assert!(!saved.contains("launch codes"), "{saved}");
    assert!(saved.contains("\"masked\":true"), "{saved}");
    let id = dir.file_name().unwrap().to_str().unwrap();
    let out = run(&["resume", id, "--runs-dir", runs_arg, "--approve", "call-w1"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains(
            "tool call 'call-w1': its arguments held a secret and were saved masked; \
             deny it, or resume on a terminal and edit them (e)"
        ),
        "{}",
        text(&out.stderr)
    );
    assert!(!dir.join("workspace/secret.txt").exists());
    let out = run(&["resume", id, "--runs-dir", runs_arg, "--deny", "call-w1"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(!dir.join("workspace/secret.txt").exists());
}
