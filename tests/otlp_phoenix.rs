//! Issue 13, traces in a real backend: Arize Phoenix (installed by
//! scripts/setup-phoenix.sh into .venv-phoenix/) receives a run's spans
//! over OTLP/HTTP protobuf, live from the exporter and after the fact from
//! `boardroom export`; the test reads them back through Phoenix's REST
//! API and checks names, parents and token counts, and (issue 27) what
//! Phoenix renders: OpenInference kinds, inputs and outputs only with
//! content on, token counts on model calls, failures as ERROR spans.

#![cfg(feature = "otlp")]

mod support;

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use boardroom::otlp::{OtlpConfig, OtlpExporter};
use boardroom::store::read_turns;
use boardroom::testing::{Sim, SimOptions, SimToolCall};
use boardroom::{AgentSpec, Runtime, Team, TeamConfig};
use serde_json::Value;
use support::free_port;

struct Phoenix {
    child: Child,
    base: String,
    dir: tempfile::TempDir,
}

impl Phoenix {
    fn start() -> Phoenix {
        let exe = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv-phoenix/bin/phoenix");
        assert!(
            exe.is_file(),
            "{} missing: run scripts/setup-phoenix.sh",
            exe.display()
        );
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let log = std::fs::File::create(dir.path().join("phoenix.log")).unwrap();
        let child = Command::new(exe)
            .arg("serve")
            .env("PHOENIX_HOST", "127.0.0.1")
            .env("PHOENIX_PORT", port.to_string())
            .env("PHOENIX_GRPC_PORT", free_port().to_string())
            .env("PHOENIX_WORKING_DIR", dir.path())
            .env("PHOENIX_TELEMETRY_ENABLED", "false")
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
            .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        let mut phoenix = Phoenix {
            child,
            base: format!("http://127.0.0.1:{port}"),
            dir,
        };
        // Phoenix takes half a minute to start on a busy machine.
        let deadline = Instant::now() + Duration::from_secs(180);
        while get(&format!("{}/healthz", phoenix.base)).is_none() {
            if let Ok(Some(status)) = phoenix.child.try_wait() {
                panic!("phoenix exited ({status}): {}", phoenix.log());
            }
            assert!(
                Instant::now() < deadline,
                "phoenix did not start: {}",
                phoenix.log()
            );
            std::thread::sleep(Duration::from_millis(250));
        }
        phoenix
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("phoenix.log")).unwrap_or_default()
    }

    /// The spans of one trace, once their number has held still for a
    /// second (the run's exporter has finished; Phoenix stores spans in
    /// batches of its own).
    fn settled(&self, run_id: &str) -> Vec<Value> {
        let mut last = self.trace(run_id, 1).len();
        let mut still = 0;
        while still < 4 {
            std::thread::sleep(Duration::from_millis(300));
            let now = self.trace(run_id, last).len();
            still = if now == last { still + 1 } else { 0 };
            last = now;
        }
        self.trace(run_id, last)
    }

    /// The spans of one trace, once `count` of them are in.
    fn trace(&self, run_id: &str, count: usize) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let all = get(&format!(
                "{}/v1/projects/default/spans?limit=1000",
                self.base
            ))
            .map(|t| serde_json::from_str::<Value>(&t).unwrap())
            .map(|v| v["data"].as_array().cloned().unwrap_or_default())
            .unwrap_or_default();
            let trace = all
                .iter()
                .find(|s| s["attributes"]["boardroom.run.id"] == run_id)
                .map(|root| root["context"]["trace_id"].clone());
            let spans: Vec<Value> = all
                .into_iter()
                .filter(|s| trace.as_ref() == Some(&s["context"]["trace_id"]))
                .collect();
            if spans.len() >= count {
                return spans;
            }
            assert!(
                Instant::now() < deadline,
                "phoenix has {} of {count} spans of {run_id}",
                spans.len()
            );
            std::thread::sleep(Duration::from_millis(300));
        }
    }
}

impl Drop for Phoenix {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn get(url: &str) -> Option<String> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(10)))
        .build()
        .into();
    agent.get(url).call().ok()?.body_mut().read_to_string().ok()
}

fn team() -> Team {
    Team::new(
        "owls",
        TeamConfig::default(),
        vec![
            AgentSpec::master("master", "You lead."),
            AgentSpec::member("writer", "Writes", "You write.").with_tools(["workspace_write"]),
            AgentSpec::member("critic", "Checks", "You check.").challenger(),
        ],
    )
    .unwrap()
}

