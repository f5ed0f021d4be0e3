//! One MCP server process and its session: newline-delimited JSON-RPC 2.0
//! over the child's stdin/stdout.
//!
//! One reader thread per process reads every line the server writes and
//! routes it: a response goes to the caller waiting for its id (over a
//! crossbeam channel), a notification is recorded, a request from the
//! server gets an answer (`ping`) or a "method not found" error. Callers on
//! any number of threads share the session; each blocks only on its own
//! channel, with a timeout. Nothing holds a lock while waiting.

use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{Sender, bounded};
use parking_lot::Mutex;
use serde_json::{Value, json};

use super::{McpError, McpServerConfig, PROTOCOL_VERSION};

/// How long `initialize` may take (a cold `node` start on a busy machine).
const INIT_TIMEOUT: Duration = Duration::from_secs(60);
/// Lines of the server's stderr kept for error messages.
const STDERR_TAIL: usize = 5;

type Reply = Result<Value, McpError>;

/// What the reader thread shares with callers.
#[derive(Default)]
struct Shared {
    pending: Mutex<HashMap<u64, Sender<Reply>>>,
    alive: AtomicBool,
    notifications: Mutex<Vec<String>>,
    stderr: Mutex<VecDeque<String>>,
    tools_changed: AtomicBool,
}

impl Shared {
    fn closed(&self) -> McpError {
        McpError::Closed {
            stderr: self
                .stderr
                .lock()
                .iter()
                .cloned()
                .collect::<Vec<_>>()
                .join(" | "),
        }
    }
}

/// The text of a `tools/call` result and whether the server flagged it as
/// an error.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CallOutput {
    pub(crate) text: String,
    pub(crate) is_error: bool,
}

/// A running server and its initialized session.
pub(crate) struct McpClient {
    name: String,
    shared: Arc<Shared>,
    stdin: Arc<Mutex<Option<ChildStdin>>>,
    child: Mutex<Option<Child>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    next_id: AtomicU64,
    pid: u32,
    protocol_version: String,
    server_name: String,
}

impl std::fmt::Debug for McpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClient")
            .field("name", &self.name)
            .field("pid", &self.pid)
            .field("protocol_version", &self.protocol_version)
            .finish_non_exhaustive()
    }
}

