//! Issue 28 ("Hold up, round two"), findings 16–19: secrets masked in every
//! file, span, log line and tool result. One whole run on the command line
//! against real loopback servers: an MCP server that wants a bearer token
//! (in a header and in its URL's query) and echoes it in a JSON-RPC error,
//! a model endpoint that echoes the API key (without its `sk-` prefix) in
//! its answers, and an OTLP collector behind a URL with a query string.

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::json;
use support::{Reply, Request, Server};

const BIN: &str = env!("CARGO_BIN_EXE_boardroom");
const TOKEN: &str = "mcp-tok-Q7r2x9Lk4w8Zp3Vn";
const KEY: &str = "sk-hold-J4kd92LxQp7Rw3ZmT8vY";

/// The first 6-character piece of `secret` found in `hay`.
fn leak(hay: &[u8], secret: &str) -> Option<String> {
    let s = secret.as_bytes();
    s.windows(6)
        .find(|w| hay.windows(6).any(|h| h == *w))
        .map(|w| String::from_utf8_lossy(w).into_owned())
}

fn files(dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files(&path, out);
        } else {
            out.push((path.display().to_string(), std::fs::read(&path).unwrap()));
        }
    }
}

/// An MCP server that wants the token and answers every tool call with a
/// JSON-RPC error that echoes it, whole and without its prefix.
fn echoing_mcp() -> Server {
    Server::start(move |req: &Request| {
        if req.header("authorization") != Some(&format!("Bearer {TOKEN}")) {
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
                "capabilities": {"tools": {}}, "serverInfo": {"name": "echoer"}}))
            .with_header("Mcp-Session-Id", "e-1"),
            Some("tools/list") => ok(json!({"tools": [
                {"name": "echo", "description": "Echoes", "inputSchema": {"type": "object"}}]})),
            Some("tools/call") => Reply::status(
                200,
                &json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32001,
                    "message": format!("token Bearer {TOKEN} may not call echo (tok {})", &TOKEN[4..])}})
                .to_string(),
            ),
            _ => Reply::status(202, ""),
        }
    })
}

/// The model: the master assigns, the writer calls `remote.echo` and then
/// writes what it got; both echo the key without its `sk-` prefix.
fn brain(req: &Request) -> Reply {
    let has_tools = req.body["tools"].as_array().is_some_and(|t| !t.is_empty());
    let messages = req.body["messages"].as_array().cloned().unwrap_or_default();
    let tool_result = messages
        .iter()
        .find(|m| m["role"] == "tool")
        .and_then(|m| m["content"].as_str().map(str::to_string));
    let echoed = &KEY[3..];
    if has_tools {
        return match tool_result {
            Some(text) => Reply::completion(&format!("Draft: {text} (my key is {echoed})")),
            None => Reply::status(
                200,
                &json!({"id": "x", "object": "chat.completion",
                    "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                        "role": "assistant", "content": null,
                        "tool_calls": [{"id": "c1", "type": "function", "function": {
                            "name": "remote__echo", "arguments": "{\"message\":\"hi\"}"}}]}}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
                .to_string(),
            ),
        };
    }
    if req.all_text().contains("Draft:") {
        Reply::completion(&format!("DONE\nThe writer tried; key {echoed} works."))
    } else {
        Reply::completion("ASSIGN:writer:Call the echo tool and report")
    }
}

type Recorded = (String, Vec<u8>);

