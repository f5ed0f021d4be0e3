//! Issue 8: a broken or hostile server, against the fault-injecting
//! loopback server in `support`. One test per finding, each asserting the
//! message a person reads (through the CLI where a person meets it) and
//! counting requests instead of timing anything: deadlines in these tests
//! are a second or less.

mod support;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use boardroom::{ChatModel, ChatRequest, Message, ModelError, OpenAi, Phase};
use support::{Reply, Server};

fn request() -> ChatRequest {
    ChatRequest::new("writer", Phase::Draft, 1, vec![Message::user("hello")])
}

/// A streaming model with a short call deadline and waits not slept.
fn model(server: &Server, timeout: Duration) -> OpenAi {
    OpenAi::builder(server.base_url(), "test-model")
        .label("default")
        .api_key("sk-test")
        .timeout(timeout)
        .sleep_with(|_| {})
        .build()
        .unwrap()
}

/// The binary in `dir`, runs saved in `dir/runs`, no ambient settings.
fn boardroom(args: &[&str], dir: &Path, env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_boardroom"));
    cmd.args(args)
        .current_dir(dir)
        .env("BOARDROOM_RUNS_DIR", dir.join("runs"))
        .env_remove("BOARDROOM_MODEL")
        .env_remove("RUST_LOG")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .stdin(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("the binary runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Every file under `dir`, appended to `out`.
fn read_tree(dir: &Path, out: &mut String) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            read_tree(&path, out);
        } else {
            out.push_str(&String::from_utf8_lossy(&std::fs::read(&path).unwrap()));
        }
    }
}

// ---------------------------------------------------------------- finding 1

const LONG_KEY: &str = "sk-proj-Zq7xW3vN9pL2mK8jH4gF6dS1aQ0eR5tY7uI9oP3lK6jH2gF8dS4aZ1xC5vB7nM0qW2eR4tY6uI8oP0aS2dF4gH6jK8lZ1xC3vB5nM7qW9eR1tY3uI5oP7aS9dF1gH3jK5lZ7xC9vB1nM3qW5eR7tY9uI1oP3aS5dF7gH9jK1lZ3xC5vB7nM9";

/// A 401 whose body echoes the key so that the key straddles the 300th
/// character, where the old code cut the message before masking: no piece
/// of the key of 8 characters or more may reach stderr or the run's files.
#[test]
fn finding1_a_key_echoed_in_an_error_body_is_masked_before_it_is_cut() {
    let server = Server::start(|req| {
        let auth = req.header("authorization").unwrap_or_default().to_string();
        let filler = "x".repeat(250);
        Reply::status(
            401,
            &format!(r#"{{"error":{{"message":"{filler} rejected {auth}"}}}}"#),
        )
    });
    let dir = tempfile::tempdir().unwrap();
    let url = server.base_url();
    let out = boardroom(
        &["run", "Say hello", "--model", &format!("{url}#m")],
        dir.path(),
        &[("OPENAI_API_KEY", LONG_KEY)],
    );
    let mut all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(
        text(&out.stderr).contains(&format!(
            "model '{url}#m': http 401 from {url}/chat/completions: check OPENAI_API_KEY (server said: {} rejected Bearer ***)",
            "x".repeat(250)
        )),
        "{}",
        text(&out.stderr)
    );
    read_tree(&dir.path().join("runs"), &mut all);
    assert!(all.contains("rejected Bearer ***"), "{all}");
    for start in 0..LONG_KEY.len() - 8 {
        let piece = &LONG_KEY[start..start + 8];
        assert!(!all.contains(piece), "a piece of the key leaked: {piece}");
    }
}

/// No RUST_LOG setting prints the key: ureq_proto traces the raw request
/// bytes, and a directive for a submodule outranks a module filter.
#[test]
fn finding1_no_log_setting_prints_the_key() {
    let key = "sk-Qz8yX4wM0oK3nJ9iG5hE7fT2bR1uV6cL";
    let server = Server::start(|req| Reply::one_round(req, "writer", "Hello."));
    let url = server.base_url();
    for filter in [
        "ureq_proto",
        "debug,ureq_proto",
        "trace",
        "ureq_proto::util=trace",
        "ureq_proto=trace,ureq=trace",
        "TRACE",
    ] {
        let dir = tempfile::tempdir().unwrap();
        let out = boardroom(
            &["run", "Say hello", "--model", &format!("{url}#m")],
            dir.path(),
            &[("OPENAI_API_KEY", key), ("RUST_LOG", filter)],
        );
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{filter}: {stderr}");
        // ureq_proto dumps bytes as 16-byte rows: look for any 8
        // characters of the key, and for any record of that module.
        for start in 0..key.len() - 8 {
            let piece = &key[start..start + 8];
            assert!(!stderr.contains(piece), "{filter} leaked {piece}");
        }
        assert!(!stderr.contains("ureq_proto"), "{filter}: {stderr}");
        if filter == "trace" || filter == "TRACE" {
            assert!(stderr.contains("TRACE"), "{filter}: logging was on");
        }
    }
}

// ---------------------------------------------------------------- finding 2

#[test]
fn finding2_huge_durations_are_bad_input_naming_value_and_range() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "sim:latency=1e308s",
            "error: model spec 'sim:latency=1e308s': latency: 1e308s is out of range (allowed 0 to 1h)",
        ),
        (
            "sim:latency=20000000000000000000",
            "error: model spec 'sim:latency=20000000000000000000': latency: 20000000000000000000 is out of range (allowed 0 to 1h)",
        ),
        (
            "http://127.0.0.1:9/v1#m,timeout=1e300s",
            "error: model spec 'http://127.0.0.1:9/v1#m,timeout=1e300s': timeout: 1e300s is out of range (allowed 1ms to 24h)",
        ),
        (
            "openai:,timeout=0s",
            "error: model spec 'openai:,timeout=0s': timeout: 0s is out of range (allowed 1ms to 24h)",
        ),
        (
            "sim:latency=NaN",
            "error: model spec 'sim:latency=NaN': latency: 'NaN' is not a duration (try 500ms, 1.5s, 2m or 1h; allowed 0 to 1h)",
        ),
    ];
    for (spec, want) in cases {
        let out = boardroom(&["run", "x", "--model", spec], dir.path(), &[]);
        assert_eq!(out.status.code(), Some(2), "{spec}");
        assert_eq!(text(&out.stderr).trim_end(), want, "{spec}");
    }
    assert!(!dir.path().join("runs").exists(), "no run directory");
}

