//! Issue 28, findings 5 and 21, over MCP Streamable HTTP: a server's huge
//! answer (one JSON body or event of too many values, a body of hundreds
//! of MiB) is refused with a message that names the server and the cap, as
//! on stdio; a server that lists too many tools is refused in one line.
//! Real loopback servers on 127.0.0.1.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;

use boardroom::mcp::{McpPool, McpServerConfig};
use serde_json::{Value, json};

/// A body: bytes, or `head`, `n` spaces (written in chunks, never held)
/// and `tail`.
enum Body {
    Bytes(Vec<u8>),
    Spaces(String, usize, String),
}

/// A server on 127.0.0.1 that answers each request's JSON body with
/// `(content type, body)`, or `202` with none.
fn serve(answer: impl Fn(&Value) -> Option<(&'static str, Body)> + Send + 'static) -> String {
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
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
                if line == "\r\n" {
                    break;
                }
            }
            let mut request = vec![0; length];
            let _ = reader.read_exact(&mut request);
            let json = serde_json::from_slice(&request).unwrap_or_default();
            let Some((kind, body)) = answer(&json) else {
                let _ = stream.write_all(
                    b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                );
                continue;
            };
            let len = match &body {
                Body::Bytes(b) => b.len(),
                Body::Spaces(h, n, t) => h.len() + n + t.len(),
            };
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {len}\r\n\
                 Connection: close\r\n\r\n"
            );
            let _ = stream.write_all(head.as_bytes());
            match body {
                Body::Bytes(b) => {
                    let _ = stream.write_all(&b);
                }
                Body::Spaces(h, n, t) => {
                    let chunk = vec![b' '; 1 << 20];
                    let mut ok = stream.write_all(h.as_bytes()).is_ok();
                    let mut left = n;
                    while ok && left > 0 {
                        let k = left.min(chunk.len());
                        ok = stream.write_all(&chunk[..k]).is_ok();
                        left -= k;
                    }
                    let _ = ok && stream.write_all(t.as_bytes()).is_ok();
                }
            }
        }
    });
    format!("http://127.0.0.1:{port}/mcp")
}

fn reply(id: &Value, result: Value) -> Option<(&'static str, Body)> {
    let body = json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string();
    Some(("application/json", Body::Bytes(body.into_bytes())))
}

/// A server whose `tools/list` is `tools` (given the cursor) and whose
/// `tools/call` is `call` (given the id).
fn server(
    tools: impl Fn(Option<&str>) -> Option<(&'static str, Body)> + Send + 'static,
    call: impl Fn(&Value) -> Option<(&'static str, Body)> + Send + 'static,
) -> String {
    serve(move |req| {
        let id = req["id"].clone();
        match req["method"].as_str().unwrap_or("") {
            "initialize" => reply(
                &id,
                json!({"protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}}, "serverInfo": {"name": "huge"}}),
            ),
            "tools/list" => {
                let cursor = req["params"]["cursor"].as_str();
                tools(cursor).map(|(kind, body)| match body {
                    Body::Bytes(b) => {
                        let result: Value = serde_json::from_slice(&b).unwrap();
                        let full = json!({"jsonrpc": "2.0", "id": id, "result": result});
                        (kind, Body::Bytes(full.to_string().into_bytes()))
                    }
                    other => (kind, other),
                })
            }
            "tools/call" => call(&id),
            _ => None,
        }
    })
}

fn one_tool(_: Option<&str>) -> Option<(&'static str, Body)> {
    let list = json!({"tools": [{"name": "hello", "inputSchema": {"type": "object"}}]});
    Some((
        "application/json",
        Body::Bytes(list.to_string().into_bytes()),
    ))
}

fn start(url: String) -> Result<McpPool, boardroom::ToolError> {
    let mut servers = BTreeMap::new();
    servers.insert("remote".to_string(), McpServerConfig::http(url));
    McpPool::start(&servers, None)
}

/// A tool result of 300,000 values: `{"a":1},` repeated.
fn many_values(id: &Value) -> String {
    let items = vec!["{\"a\":1}"; 300_000].join(",");
    format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{items}]}}}}"#)
}

