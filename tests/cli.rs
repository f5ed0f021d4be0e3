//! The binary as a user meets it: exit codes, stdout vs stderr, JSON lines,
//! and error messages that name the file and line.

use std::fs;
use std::path::Path;
use std::process::Command;

mod support;

use support::cli::{boardroom, repo, text};

/// The forms of a model spec, as an unknown one lists them (issue 21).
const ACCEPTED: &str = "accepted: sim (offline), gpt-4o-mini or openai/gpt-4o-mini or \
     openai:gpt-4o-mini (OpenAI, or OPENAI_BASE_URL), ollama:llama3.2 (Ollama at OLLAMA_HOST), claude-sonnet-4-5 or anthropic:claude-sonnet-4-5 (Anthropic), \
     http://127.0.0.1:8080/v1#MODEL (any OpenAI-compatible server), or a model named in team.yaml";

#[test]
fn run_prints_progress_on_stderr_and_the_answer_on_stdout() {
    let out = boardroom(&["run", "Write a short guide to brewing green tea"], repo());
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.starts_with("boardroom: no model configured, using the offline 'sim' model"),
        "{stderr}"
    );
    assert!(
        stderr.contains("round 1 · 4 assignments on 4 threads"),
        "{stderr}"
    );
    assert!(
        stderr.contains("✓ writer put a draft on the board"),
        "{stderr}"
    );
    assert!(stderr.contains("master reviewed round 1: DONE"), "{stderr}");
    assert!(
        stdout.starts_with("# A short guide to brewing green tea\n\n> Simulated answer: "),
        "{stdout}"
    );
    assert!(!stdout.contains("round 1"), "progress stays off stdout");
}

#[test]
fn json_prints_one_event_per_line() {
    let out = boardroom(
        &[
            "run",
            "--json",
            "--model",
            "sim:challenge=1",
            "Plan a picnic",
        ],
        repo(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let events: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let of = |t: &str| events.iter().filter(|e| e["type"] == t).collect::<Vec<_>>();
    let assigned: Vec<String> = of("task_assigned")
        .iter()
        .filter(|e| e["round"] == 1)
        .map(|e| e["member"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(assigned, ["analyst", "critic", "researcher", "writer"]);
    assert_eq!(
        of("challenge").len(),
        2,
        "both challengers objected in round 1"
    );
    let finished = of("run_finished");
    assert_eq!(finished.len(), 1);
    assert_eq!(finished[0]["status"], "done");
    assert_eq!(finished[0]["rounds"], 2);
    assert!(
        finished[0]["answer"]
            .as_str()
            .unwrap()
            .starts_with("# Plan a picnic")
    );
    let run_id = &events[0]["run_id"];
    assert!(
        events
            .iter()
            .all(|e| &e["run_id"] == run_id && e["agent"].is_string())
    );
}

#[test]
fn check_names_the_file_and_line_of_a_typo() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join("agents")).unwrap();
    fs::create_dir_all(dir.path().join("souls")).unwrap();
    fs::write(
        dir.path().join("agents/master.md"),
        "---\nname: master\nrole: master\n---\n",
    )
    .unwrap();
    fs::write(
        dir.path().join("agents/writer.md"),
        "---\nname: writer\nrole: member\ndescripton: Writes\n---\n",
    )
    .unwrap();
    fs::write(dir.path().join("souls/master.md"), "Lead.").unwrap();
    fs::write(dir.path().join("souls/writer.md"), "Write.").unwrap();
    let out = boardroom(&["check", "--team", "."], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr).trim(),
        "error: ./agents/writer.md:4: unknown key 'descripton' (did you mean 'description'?)"
    );
    let out = boardroom(&["run", "--team", ".", "x"], dir.path());
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn check_lists_the_shipped_team() {
    let out = boardroom(&["check"], repo());
    assert_eq!(out.status.code(), Some(0));
    let stdout = text(&out.stdout);
    assert!(
        stdout.starts_with("team 'default' (.): 6 agents"),
        "{stdout}"
    );
    assert!(stdout.contains("  partner partner"), "{stdout}");
    assert!(stdout.contains("critic") && stdout.contains("[can challenge]"));
}

#[test]
fn the_built_in_team_is_used_outside_a_team_directory() {
    let dir = tempfile::tempdir().unwrap();
    let out = boardroom(&["check"], dir.path());
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stdout).starts_with("team 'default' (built in): 6 agents"));
    let out = boardroom(&["run", "Name three teas"], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[test]
fn bad_input_exits_2_and_a_failed_run_exits_1() {
    let out = boardroom(&["run", "--model", "gtp5", "x"], repo());
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).starts_with("error: model spec 'gtp5': unknown model 'gtp5' (accepted: "),
        "{}",
        text(&out.stderr)
    );
    let out = boardroom(&["run", "  "], repo());
    assert_eq!(out.status.code(), Some(2));
    let out = boardroom(&["run", "--rounds", "many", "x"], repo());
    assert_eq!(out.status.code(), Some(2));
    // The master's model fails: no answer is possible.
    let out = boardroom(&["run", "--model", "sim:fail=master", "x"], repo());
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("error: master (plan): simulated failure for 'master'"));
}

