//! A fake Anthropic Messages API on the loopback server of `support`:
//! answers in Anthropic's shapes (whole messages and SSE events), reads
//! Anthropic-shaped requests (top-level `system`, content blocks), and
//! runs the CLI against it with a key that must never show.
#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::support::{Reply, Request, Server};

/// A key that looks like a real one; no piece of it may appear anywhere.
pub const KEY: &str = "sk-ant-api03-Zq8rT5vLw2XyPm4N0aBcDeFgHiJk";

/// A piece of [`KEY`] long enough to be masked wherever it shows.
pub const KEY_PIECE: &str = "Zq8rT5vLw2";

/// The base URL of `server` as `ANTHROPIC_BASE_URL` takes it.
pub fn base_url(server: &Server) -> String {
    format!("http://127.0.0.1:{}", server.port)
}

/// Every text of a request: the system prompt, text blocks, tool results.
pub fn text_of(req: &Request) -> String {
    let mut out = Vec::new();
    match &req.body["system"] {
        Value::String(s) => out.push(s.clone()),
        Value::Array(blocks) => out.extend(
            blocks
                .iter()
                .filter_map(|b| b["text"].as_str().map(str::to_string)),
        ),
        _ => {}
    }
    for m in req.body["messages"].as_array().into_iter().flatten() {
        for b in m["content"].as_array().into_iter().flatten() {
            if let Some(t) = b["text"].as_str() {
                out.push(t.to_string());
            }
            if let Some(t) = b["content"].as_str() {
                out.push(t.to_string());
            }
        }
    }
    out.join("\n")
}

/// The `tool_result` blocks of a request: (tool_use_id, content).
pub fn tool_results(req: &Request) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for m in req.body["messages"].as_array().into_iter().flatten() {
        for b in m["content"].as_array().into_iter().flatten() {
            if b["type"] == "tool_result" {
                out.push((
                    b["tool_use_id"].as_str().unwrap_or("").to_string(),
                    b["content"].as_str().unwrap_or("").to_string(),
                ));
            }
        }
    }
    out
}

/// Whether a request offers the tool `name`.
pub fn offers(req: &Request, name: &str) -> bool {
    req.body["tools"]
        .as_array()
        .is_some_and(|t| t.iter().any(|t| t["name"] == name))
}

/// Checks what every request to the Messages API must carry.
pub fn check_shape(req: &Request) {
    assert_eq!(req.path, "/v1/messages");
    assert_eq!(req.header("x-api-key"), Some(KEY), "the key is sent");
    assert_eq!(req.header("anthropic-version"), Some("2023-06-01"));
    assert!(req.header("authorization").is_none(), "no bearer key");
    assert!(req.body["max_tokens"].as_u64().is_some_and(|n| n > 0));
    let messages = req.body["messages"].as_array().expect("messages");
    assert_eq!(messages[0]["role"], "user", "a user turn first");
    for pair in messages.windows(2) {
        assert_ne!(pair[0]["role"], pair[1]["role"], "roles alternate");
    }
    assert!(messages.iter().all(|m| m["role"] != "system"));
}

/// Usage as Anthropic reports it.
fn usage() -> Value {
    json!({"input_tokens": 10, "output_tokens": 5,
           "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0})
}

/// A whole message: `content` blocks and a stop reason.
pub fn message(content: Value, stop: &str) -> Reply {
    Reply::status(
        200,
        &json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
                "content": content, "stop_reason": stop, "usage": usage()})
        .to_string(),
    )
    .with_header("Content-Type", "application/json")
}

/// One SSE event.
pub fn event(data: &Value) -> String {
    format!(
        "event: {}\ndata: {data}\n\n",
        data["type"].as_str().unwrap_or("")
    )
}

/// The events of a streamed message: text in `pieces`, then tool uses
/// `(id, name, input)`, then `stop`.
pub fn events(pieces: &[&str], tools: &[(&str, &str, Value)], stop: &str) -> Vec<String> {
    let mut out = vec![
        event(
            &json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
            "role": "assistant", "content": [], "usage": {"input_tokens": 10, "output_tokens": 1}}}),
        ),
        event(&json!({"type": "ping"})),
    ];
    let mut index = 0;
    if !pieces.is_empty() {
        out.push(event(&json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "text", "text": ""}})));
        for p in pieces {
            out.push(event(&json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "text_delta", "text": p}})));
        }
        out.push(event(&json!({"type": "content_block_stop", "index": 0})));
        index = 1;
    }
    for (id, name, input) in tools {
        out.push(event(
            &json!({"type": "content_block_start", "index": index,
            "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
        ));
        let json = input.to_string();
        let (a, b) = json.split_at(json.len() / 2);
        for part in [a, b] {
            out.push(event(
                &json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "input_json_delta", "partial_json": part}}),
            ));
        }
        out.push(event(
            &json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    }
    out.push(event(&json!({"type": "message_delta",
        "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": 5}})));
    out.push(event(&json!({"type": "message_stop"})));
    out
}

