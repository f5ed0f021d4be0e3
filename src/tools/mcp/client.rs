//! One MCP session, over either transport: stdio (a server process) or
//! Streamable HTTP (a URL).
//!
//! Callers on any number of threads share the session; requests are
//! multiplexed by id and each caller blocks only on its own channel, with
//! a timeout. Over stdio a reader thread routes the answers; over HTTP the
//! calling thread reads its own answer (and whatever the server sends with
//! it). Nothing holds a lock while waiting.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crossbeam_channel::bounded;
use parking_lot::Mutex;
use serde_json::{Value, json};

use super::http::Http;
use super::session::Session;
use super::stdio::Stdio;
use super::{McpError, McpServerConfig, PROTOCOL_VERSION};

/// How long `initialize` may take (a cold `node` start on a busy machine).
const INIT_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a notification POST may take (HTTP).
const NOTIFY_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the cancellation of a timed-out request may take (HTTP).
const CANCEL_TIMEOUT: Duration = Duration::from_secs(1);

/// The text of a `tools/call` result and whether the server flagged it as
/// an error.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CallOutput {
    pub(crate) text: String,
    pub(crate) is_error: bool,
}

enum Transport {
    Stdio(Stdio),
    Http(Http),
}

/// A server's initialized session.
pub(crate) struct McpClient {
    name: String,
    session: Arc<Session>,
    transport: Transport,
    next_id: AtomicU64,
    /// The negotiated protocol version and the server's name.
    info: Mutex<(String, String)>,
    /// Held while a session that expired (HTTP 404) is initialized again.
    reinit: Mutex<()>,
}

impl std::fmt::Debug for McpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClient")
            .field("name", &self.name)
            .field("pid", &self.pid())
            .field("protocol_version", &self.info.lock().0)
            .finish_non_exhaustive()
    }
}

impl McpClient {
    /// Starts the server (stdio) or reaches it (HTTP), runs `initialize`
    /// and sends `notifications/initialized`.
    pub(crate) fn start(
        name: &str,
        config: &McpServerConfig,
        base_dir: Option<&Path>,
    ) -> Result<McpClient, McpError> {
        config
            .check()
            .map_err(|detail| McpError::Config { detail })?;
        let session = Arc::new(Session::new(name, config.elicitation.unwrap_or_default()));
        let transport = if config.url.is_some() {
            Transport::Http(Http::new(name, config)?)
        } else {
            Transport::Stdio(Stdio::start(name, config, base_dir, &session)?)
        };
        // On failure, `client` drops here and its Drop ends the process.
        let client = McpClient {
            name: name.to_string(),
            session,
            transport,
            next_id: AtomicU64::new(1),
            info: Mutex::new((String::new(), String::new())),
            reinit: Mutex::new(()),
        };
        client.initialize()?;
        Ok(client)
    }

    /// The handshake; over HTTP it also opens the GET stream (before
    /// `notifications/initialized`, so that what the server sends on its
    /// own right after it is not lost), unless one is still running.
    fn initialize(&self) -> Result<(), McpError> {
        let init = self.request_once(
            "initialize",
            json!({
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": self.session.capabilities(),
                "clientInfo": {"name": "boardroom", "version": env!("CARGO_PKG_VERSION")},
            }),
            INIT_TIMEOUT,
        )?;
        let version = init
            .get("protocolVersion")
            .and_then(Value::as_str)
            .ok_or_else(|| McpError::Protocol {
                detail: "initialize result has no protocolVersion".into(),
                source: None,
            })?
            .to_string();
        let server_name = init
            .pointer("/serverInfo/name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if version != PROTOCOL_VERSION {
            log::info!(
                "mcp '{}': server speaks protocol {version} (asked for {PROTOCOL_VERSION})",
                self.name
            );
        }
        if let Transport::Http(h) = &self.transport {
            h.set_protocol(&version);
            h.listen(&self.session)?;
        }
        *self.info.lock() = (version, server_name);
        self.notify("notifications/initialized", None)
    }

    /// The server process id (stdio servers).
    pub(crate) fn pid(&self) -> Option<u32> {
        match &self.transport {
            Transport::Stdio(s) => Some(s.pid()),
            Transport::Http(_) => None,
        }
    }

