//! Whole runs with tools from an MCP server reached over Streamable HTTP
//! (issue 10 acceptance): `remote.*` granted to a member, on sim tool calls
//! and on a loopback OpenAI-compatible server; `boardroom check` lists the
//! remote tools or names an unreachable URL (exit 2); a bearer token given
//! as `${VAR}` reaches the server and appears nowhere in the run directory
//! or in any log, at any log level.

mod mcp_support;
mod support;

use std::path::Path;
use std::process::{Command, Output};

use boardroom::board::EntryKind;
use boardroom::mcp::McpServerConfig;
use boardroom::testing::{Sim, SimOptions, SimToolCall};
use boardroom::{AgentSpec, OpenAi, RunStatus, Runtime, Team, TeamConfig};
use mcp_support::HttpEverything;
use serde_json::json;
use support::{Reply, Request, Server};

const BIN: &str = env!("CARGO_BIN_EXE_boardroom");
/// A secret written into the config itself (not through `${VAR}`).
const API_KEY: &str = "literal-api-key-5e1d0c7b";

fn team(url: &str) -> Team {
    let mut config = TeamConfig::default();
    config
        .mcp_servers
        .insert("remote".into(), McpServerConfig::http(url));
    Team::new(
        "remote",
        config,
        vec![
            AgentSpec::master("lead", "You lead."),
            AgentSpec::member("writer", "Writes", "You write.").with_tools(["remote.*"]),
        ],
    )
    .unwrap()
}

fn writer_draft(outcome: &boardroom::RunOutcome) -> String {
    outcome
        .board
        .iter()
        .find(|e| e.author == "writer" && e.kind == EntryKind::Draft)
        .expect("a draft by the writer")
        .text
        .clone()
}

#[test]
fn a_team_with_remote_tools_runs_on_sim_tool_calls() {
    let server = HttpEverything::start();
    let sim = Sim::with_options(SimOptions {
        tool_calls: vec![SimToolCall::new(
            "writer",
            "remote.echo",
            json!({"message": "over http"}),
        )],
        ..SimOptions::default()
    });
    let outcome = Runtime::new(team(&server.url()), sim)
        .run("Write a note")
        .unwrap();
    assert_eq!(outcome.status, RunStatus::Done);
    let draft = writer_draft(&outcome);
    assert!(draft.contains("Echo: over http"), "{draft}");
}

/// The loopback model: the master assigns, the writer calls `remote.echo`
/// (as `remote__echo`) and then writes what it got, the master is done.
fn brain(req: &Request) -> Reply {
    let has_tools = req.body["tools"].as_array().is_some_and(|t| !t.is_empty());
    let messages = req.body["messages"].as_array().cloned().unwrap_or_default();
    let tool_result = messages
        .iter()
        .find(|m| m["role"] == "tool")
        .and_then(|m| m["content"].as_str().map(str::to_string));
    if has_tools {
        let names: Vec<&str> = req.body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["function"]["name"].as_str())
            .collect();
        assert!(names.contains(&"remote__echo"), "{names:?}");
        return match tool_result {
            Some(text) => Reply::completion(&format!("Draft: {text}")),
            None => Reply::status(
                200,
                &json!({"id": "x", "object": "chat.completion",
                    "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                        "role": "assistant", "content": null,
                        "tool_calls": [{"id": "c1", "type": "function", "function": {
                            "name": "remote__echo", "arguments": "{\"message\":\"via openai\"}"}}]}}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
                .to_string(),
            ),
        };
    }
    if req.all_text().contains("Echo: via openai") {
        Reply::completion("DONE\nThe writer reached the remote server.")
    } else {
        Reply::completion("ASSIGN:writer:Call the echo tool and report")
    }
}

#[test]
fn a_team_with_remote_tools_runs_on_a_loopback_openai_server() {
    let mcp = HttpEverything::start();
    let llm = Server::start(brain);
    let model = OpenAi::builder(llm.base_url(), "m")
        .stream(false)
        .build()
        .unwrap();
    let outcome = Runtime::new(team(&mcp.url()), model)
        .run("Write a note")
        .unwrap();
    assert_eq!(outcome.status, RunStatus::Done, "{}", outcome.answer);
    assert_eq!(outcome.answer, "The writer reached the remote server.");
    assert!(writer_draft(&outcome).contains("Draft: Echo: via openai"));
}

// ---- the command line ----

fn write_team(dir: &Path, url: &str) {
    std::fs::create_dir_all(dir.join("agents")).unwrap();
    std::fs::create_dir_all(dir.join("souls")).unwrap();
    std::fs::write(
        dir.join("agents/lead.md"),
        "---\nname: lead\nrole: master\n---\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("agents/writer.md"),
        "---\nname: writer\nrole: member\ntools: [remote.*]\n---\n",
    )
    .unwrap();
    std::fs::write(dir.join("souls/lead.md"), "You lead.").unwrap();
    std::fs::write(dir.join("souls/writer.md"), "You write.").unwrap();
    std::fs::write(
        dir.join("mcp.json"),
        json!({"mcpServers": {"remote": {
            "url": url,
            "headers": {
                "Authorization": "Bearer ${BOARDROOM_MCP_TOKEN}",
                "X-Api-Key": API_KEY
            }
        }}})
        .to_string(),
    )
    .unwrap();
}