/// A team directory: the built-in agents, and these extra files.
fn team(files: &[(&str, &[u8])]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    for sub in ["agents", "souls"] {
        std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        for e in std::fs::read_dir(repo.join(sub)).unwrap().flatten() {
            std::fs::copy(e.path(), dir.path().join(sub).join(e.file_name())).unwrap();
        }
    }
    for (path, body) in files {
        let path = dir.path().join(path);
        if body == b"<dir>" {
            let _ = std::fs::remove_file(&path);
            std::fs::create_dir_all(&path).unwrap();
        } else {
            std::fs::write(path, body).unwrap();
        }
    }
    dir
}

#[test]
fn finding2_huge_timeouts_in_team_yaml_fail_check_and_run_at_their_line() {
    let cases: [(&[u8], &str); 2] = [
        (
            b"models:\n  default:\n    base_url: http://127.0.0.1:9/v1\n    timeout: 1e300\n",
            "team.yaml:4: models.default.timeout: 1e300 seconds is out of range (allowed 1ms to 24h)",
        ),
        (
            b"mcpServers:\n  fs:\n    command: cat\n    timeout: 1e300\n",
            "team.yaml:4: mcpServers.fs.timeout: 1e300 seconds is out of range (allowed 1ms to 24h)",
        ),
    ];
    for (yaml, want) in cases {
        let dir = team(&[("team.yaml", yaml)]);
        let prefix = format!("{}/", dir.path().display());
        let out = boardroom(&["check"], dir.path(), &[]);
        assert_eq!(out.status.code(), Some(2));
        assert_eq!(
            text(&out.stderr)
                .trim_end()
                .replace(&prefix, "")
                .replace("./", ""),
            format!("error: {want}")
        );
        let out = boardroom(&["run", "x", "--team", "."], dir.path(), &[]);
        assert_eq!(out.status.code(), Some(2));
        assert!(text(&out.stderr).contains(want), "{}", text(&out.stderr));
    }
}