impl McpClient {
    /// Starts the server, runs `initialize` and sends
    /// `notifications/initialized`.
    pub(crate) fn start(
        name: &str,
        config: &McpServerConfig,
        base_dir: Option<&Path>,
    ) -> Result<McpClient, McpError> {
        let mut cmd = Command::new(&config.command);
        cmd.args(&config.args)
            .envs(&config.env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // Its own process group, so that ending it ends anything it started
        // (`npx` runs the server as a grandchild).
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        if let Some(cwd) = &config.cwd {
            cmd.current_dir(base_dir.map_or_else(|| cwd.into(), |b| b.join(cwd)));
        }
        let spawn_err = |detail: String| McpError::Spawn {
            command: config.command.clone(),
            detail,
        };
        let mut child = cmd.spawn().map_err(|e| spawn_err(e.to_string()))?;
        let pid = child.id();
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(spawn_err("no pipes to the child".into()));
        };
        let shared = Arc::new(Shared::default());
        shared.alive.store(true, Ordering::SeqCst);
        let stdin = Arc::new(Mutex::new(Some(stdin)));
        let mut threads = Vec::new();
        let reader = {
            let shared = Arc::clone(&shared);
            let stdin = Arc::clone(&stdin);
            let server = name.to_string();
            std::thread::Builder::new()
                .name(format!("mcp-{name}-reader"))
                .spawn(move || read_loop(&server, stdout, &shared, &stdin))
        };
        let errlog = {
            let shared = Arc::clone(&shared);
            let server = name.to_string();
            std::thread::Builder::new()
                .name(format!("mcp-{name}-stderr"))
                .spawn(move || stderr_loop(&server, stderr, &shared))
        };
        let mut client = McpClient {
            name: name.to_string(),
            shared,
            stdin,
            child: Mutex::new(Some(child)),
            threads: Mutex::new(Vec::new()),
            next_id: AtomicU64::new(1),
            pid,
            protocol_version: String::new(),
            server_name: String::new(),
        };
        for t in [reader, errlog] {
            match t {
                Ok(handle) => threads.push(handle),
                Err(e) => {
                    *client.threads.lock() = threads;
                    client.shutdown();
                    return Err(spawn_err(format!("cannot start a thread: {e}")));
                }
            }
        }
        *client.threads.lock() = threads;
        // On failure, `client` drops here and its Drop ends the process.
        let init = client.request(
            "initialize",
            json!({
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "boardroom", "version": env!("CARGO_PKG_VERSION")},
            }),
            INIT_TIMEOUT,
        )?;
        client.protocol_version = init
            .get("protocolVersion")
            .and_then(Value::as_str)
            .ok_or_else(|| McpError::Protocol {
                detail: "initialize result has no protocolVersion".into(),
            })?
            .to_string();
        client.server_name = init
            .pointer("/serverInfo/name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if client.protocol_version != PROTOCOL_VERSION {
            log::info!(
                "mcp '{name}': server speaks protocol {} (asked for {PROTOCOL_VERSION})",
                client.protocol_version
            );
        }
        client.notify("notifications/initialized", None)?;
        Ok(client)
    }

    /// The server process id.
    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    /// The protocol version the server chose.
    pub(crate) fn protocol_version(&self) -> &str {
        &self.protocol_version
    }

    /// The name the server gave in `serverInfo`.
    pub(crate) fn server_name(&self) -> &str {
        &self.server_name
    }

    /// Whether the process is still there (its output is open).
    pub(crate) fn is_alive(&self) -> bool {
        self.shared.alive.load(Ordering::SeqCst)
    }

    /// Methods of every notification received so far, in order.
    pub(crate) fn notifications(&self) -> Vec<String> {
        self.shared.notifications.lock().clone()
    }

    /// Whether `notifications/tools/list_changed` arrived since the last
    /// call to this (which clears it).
    pub(crate) fn take_tools_changed(&self) -> bool {
        self.shared.tools_changed.swap(false, Ordering::SeqCst)
    }

    /// Sends a request and blocks until its response or the timeout.
    pub(crate) fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, McpError> {
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        let (tx, rx) = bounded(1);
        self.shared.pending.lock().insert(id, tx);
        // The reader marks the session dead before it fails the pending
        // calls: a caller that registered too late sees the flag here.
        if !self.is_alive() {
            self.shared.pending.lock().remove(&id);
            return Err(self.shared.closed());
        }
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        if let Err(e) = self.send(&msg) {
            self.shared.pending.lock().remove(&id);
            return Err(e);
        }
        match rx.recv_timeout(timeout) {
            Ok(reply) => reply.map_err(|e| match e {
                McpError::Rpc { code, message, .. } => McpError::Rpc {
                    method: method.to_string(),
                    code,
                    message,
                },
                other => other,
            }),
            Err(_) => {
                self.shared.pending.lock().remove(&id);
                let _ = self.notify(
                    "notifications/cancelled",
                    Some(json!({"requestId": id, "reason": "timeout"})),
                );
                Err(McpError::Timeout {
                    method: method.to_string(),
                    after: timeout,
                })
            }
        }
    }

    /// Sends a notification (no answer expected).
    pub(crate) fn notify(&self, method: &str, params: Option<Value>) -> Result<(), McpError> {
        let mut msg = json!({"jsonrpc": "2.0", "method": method});
        if let Some(p) = params {
            msg["params"] = p;
        }
        self.send(&msg)
    }

    fn send(&self, msg: &Value) -> Result<(), McpError> {
        write_line(&self.stdin, msg).map_err(|_| self.shared.closed())
    }

    /// Every tool the server offers, following `nextCursor` pages.
    pub(crate) fn list_tools(&self, timeout: Duration) -> Result<Vec<Value>, McpError> {
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        // A server that hands out cursors forever is cut off.
        for _ in 0..1000 {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let page = self.request("tools/list", params, timeout)?;
            let items =
                page.get("tools")
                    .and_then(Value::as_array)
                    .ok_or_else(|| McpError::Protocol {
                        detail: "tools/list result has no 'tools' array".into(),
                    })?;
            tools.extend(items.iter().cloned());
            match page.get("nextCursor").and_then(Value::as_str) {
                Some(next) if !next.is_empty() => cursor = Some(next.to_string()),
                _ => return Ok(tools),
            }
        }
        Err(McpError::Protocol {
            detail: "tools/list: more than 1000 pages".into(),
        })
    }

    /// Calls a tool; `isError: true` comes back as `is_error`.
    pub(crate) fn call_tool(
        &self,
        tool: &str,
        arguments: Value,
        timeout: Duration,
    ) -> Result<CallOutput, McpError> {
        let result = self.request(
            "tools/call",
            json!({"name": tool, "arguments": arguments}),
            timeout,
        )?;
        Ok(CallOutput {
            text: content_text(&result),
            is_error: result.get("isError").and_then(Value::as_bool) == Some(true),
        })
    }

    /// Ends the process and joins the threads. Idempotent.
    pub(crate) fn shutdown(&self) {
        // Closing stdin lets a well-behaved server (and anything it spawned)
        // see end of input; the kill makes sure.
        self.stdin.lock().take();
        if let Some(mut child) = self.child.lock().take() {
            // The group first, while the unreaped leader keeps its id taken.
            #[cfg(unix)]
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", self.pid)])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
            let _ = child.kill();
            let _ = child.wait();
        }
        let threads = std::mem::take(&mut *self.threads.lock());
        for t in threads {
            let _ = t.join();
        }
    }
}

