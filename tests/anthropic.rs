//! Issue 26: Anthropic's Messages API, natively, against a fake Anthropic
//! server on the loopback interface: whole runs of the default team
//! (streamed and not, from the CLI), a handoff team (the handoff tool over
//! `tool_use`), a team with an MCP tool, the JSON protocol (a forced
//! tool), prompt caching, and `check`. The key shows nowhere.

mod anthropic_support;
mod mcp_support;
mod support;

use anthropic_support::*;
use boardroom::protocol::Protocol;
use boardroom::{AgentSpec, Anthropic, RunStatus, Runtime, Team, TeamConfig};
use serde_json::json;
use support::Server;

fn model(server: &Server) -> Anthropic {
    Anthropic::builder("claude-test")
        .base_url(base_url(server))
        .api_key(KEY)
        .build()
        .unwrap()
}

#[test]
fn the_default_team_runs_from_the_cli_streamed_and_not() {
    let server = Server::start(|req| {
        check_shape(req);
        one_round(req, "writer", "The tea answer.")
    });
    for spec in ["anthropic:claude-test", "claude-test,stream=false"] {
        let before = server.seen().len();
        let ran = run_cli(&server, &["run", "Explain tea", "--model", spec], None);
        assert_eq!(ran.code, 0, "{spec}: {}", ran.stderr);
        assert!(ran.stdout.contains("The tea answer."), "{}", ran.stdout);
        assert!(ran.stderr.contains("TRACE"), "trace logging was on");
        no_key(&ran.all());
        let seen = &server.seen()[before..];
        let streamed = spec.starts_with("anthropic:");
        assert!(seen.iter().all(|r| (r.body["stream"] == true) == streamed));
        let plan = seen
            .iter()
            .find(|r| text_of(r).contains("Split this task"))
            .unwrap();
        assert!(plan.body["system"].is_string(), "the system prompt on top");
        assert_eq!(plan.body["max_tokens"], 4096, "the documented default");
        assert_eq!(plan.body["model"], "claude-test");
    }
}

#[test]
fn a_handoff_team_hands_off_over_tool_use() {
    let server = Server::start(|req| {
        check_shape(req);
        let text = text_of(req);
        if text.contains("<candidates>") || text.contains("<routing_rules") {
            answer(req, "NONE")
        } else if text.contains("It is your turn, researcher") {
            assert!(offers(req, "handoff"));
            answer_with(
                req,
                "notes on tea",
                &[(
                    "toolu_7",
                    "handoff",
                    json!({"destination_agent": "writer", "reason": "write it up"}),
                )],
                "tool_use",
            )
        } else {
            answer(req, "the article")
        }
    });
    let tmp = tempfile::tempdir().unwrap();
    support::handoff::write_team(
        tmp.path(),
        &support::handoff::PAIR,
        |_| "You help.".into(),
        "name: pair\nprocess: handoff\nentry: researcher\nafter_work_behavior: terminate\n",
    );
    let run = Runtime::new(Team::load(tmp.path()).unwrap(), model(&server))
        .run("Explain tea")
        .unwrap();
    assert_eq!(run.status, RunStatus::Done);
    assert_eq!(run.answer, "the article");
    assert_eq!(run.steps[0].how.as_deref(), Some("tool"));
    assert_eq!(run.steps[0].handoff_target.as_deref(), Some("writer"));
    let writer = server
        .seen()
        .into_iter()
        .find(|r| text_of(r).contains("It is your turn, writer"))
        .unwrap();
    assert!(text_of(&writer).contains("write it up"));
}

