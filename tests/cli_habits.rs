//! Issue 21: the CLI fits a user's habits. Model names as users type them
//! (a bare OpenAI name, `openai/NAME`, `ollama:NAME`), `--json` on `runs`
//! and `check`, shell completions and a man page, one home for runs and
//! chats, and messages printed once, in order, in one style.
//!
//! Every test runs the real binary; models are the offline sim or a real
//! HTTP server on 127.0.0.1; MCP servers are real processes.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod support;

use support::cli::{hermetic, repo, text};
use support::{Reply, Server};

/// `boardroom ARGS` in `dir`, saving under `home`, with `env` set.
fn run_in(args: &[&str], dir: &Path, home: &Path, env: &[(&str, &str)]) -> Output {
    let mut cmd = hermetic(args, dir, home);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("the binary runs")
}

/// The run directories under `runs`.
fn run_dirs(runs: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = fs::read_dir(runs)
        .map(|r| {
            r.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.join("run.json").is_file())
                .collect()
        })
        .unwrap_or_default();
    dirs.sort();
    dirs
}

// ---- model names as users type them --------------------------------------

#[test]
fn a_bare_openai_name_and_openai_slash_name_reach_the_openai_endpoint() {
    let server = Server::start(|req| Reply::one_round(req, "writer", "Answered."));
    let (tmp, home) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    for (spec, model) in [("gpt-4o-mini", "gpt-4o-mini"), ("openai/gpt-4o", "gpt-4o")] {
        let before = server.seen().len();
        let out = run_in(
            &["run", "Write x", "--rounds", "1", "--model", spec],
            tmp.path(),
            home.path(),
            &[
                ("OPENAI_BASE_URL", &server.base_url()),
                ("OPENAI_API_KEY", "sk-test-openai"),
            ],
        );
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{spec}: {stderr}");
        assert!(
            stderr.contains(&format!("model openai:{model}")),
            "{spec}: {stderr}"
        );
        let seen = &server.seen()[before..];
        assert!(!seen.is_empty(), "{spec}: no request reached the server");
        for req in seen {
            assert_eq!(req.body["model"], model, "{spec}");
            assert_eq!(req.header("authorization"), Some("Bearer sk-test-openai"));
        }
    }
}

#[test]
fn ollama_name_reaches_ollama_host_given_as_host_port_without_a_key() {
    let server = Server::start(|req| Reply::one_round(req, "writer", "Answered by llama."));
    let (tmp, home) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    // As Ollama takes it: host:port, no scheme.
    let host = format!("127.0.0.1:{}", server.port);
    let out = run_in(
        &[
            "run",
            "Write x",
            "--rounds",
            "1",
            "--model",
            "ollama:llama3.2",
        ],
        tmp.path(),
        home.path(),
        &[
            ("OLLAMA_HOST", &host),
            // An OpenAI key in the environment is never sent to Ollama.
            ("OPENAI_API_KEY", "sk-must-not-leak"),
        ],
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stdout.contains("Answered by llama."), "{stdout}");
    let seen = server.seen();
    assert!(!seen.is_empty());
    for req in &seen {
        assert_eq!(req.path, "/v1/chat/completions");
        assert_eq!(req.body["model"], "llama3.2");
        assert_eq!(req.header("authorization"), None, "no key is sent");
    }
    assert!(!stderr.contains("OPENAI_API_KEY"), "{stderr}");
}

#[test]
fn an_unknown_provider_lists_the_accepted_forms_with_an_example_each() {
    let (tmp, home) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    for (spec, what) in [
        // Issue 26 made `anthropic:` a provider.
        ("gemini:pro", "unknown provider 'gemini'"),
        ("llama3", "unknown model 'llama3'"),
    ] {
        let out = run_in(
            &["run", "Write x", "--model", spec],
            tmp.path(),
            home.path(),
            &[],
        );
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert_eq!(
            stderr,
            format!(
                "error: model spec '{spec}': {what} (accepted: sim (offline), gpt-4o-mini or \
                 openai/gpt-4o-mini or openai:gpt-4o-mini (OpenAI, or OPENAI_BASE_URL), \
                 ollama:llama3.2 (Ollama at OLLAMA_HOST), claude-sonnet-4-5 or anthropic:claude-sonnet-4-5 (Anthropic), http://127.0.0.1:8080/v1#MODEL (any \
                 OpenAI-compatible server), or a model named in team.yaml)\n"
            )
        );
    }
}