fn boardroom(args: &[&str], rust_log: &str, token: &str) -> Output {
    Command::new(BIN)
        .args(args)
        .env("RUST_LOG", rust_log)
        .env("BOARDROOM_MCP_TOKEN", token)
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .output()
        .expect("run boardroom")
}

/// A small MCP server that wants the bearer token (and the API key
/// header) on every request: 401 without them.
fn gated_mcp(token: &'static str) -> Server {
    Server::start(move |req: &Request| {
        if req.header("authorization") != Some(&format!("Bearer {token}"))
            || req.header("x-api-key") != Some(API_KEY)
        {
            return Reply::status(401, "{\"error\":\"unauthorized\"}");
        }
        let id = &req.body["id"];
        let ok = |result: serde_json::Value| {
            Reply::status(
                200,
                &json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string(),
            )
        };
        match req.body["method"].as_str() {
            None if req.body.is_null() => Reply::status(405, ""),
            Some("initialize") => ok(json!({"protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}}, "serverInfo": {"name": "gate"}}))
            .with_header("Mcp-Session-Id", "gate-1"),
            Some("tools/list") => ok(json!({"tools": [
                {"name": "echo", "description": "Echoes", "inputSchema": {"type": "object"}}]})),
            Some("tools/call") => ok(json!({"content": [{"type": "text",
                "text": format!("Echo: {}", req.body["params"]["arguments"]["message"])}]})),
            _ => Reply::status(202, ""),
        }
    })
}

/// Every file under `dir`, read as text.
fn all_files(dir: &Path, out: &mut Vec<(String, String)>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            all_files(&path, out);
        } else {
            let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
            out.push((path.display().to_string(), text));
        }
    }
}

#[test]
fn check_lists_the_remote_tools_or_names_the_unreachable_url() {
    const TOKEN: &str = "mcp-tok-3f9a7c21d5e8";
    let server = gated_mcp(TOKEN);
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://127.0.0.1:{}/mcp", server.port);
    write_team(dir.path(), &url);
    let team = dir.path().to_str().unwrap();
    let out = boardroom(&["check", "--team", team], "warn", TOKEN);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("tools: remote.echo"), "{stdout}");
    assert!(
        stdout.contains("mcp    remote         gate (protocol 2025-06-18), 1 tools"),
        "{stdout}"
    );

    // A wrong token: the server's 401 is named.
    let out = boardroom(&["check", "--team", team], "warn", "wrong-token-123");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("mcp server 'remote': http status 401: {\"error\":\"unauthorized\"}"),
        "{stderr}"
    );
    assert!(!stderr.contains("wrong-token-123"), "{stderr}");

    // Nothing listens there any more.
    drop(server);
    let out = boardroom(&["check", "--team", team], "warn", TOKEN);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with(&format!("error: mcp server 'remote': cannot reach {url}: ")),
        "{stderr}"
    );
}

#[test]
fn a_bearer_token_reaches_the_server_and_is_never_written_or_logged() {
    const TOKEN: &str = "mcp-secret-token-8d2c4b1e9f7a";
    let server = gated_mcp(TOKEN);
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://127.0.0.1:{}/mcp", server.port);
    write_team(dir.path(), &url);
    let team = dir.path().to_str().unwrap();
    for rust_log in [
        "trace",
        "ureq=trace,ureq_proto=trace,boardroom=trace",
        "debug",
    ] {
        let runs = tempfile::tempdir().unwrap();
        let out = boardroom(
            &[
                "run",
                "--team",
                team,
                "--runs-dir",
                runs.path().to_str().unwrap(),
                "--model",
                r#"sim:tool=writer:remote.echo:{"message":"through the gate"}"#,
                "Write a note",
            ],
            rust_log,
            TOKEN,
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "RUST_LOG={rust_log}: {stderr}");
        // It reached the server: the gate let the calls through.
        let mut files = Vec::new();
        all_files(runs.path(), &mut files);
        assert!(
            files
                .iter()
                .any(|(_, t)| t.contains("Echo: \\\"through the gate\\\"")
                    || t.contains("Echo: \"through the gate\"")),
            "no tool result in the run directory"
        );
        assert!(
            stderr.len() > 1000 || rust_log == "debug",
            "RUST_LOG={rust_log} logged little"
        );
        for (name, text) in files
            .iter()
            .map(|(n, t)| (n.as_str(), t.as_str()))
            .chain([("stdout", &*stdout), ("stderr", &*stderr)])
        {
            assert!(
                !text.contains(TOKEN) && !text.contains(&TOKEN[..12]),
                "RUST_LOG={rust_log}: the token is in {name}"
            );
            assert!(
                !text.contains(API_KEY),
                "RUST_LOG={rust_log}: the api key is in {name}"
            );
        }
    }
    let seen = server.seen();
    assert!(!seen.is_empty());
    assert!(
        seen.iter()
            .all(|r| r.header("authorization") == Some(&*format!("Bearer {TOKEN}")))
    );
}
