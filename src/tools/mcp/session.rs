//! What every transport shares: the callers waiting for their responses
//! (one channel per request id), the notifications seen, and the answers
//! to requests the server sends (ping; elicitation and sampling).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};

use crossbeam_channel::Sender;
use parking_lot::Mutex;
use serde_json::{Value, json};

use super::Elicitation;
use super::McpError;

/// A response as the waiting caller gets it.
pub(crate) type Reply = Result<Value, McpError>;

/// Notifications kept (the oldest are dropped past this).
const KEEP_NOTIFICATIONS: usize = 1000;
/// Lines of the server's stderr kept for error messages.
const STDERR_TAIL: usize = 5;
/// Characters of one stderr line kept.
const STDERR_LINE: usize = 500;

/// The state a session's transport and its callers share.
#[derive(Debug)]
pub(crate) struct Session {
    /// The server's name (from the config), for log lines.
    server: String,
    pending: Mutex<HashMap<u64, Sender<Reply>>>,
    alive: AtomicBool,
    notifications: Mutex<VecDeque<String>>,
    stderr: Mutex<VecDeque<String>>,
    /// Why the session ended, when it was not a plain exit.
    ended: Mutex<Option<McpError>>,
    tools_changed: AtomicBool,
    elicitation: Elicitation,
}

impl Session {
    pub(crate) fn new(server: &str, elicitation: Elicitation) -> Self {
        Session {
            server: server.to_string(),
            pending: Mutex::new(HashMap::new()),
            alive: AtomicBool::new(true),
            notifications: Mutex::new(VecDeque::new()),
            stderr: Mutex::new(VecDeque::new()),
            ended: Mutex::new(None),
            tools_changed: AtomicBool::new(false),
            elicitation,
        }
    }

    /// The capabilities the client declares in `initialize`.
    pub(crate) fn capabilities(&self) -> Value {
        match self.elicitation {
            Elicitation::AcceptDefaults => json!({"elicitation": {}}),
            Elicitation::Reject => json!({}),
        }
    }

    pub(crate) fn is_alive(&self) -> bool {
        self.alive.load(Ordering::SeqCst)
    }