#[test]
fn a_team_with_an_mcp_tool_uses_it_over_tool_use() {
    let server = Server::start(|req| {
        check_shape(req);
        let text = text_of(req);
        if text.contains("Split this task") {
            return answer(req, "ASSIGN:writer:echo something");
        }
        if text.contains("Round 1 of") || text.contains("The work is over") {
            return answer(req, "DONE\nEchoed.");
        }
        if offers(req, "everything__echo") {
            let results = tool_results(req);
            if results.is_empty() {
                return answer_with(
                    req,
                    "",
                    &[(
                        "toolu_e",
                        "everything.echo",
                        json!({"message": "from claude"}),
                    )],
                    "tool_use",
                );
            }
            assert_eq!(results[0].0, "toolu_e");
            return answer(req, &format!("The draft, after: {}", results[0].1));
        }
        answer(req, "A draft.")
    });
    let mut config = TeamConfig::default();
    config
        .mcp_servers
        .insert("everything".into(), mcp_support::everything());
    let team = Team::new(
        "tools",
        config,
        vec![
            AgentSpec::master("lead", "You lead."),
            AgentSpec::member("writer", "Writes", "You write.").with_tools(["everything.echo"]),
        ],
    )
    .unwrap();
    let run = Runtime::new(team, model(&server))
        .run("Echo something")
        .unwrap();
    assert_eq!(run.status, RunStatus::Done);
    assert_eq!(run.answer, "Echoed.");
    let draft = run.board.iter().find(|e| e.author == "writer").unwrap();
    assert!(draft.text.contains("from claude"), "{}", draft.text);
    // A plain tool run leaves the choice to the model: no `tool_choice`.
    let seen = server.seen();
    assert!(seen.iter().any(|r| offers(r, "everything__echo")));
    for r in &seen {
        assert!(r.body.get("tool_choice").is_none(), "{}", r.body);
    }
}

#[test]
fn the_json_protocol_is_a_forced_tool() {
    let server = Server::start(|req| {
        check_shape(req);
        let text = text_of(req);
        let (name, input) = if text.contains("Split this task") {
            (
                "master_plan",
                json!({"decision": "assign", "assignments": [
                    {"member": "writer", "task": "write it"}], "answer": ""}),
            )
        } else if text.contains("is over. This is the board") {
            (
                "master_decision",
                json!({"decision": "done", "assignments": [], "answer": "The JSON answer."}),
            )
        } else {
            return answer(req, "A draft.");
        };
        assert_eq!(
            req.body["tool_choice"],
            json!({"type": "tool", "name": name})
        );
        assert!(offers(req, name));
        answer_with(req, "", &[("toolu_s", name, input)], "tool_use")
    });
    let run = Runtime::new(support::teams::duo("pair"), model(&server))
        .protocol(Protocol::Json)
        .run("Write about tea")
        .unwrap();
    assert_eq!(run.status, RunStatus::Done);
    assert_eq!(run.answer, "The JSON answer.");
}

#[test]
fn prompt_caching_marks_the_prefix_and_counts_cache_tokens() {
    let server = Server::start(|req| {
        check_shape(req);
        assert_eq!(req.body["system"][0]["cache_control"]["type"], "ephemeral");
        let reply = one_round(req, "writer", "Cached.");
        // Whole answers, so that the usage below is the server's.
        let support::Reply::Plain {
            status,
            headers,
            body,
        } = reply
        else {
            panic!("whole answers only");
        };
        let mut v: serde_json::Value = serde_json::from_str(&body).unwrap();
        v["usage"] = json!({"input_tokens": 3, "output_tokens": 5,
            "cache_read_input_tokens": 100, "cache_creation_input_tokens": 7});
        support::Reply::Plain {
            status,
            headers,
            body: v.to_string(),
        }
    });
    let model = Anthropic::builder("claude-test")
        .base_url(base_url(&server))
        .api_key(KEY)
        .prompt_cache(true)
        .stream(false)
        .build()
        .unwrap();
    let run = Runtime::new(support::teams::duo("pair"), model)
        .run("Say hi")
        .unwrap();
    assert_eq!(run.answer, "Cached.");
    let calls = server.seen().len() as u64;
    assert_eq!(run.usage.cache_read_tokens, 100 * calls);
    assert_eq!(run.usage.cache_creation_tokens, 7 * calls);
    assert_eq!(run.usage.prompt_tokens, 110 * calls);
}

#[test]
fn check_shows_the_provider_and_whether_the_key_is_set() {
    let server = Server::start(|_| anthropic_support::error(500, "api_error", "unused"));
    let dir = tempfile::tempdir().unwrap();
    support::handoff::write_team(
        dir.path(),
        &support::handoff::PAIR,
        |_| "You help.".into(),
        "name: pair\nmodels:\n  fast:\n    provider: anthropic\n    model: claude-test\n",
    );
    let ran = run_cli(&server, &["check", "--team", "."], Some(dir.path()));
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let url = format!("{}/v1/messages", base_url(&server));
    assert!(
        ran.stdout.contains(&format!(
            "  model  fast           anthropic claude-test at {url}, key ANTHROPIC_API_KEY set"
        )),
        "{}",
        ran.stdout
    );
    no_key(&ran.all());
    let ran = run_cli_with(&server, &["check", "--team", "."], Some(dir.path()), None);
    assert!(
        ran.stdout.contains("key ANTHROPIC_API_KEY not set"),
        "{}",
        ran.stdout
    );
    std::fs::write(
        dir.path().join("team.yaml"),
        "name: pair\nmodels:\n  fast:\n    provider: gemini\n    model: x\n",
    )
    .unwrap();
    let ran = run_cli(&server, &["check", "--team", "."], Some(dir.path()));
    assert_eq!(ran.code, 2, "{}", ran.stdout);
    assert!(
        ran.stderr
            .contains("unknown provider 'gemini' (known: openai, anthropic)"),
        "{}",
        ran.stderr
    );
}