    /// Whether the server is reached over HTTP.
    pub(crate) fn is_http(&self) -> bool {
        matches!(self.transport, Transport::Http(_))
    }

    /// The protocol version the server chose.
    pub(crate) fn protocol_version(&self) -> String {
        self.info.lock().0.clone()
    }

    /// The name the server gave in `serverInfo`.
    pub(crate) fn server_name(&self) -> String {
        self.info.lock().1.clone()
    }

    /// Whether the session is usable (the process's output is open; the
    /// URL answered last time).
    pub(crate) fn is_alive(&self) -> bool {
        self.session.is_alive()
    }

    /// Methods of every notification received so far, in order.
    pub(crate) fn notifications(&self) -> Vec<String> {
        self.session.notifications()
    }

    /// Whether `notifications/tools/list_changed` arrived since the last
    /// call to this (which clears it).
    pub(crate) fn take_tools_changed(&self) -> bool {
        self.session.take_tools_changed()
    }

    /// Sends a request and blocks until its response or the timeout. Over
    /// HTTP, a session the server no longer knows (404) is initialized
    /// again, once, and the request sent again.
    pub(crate) fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, McpError> {
        let generation = match &self.transport {
            Transport::Http(h) if h.has_session() => Some(h.generation()),
            _ => None,
        };
        match self.request_once(method, params.clone(), timeout) {
            Err(e) if generation.is_some() && session_expired(&e) => {
                self.reinitialize(generation.unwrap_or(0))?;
                self.request_once(method, params, timeout)
            }
            other => other,
        }
    }

    /// Initializes an expired HTTP session again, unless another caller
    /// already did.
    fn reinitialize(&self, generation: u64) -> Result<(), McpError> {
        let Transport::Http(h) = &self.transport else {
            return Ok(());
        };
        let _one = self.reinit.lock();
        if h.generation() != generation {
            return Ok(());
        }
        log::info!(
            "mcp '{}': the server forgot the session (http 404); initializing again",
            self.name
        );
        h.reset();
        self.initialize()
    }

    fn request_once(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, McpError> {
        let deadline = Instant::now() + timeout;
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        let (tx, rx) = bounded(1);
        if !self.session.wait_for(id, tx) {
            return Err(self.session.closed());
        }
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let sent = match &self.transport {
            Transport::Stdio(s) => s
                .send(&msg, deadline.saturating_duration_since(Instant::now()))
                .map_err(|e| self.send_error(&e, method, timeout)),
            Transport::Http(h) => h.post(&msg, &self.session, Some(id), timeout),
        };
        if let Err(e) = sent {
            self.session.forget(id);
            if let McpError::Timeout { .. } = e {
                self.cancel(id);
            }
            if let (Transport::Http(_), McpError::Unreachable { .. }) = (&self.transport, &e) {
                // The pool initializes a new session for the next call.
                self.session.end(Some(e.clone()));
            }
            return Err(named(e, method));
        }
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(reply) => reply.map_err(|e| named(e, method)),
            Err(_) => {
                self.session.forget(id);
                self.cancel(id);
                Err(McpError::Timeout {
                    method: method.to_string(),
                    after: timeout,
                })
            }
        }
    }

    /// Tells the server a request timed out (over HTTP, waiting at most
    /// [`CANCEL_TIMEOUT`] for a server that may be hanging).
    fn cancel(&self, id: u64) {
        let _ = self.send_notification(
            "notifications/cancelled",
            Some(json!({"requestId": id, "reason": "timeout"})),
            CANCEL_TIMEOUT,
        );
    }

    /// Sends a notification (no answer expected).
    pub(crate) fn notify(&self, method: &str, params: Option<Value>) -> Result<(), McpError> {
        self.send_notification(method, params, NOTIFY_TIMEOUT)
    }

    fn send_notification(
        &self,
        method: &str,
        params: Option<Value>,
        timeout: Duration,
    ) -> Result<(), McpError> {
        let mut msg = json!({"jsonrpc": "2.0", "method": method});
        if let Some(p) = params {
            msg["params"] = p;
        }
        match &self.transport {
            Transport::Stdio(s) => s
                .send(&msg, timeout)
                .map_err(|e| self.send_error(&e, method, timeout)),
            Transport::Http(h) => h.post(&msg, &self.session, None, timeout),
        }
    }

