//! Issue 28, finding 1: a gzip bomb. The caps on what a model's answer
//! may hold count the bytes held in memory, after `Content-Encoding:
//! gzip` is undone, not the bytes on the wire. The bomb is scaled down
//! (it expands to 400 MiB, the cap is 32 MiB) and the bound asserted is
//! the test process's peak RSS (`VmHWM` in `/proc/self/status`).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::{Command, Stdio};

use boardroom::{ChatModel, ChatRequest, Message, ModelError, OpenAi, Phase};

/// `bytes` spaces, gzipped by the system's `gzip`.
fn gzip_of_spaces(bytes: usize) -> Vec<u8> {
    gzip_of("", bytes, "")
}

/// `head`, `bytes` spaces and `tail`, gzipped by the system's `gzip`.
fn gzip_of(head: &str, bytes: usize, tail: &str) -> Vec<u8> {
    let (head, tail) = (head.to_string(), tail.to_string());
    let mut child = Command::new("gzip")
        .args(["-c", "-1"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("gzip runs");
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        stdin.write_all(head.as_bytes()).unwrap();
        let chunk = vec![b' '; 1 << 20];
        let mut left = bytes;
        while left > 0 {
            let n = left.min(chunk.len());
            stdin.write_all(&chunk[..n]).unwrap();
            left -= n;
        }
        stdin.write_all(tail.as_bytes()).unwrap();
    });
    let mut out = Vec::new();
    child.stdout.take().unwrap().read_to_end(&mut out).unwrap();
    writer.join().unwrap();
    assert!(child.wait().unwrap().success());
    out
}

/// A server on 127.0.0.1 that answers every request with `body` as a
/// gzip-encoded `200` of `content_type`.
fn serve_gzip(body: Vec<u8>, content_type: &'static str) -> u16 {
    serve(move |_| Some((200, content_type, body.clone(), true)))
}

/// One answer: status, content type, body, whether it is gzipped; `None`
/// for `202` with no body.
type Answer = Option<(u16, &'static str, Vec<u8>, bool)>;

/// A server on 127.0.0.1 that answers each request's JSON body as
/// `answer` says, one connection at a time.
fn serve(answer: impl Fn(&serde_json::Value) -> Answer + Send + 'static) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut length = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    break;
                }
                let lower = line.to_ascii_lowercase();
                if let Some(v) = lower.strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
                if line == "\r\n" {
                    break;
                }
            }
            let mut request = vec![0; length];
            let _ = reader.read_exact(&mut request);
            let json = serde_json::from_slice(&request).unwrap_or_default();
            let (status, content_type, body, gzip) =
                answer(&json).unwrap_or((202, "text/plain", Vec::new(), false));
            let encoding = if gzip {
                "Content-Encoding: gzip\r\n"
            } else {
                ""
            };
            let head = format!(
                "HTTP/1.1 {status} OK\r\nContent-Type: {content_type}\r\n{encoding}\
                 Content-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(&body);
        }
    });
    port
}

/// Held by each test while it measures: peak RSS is the process's, so the
/// tests take turns.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The most resident memory this process has had, in MiB.
fn peak_rss_mib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .expect("VmHWM in /proc/self/status")
        / 1024
}

/// 400 MiB of answer in well under 1 MiB of gzip: refused at the 32 MiB
/// cap with a message that says so, and the process never holds the
/// expanded answer.
#[test]
fn finding1_a_gzip_bomb_from_the_model_endpoint_is_capped_decompressed() {
    const EXPANDS_TO: usize = 400 << 20;
    let bomb = gzip_of_spaces(EXPANDS_TO);
    assert!(bomb.len() < 2 << 20, "the bomb is small on the wire");
    let port = serve_gzip(bomb, "application/json");
    let model = OpenAi::builder(format!("http://127.0.0.1:{port}/v1"), "m")
        .api_key("sk-test")
        .stream(false)
        .sleep_with(|_| {})
        .build()
        .unwrap();
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let before = peak_rss_mib();
    let request = ChatRequest::new("writer", Phase::Draft, 1, vec![Message::user("hi")]);
    let err = model.chat(&request, &mut |_| {}).unwrap_err();
    let peak = peak_rss_mib();
    assert!(matches!(err, ModelError::BadResponse { .. }), "{err:?}");
    assert!(
        err.to_string()
            .contains("the answer is larger than 32 MiB (decompressed)"),
        "{err}"
    );
    assert!(
        peak < before + 160,
        "peak RSS {peak} MiB (was {before} MiB) while the answer would expand to 400 MiB"
    );
}

/// An MCP server over Streamable HTTP whose tool result is 100 MiB of text
/// in a small gzip body: refused at the 16 MiB cap, never accepted as a
/// tool result, and never held whole.
#[test]
fn finding1_a_gzip_bomb_from_an_mcp_server_is_capped_decompressed() {
    use boardroom::mcp::{McpPool, McpServerConfig};
    use serde_json::json;
    const EXPANDS_TO: usize = 100 << 20;
    let port = serve(|req| {
        let id = req["id"].clone();
        let reply = |result: serde_json::Value| {
            let body = json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string();
            Some((200, "application/json", body.into_bytes(), false))
        };
        match req["method"].as_str().unwrap_or("") {
            "initialize" => reply(json!({"protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}}, "serverInfo": {"name": "bomb"}})),
            "tools/list" => reply(json!({"tools": [{"name": "hello",
                "inputSchema": {"type": "object"}}]})),
            "tools/call" => {
                let head = format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":""#
                );
                let body = gzip_of(&head, EXPANDS_TO, r#""}]}}"#);
                Some((200, "application/json", body, true))
            }
            _ => None,
        }
    });
    let mut servers = std::collections::BTreeMap::new();
    servers.insert(
        "remote".to_string(),
        McpServerConfig::http(format!("http://127.0.0.1:{port}/mcp")),
    );
    let pool = McpPool::start(&servers, None).unwrap();
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let before = peak_rss_mib();
    let err = pool.call("remote", "hello", json!({})).unwrap_err();
    let peak = peak_rss_mib();
    assert!(err.to_string().contains("16 MiB"), "{err}");
    assert!(err.to_string().contains("decompressed"), "{err}");
    eprintln!("{err}; peak RSS {before} -> {peak} MiB");
    assert!(
        peak < before + 80,
        "peak RSS {peak} MiB (was {before} MiB) while the result would expand to 100 MiB"
    );
}
