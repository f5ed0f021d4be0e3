//! Streaming and plain answers of the OpenAI-compatible provider against a
//! loopback server: SSE split across reads, the usage chunk, tool calls in
//! both paths, and the request in OpenAI's shape.

mod support;

use boardroom::{
    ChatModel, ChatRequest, FinishReason, Message, OpenAi, OutputSchema, Phase, ToolCall, ToolSpec,
};
use serde_json::json;
use support::{Reply, Server};

fn model(server: &Server, stream: bool) -> OpenAi {
    OpenAi::builder(server.base_url(), "test-model")
        .api_key("sk-test-4f9a1c77e2b0")
        .stream(stream)
        .sleep_with(|_| {})
        .build()
        .unwrap()
}

fn request() -> ChatRequest {
    ChatRequest::new("writer", Phase::Draft, 1, vec![Message::user("hello")])
}

#[test]
fn sse_split_across_reads_with_a_final_usage_chunk() {
    // One stream cut into pieces at awkward places: inside "data:", inside
    // the JSON, inside a two-byte UTF-8 character, between \r and \n.
    let whole = concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Thé \"}}]}\r\n\r\n",
        ": keep-alive\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"is \"}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hot\"},\"finish_reason\":\"stop\"}]}\n\n",
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":21,\"completion_tokens\":3,\"total_tokens\":24}}\n\n",
        "data: [DONE]\n\n"
    )
    .as_bytes()
    .to_vec();
    let e_acute = whole.iter().position(|&b| b == 0xC3).unwrap();
    let cuts = [
        3,
        40,
        e_acute + 1,
        e_acute + 30,
        120,
        121,
        200,
        whole.len() - 5,
    ];
    let mut pieces = Vec::new();
    let mut start = 0;
    for cut in cuts {
        pieces.push(whole[start..cut].to_vec());
        start = cut;
    }
    pieces.push(whole[start..].to_vec());
    let server = Server::start(move |_| Reply::SseBytes(pieces.clone()));
    let m = model(&server, true);
    let mut deltas = Vec::new();
    let r = m
        .chat(&request(), &mut |d| deltas.push(d.to_string()))
        .unwrap();
    assert_eq!(deltas, ["Thé ", "is ", "hot"]);
    assert_eq!(r.text, "Thé is hot");
    assert_eq!(r.usage.prompt_tokens, 21);
    assert_eq!(r.usage.completion_tokens, 3);
    assert_eq!(r.finish, FinishReason::Stop);
    assert_eq!(r.retries, 0);
}

#[test]
fn the_request_is_in_openai_shape() {
    let server = Server::start(|req| Reply::answer(req, "ok"));
    let m = model(&server, true);
    let mut req = request();
    req.temperature = Some(0.5);
    req.max_tokens = Some(100);
    req.tools.push(ToolSpec {
        name: "workspace_read".into(),
        description: "Reads a file".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    });
    req.schema = Some(OutputSchema {
        name: "verdict".into(),
        schema: json!({"type": "object"}),
    });
    m.chat(&req, &mut |_| {}).unwrap();
    let seen = &server.seen()[0];
    assert_eq!(seen.path, "/v1/chat/completions");
    assert_eq!(
        seen.header("authorization"),
        Some("Bearer sk-test-4f9a1c77e2b0")
    );
    assert_eq!(seen.body["model"], "test-model");
    assert_eq!(seen.body["stream"], true);
    assert_eq!(seen.body["stream_options"]["include_usage"], true);
    assert_eq!(seen.body["max_tokens"], 100);
    assert_eq!(
        seen.body["messages"][0],
        json!({"role": "user", "content": "hello"})
    );
    assert_eq!(seen.body["tools"][0]["function"]["name"], "workspace_read");
    assert_eq!(
        seen.body["response_format"]["json_schema"]["name"],
        "verdict"
    );
}

#[test]
fn plain_answers_when_not_streaming() {
    let server = Server::start(|req| {
        assert!(!req.streaming());
        Reply::completion("whole answer")
    });
    let m = model(&server, false);
    let mut deltas = Vec::new();
    let r = m
        .chat(&request(), &mut |d| deltas.push(d.to_string()))
        .unwrap();
    assert_eq!(r.text, "whole answer");
    assert_eq!(deltas, ["whole answer"], "one delta for a whole answer");
    assert_eq!(r.usage.total(), 15);
    assert!(server.seen()[0].body.get("stream_options").is_none());
}

#[test]
fn a_server_that_ignores_stream_true_still_works() {
    let server = Server::start(|_| Reply::completion("not streamed"));
    let r = model(&server, true).chat(&request(), &mut |_| {}).unwrap();
    assert_eq!(r.text, "not streamed");
}