impl Drop for McpClient {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn write_line(stdin: &Mutex<Option<ChildStdin>>, msg: &Value) -> std::io::Result<()> {
    let mut line = msg.to_string();
    line.push('\n');
    let mut guard = stdin.lock();
    let pipe = guard
        .as_mut()
        .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::BrokenPipe))?;
    pipe.write_all(line.as_bytes())?;
    pipe.flush()
}

/// Reads the server's output until it closes, routing each message.
fn read_loop(
    server: &str,
    stdout: std::process::ChildStdout,
    shared: &Shared,
    stdin: &Mutex<Option<ChildStdin>>,
) {
    let reader = BufReader::new(stdout);
    for line in reader.lines() {
        let Ok(line) = line else { break };
        if line.trim().is_empty() {
            continue;
        }
        let msg: Value = match serde_json::from_str(&line) {
            Ok(v) => v,
            Err(e) => {
                log::debug!("mcp '{server}': not JSON-RPC ({e}): {line}");
                continue;
            }
        };
        let method = msg.get("method").and_then(Value::as_str);
        let id = msg.get("id").filter(|v| !v.is_null());
        match (method, id) {
            (Some(method), None) => {
                log::debug!("mcp '{server}': notification {method}");
                if method == "notifications/tools/list_changed" {
                    shared.tools_changed.store(true, Ordering::SeqCst);
                }
                shared.notifications.lock().push(method.to_string());
            }
            (Some(method), Some(id)) => {
                let reply = if method == "ping" {
                    json!({"jsonrpc": "2.0", "id": id, "result": {}})
                } else {
                    json!({"jsonrpc": "2.0", "id": id,
                           "error": {"code": -32601, "message": format!("method not found: {method}")}})
                };
                let _ = write_line(stdin, &reply);
            }
            (None, Some(id)) => {
                let Some(id) = id.as_u64() else { continue };
                let reply = match (msg.get("result"), msg.get("error")) {
                    (_, Some(err)) => Err(McpError::Rpc {
                        method: String::new(),
                        code: err.get("code").and_then(Value::as_i64).unwrap_or(0),
                        message: err
                            .get("message")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string(),
                    }),
                    (Some(result), None) => Ok(result.clone()),
                    (None, None) => Err(McpError::Protocol {
                        detail: "a response with neither result nor error".into(),
                    }),
                };
                if let Some(tx) = shared.pending.lock().remove(&id) {
                    let _ = tx.send(reply);
                }
            }
            (None, None) => log::debug!("mcp '{server}': stray message: {line}"),
        }
    }
    shared.alive.store(false, Ordering::SeqCst);
    let waiting: Vec<Sender<Reply>> = shared.pending.lock().drain().map(|(_, tx)| tx).collect();
    for tx in waiting {
        let _ = tx.send(Err(shared.closed()));
    }
    log::debug!("mcp '{server}': output closed");
}