// ---- --json on runs and check ----------------------------------------------

#[test]
fn runs_json_is_one_array_with_the_documented_fields() {
    let (tmp, home) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let runs = tmp.path().join("saved");
    let runs_arg = runs.to_str().unwrap();
    let ok = run_in(
        &[
            "run",
            "Plan a picnic",
            "--model",
            "sim",
            "--runs-dir",
            runs_arg,
        ],
        tmp.path(),
        home.path(),
        &[],
    );
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok.stderr));
    let failed = run_in(
        &[
            "run",
            "Plan a walk",
            "--model",
            "sim:fail=master",
            "--runs-dir",
            runs_arg,
        ],
        tmp.path(),
        home.path(),
        &[],
    );
    assert_eq!(failed.status.code(), Some(1), "{}", text(&failed.stderr));
    let out = run_in(
        &["runs", "--json", "--runs-dir", runs_arg],
        tmp.path(),
        home.path(),
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not one JSON document ({e}): {}", text(&out.stdout)));
    let listed = listed.as_array().expect("an array");
    assert_eq!(listed.len(), 2, "{listed:?}");
    let dirs = run_dirs(&runs);
    let done = &listed[0];
    assert_eq!(done["id"], dirs[0].file_name().unwrap().to_str().unwrap());
    assert_eq!(done["dir"], dirs[0].to_str().unwrap());
    assert_eq!(done["status"], "done");
    assert_eq!(done["resumable"], false);
    assert_eq!(done["awaiting_user"], false);
    assert_eq!(done["team"], "default");
    assert_eq!(done["task"], "Plan a picnic");
    assert_eq!(done["rounds"], 1);
    assert!(done["tokens"]["total"].as_u64().unwrap() > 0);
    assert_eq!(
        done["tokens"]["total"].as_u64(),
        Some(
            done["tokens"]["prompt"].as_u64().unwrap()
                + done["tokens"]["completion"].as_u64().unwrap()
        )
    );
    assert!(done["time"].as_str().unwrap().starts_with("20"), "{done}");
    assert_eq!(done["error"], serde_json::Value::Null);
    assert_eq!(listed[1]["task"], "Plan a walk");
    assert_eq!(listed[1]["status"], "failed");
    // An empty directory is an empty array, not nothing.
    let empty = tmp.path().join("empty");
    let out = run_in(
        &["runs", "--json", "--runs-dir", empty.to_str().unwrap()],
        tmp.path(),
        home.path(),
        &[],
    );
    assert_eq!(text(&out.stdout).trim(), "[]");
}

#[test]
fn check_json_is_one_object_and_a_problem_is_one_too() {
    let home = tempfile::tempdir().unwrap();
    let out = run_in(&["check", "--json"], repo(), home.path(), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not one JSON document ({e}): {}", text(&out.stdout)));
    assert_eq!(doc["ok"], true);
    assert_eq!(doc["team"], "default");
    assert_eq!(doc["dir"], ".");
    assert_eq!(doc["process"], "blackboard");
    let agents = doc["agents"].as_array().unwrap();
    let names: Vec<&str> = agents.iter().map(|a| a["name"].as_str().unwrap()).collect();
    assert_eq!(names.len(), 6, "{names:?}");
    for want in ["master", "partner", "critic", "writer"] {
        assert!(names.contains(&want), "{names:?}");
    }
    let critic = agents.iter().find(|a| a["name"] == "critic").unwrap();
    assert_eq!(critic["role"], "member");
    assert_eq!(critic["can_challenge"], true);
    assert!(critic["tools"].is_array() && critic["model"].is_null());
    assert!(doc["mcp_servers"].as_array().unwrap().is_empty());

    // A broken team: `{"ok": false, "error": ...}` on stdout, the same
    // message as `error:` on stderr, exit 2.
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join("agents")).unwrap();
    fs::create_dir_all(dir.path().join("souls")).unwrap();
    fs::write(
        dir.path().join("agents/master.md"),
        "---\nname: master\nrole: mastr\n---\n",
    )
    .unwrap();
    fs::write(dir.path().join("souls/master.md"), "Lead.").unwrap();
    let out = run_in(
        &["check", "--json", "--team", "."],
        dir.path(),
        home.path(),
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["ok"], false);
    let error = doc["error"].as_str().unwrap();
    assert!(error.starts_with("./agents/master.md:3: "), "{error}");
    assert_eq!(text(&out.stderr), format!("error: {error}\n"));
}