    /// The error a caller sees once the session is over.
    pub(crate) fn closed(&self) -> McpError {
        if let Some(e) = self.ended.lock().clone() {
            return e;
        }
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

    /// Registers a caller waiting for the response to `id`; `false` when
    /// the session is already over.
    pub(crate) fn wait_for(&self, id: u64, tx: Sender<Reply>) -> bool {
        self.pending.lock().insert(id, tx);
        // The transport marks the session dead before it fails the pending
        // calls: a caller that registered too late sees the flag here.
        if !self.is_alive() {
            self.pending.lock().remove(&id);
            return false;
        }
        true
    }

    /// Forgets a caller (it timed out or its send failed).
    pub(crate) fn forget(&self, id: u64) {
        self.pending.lock().remove(&id);
    }

    /// Whether a caller still waits for `id`.
    pub(crate) fn is_waiting(&self, id: u64) -> bool {
        self.pending.lock().contains_key(&id)
    }

    /// Ends the session: every waiting caller gets `why` (or "closed").
    pub(crate) fn end(&self, why: Option<McpError>) {
        if let Some(why) = why {
            self.ended.lock().get_or_insert(why);
        }
        self.alive.store(false, Ordering::SeqCst);
        let waiting: Vec<Sender<Reply>> = self.pending.lock().drain().map(|(_, tx)| tx).collect();
        for tx in waiting {
            let _ = tx.send(Err(self.closed()));
        }
    }

    /// Methods of every notification received so far, in order (the last
    /// thousand).
    pub(crate) fn notifications(&self) -> Vec<String> {
        self.notifications.lock().iter().cloned().collect()
    }

    pub(crate) fn take_tools_changed(&self) -> bool {
        self.tools_changed.swap(false, Ordering::SeqCst)
    }

    /// Keeps a line of the server's stderr (the last few, each cut).
    pub(crate) fn stderr_line(&self, line: &str) {
        let mut kept: String = line.chars().take(STDERR_LINE).collect();
        if kept.len() < line.len() {
            kept.push('…');
        }
        let mut tail = self.stderr.lock();
        if tail.len() == STDERR_TAIL {
            tail.pop_front();
        }
        tail.push_back(kept);
    }

    /// Routes one message from the server. Returns the answer to send back
    /// when it is a request from the server, and the id of the response it
    /// delivered, if it was one.
    pub(crate) fn handle(&self, mut msg: Value) -> (Option<Value>, Option<u64>) {
        let method = msg.get("method").and_then(Value::as_str);
        let id = msg.get("id").filter(|v| !v.is_null());
        match (method, id) {
            (Some(method), None) => {
                log::debug!("mcp '{}': notification {method}", self.server);
                if method == "notifications/tools/list_changed" {
                    self.tools_changed.store(true, Ordering::SeqCst);
                }
                let mut kept = self.notifications.lock();
                if kept.len() == KEEP_NOTIFICATIONS {
                    kept.pop_front();
                }
                kept.push_back(method.to_string());
                (None, None)
            }
            (Some(method), Some(id)) => {
                log::debug!("mcp '{}': server request {method}", self.server);
                (Some(self.answer(method, id, msg.get("params"))), None)
            }
            (None, Some(id)) => {
                let Some(id) = id.as_u64() else {
                    return (None, None);
                };
                // The result is taken, not copied: a tool's answer may be
                // 16 MiB of parsed JSON (issue 28, finding 5).
                let result = msg.get_mut("result").map(Value::take);
                let reply = match (result, msg.get("error")) {
                    (_, Some(err)) => Err(McpError::Rpc {
                        method: String::new(),
                        code: err.get("code").and_then(Value::as_i64).unwrap_or(0),
                        message: err
                            .get("message")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string(),
                    }),
                    (Some(result), None) => Ok(result),
                    (None, None) => Err(McpError::Protocol {
                        detail: "a response with neither result nor error".into(),
                        source: None,
                    }),
                };
                if let Some(tx) = self.pending.lock().remove(&id) {
                    let _ = tx.send(reply);
                }
                (None, Some(id))
            }
            (None, None) => {
                log::debug!(
                    "mcp '{}': a message with neither method nor id",
                    self.server
                );
                (None, None)
            }
        }
    }

    /// The answer to a request from the server.
    fn answer(&self, method: &str, id: &Value, params: Option<&Value>) -> Value {
        let error = |code: i64, message: String| json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
        match method {
            "ping" => json!({"jsonrpc": "2.0", "id": id, "result": {}}),
            "elicitation/create" => match self.elicitation {
                Elicitation::Reject => error(
                    -32601,
                    "elicitation is not supported by boardroom (no user to ask); set \
                     \"elicitation\": \"accept_defaults\" on the server to accept the \
                     server's defaults"
                        .into(),
                ),
                Elicitation::AcceptDefaults => {
                    let result = accept_defaults(params.and_then(|p| p.get("requestedSchema")));
                    json!({"jsonrpc": "2.0", "id": id, "result": result})
                }
            },
            "sampling/createMessage" => error(
                -32601,
                "sampling is not supported by boardroom: the client offers no model to servers"
                    .into(),
            ),
            other => error(-32601, format!("method not found: {other}")),
        }
    }
}

/// A non-interactive answer to an elicitation: accept with the schema's
/// defaults, or decline when a required field has none.
fn accept_defaults(schema: Option<&Value>) -> Value {
    let mut content = serde_json::Map::new();
    if let Some(props) = schema
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object)
    {
        for (name, prop) in props {
            if let Some(default) = prop.get("default") {
                content.insert(name.clone(), default.clone());
            }
        }
    }
    let required = schema
        .and_then(|s| s.get("required"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let missing = required
        .iter()
        .filter_map(Value::as_str)
        .any(|r| !content.contains_key(r));
    if missing {
        json!({"action": "decline"})
    } else {
        json!({"action": "accept", "content": content})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_requests_are_answered() {
        let s = Session::new("t", Elicitation::Reject);
        let (reply, _) = s.handle(json!({"jsonrpc": "2.0", "id": "p", "method": "ping"}));
        assert_eq!(reply.unwrap()["result"], json!({}));
        let (reply, _) =
            s.handle(json!({"jsonrpc": "2.0", "id": 7, "method": "sampling/createMessage"}));
        let reply = reply.unwrap();
        assert_eq!(reply["id"], 7);
        assert!(
            reply["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with("sampling is not supported")
        );
        let (reply, _) =
            s.handle(json!({"jsonrpc": "2.0", "id": 8, "method": "elicitation/create"}));
        assert!(
            reply.unwrap()["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with("elicitation is not supported")
        );
        assert_eq!(s.capabilities(), json!({}));
    }

    #[test]
    fn elicitation_accepts_defaults_or_declines() {
        let s = Session::new("t", Elicitation::AcceptDefaults);
        assert_eq!(s.capabilities(), json!({"elicitation": {}}));
        let schema = json!({"type": "object", "properties": {
            "name": {"type": "string", "default": "Ann"},
            "age": {"type": "integer", "default": 30},
            "note": {"type": "string"}
        }, "required": ["name"]});
        let (reply, _) = s.handle(
            json!({"jsonrpc": "2.0", "id": 1, "method": "elicitation/create",
            "params": {"message": "?", "requestedSchema": schema}}),
        );
        assert_eq!(
            reply.unwrap()["result"],
            json!({"action": "accept", "content": {"name": "Ann", "age": 30}})
        );
        let schema = json!({"type": "object", "properties": {"note": {"type": "string"}}, "required": ["note"]});
        let (reply, _) = s.handle(
            json!({"jsonrpc": "2.0", "id": 2, "method": "elicitation/create",
            "params": {"message": "?", "requestedSchema": schema}}),
        );
        assert_eq!(reply.unwrap()["result"], json!({"action": "decline"}));
    }
}