fn stderr_loop(server: &str, stderr: std::process::ChildStderr, shared: &Shared) {
    for line in BufReader::new(stderr).lines() {
        let Ok(line) = line else { break };
        log::debug!("mcp '{server}' stderr: {line}");
        let mut tail = shared.stderr.lock();
        if tail.len() == STDERR_TAIL {
            tail.pop_front();
        }
        tail.push_back(line);
    }
}

/// The text of a `tools/call` result: text blocks joined; other blocks
/// named; `structuredContent` when there is nothing else.
fn content_text(result: &Value) -> String {
    let mut parts = Vec::new();
    if let Some(items) = result.get("content").and_then(Value::as_array) {
        for item in items {
            match item.get("type").and_then(Value::as_str) {
                Some("text") => {
                    parts.push(
                        item.get("text")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .into(),
                    );
                }
                Some("resource") => {
                    let r = item.get("resource").cloned().unwrap_or(Value::Null);
                    match r.get("text").and_then(Value::as_str) {
                        Some(t) => parts.push(t.to_string()),
                        None => parts.push(format!(
                            "[resource {}]",
                            r.get("uri").and_then(Value::as_str).unwrap_or("?")
                        )),
                    }
                }
                Some("resource_link") => parts.push(format!(
                    "[resource link {}]",
                    item.get("uri").and_then(Value::as_str).unwrap_or("?")
                )),
                Some(kind) => parts.push(format!(
                    "[{kind} {}]",
                    item.get("mimeType").and_then(Value::as_str).unwrap_or("")
                )),
                None => {}
            }
        }
    }
    if parts.is_empty() {
        if let Some(s) = result.get("structuredContent") {
            return s.to_string();
        }
    }
    parts.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scripted peer for what the reference servers do not do: a
    /// notification before the initialize reply, an older protocol
    /// version, paged tools/list, a ping from the server, a call that is
    /// never answered, and an exit.
    const PEER: &str = r#"
read -r l
echo '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"early"}}'
echo '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-03-26","capabilities":{"tools":{}},"serverInfo":{"name":"peer"}}}'
read -r l
case "$l" in *notifications/initialized*) ;; *) exit 3;; esac
read -r l
echo '{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"a","inputSchema":{"type":"object"}}],"nextCursor":"p2"}}'
read -r l
case "$l" in *'"cursor":"p2"'*) echo '{"jsonrpc":"2.0","id":3,"result":{"tools":[{"name":"b"}]}}';; esac
read -r l
echo '{"jsonrpc":"2.0","id":"s1","method":"ping"}'
read -r pong
case "$pong" in *'"id":"s1"'*'"result"'*) echo '{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"pong ok"}]}}';; esac
read -r l
read -r l
read -r l
exit 0
"#;

    #[test]
    fn early_notifications_paging_pings_timeouts_and_exit() {
        let config = McpServerConfig::new("sh", ["-c", PEER]);
        let client = McpClient::start("peer", &config, None).unwrap();
        assert_eq!(client.protocol_version(), "2025-03-26");
        assert_eq!(client.server_name(), "peer");
        assert_eq!(client.notifications(), ["notifications/message"]);
        let tools = client.list_tools(Duration::from_secs(30)).unwrap();
        let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        let out = client
            .call_tool("a", json!({}), Duration::from_secs(30))
            .unwrap();
        assert_eq!(out.text, "pong ok");
        assert!(!out.is_error);
        // The peer reads this call and never answers.
        let err = client
            .call_tool("a", json!({}), Duration::from_millis(200))
            .unwrap_err();
        assert_eq!(err.to_string(), "tools/call: no answer within 0.2s");
        // It reads the cancellation, then one more line, then exits: the
        // waiting call learns that the process ended.
        let err = client
            .call_tool("a", json!({}), Duration::from_secs(30))
            .unwrap_err();
        assert!(matches!(err, McpError::Closed { .. }), "{err:?}");
        assert!(!client.is_alive());
    }

    #[test]
    fn content_blocks_become_text() {
        let r = json!({"content": [
            {"type": "text", "text": "a"},
            {"type": "image", "data": "xx", "mimeType": "image/png"},
            {"type": "text", "text": "b"}
        ]});
        assert_eq!(content_text(&r), "a\n[image image/png]\nb");
        let s = json!({"content": [], "structuredContent": {"x": 1}});
        assert_eq!(content_text(&s), "{\"x\":1}");
    }
}
