//! The handoff tool over a real OpenAI-compatible endpoint (a loopback
//! server started by the test): the `handoff` tool is offered on the wire,
//! the model's tool call is taken by the run and never answered as a tool,
//! and the next agent's request carries the step in its history.

mod support;

use boardroom::protocol::Protocol;
use boardroom::{RunStatus, Runtime, Team};
use support::handoff::{PAIR, write_team};
use support::{Reply, Request, Server};

fn team(dir: &std::path::Path) -> Team {
    write_team(
        dir,
        &PAIR,
        |_| "You help.".into(),
        "name: pair\nprocess: handoff\nentry: researcher\nafter_work_behavior: terminate\n",
    );
    Team::load(dir).unwrap()
}

fn offers(req: &Request, tool: &str) -> bool {
    req.body["tools"]
        .as_array()
        .is_some_and(|t| t.iter().any(|t| t["function"]["name"] == tool))
}

fn tool_call_reply(name: &str, args: serde_json::Value) -> Reply {
    Reply::status(
        200,
        &serde_json::json!({
            "id": "x", "object": "chat.completion",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": "notes on tea",
                "tool_calls": [{"id": "call_7", "type": "function",
                    "function": {"name": name, "arguments": args.to_string()}}]}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        })
        .to_string(),
    )
}

#[test]
fn a_handoff_tool_call_over_http_is_taken_by_the_run() {
    let server = Server::start(|req| {
        let text = req.all_text();
        if text.contains("<candidates>") || text.contains("<routing_rules") {
            Reply::completion("NONE")
        } else if text.contains("It is your turn, researcher") {
            tool_call_reply(
                "handoff",
                serde_json::json!({"destination_agent": "writer", "reason": "write it up"}),
            )
        } else {
            Reply::completion("the article")
        }
    });
    let tmp = tempfile::tempdir().unwrap();
    let model = boardroom::openai::resolve_model(&format!(
        "http://127.0.0.1:{}/v1#test-model,stream=false",
        server.port
    ))
    .unwrap();
    let run = Runtime::with_shared_model(team(tmp.path()), model)
        .run("Explain tea")
        .unwrap();
    assert_eq!(run.status, RunStatus::Done);
    assert_eq!(run.answer, "the article");
    assert_eq!(run.steps[0].how.as_deref(), Some("tool"));
    assert_eq!(run.steps[0].handoff_target.as_deref(), Some("writer"));

    let seen = server.seen();
    // researcher's turn, writer's turn, then the router after the writer.
    assert_eq!(
        seen.len(),
        3,
        "{:#?}",
        seen.iter().map(|r| r.all_text()).collect::<Vec<_>>()
    );
    assert!(offers(&seen[0], "handoff"));
    // The call was never answered as a tool: no request carries a tool
    // message for it.
    assert!(seen.iter().all(|r| {
        r.body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["role"] != "tool")
    }));
    let writer = seen[1].all_text();
    assert!(writer.contains("It is your turn, writer"));
    assert!(writer.contains("notes on tea") && writer.contains("write it up"));
    // With --protocol line no tool is offered on the wire.
    let model = boardroom::openai::resolve_model(&format!(
        "http://127.0.0.1:{}/v1#test-model,stream=false",
        server.port
    ))
    .unwrap();
    let before = server.seen().len();
    Runtime::with_shared_model(team(tmp.path().join("again").as_path()), model)
        .protocol(Protocol::Line)
        .run("Explain tea")
        .unwrap();
    let line = &server.seen()[before];
    assert!(!offers(line, "handoff"));
}