#[test]
fn a_json_protocol_run_from_the_cli_forces_the_schema_tool_and_nothing_else() {
    let server = Server::start(|req| {
        check_shape(req);
        let text = text_of(req);
        if text.contains("Split this task") {
            let input = json!({"decision": "assign", "assignments": [
                {"member": "writer", "task": "write it"}], "answer": ""});
            answer_with(req, "", &[("toolu_p", "master_plan", input)], "tool_use")
        } else if text.contains("is over. This is the board") {
            let input =
                json!({"decision": "done", "assignments": [], "answer": "The JSON answer."});
            answer_with(
                req,
                "",
                &[("toolu_d", "master_decision", input)],
                "tool_use",
            )
        } else {
            answer(req, "A draft.")
        }
    });
    let ran = run_cli(
        &server,
        &[
            "run",
            "Explain tea",
            "--protocol",
            "json",
            "--model",
            "anthropic:claude-test",
        ],
        None,
    );
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert!(ran.stdout.contains("The JSON answer."), "{}", ran.stdout);
    no_key(&ran.all());
    let seen = server.seen();
    for name in ["master_plan", "master_decision"] {
        let forced: Vec<_> = seen.iter().filter(|r| offers(r, name)).collect();
        assert!(!forced.is_empty(), "{name} was asked for");
        for r in forced {
            assert_eq!(r.body["tool_choice"], json!({"type": "tool", "name": name}));
            let tools = r.body["tools"].as_array().unwrap();
            assert_eq!(tools.len(), 1, "the schema's tool alone: {}", r.body);
            assert_eq!(tools[0]["input_schema"]["type"], "object");
        }
    }
    // A call with no schema (a draft) forces nothing.
    let draft = seen
        .iter()
        .find(|r| r.body.get("tools").is_none())
        .expect("a draft");
    assert!(draft.body.get("tool_choice").is_none(), "{}", draft.body);
}

#[test]
fn a_schema_with_other_tools_makes_the_model_call_one_of_them() {
    let server = Server::start(|req| {
        check_shape(req);
        let text = text_of(req);
        let (name, input) = if text.contains("Split this task") {
            (
                "master_plan",
                json!({"decision": "assign", "assignments": [
                    {"member": "writer", "task": "write it"}], "answer": ""}),
            )
        } else if text.contains("is over. This is the board") {
            (
                "master_decision",
                json!({"decision": "done", "assignments": [], "answer": "Done with tools."}),
            )
        } else {
            return answer(req, "A draft.");
        };
        answer_with(req, "", &[("toolu_s", name, input)], "tool_use")
    });
    let mut config = TeamConfig::default();
    config
        .mcp_servers
        .insert("everything".into(), mcp_support::everything());
    let team = Team::new(
        "tools",
        config,
        vec![
            AgentSpec::master("lead", "You lead.").with_tools(["everything.echo"]),
            AgentSpec::member("writer", "Writes", "You write."),
        ],
    )
    .unwrap();
    let run = Runtime::new(team, model(&server))
        .protocol(Protocol::Json)
        .run("Write about tea")
        .unwrap();
    assert_eq!(run.status, RunStatus::Done);
    assert_eq!(run.answer, "Done with tools.");
    let seen = server.seen();
    let both: Vec<_> = seen
        .iter()
        .filter(|r| offers(r, "master_plan") && offers(r, "everything__echo"))
        .collect();
    assert!(
        !both.is_empty(),
        "the master's plan call offers its tool too"
    );
    for r in both {
        assert_eq!(r.body["tool_choice"], json!({"type": "any"}), "{}", r.body);
    }
}