/// An OTLP collector that records each request's path and body.
struct Collector {
    port: u16,
    requests: Arc<Mutex<Vec<Recorded>>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Collector {
    fn start() -> Collector {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (reqs, halt) = (Arc::clone(&requests), Arc::clone(&stop));
        let thread = std::thread::spawn(move || {
            while !halt.load(Ordering::SeqCst) {
                let Ok((stream, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                };
                stream.set_nonblocking(false).unwrap();
                stream
                    .set_read_timeout(Some(Duration::from_secs(5)))
                    .unwrap();
                let mut r = BufReader::new(stream);
                let mut line = String::new();
                if r.read_line(&mut line).is_err() {
                    continue;
                }
                let path = line.split(' ').nth(1).unwrap_or("").to_string();
                let mut len = 0usize;
                loop {
                    line.clear();
                    if r.read_line(&mut line).is_err() || line.trim_end().is_empty() {
                        break;
                    }
                    if let Some((k, v)) = line.trim_end().split_once(':')
                        && k.eq_ignore_ascii_case("content-length")
                    {
                        len = v.trim().parse().unwrap_or(0);
                    }
                }
                let mut body = vec![0; len];
                let _ = r.read_exact(&mut body);
                reqs.lock().push((path, body));
                let _ = r.into_inner().write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                );
            }
        });
        Collector {
            port,
            requests,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn write_team(dir: &Path, mcp_url: &str) {
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
            "url": format!("{mcp_url}?token=${{HOLD_MCP_TOKEN}}"),
            "headers": {"Authorization": "Bearer ${HOLD_MCP_TOKEN}"}
        }}})
        .to_string(),
    )
    .unwrap();
}

/// Findings 16–19 in one run: the MCP token a server echoed in a JSON-RPC
/// error, and the API key an endpoint echoed in its answers (without its
/// `sk-` prefix), appear as no 6-character piece in any file of the run,
/// in the tool result the model is sent, in any exported span (content
/// on), or on stdout or stderr at `RUST_LOG=trace`; the OTLP path goes
/// before the collector URL's query.
#[test]
fn echoed_tokens_and_keys_appear_nowhere() {
    let mcp = echoing_mcp();
    let llm = Server::start(brain);
    let collector = Collector::start();
    let team = tempfile::tempdir().unwrap();
    let runs = tempfile::tempdir().unwrap();
    write_team(team.path(), &format!("http://127.0.0.1:{}/mcp", mcp.port));
    let out = Command::new(BIN)
        .args(["run", "--team"])
        .arg(team.path())
        .arg("--runs-dir")
        .arg(runs.path())
        .arg("--model")
        .arg(format!("{}#m,stream=false", llm.base_url()))
        .arg("--otlp")
        .arg(format!("http://127.0.0.1:{}/?tenant=t1", collector.port))
        .args(["--otlp-content", "--no-memory", "Write a note"])
        .env("RUST_LOG", "trace")
        .env("HOLD_MCP_TOKEN", TOKEN)
        .env("OPENAI_API_KEY", KEY)
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");

    // The tool's error reached the model, masked.
    let seen = llm.seen();
    let tool_texts: Vec<String> = seen
        .iter()
        .flat_map(|r| r.body["messages"].as_array().cloned().unwrap_or_default())
        .filter(|m| m["role"] == "tool")
        .filter_map(|m| m["content"].as_str().map(str::to_string))
        .collect();
    assert!(
        tool_texts.iter().any(|t| t.contains("may not call echo")),
        "{tool_texts:?}"
    );
    assert!(
        tool_texts.iter().all(|t| t.contains("***")),
        "{tool_texts:?}"
    );

    let mut everything: Vec<(String, Vec<u8>)> = Vec::new();
    files(runs.path(), &mut everything);
    assert!(
        everything
            .iter()
            .any(|(_, b)| String::from_utf8_lossy(b).contains("may not call echo")),
        "the tool's error is in the run's files"
    );
    for (i, r) in seen.iter().enumerate() {
        everything.push((
            format!("model request {i}"),
            r.body.to_string().into_bytes(),
        ));
    }
    let spans = collector.requests.lock().clone();
    assert!(!spans.is_empty(), "no spans exported");
    for (path, body) in spans {
        // Finding 18: the traces path before the query, not after it.
        assert_eq!(path, "/v1/traces?tenant=t1");
        everything.push(("an exported span batch".into(), body));
    }
    everything.push(("stdout".into(), out.stdout.clone()));
    everything.push(("stderr".into(), out.stderr.clone()));
    assert!(stderr.len() > 1000, "RUST_LOG=trace logged little");
    for (name, bytes) in &everything {
        for secret in [TOKEN, KEY] {
            if let Some(piece) = leak(bytes, secret) {
                panic!(
                    "'{piece}' of {secret} in {name}:\n{}",
                    String::from_utf8_lossy(bytes)
                );
            }
        }
    }
    // The secrets did reach the servers.
    assert!(
        mcp.seen()
            .iter()
            .all(|r| r.header("authorization") == Some(&*format!("Bearer {TOKEN}")))
    );
    assert!(
        seen.iter()
            .all(|r| r.header("authorization") == Some(&*format!("Bearer {KEY}")))
    );
    drop(collector);
}