// ---- completions and the man page ----------------------------------------

const SUBCOMMANDS: [&str; 12] = [
    "run",
    "check",
    "runs",
    "show",
    "resume",
    "memory",
    "view",
    "export",
    "chat",
    "bench",
    "completions",
    "man",
];

#[test]
fn completions_for_each_shell_name_the_subcommands() {
    let home = tempfile::tempdir().unwrap();
    let bash = run_in(&["completions", "bash"], repo(), home.path(), &[]);
    assert_eq!(bash.status.code(), Some(0), "{}", text(&bash.stderr));
    let script = text(&bash.stdout);
    assert!(script.contains("complete -F _boardroom"), "{script}");
    for sub in SUBCOMMANDS {
        assert!(
            script.contains(&format!("boardroom,{sub})")),
            "bash completes '{sub}'"
        );
    }
    assert!(script.contains("--runs-dir"), "and the flags");
    for shell in ["zsh", "fish", "powershell"] {
        let out = run_in(&["completions", shell], repo(), home.path(), &[]);
        assert_eq!(out.status.code(), Some(0), "{shell}: {}", text(&out.stderr));
        let script = text(&out.stdout);
        assert!(
            script.contains("resume") && script.contains("completions"),
            "{shell}: {script}"
        );
    }
    let bad = run_in(&["completions", "tcsh"], repo(), home.path(), &[]);
    assert_eq!(bad.status.code(), Some(2));
}