#[test]
fn finding2_a_saved_run_with_a_huge_duration_is_bad_input_on_resume() {
    let dir = tempfile::tempdir().unwrap();
    let out = boardroom(
        &["run", "Say hello", "--model", "sim", "--rounds", "1"],
        dir.path(),
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let run = std::fs::read_dir(dir.path().join("runs"))
        .unwrap()
        .flatten()
        .find(|e| e.path().join("run.json").exists())
        .unwrap()
        .path();
    let id = run.file_name().unwrap().to_string_lossy().into_owned();
    let path = run.join("run.json");
    let mut record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    record["settings"]["model_spec"] = "sim:latency=1e308s".into();
    record["phase"] = "review".into();
    record["status"] = "running".into();
    std::fs::write(&path, record.to_string()).unwrap();
    let out = boardroom(&["resume", &id], dir.path(), &[]);
    assert_eq!(
        text(&out.stderr).trim_end(),
        "error: model spec 'sim:latency=1e308s': latency: 1e308s is out of range (allowed 0 to 1h)"
    );
    assert_eq!(out.status.code(), Some(2));
}

// ---------------------------------------------------------------- finding 5

/// A 4-member team against a server that plans, then accepts every
/// member's call and never answers: each member's call ends at its 3 s
/// deadline after one attempt (the old per-attempt timeout retried each
/// call up to 5 times, 24 minutes in all at the defaults). The deadline
/// also bounds the plan's call: 1 s raced with it on a loaded machine.
#[test]
fn finding5_a_hung_server_holds_no_call_past_its_deadline() {
    let server = Server::start(|req| {
        let text = req.all_text();
        if req.index == 0 {
            Reply::answer(
                req,
                "ASSIGN:researcher:facts\nASSIGN:analyst:numbers\nASSIGN:writer:prose\nASSIGN:critic:review",
            )
        } else if text.contains("How you direct the team") {
            Reply::answer(req, "DONE\nNothing came back.")
        } else {
            Reply::Hang
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let url = server.base_url();
    let out = boardroom(
        &[
            "run",
            "Plan a picnic",
            "--model",
            &format!("{url}#m,timeout=3s"),
        ],
        dir.path(),
        &[],
    );
    let stderr = text(&out.stderr);
    let members = server
        .seen()
        .iter()
        .filter(|r| r.all_text().contains("## How you work here"))
        .count();
    assert_eq!(members, 4, "one attempt per member: {stderr}");
    assert!(
        stderr.contains(&format!(
            "model '{url}#m': no complete answer within the call deadline of 3s (every attempt and wait included; change it with timeout= in the model spec or timeout: in team.yaml)"
        )),
        "{stderr}"
    );
}

/// Hang mid-stream and an endless stream both end at the deadline (2 s:
/// the first text must come within it, which 500 ms raced with on a loaded
/// machine).
#[test]
fn finding5_a_stream_that_stalls_or_never_ends_ends_at_the_deadline() {
    for reply in [
        Reply::SseThenHang(vec![
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n".into(),
        ]),
        Reply::EndlessSse,
    ] {
        let server = Server::start(move |_| reply.clone());
        let m = model(&server, Duration::from_secs(2));
        let mut shown = 0;
        let e = m.chat(&request(), &mut |_| shown += 1).unwrap_err();
        assert_eq!(
            e.to_string(),
            "model 'default': no complete answer within the call deadline of 2s (every attempt \
             and wait included; change it with timeout= in the model spec or timeout: in team.yaml)"
        );
        assert!(shown > 0);
        assert_eq!(server.requests(), 1, "no retry once text was shown");
    }
}

// ---------------------------------------------------------------- finding 6

/// A stream cut inside a `data:` line before any text is a transport
/// error: retried, and the second attempt answers.
#[test]
fn finding6_a_stream_cut_inside_an_event_before_any_text_is_retried() {
    let server = Server::start(|req| {
        if req.index == 0 {
            Reply::cut_inside_event()
        } else {
            Reply::answer(req, "fine")
        }
    });
    let m = model(&server, Duration::from_secs(30));
    let r = m.chat(&request(), &mut |_| {}).unwrap();
    assert_eq!(r.text, "fine");
    assert_eq!(r.retries, 1);
    assert_eq!(server.requests(), 2);
}

/// A stream that ends cleanly without `[DONE]` and before any text is
/// retried too; with text shown, it is an error (no retry mid-answer).
#[test]
fn finding6_a_stream_cut_cleanly_is_retried_before_text_only() {
    let server = Server::start(|req| {
        if req.index == 0 {
            Reply::cut_cleanly(&[])
        } else {
            Reply::answer(req, "fine")
        }
    });
    let r = model(&server, Duration::from_secs(30))
        .chat(&request(), &mut |_| {})
        .unwrap();
    assert_eq!((r.text.as_str(), r.retries), ("fine", 1));

    let server = Server::start(|_| Reply::cut_cleanly(&["Hel", "lo"]));
    let e = model(&server, Duration::from_secs(30))
        .chat(&request(), &mut |_| {})
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "model 'default': the stream ended before [DONE]"
    );
    assert_eq!(server.requests(), 1);
}

// ---------------------------------------------------------------- finding 7

#[test]
fn finding7_a_huge_streamed_answer_is_capped_like_a_whole_one() {
    let server = Server::start(|_| Reply::HugeSse {
        bytes: 33 * 1024 * 1024,
    });
    let e = model(&server, Duration::from_secs(60))
        .chat(&request(), &mut |_| {})
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "model 'default': bad response: the streamed answer is larger than 32 MiB"
    );
    assert!(matches!(e, ModelError::BadResponse { .. }));
}

#[test]
fn finding7_a_huge_single_sse_line_is_an_error_not_an_allocation() {
    let server = Server::start(|_| Reply::HugeLine {
        bytes: 40 * 1024 * 1024,
    });
    let e = model(&server, Duration::from_secs(60))
        .chat(&request(), &mut |_| {})
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "model 'default': bad response: a server-sent event larger than 32 MiB"
    );
}

/// A 16 MiB line under the cap is decoded (in linear time: see the
/// decoder's unit test, which counts the bytes it looks at).
#[test]
fn finding7_a_16_mib_line_is_decoded() {
    let server = Server::start(|_| Reply::HugeLine {
        bytes: 16 * 1024 * 1024,
    });
    let r = model(&server, Duration::from_secs(60))
        .chat(&request(), &mut |_| {})
        .unwrap();
    assert_eq!(r.text.len(), 16 * 1024 * 1024);
}

/// One member's runaway 1 MiB draft reaches the master's review cut at
/// 64 KiB, with a note saying so.
#[test]
fn finding7_an_entry_fed_to_other_agents_is_cut() {
    let big = "word ".repeat(200 * 1024);
    let server = Server::start(move |req| {
        let text = req.all_text();
        if req.index == 0 {
            Reply::answer(req, "ASSIGN:writer:write a lot")
        } else if text.contains("How you direct the team") {
            Reply::answer(req, "DONE\nShort answer.")
        } else {
            Reply::answer(req, &big)
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let url = server.base_url();
    let out = boardroom(
        &["run", "Write", "--model", &format!("{url}#m")],
        dir.path(),
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let review = server
        .seen()
        .into_iter()
        .skip(1)
        .find(|r| r.all_text().contains("How you direct the team"))
        .expect("a review call");
    let prompt = review.all_text();
    assert!(
        prompt.contains("[cut: this entry is 1023999 bytes; the first 65536 are shown]"),
        "{}",
        &prompt[prompt.len().saturating_sub(400)..]
    );
    assert!(prompt.len() < 80 * 1024, "{}", prompt.len());
}

// --------------------------------------------------------------- finding 10

#[test]
fn finding10_zero_rounds_parallel_or_tokens_are_bad_input_naming_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    // `--max-tokens` is the old name of `--token-budget`: clap names the flag.
    for (given, flag) in [
        ("--rounds", "--rounds"),
        ("--parallel", "--parallel"),
        ("--token-budget", "--token-budget"),
        ("--max-tokens", "--token-budget"),
    ] {
        let out = boardroom(&["run", "x", "--model", "sim", given, "0"], dir.path(), &[]);
        assert_eq!(out.status.code(), Some(2), "{given}");
        let stderr = text(&out.stderr);
        assert!(
            stderr.starts_with("error: invalid value '0' for '")
                && stderr.contains(flag)
                && stderr.contains("0 is not allowed (allowed 1 or more)"),
            "{stderr}"
        );
    }
    assert!(!dir.path().join("runs").exists());
}

#[test]
fn finding10_bad_specs_are_refused_before_a_run_directory_exists() {
    let dir = tempfile::tempdir().unwrap();
    let out = boardroom(&["run", "x", "--model", "http://[::1"], dir.path(), &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).starts_with(
            "error: model spec 'http://[::1': the base url 'http://[::1' is not a valid url: "
        ),
        "{}",
        text(&out.stderr)
    );
    // An agent's own model is checked too, before the run starts.
    let dir = team(&[(
        "agents/writer.md",
        b"---\nname: writer\nrole: member\nmodel: gpt\n---\n",
    )]);
    let out = boardroom(&["run", "x", "--model", "sim"], dir.path(), &[]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr).trim_end().replace("./", ""),
        "error: agents/writer.md:4: model: model spec 'gpt': unknown model 'gpt' \
         (accepted: sim (offline), gpt-4o-mini or openai/gpt-4o-mini or openai:gpt-4o-mini \
         (OpenAI, or OPENAI_BASE_URL), ollama:llama3.2 (Ollama at OLLAMA_HOST), claude-sonnet-4-5 or anthropic:claude-sonnet-4-5 (Anthropic), \
         http://127.0.0.1:8080/v1#MODEL (any OpenAI-compatible server), or a model named in \
         team.yaml) (no models are named in team.yaml)"
    );
    assert!(!dir.path().join("runs").exists());
}

#[test]
fn finding10_check_resolves_every_model_and_names_file_and_line() {
    let cases: [(&[u8], &str); 5] = [
        (
            b"name: t\nmodels:\n  default: 'gpt'\n",
            "team.yaml:3: models.default: model spec 'gpt': unknown model 'gpt' (accepted: sim \
             (offline), gpt-4o-mini or openai/gpt-4o-mini or openai:gpt-4o-mini (OpenAI, or \
             OPENAI_BASE_URL), ollama:llama3.2 (Ollama at OLLAMA_HOST), claude-sonnet-4-5 or anthropic:claude-sonnet-4-5 (Anthropic), \
             http://127.0.0.1:8080/v1#MODEL (any OpenAI-compatible server), or a model named in \
             team.yaml)",
        ),
        (
            b"models:\n  default:\n    timeout: 0\n",
            "team.yaml:3: models.default.timeout: 0 seconds is out of range (allowed 1ms to 24h)",
        ),
        (
            b"models:\n  default:\n    timeout: .nan\n",
            "team.yaml:3: models.default.timeout: .nan seconds is out of range (allowed 1ms to 24h)",
        ),
        (
            b"models:\n  fast: sim\n  remote:\n    base_url: ftp://example.com/v1\n",
            "team.yaml:3: models.remote: the base url 'ftp://example.com/v1' must start with http:// or https://",
        ),
        (
            b"models:\n  default:\n    max_in_flight: -1\n",
            "team.yaml:3: models.default.max_in_flight: -1 is out of range (allowed 1 to 4096)",
        ),
    ];
    for (yaml, want) in cases {
        let dir = team(&[("team.yaml", yaml)]);
        let out = boardroom(&["check"], dir.path(), &[]);
        let prefix = format!("{}/", dir.path().display());
        assert_eq!(out.status.code(), Some(2), "{want}");
        assert_eq!(
            text(&out.stderr)
                .trim_end()
                .replace(&prefix, "")
                .replace("./", ""),
            format!("error: {want}")
        );
    }
}

#[test]
fn finding10_bom_is_accepted_and_bad_souls_are_named() {
    let mut agent = b"\xEF\xBB\xBF".to_vec();
    agent.extend_from_slice(b"---\nname: writer\nrole: member\ndescription: Writes\n---\n");
    let dir = team(&[("agents/writer.md", &agent)]);
    let out = boardroom(&["check"], dir.path(), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));

    let dir = team(&[("souls/writer.md", b"You write \xff\xfe well.\n")]);
    let out = boardroom(&["check"], dir.path(), &[]);
    assert_eq!(out.status.code(), Some(2));
    let prefix = format!("{}/", dir.path().display());
    assert_eq!(
        text(&out.stderr)
            .trim_end()
            .replace(&prefix, "")
            .replace("./", ""),
        "error: agents/writer.md:2: the soul for 'writer', souls/writer.md, is not UTF-8 text \
         (a bad byte at line 1, byte offset 10): save it as UTF-8"
    );

    let dir = team(&[("souls/writer.md", b"<dir>")]);
    let out = boardroom(&["check"], dir.path(), &[]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr)
            .trim_end()
            .replace(&prefix, "")
            .replace(&format!("{}/", dir.path().display()), "")
            .replace("./", ""),
        "error: agents/writer.md:2: the soul for 'writer', souls/writer.md, is a directory, not a file"
    );
}