fn attr<'a>(span: &'a Value, key: &str) -> &'a Value {
    &span["attributes"][key]
}

#[test]
fn phoenix_receives_a_runs_spans_with_genai_names_parents_and_tokens() {
    let phoenix = Phoenix::start();
    let tmp = tempfile::tempdir().unwrap();

    // Live: the exporter is the run's event subscriber.
    let exporter = OtlpExporter::start(OtlpConfig::new(&phoenix.base).unwrap()).unwrap();
    let sim = Sim::with_options(SimOptions {
        tool_calls: vec![SimToolCall::new(
            "writer",
            "workspace_write",
            serde_json::json!({"path": "menu.md", "content": "bread, cheese"}),
        )],
        challenge_round: Some(1),
        ..SimOptions::default()
    });
    let outcome = Runtime::new(team(), sim)
        .runs_dir(tmp.path())
        .events(exporter.events())
        .run("Plan a picnic")
        .unwrap();
    let report = exporter.finish();
    assert_eq!(report.dropped, 0, "{report}");

    let spans = phoenix.trace(&outcome.run_id, report.exported as usize);
    assert_eq!(spans.len() as u64, report.exported);
    let by_id: HashMap<&str, &Value> = spans
        .iter()
        .map(|s| (s["context"]["span_id"].as_str().unwrap(), s))
        .collect();
    let parent = |s: &Value| -> Option<&Value> {
        s["parent_id"]
            .as_str()
            .map(|p| *by_id.get(p).expect("parent in the trace"))
    };
    let name = |s: Option<&Value>| s.map(|s| s["name"].as_str().unwrap().to_string());

    // One root: the run.
    let roots: Vec<&Value> = spans.iter().filter(|s| s["parent_id"].is_null()).collect();
    assert_eq!(roots.len(), 1);
    assert_eq!(roots[0]["name"], "invoke_workflow owls");
    assert_eq!(attr(roots[0], "gen_ai.operation.name"), "invoke_workflow");
    assert_eq!(attr(roots[0], "boardroom.status"), "done");
    assert_eq!(
        attr(roots[0], "gen_ai.usage.input_tokens"),
        outcome.usage.prompt_tokens
    );
    assert_eq!(
        attr(roots[0], "gen_ai.usage.output_tokens"),
        outcome.usage.completion_tokens
    );

    // A chat span per model call, under its agent's turn, with its tokens.
    let turns = read_turns(&tmp.path().join(&outcome.run_id)).unwrap().items;
    let chats: Vec<&Value> = spans.iter().filter(|s| s["name"] == "chat sim").collect();
    assert_eq!(chats.len(), turns.len());
    for turn in &turns {
        let chat = chats
            .iter()
            .find(|c| *attr(c, "boardroom.turn.id") == turn.turn_id.to_string().as_str())
            .unwrap_or_else(|| panic!("no chat span for {}", turn.turn_id));
        assert_eq!(attr(chat, "gen_ai.operation.name"), "chat");
        assert_eq!(attr(chat, "gen_ai.request.model"), "sim");
        assert_eq!(attr(chat, "gen_ai.provider.name"), "boardroom.sim");
        assert_eq!(
            attr(chat, "gen_ai.usage.input_tokens"),
            turn.usage.prompt_tokens
        );
        assert_eq!(
            attr(chat, "gen_ai.usage.output_tokens"),
            turn.usage.completion_tokens
        );
        assert!(
            attr(chat, "gen_ai.response.finish_reasons").is_array(),
            "{chat}"
        );
        assert_eq!(attr(chat, "boardroom.retries"), 0);
        let agent_turn = parent(chat).unwrap();
        assert_eq!(
            name(Some(agent_turn)),
            Some(format!("invoke_agent {}", turn.agent))
        );
        assert_eq!(attr(agent_turn, "boardroom.phase"), turn.phase.as_str());
        // No prompt text without --otlp-content.
        assert!(attr(chat, "gen_ai.input.messages").is_null());
    }

    // Issue 27, the tree a user reads: run → round → phase → agent → LLM,
    // over two rounds (the critic objects in round 1).
    let group = |name: &str, round: u32| -> &Value {
        spans
            .iter()
            .find(|s| s["name"] == name && attr(s, "boardroom.round") == round)
            .unwrap_or_else(|| panic!("no {name} of round {round}"))
    };
    for round in [1, 2] {
        let r = group(&format!("round {round}"), round);
        assert_eq!(name(parent(r)), Some("invoke_workflow owls".into()));
        assert_eq!(r["span_kind"], "CHAIN");
        for phase in ["draft", "challenge", "review"] {
            let p = group(phase, round);
            assert_eq!(parent(p), Some(r), "{phase} of round {round}");
            assert_eq!(p["span_kind"], "CHAIN");
        }
    }
    assert_eq!(name(parent(group("plan", 0))), Some("round 0".into()));
    let agent = |who: &str, phase: &str, round: u32| -> &Value {
        spans
            .iter()
            .find(|s| {
                s["name"] == format!("invoke_agent {who}")
                    && attr(s, "boardroom.phase") == phase
                    && attr(s, "boardroom.round") == round
            })
            .unwrap_or_else(|| panic!("no invoke_agent {who} ({phase} {round})"))
    };
    assert_eq!(parent(agent("master", "plan", 0)), Some(group("plan", 0)));
    for round in [1, 2] {
        for (who, phase) in [
            ("writer", "draft"),
            ("critic", "draft"),
            ("critic", "challenge"),
            ("master", "review"),
        ] {
            let a = agent(who, phase, round);
            assert_eq!(parent(a), Some(group(phase, round)), "{who} {phase}");
        }
    }
    assert_eq!(
        attr(agent("writer", "draft", 2), "boardroom.parent_agent"),
        "master"
    );
    // Every span names the session: the run itself, launched on its own.
    for s in &spans {
        assert_eq!(attr(s, "session.id"), outcome.run_id.as_str(), "{s}");
    }
    // The writer's tool call, under the writer's turn.
    let tool = spans
        .iter()
        .find(|s| s["name"] == "execute_tool workspace_write")
        .expect("an execute_tool span");
    assert_eq!(attr(tool, "gen_ai.tool.name"), "workspace_write");
    assert_eq!(name(parent(tool)), Some("invoke_agent writer".into()));
    assert!(attr(tool, "gen_ai.tool.call.arguments").is_null());

    // After the fact, from the files, with content: `boardroom export`.
    let bin = env!("CARGO_BIN_EXE_boardroom");
    let out = Command::new(bin)
        .args([
            "run",
            "Plan a walk",
            "--model",
            "sim",
            "--no-memory",
            "--runs-dir",
        ])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let out = Command::new(bin)
        .args([
            "export",
            "last",
            "--otlp-content",
            "--otlp",
            &phoenix.base,
            "--runs-dir",
        ])
        .arg(tmp.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let exported: usize = stdout
        .strip_prefix("exported ")
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{stdout}"));
    let last = boardroom::store::list_runs(tmp.path())
        .unwrap()
        .pop()
        .unwrap();
    let spans = phoenix.trace(&last.id, exported);
    assert_eq!(spans.len(), exported);
    // Issue 27: exported, the same tree and session.
    let draft = spans
        .iter()
        .find(|s| s["name"] == "draft")
        .expect("a draft span");
    let round = spans
        .iter()
        .find(|s| s["context"]["span_id"] == draft["parent_id"])
        .expect("the draft's round");
    assert_eq!(round["name"], "round 1");
    assert!(
        spans
            .iter()
            .all(|s| attr(s, "session.id") == last.id.as_str())
    );
    let chat = spans.iter().find(|s| s["name"] == "chat sim").unwrap();
    let input = attr(chat, "gen_ai.input.messages").as_str().unwrap_or("");
    assert!(input.contains("Plan a walk"), "{chat}");
    assert_eq!(
        spans.iter().filter(|s| s["parent_id"].is_null()).count(),
        1,
        "one root"
    );
}

/// A `boardroom run` on the sim `model`, sending its trace to `otlp` as it
/// works (with or without content); its run id.
fn cli_run(runs: &Path, model: &str, otlp: Option<&str>, content: bool, code: i32) -> String {
    let before: HashSet<String> = boardroom::store::list_runs(runs)
        .map(|l| l.into_iter().map(|r| r.id).collect())
        .unwrap_or_default();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_boardroom"));
    cmd.args([
        "run",
        "Plan a picnic by the lake",
        "--no-memory",
        "--model",
        model,
    ])
    .arg("--runs-dir")
    .arg(runs)
    .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
    .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
    if let Some(url) = otlp {
        cmd.args(["--otlp", url]);
    }
    if content {
        cmd.arg("--otlp-content");
    }
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{stderr}");
    assert!(!stderr.contains("dropped"), "{stderr}");
    boardroom::store::list_runs(runs)
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .find(|id| !before.contains(id))
        .expect("a new run")
}

/// `boardroom export ID` of a saved run, with or without content.
fn cli_export(runs: &Path, id: &str, url: &str, content: bool) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_boardroom"));
    cmd.args(["export", id, "--otlp", url, "--runs-dir"])
        .arg(runs);
    if content {
        cmd.arg("--otlp-content");
    }
    let out = cmd.output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Mismatches, gathered so one look at Phoenix reports all of them.
#[derive(Default)]
struct Findings(Vec<String>);

impl Findings {
    fn check(&mut self, ok: bool, what: impl FnOnce() -> String) {
        if !ok {
            self.0.push(what());
        }
    }
}

fn text<'a>(span: &'a Value, key: &str) -> &'a str {
    attr(span, key).as_str().unwrap_or("")
}