/// `page` rendered by groff with every warning on: (text, warnings).
fn groff(page: &[u8]) -> (String, String) {
    use std::io::Write as _;
    let mut child = Command::new("groff")
        .args(["-man", "-Tutf8", "-ww", "-P-cbou"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("groff is installed (apt-get install groff-base)");
    child.stdin.take().unwrap().write_all(page).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    (text(&out.stdout), text(&out.stderr))
}

#[test]
fn the_man_page_is_valid_roff_naming_every_subcommand() {
    let home = tempfile::tempdir().unwrap();
    let out = run_in(&["man"], repo(), home.path(), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains(".TH boardroom 1"));
    let (page, warnings) = groff(&out.stdout);
    assert_eq!(warnings, "", "groff warns");
    assert!(page.contains("SUBCOMMANDS"), "{page}");
    for sub in SUBCOMMANDS {
        assert!(
            page.contains(&format!("boardroom-{sub}(1)")),
            "the page names '{sub}': {page}"
        );
    }
    // One command's own page, with its flags.
    let out = run_in(&["man", "run"], repo(), home.path(), &[]);
    assert_eq!(out.status.code(), Some(0));
    let (page, warnings) = groff(&out.stdout);
    assert_eq!(warnings, "");
    assert!(
        page.contains("boardroom-run") && page.contains("--runs-dir"),
        "{page}"
    );
    let out = run_in(&["man", "nope"], repo(), home.path(), &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).starts_with("error: man: no command 'nope' (known: run, check"));
}

// ---- one home for runs and chats -------------------------------------------

#[test]
fn runs_are_saved_in_one_home_whatever_the_directory() {
    let home = tempfile::tempdir().unwrap();
    let (here, there) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    // No BOARDROOM_HOME, no XDG_DATA_HOME: ~/.local/share/boardroom.
    let run_from = |dir: &Path, task: &str| {
        let mut cmd = hermetic(&["run", task, "--model", "sim"], dir, home.path());
        cmd.env_remove("BOARDROOM_HOME");
        cmd.output().unwrap()
    };
    let out = run_from(here.path(), "Plan a picnic");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let runs = home.path().join(".local/share/boardroom/runs");
    let saved = run_dirs(&runs);
    assert_eq!(saved.len(), 1);
    assert!(
        text(&out.stderr).contains(&format!("saved in {}\n", saved[0].display())),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(
        fs::read_dir(here.path()).unwrap().count(),
        0,
        "nothing is written where the command ran"
    );
    let out = run_from(there.path(), "Plan a walk");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(run_dirs(&runs).len(), 2, "one history");
    // `runs` from anywhere lists both, and says where it looked.
    let mut cmd = hermetic(&["runs"], here.path(), home.path());
    cmd.env_remove("BOARDROOM_HOME");
    let out = cmd.output().unwrap();
    let listed = text(&out.stdout);
    assert!(
        listed.contains("Plan a picnic") && listed.contains("Plan a walk"),
        "{listed}"
    );
    assert_eq!(
        text(&out.stderr),
        format!("(2 runs in {})\n", runs.display())
    );
    // `resume` finds them there too, and its hint needs no --runs-dir.
    let mut cmd = hermetic(&["resume", "last"], there.path(), home.path());
    cmd.env_remove("BOARDROOM_HOME");
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("is already finished"));
    // A run that waits for its user names the command that answers it:
    // no --runs-dir when the default finds the run, --runs-dir otherwise.
    let mut cmd = hermetic(
        &["run", "Plan a trip", "--model", "sim:ask=Which city?"],
        here.path(),
        home.path(),
    );
    cmd.env_remove("BOARDROOM_HOME");
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    let id = run_dirs(&runs).pop().unwrap();
    let id = id.file_name().unwrap().to_str().unwrap();
    assert!(
        text(&out.stderr).contains(&format!(
            "waiting for your reply: boardroom resume {id} --message \"...\"\n"
        )),
        "{}",
        text(&out.stderr)
    );
    let elsewhere = home.path().join("elsewhere");
    let mut cmd = hermetic(
        &[
            "run",
            "Plan a trip",
            "--model",
            "sim:ask=Which city?",
            "--runs-dir",
        ],
        here.path(),
        home.path(),
    );
    cmd.arg(&elsewhere);
    let out = cmd.output().unwrap();
    let id = run_dirs(&elsewhere).pop().unwrap();
    let id = id.file_name().unwrap().to_str().unwrap();
    assert!(
        text(&out.stderr).contains(&format!(
            "waiting for your reply: boardroom resume {id} --runs-dir {} --message",
            elsewhere.display()
        )),
        "{}",
        text(&out.stderr)
    );

    // XDG_DATA_HOME, then BOARDROOM_HOME, then BOARDROOM_RUNS_DIR win.
    let xdg = home.path().join("xdg");
    let mut cmd = hermetic(&["run", "x", "--model", "sim"], here.path(), home.path());
    cmd.env_remove("BOARDROOM_HOME").env("XDG_DATA_HOME", &xdg);
    assert_eq!(cmd.output().unwrap().status.code(), Some(0));
    assert_eq!(run_dirs(&xdg.join("boardroom/runs")).len(), 1);
    let mine = home.path().join("mine");
    let mut cmd = hermetic(&["run", "x", "--model", "sim"], here.path(), &mine);
    cmd.env("XDG_DATA_HOME", &xdg);
    assert_eq!(cmd.output().unwrap().status.code(), Some(0));
    assert_eq!(run_dirs(&mine.join("runs")).len(), 1);
    let env_dir = home.path().join("env-runs");
    let mut cmd = hermetic(&["run", "x", "--model", "sim"], here.path(), &mine);
    cmd.env("BOARDROOM_RUNS_DIR", &env_dir);
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(run_dirs(&env_dir).len(), 1);
    assert_eq!(run_dirs(&mine.join("runs")).len(), 1, "unchanged");
    assert_eq!(fs::read_dir(here.path()).unwrap().count(), 0);
}

#[test]
fn chats_are_saved_in_the_same_home() {
    let home = tempfile::tempdir().unwrap();
    let here = tempfile::tempdir().unwrap();
    let mut chat = hermetic(&["chat", "--model", "sim"], here.path(), home.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write as _;
        let mut stdin = chat.stdin.take().unwrap();
        stdin.write_all(b"Hello\n").unwrap();
    }
    let out = chat.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let chats: Vec<_> = fs::read_dir(home.path().join("chats"))
        .unwrap()
        .filter_map(Result::ok)
        .collect();
    assert_eq!(chats.len(), 1, "one chat saved in the home");
    assert!(chats[0].path().join("chat.json").is_file());
    assert_eq!(fs::read_dir(here.path()).unwrap().count(), 0);
}

// ---- messages --------------------------------------------------------------

#[test]
fn a_failure_is_printed_once() {
    let (tmp, home) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    // A member fails: its ✗ line says so, no log line says it again.
    let out = run_in(
        &[
            "run",
            "Write x",
            "--rounds",
            "1",
            "--model",
            "sim:fail=writer",
        ],
        tmp.path(),
        home.path(),
        &[],
    );
    let stderr = text(&out.stderr);
    // A partial success (exit 4), counted once, the failure's text not
    // repeated.
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("simulated failure"))
        .collect();
    assert_eq!(
        lines,
        [
            "  ✗ writer failed: simulated failure for 'writer': the model is configured to fail for this agent"
        ],
        "{stderr}"
    );
    // The master fails: one `error:` line.
    let out = run_in(
        &["run", "Write x", "--model", "sim:fail=master"],
        tmp.path(),
        home.path(),
        &[],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("simulated failure"))
        .collect();
    assert_eq!(
        lines,
        [
            "error: master (plan): simulated failure for 'master': the model is configured to fail for this agent"
        ],
        "{stderr}"
    );
    // RUST_LOG=warn still shows the log line, for who asks.
    let out = run_in(
        &[
            "run",
            "Write x",
            "--rounds",
            "1",
            "--model",
            "sim:fail=writer",
        ],
        tmp.path(),
        home.path(),
        &[("RUST_LOG", "warn")],
    );
    assert!(text(&out.stderr).contains("WARN  boardroom::runtime::call] writer (draft)"));
}