/// Held by each test for its whole length: peak RSS is the process's, and
/// a sibling test's answers (millions of bytes, parsed) would count in the
/// peak measured here; the tests take turns.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn my_turn() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

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

#[test]
fn finding5_a_json_body_of_too_many_values_is_refused_naming_the_server_and_the_cap() {
    let _turn = my_turn();
    let url = server(one_tool, |id| {
        Some((
            "application/json",
            Body::Bytes(many_values(id).into_bytes()),
        ))
    });
    let pool = start(url).unwrap();
    let err = pool.call("remote", "hello", json!({})).unwrap_err();
    let text = err.to_string();
    assert!(text.starts_with("mcp server 'remote': "), "{text}");
    assert!(
        text.contains("the server's answer holds more than 200000 JSON values"),
        "{text}"
    );
}

#[test]
fn finding5_an_event_of_too_many_values_is_refused_naming_the_server_and_the_cap() {
    let _turn = my_turn();
    let url = server(one_tool, |id| {
        let event = format!("id: 1\ndata: {}\n\n", many_values(id));
        Some(("text/event-stream", Body::Bytes(event.into_bytes())))
    });
    let pool = start(url).unwrap();
    let err = pool.call("remote", "hello", json!({})).unwrap_err();
    let text = err.to_string();
    assert!(text.starts_with("mcp server 'remote': "), "{text}");
    assert!(
        text.contains("the server's answer holds more than 200000 JSON values"),
        "{text}"
    );
}

/// A body of 300 MiB (one JSON value: a string of spaces), and the same
/// as one event: refused at the 16 MiB cap, never held whole.
#[test]
fn finding5_a_body_or_event_of_hundreds_of_mib_is_refused_at_the_cap() {
    let _turn = my_turn();
    const HUGE: usize = 300 << 20;
    for kind in ["application/json", "text/event-stream"] {
        let url = server(one_tool, move |id| {
            let head = format!(
                r#"{}{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":""#,
                if kind == "application/json" {
                    ""
                } else {
                    "data: "
                }
            );
            let tail = if kind == "application/json" {
                r#""}]}}"#
            } else {
                "\"}]}}\n\n"
            };
            Some((kind, Body::Spaces(head, HUGE, tail.to_string())))
        });
        let pool = start(url).unwrap();
        let before = peak_rss_mib();
        let err = pool.call("remote", "hello", json!({})).unwrap_err();
        let peak = peak_rss_mib();
        let text = err.to_string();
        assert!(text.starts_with("mcp server 'remote': "), "{kind}: {text}");
        assert!(text.contains("more than 16 MiB"), "{kind}: {text}");
        assert!(
            peak < before + 120,
            "{kind}: peak RSS {peak} MiB (was {before} MiB) against a 300 MiB answer"
        );
    }
}

/// Finding 21: 1,001 tools over two pages, and 300,000 tools in one
/// answer, are each refused in one line naming the server and the caps.
#[test]
fn finding21_a_server_listing_too_many_tools_is_refused_in_one_line() {
    let _turn = my_turn();
    let expected = "mcp server 'remote': tools/list: the server lists more tools than \
                    boardroom takes (at most 1000 tools, 200000 JSON values in one answer)";
    let paged = server(
        |cursor| {
            let (from, next) = match cursor {
                None => (0, json!("page2")),
                Some(_) => (600, Value::Null),
            };
            let tools: Vec<Value> = (from..from + 600)
                .map(|i| json!({"name": format!("t{i}"), "inputSchema": {"type": "object"}}))
                .collect();
            let list = json!({"tools": tools, "nextCursor": next});
            Some((
                "application/json",
                Body::Bytes(list.to_string().into_bytes()),
            ))
        },
        |_| None,
    );
    let err = start(paged).unwrap_err();
    assert_eq!(err.to_string(), expected);

    let one_answer = server(
        |_| {
            let tools = (0..300_000)
                .map(|i| format!(r#"{{"name":"t{i}"}}"#))
                .collect::<Vec<_>>()
                .join(",");
            let list = format!(r#"{{"tools":[{tools}]}}"#);
            Some(("application/json", Body::Bytes(list.into_bytes())))
        },
        |_| None,
    );
    let err = start(one_answer).unwrap_err();
    assert_eq!(err.to_string(), expected);
}