/// `text` (and tool uses) in whichever form the request asked for.
pub fn answer_with(req: &Request, text: &str, tools: &[(&str, &str, Value)], stop: &str) -> Reply {
    if req.body["stream"] == true {
        Reply::Sse(events(&[text], tools, stop))
    } else {
        let mut content = vec![json!({"type": "text", "text": text})];
        content.extend(tools.iter().map(
            |(id, name, input)| json!({"type": "tool_use", "id": id, "name": name, "input": input}),
        ));
        message(Value::Array(content), stop)
    }
}

/// A plain text answer.
pub fn answer(req: &Request, text: &str) -> Reply {
    answer_with(req, text, &[], "end_turn")
}

/// The line protocol of a blackboard team in one round (as
/// `Reply::one_round`, for Anthropic's shapes).
pub fn one_round(req: &Request, member: &str, done: &str) -> Reply {
    let text = text_of(req);
    let reply = if text.contains("Split this task") {
        format!("ASSIGN:{member}:do your part")
    } else if text.contains("Round 1 of") || text.contains("The work is over") {
        format!("DONE\n{done}")
    } else if text.contains("Reply CHALLENGE:<...> or AGREE") {
        "AGREE".into()
    } else if text.contains("worth remembering") {
        "- nothing".into()
    } else {
        "A draft.".into()
    };
    answer(req, &reply)
}

/// An error as Anthropic sends it.
pub fn error(status: u16, kind: &str, message: &str) -> Reply {
    Reply::status(
        status,
        &json!({"type": "error", "error": {"type": kind, "message": message}}).to_string(),
    )
    .with_header("Content-Type", "application/json")
}

/// What a CLI run printed and wrote.
pub struct Ran {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    /// Every file the run left, concatenated.
    pub files: String,
}

impl Ran {
    /// Everything, for the leak checks.
    pub fn all(&self) -> String {
        format!("{}{}{}", self.stdout, self.stderr, self.files)
    }
}

/// Runs the CLI in a fresh directory against `server`, with `RUST_LOG`
/// at trace and the key in `ANTHROPIC_API_KEY`.
pub fn run_cli(server: &Server, args: &[&str], dir: Option<&Path>) -> Ran {
    run_cli_with(server, args, dir, Some(KEY))
}

/// As [`run_cli`], with `key` (or none) in `ANTHROPIC_API_KEY`.
pub fn run_cli_with(server: &Server, args: &[&str], dir: Option<&Path>, key: Option<&str>) -> Ran {
    run_cli_logged(server, args, dir, key, "trace")
}

/// As [`run_cli_with`], with `RUST_LOG` at `level`.
pub fn run_cli_logged(
    server: &Server,
    args: &[&str],
    dir: Option<&Path>,
    key: Option<&str>,
    level: &str,
) -> Ran {
    let tmp = tempfile::tempdir().unwrap();
    let cwd = dir.unwrap_or(tmp.path());
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_boardroom"));
    cmd.args(args)
        .current_dir(cwd)
        .env("BOARDROOM_HOME", tmp.path())
        .env("ANTHROPIC_BASE_URL", base_url(server))
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("BOARDROOM_MODEL")
        .env_remove("OPENAI_API_KEY")
        .env("RUST_LOG", level);
    if let Some(key) = key {
        cmd.env("ANTHROPIC_API_KEY", key);
    }
    let out = cmd.output().unwrap();
    let mut files = String::new();
    read_tree(tmp.path(), &mut files);
    if let Some(d) = dir {
        read_tree(d, &mut files);
    }
    Ran {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        files,
    }
}

/// Appends every file under `dir` to `out`.
pub fn read_tree(dir: &Path, out: &mut String) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            read_tree(&path, out);
        } else if let Ok(bytes) = std::fs::read(&path) {
            out.push_str(&String::from_utf8_lossy(&bytes));
        }
    }
}

/// Asserts no piece of the key shows in `text`.
pub fn no_key(text: &str) {
    assert!(!text.contains(KEY), "the key leaked:\n{text}");
    assert!(!text.contains(KEY_PIECE), "part of the key leaked:\n{text}");
}