#[test]
fn a_masters_unusable_directive_is_printed_once() {
    // The master's review is never a directive: the run says so once, as
    // its ✗ line, not also as a log line.
    let server = Server::start(|req| {
        let text = req.all_text();
        let reply = if text.contains("Split this task") {
            "ASSIGN:writer:write it"
        } else if text.contains("Reply CHALLENGE:<...> or AGREE") {
            "AGREE"
        } else if text.contains("<assignment>") {
            "A draft."
        } else {
            "Hmm, let me think about it."
        };
        Reply::answer(req, reply)
    });
    let (tmp, home) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let model = format!("{}#m", server.base_url());
    let out = run_in(
        &["run", "Write x", "--rounds", "1", "--model", &model],
        tmp.path(),
        home.path(),
        &[],
    );
    let stderr = text(&out.stderr);
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("no usable directive"))
        .collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(lines[0].starts_with("  ✗ master: "), "{stderr}");
}

#[test]
fn bad_input_is_reported_before_the_sim_notice_and_alone() {
    let (tmp, home) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    for (args, error) in [
        (&["run", " "][..], "error: the task is empty\n".to_string()),
        (
            &["run", "--task-file", "nope.md"][..],
            "error: --task-file nope.md: No such file or directory (os error 2)\n".to_string(),
        ),
        (
            &["run", "x", "--rounds", "2", "--team", "team"][..],
            "error: --rounds: team 'handoffs' runs the handoff process, which has no rounds of \
             parallel members: its caps are max_turns and max_handoffs in team.yaml\n"
                .to_string(),
        ),
    ] {
        fs::create_dir_all(tmp.path().join("team/agents")).unwrap();
        fs::create_dir_all(tmp.path().join("team/souls")).unwrap();
        fs::write(
            tmp.path().join("team/team.yaml"),
            "name: handoffs\nprocess: handoff\n",
        )
        .unwrap();
        fs::write(
            tmp.path().join("team/agents/a.md"),
            "---\nname: a\nrole: master\n---\n",
        )
        .unwrap();
        fs::write(tmp.path().join("team/souls/a.md"), "You answer.").unwrap();
        let out = run_in(args, tmp.path(), home.path(), &[]);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(text(&out.stderr), error, "{args:?}");
    }
    // Good input: the notice, then the run.
    let out = run_in(&["run", "Name three teas"], tmp.path(), home.path(), &[]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        text(&out.stderr)
            .starts_with("boardroom: no model configured, using the offline 'sim' model")
    );
}