/// What Phoenix shows of the run of `cli_run` with the `MIXED` model: a
/// kind on every span, text only with content, each model call's tokens,
/// the critic's failed call and turn and the writer's failed tool call.
fn check_mixed(f: &mut Findings, how: &str, spans: &[Value], runs: &Path, id: &str, content: bool) {
    let how = format!("{how}, content {content}");
    let kinds: HashSet<&str> = spans
        .iter()
        .map(|s| s["span_kind"].as_str().unwrap())
        .collect();
    f.check(
        kinds == HashSet::from(["CHAIN", "AGENT", "LLM", "TOOL"]),
        || format!("{how}: span kinds {kinds:?}"),
    );
    for s in spans {
        let name = s["name"].as_str().unwrap();
        let want = match name.split(' ').next() {
            Some("invoke_workflow") => "CHAIN",
            Some("invoke_agent") => "AGENT",
            Some("chat") => "LLM",
            Some("execute_tool") => "TOOL",
            // Issue 27: rounds and phases.
            _ => "CHAIN",
        };
        f.check(s["span_kind"] == want, || {
            format!("{how}: {name} is {} (want {want})", s["span_kind"])
        });
        let keys = s["attributes"].as_object().unwrap().keys();
        let texts: Vec<&String> = keys
            .filter(|k| {
                [
                    "input.",
                    "output.",
                    "llm.input_messages",
                    "llm.output_messages",
                ]
                .iter()
                .any(|p| k.starts_with(p))
            })
            .collect();
        if !content {
            f.check(texts.is_empty(), || {
                format!("{how}: {name} has {texts:?} without --otlp-content")
            });
            f.check(!s.to_string().contains("by the lake"), || {
                format!("{how}: the task's text in {name} without --otlp-content")
            });
        }
    }

    let root = spans.iter().find(|s| s["parent_id"].is_null()).unwrap();
    if content {
        f.check(
            text(root, "input.value") == "Plan a picnic by the lake",
            || format!("{how}: the run's input is {}", attr(root, "input.value")),
        );
        f.check(
            text(root, "output.value").starts_with("# Plan a picnic"),
            || format!("{how}: the run's output is {}", attr(root, "output.value")),
        );
    }

    // Every model call: its tokens as turns.jsonl has them, its model.
    let turns = read_turns(&runs.join(id)).unwrap().items;
    let chats: Vec<&Value> = spans.iter().filter(|s| s["span_kind"] == "LLM").collect();
    f.check(chats.len() == turns.len(), || {
        format!("{how}: {} LLM spans for {} calls", chats.len(), turns.len())
    });
    for chat in &chats {
        let turn_id = text(chat, "boardroom.turn.id");
        let Some(turn) = turns.iter().find(|t| t.turn_id.to_string() == turn_id) else {
            f.check(false, || format!("{how}: no turn {turn_id}"));
            continue;
        };
        let (p, c) = (turn.usage.prompt_tokens, turn.usage.completion_tokens);
        for (key, want) in [
            ("llm.token_count.prompt", p),
            ("llm.token_count.completion", c),
            ("llm.token_count.total", p + c),
        ] {
            f.check(*attr(chat, key) == want, || {
                format!(
                    "{how}: {turn_id} {key} is {} (want {want})",
                    attr(chat, key)
                )
            });
        }
        f.check(text(chat, "llm.model_name") == "sim", || {
            format!("{how}: {turn_id} llm.model_name")
        });
        f.check(text(chat, "llm.provider") == "boardroom.sim", || {
            format!("{how}: {turn_id} llm.provider")
        });
        if content {
            f.check(
                text(chat, "input.mime_type") == "application/json"
                    && text(chat, "input.value").contains("by the lake")
                    && !text(chat, "llm.input_messages.0.message.content").is_empty(),
                || format!("{how}: {turn_id} has no input: {chat}"),
            );
        }
        if let Some(error) = &turn.error {
            f.check(
                chat["status_code"] == "ERROR" && chat["status_message"] == error.as_str(),
                || format!("{how}: failed call {turn_id}: {chat}"),
            );
        } else if content {
            f.check(
                text(chat, "output.value") == turn.answer.as_deref().unwrap_or(""),
                || format!("{how}: {turn_id} output.value"),
            );
        }
    }

    // The critic's failed turns, the writer's draft and failed tool call.
    let agents = |who: &str| -> Vec<&Value> {
        spans
            .iter()
            .filter(|s| s["name"] == format!("invoke_agent {who}"))
            .collect()
    };
    for critic in agents("critic") {
        f.check(
            critic["status_code"] == "ERROR"
                && critic["status_message"]
                    == "critic failed: simulated failure for 'critic': the model is configured to fail for this agent",
            || format!("{how}: the failed critic: {critic}"),
        );
    }
    if content {
        let draft = agents("writer")
            .into_iter()
            .find(|s| attr(s, "boardroom.phase") == "draft");
        f.check(
            draft.is_some_and(|w| {
                text(w, "input.value").starts_with("Plan a picnic by the lake (your part:")
                    && text(w, "output.value").contains("by the lake")
            }),
            || format!("{how}: the writer's assignment and draft: {draft:?}"),
        );
    }
    let tool = spans.iter().find(|s| s["span_kind"] == "TOOL").unwrap();
    f.check(text(tool, "tool.name") == "workspace_read", || {
        format!("{how}: tool.name")
    });
    let message = tool["status_message"].as_str().unwrap_or("");
    f.check(
        tool["status_code"] == "ERROR"
            && if content {
                message.starts_with("error: workspace: nope.md")
            } else {
                message == "the tool reported an error"
            },
        || format!("{how}: the failed tool call: {tool}"),
    );
    if content {
        f.check(
            text(tool, "input.value") == r#"{"path":"nope.md"}"#
                && text(tool, "input.mime_type") == "application/json"
                && text(tool, "output.value") == message,
            || format!("{how}: the tool call's input and output: {tool}"),
        );
    }
}