#[test]
fn finding10_the_task_comes_from_a_file_or_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let task = format!("Summarise this:\n{}", "long text ".repeat(300_000));
    std::fs::write(dir.path().join("task.md"), &task).unwrap();
    let server = Server::start(|req| Reply::one_round(req, "writer", "Summarised."));
    let url = server.base_url();
    let model = format!("{url}#m");
    let out = boardroom(
        &["run", "--task-file", "task.md", "--model", &model],
        dir.path(),
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).lines().next(), Some("Summarised."));
    assert!(server.seen()[0].all_text().contains(task.trim()));

    let mut child = Command::new(env!("CARGO_BIN_EXE_boardroom"))
        .args(["run", "-", "--model", &model])
        .current_dir(dir.path())
        .env("BOARDROOM_RUNS_DIR", dir.path().join("runs"))
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write as _;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"The task from stdin").unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        server
            .seen()
            .last()
            .unwrap()
            .all_text()
            .contains("The task from stdin")
    );

    let out = boardroom(
        &["run", "--task-file", "missing.md", "--model", "sim"],
        dir.path(),
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr).trim_end(),
        "error: --task-file missing.md: No such file or directory (os error 2)"
    );
}

#[test]
fn finding10_a_retry_after_past_the_deadline_says_so() {
    let server = Server::start(|_| {
        Reply::status(429, r#"{"error":{"message":"slow down"}}"#)
            .with_header("Retry-After", "3600")
    });
    let dir = tempfile::tempdir().unwrap();
    let url = server.base_url();
    let out = boardroom(
        &["run", "x", "--model", &format!("{url}#m")],
        dir.path(),
        &[],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains(&format!(
            "model '{url}#m': http 429 from {url}/chat/completions: the server asked to wait 3600 s (Retry-After), which is over the call deadline of 5m (server said: slow down)"
        )),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(server.requests(), 1, "no retry that cannot finish in time");
}

#[test]
fn finding10_an_html_answer_is_described_with_its_first_bytes() {
    let server = Server::start(|_| Reply::html());
    let m = OpenAi::builder(server.base_url(), "m")
        .label("default")
        .stream(false)
        .build()
        .unwrap();
    let e = m.chat(&request(), &mut |_| {}).unwrap_err();
    assert_eq!(
        e.to_string(),
        "model 'default': bad response: the server answered HTML (text/html; charset=utf-8), \
         not JSON: is the base url the API's (it usually ends in /v1)? it began: \
         <!DOCTYPE html> <html><head><title>Welcome</title></head><body>It works!</body></html>"
    );
}

/// A `Retry-After` too large for any clock (more seconds than a u64 holds,
/// or than an `Instant` can be moved by) is a wait past the deadline like
/// any other, never a panic in the calling thread.
#[test]
fn finding10_an_absurd_retry_after_is_past_the_deadline_not_a_panic() {
    for asked in ["1e300", "18446744073709551615", "99999999999999999999"] {
        let server = Server::start(move |_| {
            Reply::status(429, r#"{"error":{"message":"slow down"}}"#)
                .with_header("Retry-After", asked)
        });
        let m = model(&server, Duration::from_secs(1));
        let call = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            m.chat(&request(), &mut |_| {})
        }));
        let e = call
            .unwrap_or_else(|_| panic!("Retry-After: {asked} panicked"))
            .unwrap_err();
        let said = e.to_string();
        assert!(
            said.contains(
                "(Retry-After), which is over the call deadline of 1s (server said: slow down)"
            ),
            "Retry-After: {asked}: {said}"
        );
        assert!(matches!(e, ModelError::Http { status: 429, .. }), "{e:?}");
        assert_eq!(server.requests(), 1, "Retry-After: {asked}: no retry");
    }
    // Dates past year 9999 are not dates: the header is ignored and the
    // call retries with its own backoff, without a panic.
    for asked in [
        "Sun, 06 Nov 99999999999 08:49:37 GMT",
        "Fri, 31 Dec 18446744073709551615 23:59:59 GMT",
    ] {
        let server = Server::start(move |_| {
            Reply::status(429, r#"{"error":{"message":"slow down"}}"#)
                .with_header("Retry-After", asked)
        });
        // A long deadline (waits are not slept): every backoff fits.
        let m = model(&server, Duration::from_secs(3600));
        let call = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            m.chat(&request(), &mut |_| {})
        }));
        let e = call
            .unwrap_or_else(|_| panic!("Retry-After: {asked} panicked"))
            .unwrap_err();
        assert!(matches!(e, ModelError::Http { status: 429, .. }), "{e:?}");
        assert_eq!(
            server.requests(),
            5,
            "Retry-After: {asked}: its own backoff"
        );
    }
}