#[test]
fn every_subcommand_reports_errors_with_the_error_prefix() {
    let (tmp, home) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let missing = tmp.path().join("missing");
    let missing = missing.to_str().unwrap();
    for args in [
        &["check", "--team", missing][..],
        &["run", "x", "--team", missing][..],
        &["memory", "--team", missing][..],
        &["show", "nope"][..],
        &["resume", "nope"][..],
        &["export", "nope"][..],
        &["man", "nope"][..],
    ] {
        let out = run_in(args, tmp.path(), home.path(), &[]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.starts_with("error: "), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
    }
}

#[test]
fn a_resumed_round_whose_drafts_all_landed_says_so_not_0_assignments() {
    let (tmp, home) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let out = run_in(
        &["run", "Write x", "--model", "sim"],
        tmp.path(),
        home.path(),
        &[],
    );
    assert_eq!(out.status.code(), Some(0));
    // As a run stopped after its members' drafts, before its challenge
    // round: the saved phase is still `members`.
    let dir = run_dirs(&home.path().join("runs")).remove(0);
    let path = dir.join("run.json");
    let mut record: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    record["phase"] = "members".into();
    record["status"] = "running".into();
    record["answer"] = serde_json::Value::Null;
    fs::write(&path, serde_json::to_string(&record).unwrap()).unwrap();
    let out = run_in(&["resume", "last"], tmp.path(), home.path(), &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("0 assignments"), "{stderr}");
    assert!(
        stderr.contains("round 1 · resumed with every draft already on the board"),
        "{stderr}"
    );
}

// ---- MCP servers run in the team directory ---------------------------------

/// A stdio MCP server that reports the directory it runs in: as its
/// server name, and as the text of its one tool, `where`.
const WHERE_SERVER: &str = r#"
import json, os, sys
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    method = msg.get("method")
    if method == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"],
                  "capabilities": {"tools": {}},
                  "serverInfo": {"name": os.getcwd(), "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [{"name": "where", "description": "Where the server runs.",
                             "inputSchema": {"type": "object", "properties": {}}}]}
    elif method == "tools/call":
        result = {"content": [{"type": "text", "text": "cwd=" + os.getcwd()}], "isError": False}
    else:
        print(json.dumps({"jsonrpc": "2.0", "id": msg["id"],
                          "error": {"code": -32601, "message": "no such method"}}), flush=True)
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
"#;

/// The Python interpreter as an absolute path (a version manager's shim
/// may need the caller's HOME, which the tests replace).
fn python() -> String {
    let out = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python3 is installed");
    text(&out.stdout).trim().to_string()
}

#[test]
fn an_mcp_server_without_cwd_runs_in_the_team_directory() {
    let (team, elsewhere, home) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let t = team.path();
    fs::create_dir_all(t.join("agents")).unwrap();
    fs::create_dir_all(t.join("souls")).unwrap();
    // The script is named relative to the team directory.
    fs::write(t.join("where.py"), WHERE_SERVER).unwrap();
    fs::write(
        t.join("team.yaml"),
        format!(
            "name: t\nmcpServers:\n  pwd:\n    command: {}\n    args: [where.py]\n",
            python()
        ),
    )
    .unwrap();
    fs::write(
        t.join("agents/lead.md"),
        "---\nname: lead\nrole: master\n---\n",
    )
    .unwrap();
    fs::write(
        t.join("agents/writer.md"),
        "---\nname: writer\nrole: member\ntools: [pwd.where]\n---\n",
    )
    .unwrap();
    fs::write(t.join("souls/lead.md"), "You lead.").unwrap();
    fs::write(t.join("souls/writer.md"), "You write.").unwrap();
    let team_arg = t.to_str().unwrap();
    let real_team = t.canonicalize().unwrap();

    let out = run_in(
        &["check", "--json", "--team", team_arg],
        elsewhere.path(),
        home.path(),
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["mcp_servers"][0]["name"], "pwd");
    assert_eq!(doc["mcp_servers"][0]["server"], real_team.to_str().unwrap());
    assert_eq!(doc["mcp_servers"][0]["tools"], 1);

    // In a run, the tool call answers from the team directory too.
    let out = run_in(
        &[
            "run",
            "Where are you?",
            "--rounds",
            "1",
            "--team",
            team_arg,
            "--model",
            "sim:tool=writer:pwd.where",
        ],
        elsewhere.path(),
        home.path(),
        &[],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!("writer → pwd.where: cwd={}", real_team.display())),
        "{stderr}"
    );
}