/// A run whose master's plan failed: its span and the run's say why (the
/// run ends with `run_finished`, status failed).
fn check_failed(f: &mut Findings, how: &str, spans: &[Value]) {
    let why = "simulated failure for 'master': the model is configured to fail for this agent";
    let root = spans.iter().find(|s| s["parent_id"].is_null()).unwrap();
    f.check(
        root["span_kind"] == "CHAIN"
            && root["status_code"] == "ERROR"
            && root["status_message"] == format!("the run failed: {why}"),
        || format!("{how}: the failed run: {root}"),
    );
    let master = spans.iter().find(|s| s["name"] == "invoke_agent master");
    f.check(
        master.is_some_and(|m| m["status_code"] == "ERROR" && m["status_message"] == why),
        || format!("{how}: the failed master: {master:?}"),
    );
}

/// The sim with a member whose model fails and a tool call that fails.
const MIXED: &str = r#"sim:fail=critic,tool=writer:workspace_read:{"path":"nope.md"}"#;

/// Issue 27: what Phoenix renders of a run, traced live with `run --otlp`
/// and after the fact with `boardroom export`, content off and on.
#[test]
fn phoenix_renders_kinds_content_tokens_and_errors_live_and_exported() {
    let phoenix = Phoenix::start();
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path();
    let url = phoenix.base.as_str();
    let mut f = Findings::default();
    for content in [false, true] {
        let id = cli_run(runs, MIXED, Some(url), content, 4);
        check_mixed(
            &mut f,
            "run --otlp",
            &phoenix.settled(&id),
            runs,
            &id,
            content,
        );
    }
    let id = cli_run(runs, "sim:fail=master", Some(url), false, 1);
    check_failed(&mut f, "run --otlp", &phoenix.settled(&id));

    // Saved runs, never traced before (the same run twice would give
    // Phoenix the same span ids twice).
    for content in [false, true] {
        let id = cli_run(runs, MIXED, None, false, 4);
        cli_export(runs, &id, url, content);
        check_mixed(&mut f, "export", &phoenix.settled(&id), runs, &id, content);
    }
    let id = cli_run(runs, "sim:fail=master", None, false, 1);
    cli_export(runs, &id, url, false);
    check_failed(&mut f, "export", &phoenix.settled(&id));

    assert!(f.0.is_empty(), "{}", f.0.join("\n"));
}