    /// What a failed write to a stdio server means: no room within the
    /// time (it is not reading), or the end of the session.
    fn send_error(&self, e: &std::io::Error, method: &str, timeout: Duration) -> McpError {
        if e.kind() == std::io::ErrorKind::TimedOut {
            McpError::Timeout {
                method: method.to_string(),
                after: timeout,
            }
        } else {
            self.session.closed()
        }
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
            let page = match self.request("tools/list", params, timeout) {
                Err(McpError::Rpc { code, .. }) if code == super::lines::TOO_MANY_VALUES => {
                    return Err(McpError::TooManyTools);
                }
                other => other?,
            };
            let items =
                page.get("tools")
                    .and_then(Value::as_array)
                    .ok_or_else(|| McpError::Protocol {
                        detail: "tools/list result has no 'tools' array".into(),
                        source: None,
                    })?;
            if tools.len() + items.len() > super::lines::MAX_TOOLS {
                return Err(McpError::TooManyTools);
            }
            tools.extend(items.iter().cloned());
            match page.get("nextCursor").and_then(Value::as_str) {
                Some(next) if !next.is_empty() => cursor = Some(next.to_string()),
                _ => return Ok(tools),
            }
        }
        Err(McpError::Protocol {
            detail: "tools/list: more than 1000 pages".into(),
            source: None,
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

    /// Ends the session: the process (stdio), or DELETE (HTTP); joins the
    /// threads. Idempotent.
    pub(crate) fn shutdown(&self) {
        match &self.transport {
            Transport::Stdio(s) => s.shutdown(),
            Transport::Http(h) => {
                h.shutdown();
                self.session.end(None);
            }
        }
    }
}

impl Drop for McpClient {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Whether an HTTP error says the server no longer knows the session: 404
/// as the spec says, or a 400 that says so (what the reference servers
/// answer for a session id they do not know, e.g. after a restart).
fn session_expired(e: &McpError) -> bool {
    match e {
        McpError::Http { status: 404, .. } => true,
        McpError::Http {
            status: 400,
            detail,
        } => detail.to_ascii_lowercase().contains("session"),
        _ => false,
    }
}

/// Puts the method into an error that came back without it.
fn named(e: McpError, method: &str) -> McpError {
    match e {
        McpError::Rpc { code, message, .. } => McpError::Rpc {
            method: method.to_string(),
            code,
            message,
        },
        McpError::Timeout { after, .. } => McpError::Timeout {
            method: method.to_string(),
            after,
        },
        other => other,
    }
}

/// The text of a `tools/call` result: text blocks joined; other blocks
/// named; `structuredContent` when there is nothing else. Written into
/// one string sized for it, borrowing from the parsed result (a list of
/// owned parts joined at the end held every text twice more: issue 28,
/// finding 5).
fn content_text(result: &Value) -> String {
    let items = result
        .get("content")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let size: usize = items
        .iter()
        .filter_map(|i| block_text(i).map(|t| t.len() + 1))
        .sum();
    let mut out = String::with_capacity(size);
    let mut any = false;
    for t in items.iter().filter_map(block_text) {
        if any {
            out.push('\n');
        }
        out.push_str(&t);
        any = true;
    }
    if !any && let Some(s) = result.get("structuredContent") {
        return s.to_string();
    }
    out
}

fn str_of(v: Option<&Value>) -> &str {
    v.and_then(Value::as_str).unwrap_or("")
}

/// One content block's text (`None` for a block with no type).
fn block_text(item: &Value) -> Option<std::borrow::Cow<'_, str>> {
    Some(match item.get("type").and_then(Value::as_str)? {
        "text" => str_of(item.get("text")).into(),
        "resource" => {
            let r = item.get("resource").unwrap_or(&Value::Null);
            match r.get("text").and_then(Value::as_str) {
                Some(t) => t.into(),
                None => format!(
                    "[resource {}]",
                    r.get("uri").and_then(Value::as_str).unwrap_or("?")
                )
                .into(),
            }
        }
        "resource_link" => format!(
            "[resource link {}]",
            item.get("uri").and_then(Value::as_str).unwrap_or("?")
        )
        .into(),
        kind => format!("[{kind} {}]", str_of(item.get("mimeType"))).into(),
    })
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