#[test]
fn rounds_flag_caps_the_rounds() {
    let out = boardroom(
        &[
            "run",
            "--json",
            "--rounds",
            "2",
            "--model",
            "sim:never_done",
            "x",
        ],
        repo(),
    );
    assert_eq!(out.status.code(), Some(0));
    let last = text(&out.stdout).lines().last().unwrap().to_string();
    let v: serde_json::Value = serde_json::from_str(&last).unwrap();
    assert_eq!(v["type"], "run_finished");
    assert_eq!(v["status"], "round_limit");
    assert_eq!(v["rounds"], 2);
}

#[test]
fn no_async_runtime_in_the_dependency_tree() {
    let lock = fs::read_to_string(repo().join("Cargo.lock")).expect("Cargo.lock is committed");
    for name in [
        "tokio",
        "async-std",
        "smol",
        "futures-executor",
        "async-executor",
    ] {
        assert!(
            !lock.contains(&format!("name = \"{name}\"")),
            "{name} is in Cargo.lock: find what pulls it in with `cargo tree -i {name}`"
        );
    }
}

#[test]
fn a_panicking_member_is_an_error_line_not_a_backtrace() {
    let out = boardroom(
        &["run", "--model", "sim:panic=writer", "Plan a picnic"],
        repo(),
    );
    let stderr = text(&out.stderr);
    // A partial success: the answer came from the other drafts (exit 4).
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(
        stderr.contains("partial: 1 of 4 drafts failed; the answer was made from the rest"),
        "{stderr}"
    );
    assert!(
        stderr.contains("✗ writer panicked: sim: simulated panic in 'writer'"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("panicked at"),
        "no raw panic report: {stderr}"
    );
}

/// A team directory with one member whose `model:` is `model`.
fn team_with_member_model(dir: &Path, model: &str, yaml: &str) {
    fs::create_dir_all(dir.join("agents")).unwrap();
    fs::create_dir_all(dir.join("souls")).unwrap();
    fs::write(
        dir.join("agents/lead.md"),
        "---\nname: lead\nrole: master\n---\n",
    )
    .unwrap();
    fs::write(
        dir.join("agents/writer.md"),
        format!("---\nname: writer\nrole: member\nmodel: {model}\n---\n"),
    )
    .unwrap();
    fs::write(dir.join("souls/lead.md"), "You lead.").unwrap();
    fs::write(dir.join("souls/writer.md"), "You write.").unwrap();
    fs::write(dir.join("team.yaml"), yaml).unwrap();
}

#[test]
fn a_misspelt_model_name_gets_a_did_you_mean_in_check_and_run() {
    // Issue 9: `model: fastt` passed `check` and failed at run time.
    let dir = tempfile::tempdir().unwrap();
    team_with_member_model(dir.path(), "fastt", "models:\n  fast: sim\n");
    let out = boardroom(&["check"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr).trim(),
        format!(
            "error: ./agents/writer.md:4: model: model spec 'fastt': unknown model 'fastt' ({ACCEPTED}) (did you mean 'fast'?)"
        )
    );
    let out = boardroom(&["run", "Task", "--model", "sim"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains(&format!("agents/writer.md:4: model: model spec 'fastt': unknown model 'fastt' ({ACCEPTED}) (did you mean 'fast'?)")),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn openai_with_no_key_and_no_url_says_so_before_any_request() {
    let out = Command::new(env!("CARGO_BIN_EXE_boardroom"))
        .args(["run", "Task", "--model", "openai"])
        .current_dir(repo())
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env("BOARDROOM_RUNS_DIR", tempfile::tempdir().unwrap().path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).starts_with(
            "error: --model openai: OPENAI_API_KEY and OPENAI_BASE_URL are unset: set OPENAI_API_KEY for the OpenAI API, or OPENAI_BASE_URL for another"
        ),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn the_time_limit_ends_the_run_with_the_drafts_so_far() {
    // Issue 8 finding 5: `--timeout` ends the run with the best answer on the
    // board (status timed_out), like the token budget.
    let runs = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_boardroom"))
        .args([
            "run",
            "Write a guide",
            "--model",
            "sim:latency=400ms,never_done",
        ])
        // 3 s: the plan and the first drafts (800 ms of latency) must fit
        // before the limit on a loaded machine (1.5 s raced).
        .args(["--rounds", "20", "--timeout", "3s", "--json"])
        .arg("--runs-dir")
        .arg(runs.path())
        .current_dir(repo())
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let last: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(last["type"], "run_finished");
    assert_eq!(last["status"], "timed_out");
    let answer = last["answer"].as_str().unwrap();
    assert!(
        answer.starts_with("The run's time limit (3s) ran out; the drafts so far:")
            && answer.contains("## "),
        "{answer}"
    );
    // Calls in flight finish, nothing new starts: few calls past the limit.
    // Steps of 400 ms: at most 8 start within 3 s (the plan, then drafts,
    // challenges, review, drafts, ...: 19 calls); 20 rounds would be 140.
    let calls = stdout
        .lines()
        .filter(|l| l.contains("\"type\":\"call_started\""))
        .count();
    assert!(calls <= 24, "{calls} calls");
}

#[test]
fn a_time_limit_before_any_draft_fails_the_run() {
    let dir = tempfile::tempdir().unwrap();
    team_with_member_model(dir.path(), "default", "timeout: 300ms\n");
    let out = boardroom(&["run", "Task", "--model", "sim:latency=500ms"], dir.path());
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr)
            .contains("failed: the time limit ran out before any member produced a usable draft"),
        "{}",
        text(&out.stderr)
    );
    assert!(text(&out.stdout).trim().is_empty());
}

#[test]
fn the_token_budget_flag_has_its_new_name_and_the_old_one_still_works() {
    for flag in ["--token-budget", "--max-tokens"] {
        let out = boardroom(&["run", "Plan a picnic", flag, "1500", "--json"], repo());
        let stdout = text(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{flag}: {}", text(&out.stderr));
        assert!(stdout.contains("\"status\":\"budget_exhausted\""), "{flag}");
    }
    let help = boardroom(&["run", "--help"], repo());
    let help = text(&help.stdout);
    assert!(
        help.contains("--token-budget <N>") && !help.contains("--max-tokens"),
        "{help}"
    );
}

#[test]
fn show_json_is_the_whole_run_and_show_board_puts_the_answer_last() {
    let runs = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_boardroom"))
            .args(args)
            .arg("--runs-dir")
            .arg(runs.path())
            .current_dir(repo())
            .env_remove("BOARDROOM_MODEL")
            .output()
            .unwrap()
    };
    let out = run(&["run", "Plan a picnic", "--model", "sim"]);
    assert_eq!(out.status.code(), Some(0));
    let answer = text(&out.stdout);
    let json = run(&["show", "last", "--json"]);
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(doc["run"]["status"], "done");
    assert_eq!(doc["run"]["answer"].as_str().unwrap().trim(), answer.trim());
    assert!(!doc["turns"].as_array().unwrap().is_empty());
    let shown = text(&run(&["show", "last", "--board"]).stdout);
    let board_at = shown.find("== board").unwrap();
    let answer_at = shown.find("== answer").unwrap();
    assert!(board_at < answer_at, "{shown}");
    assert!(shown.trim_end().ends_with(answer.trim()), "{shown}");
}

#[test]
fn runs_columns_align_whatever_the_status() {
    // Issue 9: a long status ("failed, resumable") pushed the columns.
    let runs = tempfile::tempdir().unwrap();
    let go = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_boardroom"))
            .args(args)
            .arg("--runs-dir")
            .arg(runs.path())
            .current_dir(repo())
            .env_remove("BOARDROOM_MODEL")
            .output()
            .unwrap()
    };
    assert_eq!(
        go(&["run", "Plan a picnic", "--model", "sim"])
            .status
            .code(),
        Some(0)
    );
    let failed = go(&[
        "run",
        "Plan a picnic",
        "--model",
        "sim:latency=400ms",
        "--timeout",
        "200ms",
    ]);
    assert_eq!(failed.status.code(), Some(1), "{}", text(&failed.stderr));
    let listed = text(&go(&["runs"]).stdout);
    let lines: Vec<&str> = listed.lines().collect();
    assert_eq!(lines.len(), 2, "{listed}");
    assert!(
        listed.contains("  done  ") && listed.contains("failed, resumable"),
        "{listed}"
    );
    let at: Vec<usize> = lines.iter().map(|l| l.find(" rounds ").unwrap()).collect();
    assert_eq!(at[0], at[1], "{listed}");
}

/// Model text is untrusted: escape sequences (a window-title OSC, a screen
/// clear, colours) and bidirectional overrides in a challenge or a draft
/// are shown escaped in the progress lines, never sent raw to the terminal.
#[test]
fn escape_sequences_in_model_text_never_reach_the_terminal_raw() {
    let server = support::Server::start(|req| {
        let text = req.all_text();
        let reply = if text.contains("Split this task") {
            "ASSIGN:writer:write it\nASSIGN:critic:check it".to_string()
        } else if text.contains("## The challenge round") {
            "CHALLENGE: \u{1b}]0;PWNED\u{7}\u{1b}[31mred\u{202e}evil".to_string()
        } else if text.contains("<assignment>") {
            "A draft \u{1b}[2J with a clear-screen.".to_string()
        } else {
            "DONE\nThe answer.".to_string()
        };
        support::Reply::answer(req, &reply)
    });
    let model = format!("{}#m", server.base_url());
    let out = boardroom(
        &["run", "Write x", "--rounds", "1", "--model", &model],
        repo(),
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("challenges:"),
        "a challenge was shown: {stderr}"
    );
    assert!(!stderr.contains('\u{1b}'), "raw ESC on stderr: {stderr:?}");
    assert!(!stderr.contains('\u{7}'), "raw BEL on stderr: {stderr:?}");
    assert!(
        !stderr.contains('\u{202e}'),
        "raw bidi override: {stderr:?}"
    );
    assert!(
        stderr.contains("\\u{1b}]0;PWNED"),
        "shown escaped: {stderr}"
    );
}

/// A server's error text is untrusted too: the `error:` line that ends a
/// run shows its escape sequences escaped.
#[test]
fn escape_sequences_in_a_server_error_never_reach_the_terminal_raw() {
    let server = support::Server::start(|_| {
        support::Reply::status(
            400,
            r#"{"error":{"message":"bad \u001b]0;PWNED\u0007\u001b[2J request"}}"#,
        )
    });
    let model = format!("{}#m", server.base_url());
    let out = boardroom(&["run", "Write x", "--model", &model], repo());
    let stderr = text(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("PWNED"),
        "the server's text is shown: {stderr}"
    );
    assert!(!stderr.contains('\u{1b}'), "raw ESC on stderr: {stderr:?}");
    assert!(!stderr.contains('\u{7}'), "raw BEL on stderr: {stderr:?}");
}