#[test]
fn tool_calls_in_both_paths_and_back_in_openai_shape() {
    let call_json = json!({"id": "call_1", "type": "function",
        "function": {"name": "workspace_read", "arguments": "{\"path\":\"a.md\"}"}});
    let plain = json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": null,
        "tool_calls": [call_json]}, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 5}})
    .to_string();
    let stream = vec![
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"workspace_read\",\"arguments\":\"\"}}]}}]}\n\n".to_string(),
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"path\\\":\"}}]}}]}\n\n".to_string(),
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\"a.md\\\"}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n".to_string(),
        "data: [DONE]\n\n".to_string(),
    ];
    let server = Server::start(move |req| {
        if req.streaming() {
            Reply::Sse(stream.clone())
        } else {
            Reply::status(200, &plain)
        }
    });
    let want = ToolCall {
        id: "call_1".into(),
        name: "workspace_read".into(),
        arguments: "{\"path\":\"a.md\"}".into(),
    };
    for streaming in [true, false] {
        let r = model(&server, streaming)
            .chat(&request(), &mut |_| {})
            .unwrap();
        assert_eq!(r.tool_calls, vec![want.clone()], "stream {streaming}");
        assert_eq!(r.finish, FinishReason::ToolCalls);
    }
    // The next turn carries the call and its result in OpenAI's shape.
    let mut asked = Message::assistant("");
    asked.tool_calls.push(want);
    let next = ChatRequest::new(
        "writer",
        Phase::Draft,
        1,
        vec![
            Message::user("hello"),
            asked,
            Message::tool("call_1", "# a"),
        ],
    );
    model(&server, false).chat(&next, &mut |_| {}).unwrap();
    let seen = server.seen();
    let body = &seen.last().unwrap().body;
    assert_eq!(body["messages"][1]["tool_calls"][0], call_json);
    assert_eq!(body["messages"][1]["content"], serde_json::Value::Null);
    assert_eq!(
        body["messages"][2],
        json!({"role": "tool", "content": "# a", "tool_call_id": "call_1"})
    );
}

#[test]
fn a_stream_cut_before_done_is_retried() {
    let server = Server::start(|req| {
        if req.index == 0 {
            Reply::Sse(vec![]) // headers, then the connection closes
        } else {
            Reply::stream(&["whole"])
        }
    });
    let r = model(&server, true).chat(&request(), &mut |_| {}).unwrap();
    assert_eq!(r.text, "whole");
    assert_eq!(r.retries, 1);
}

#[test]
fn team_yaml_endpoints_are_built_and_shared() {
    let server = Server::start(|req| {
        let text = req.all_text();
        let reply = if text.contains("Split this task") {
            "ASSIGN:writer:write it\nASSIGN:editor:check it"
        } else if text.contains("is over") {
            "DONE\nok"
        } else {
            "A draft."
        };
        Reply::answer(req, reply)
    });
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("agents")).unwrap();
    std::fs::create_dir_all(root.join("souls")).unwrap();
    for (name, role, model) in [
        ("lead", "master", "default"),
        ("writer", "member", "local"),
        ("editor", "member", "local"),
    ] {
        std::fs::write(
            root.join(format!("agents/{name}.md")),
            format!("---\nname: {name}\nrole: {role}\nmodel: {model}\n---\n"),
        )
        .unwrap();
        std::fs::write(root.join(format!("souls/{name}.md")), "You work.").unwrap();
    }
    std::fs::write(
        root.join("team.yaml"),
        format!(
            "models:\n  local:\n    base_url: {}\n    model: small\n    stream: false\n    max_in_flight: 1\n    api_key_env: BOARDROOM_TEST_UNSET_KEY\n",
            server.base_url()
        ),
    )
    .unwrap();
    let team = boardroom::Team::load(root).unwrap();
    let master = OpenAi::builder(server.base_url(), "big").build().unwrap();
    let outcome = boardroom::Runtime::new(team, master).run("Task").unwrap();
    assert_eq!(outcome.answer, "ok");
    let seen = server.seen();
    let drafts: Vec<_> = seen.iter().filter(|r| r.body["model"] == "small").collect();
    assert_eq!(drafts.len(), 2);
    assert!(drafts.iter().all(|r| r.body["stream"] == false));
    assert!(drafts.iter().all(|r| r.header("authorization").is_none()));
    assert!(
        seen.iter()
            .filter(|r| r.body["model"] == "big")
            .all(|r| r.streaming())
    );
}