/// Finding 17: a short key (`OPENAI_API_KEY=x`) an endpoint echoes in an
/// error is masked as the word it is, and garbles no other word
/// (`engine` stayed `engin***` before).
#[test]
fn a_short_key_in_an_error_garbles_no_other_word() {
    let llm = Server::start(|_: &Request| {
        Reply::status(
            400,
            "{\"error\":{\"message\":\"engine refused key x for max tokens\"}}",
        )
    });
    let runs = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(["run", "--runs-dir"])
        .arg(runs.path())
        .arg("--model")
        .arg(format!("{}#m,stream=false", llm.base_url()))
        .args(["--no-memory", "Write a note"])
        .env("OPENAI_API_KEY", "x")
        .env_remove("RUST_LOG")
        .env_remove("OPENAI_BASE_URL")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "http 400 from {}/chat/completions: engine refused key *** for max tokens\n",
            llm.base_url()
        )),
        "{stderr}"
    );
}

/// Finding 18: a token in the query of an MCP URL (`?token=${VAR}`) or of
/// the OTLP collector URL, and a password in the model's base URL, print
/// nowhere at `RUST_LOG=trace`; the OTLP path goes before the query.
#[test]
fn tokens_in_url_queries_never_print_at_trace() {
    const OTLP_KEY: &str = "otlp-q-key-5Tz8Wm2Qa9";
    let collector = Collector::start();
    let mcp = echoing_mcp();
    let team = tempfile::tempdir().unwrap();
    let runs = tempfile::tempdir().unwrap();
    write_team(team.path(), &format!("http://127.0.0.1:{}/mcp", mcp.port));
    let out = Command::new(BIN)
        .args(["run", "--team"])
        .arg(team.path())
        .arg("--runs-dir")
        .arg(runs.path())
        .args([
            "--model",
            r#"sim:tool=writer:remote.echo:{"message":"hi"}"#,
            "--no-memory",
            "Write a note",
        ])
        .env(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            format!("http://127.0.0.1:{}?api_key={OTLP_KEY}", collector.port),
        )
        .env("RUST_LOG", "trace")
        .env("HOLD_MCP_TOKEN", TOKEN)
        .env_remove("OPENAI_BASE_URL")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("?token=***"),
        "the MCP URL is logged, redacted"
    );
    let spans = collector.requests.lock().clone();
    assert!(!spans.is_empty(), "no spans exported");
    for (path, _) in &spans {
        assert_eq!(path, &format!("/v1/traces?api_key={OTLP_KEY}"));
    }
    let mut everything: Vec<(String, Vec<u8>)> = Vec::new();
    files(runs.path(), &mut everything);
    everything.push(("stdout".into(), out.stdout.clone()));
    everything.push(("stderr".into(), out.stderr.clone()));
    for (name, bytes) in &everything {
        for secret in [TOKEN, OTLP_KEY] {
            if let Some(piece) = leak(bytes, secret) {
                panic!("'{piece}' of {secret} in {name}");
            }
        }
    }
}
