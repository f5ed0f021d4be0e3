//! `GET /v1/runs/{id}/ws`: a WebSocket over the request's own TcpStream
//! (tungstenite frames it; no async runtime). Out: the run's events, as
//! `{"type":"event","id":N,"event":{...}}`, from after `?after=N` or
//! `Last-Event-ID`, then live. In: `{"type":"message","text":...}` (a
//! reply to the master's question or a follow-up; `"answer"` is the same),
//! `{"type":"cancel"}`, and `{"type":"approve"|"deny"|"edit","call":...}`
//! (with `reason` for a denial, `arguments` for an edit); each is
//! answered `{"type":"ok",...}` or `{"type":"error","status":N,...}`. The
//! socket stays open across the run's ends and resumes (a reply or a
//! decision sent over it goes on with the run) until the client closes it,
//! the server stops, or the run has not been running here for [`LINGER`]
//! with nothing from the client (each socket holds a worker; the client
//! reconnects with `?after=N` to go on watching).

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tungstenite::protocol::{Role, WebSocket, WebSocketConfig};
use tungstenite::{Error as WsError, Message};

use super::api;
use super::runs::Runs;
use super::stream::Tail;
use crate::util::httpd::{IO_TIMEOUT, Request};

/// How long a read waits for a frame before the socket looks at the
/// run's file again.
const TICK: Duration = Duration::from_millis(25);
/// How long a socket stays open once its run no longer runs here and
/// the client sends nothing.
const LINGER: Duration = Duration::from_secs(30);
/// The largest message taken from a client.
const MAX_MESSAGE: usize = 1 << 20;

/// What a client sends.
#[derive(Debug, serde::Deserialize)]
struct Incoming {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    call: Option<String>,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    arguments: Option<serde_json::Value>,
}

/// Answers the upgrade and serves the socket until it closes.
pub(super) fn serve(request: Request, runs: &Runs, id: &str, dir: &Path, stop: &AtomicBool) {
    let upgrade = request
        .header("Upgrade")
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"));
    let version = request.header("Sec-WebSocket-Version").map(str::trim);
    let Some(key) = request.header("Sec-WebSocket-Key").map(str::trim) else {
        let _ = request.respond(api::error(426, "this route needs a WebSocket upgrade"));
        return;
    };
    if !upgrade || version != Some("13") {
        let _ = request.respond(
            api::error(426, "this route needs a WebSocket upgrade (version 13)")
                .with_header("Sec-WebSocket-Version", "13"),
        );
        return;
    }
    let accept = tungstenite::handshake::derive_accept_key(key.as_bytes());
    let after = super::stream::last_event_id(request.header("Last-Event-ID"), request.url());
    let mut stream = request.into_stream();
    let head = format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Accept: {accept}\r\n\r\n"
    );
    if std::io::Write::write_all(&mut stream, head.as_bytes()).is_err()
        || stream.set_read_timeout(Some(TICK)).is_err()
        || stream.set_write_timeout(Some(IO_TIMEOUT)).is_err()
    {
        return;
    }
    let config = WebSocketConfig::default()
        .max_message_size(Some(MAX_MESSAGE))
        .max_frame_size(Some(MAX_MESSAGE));
    let mut ws = WebSocket::from_raw_socket(stream, Role::Server, Some(config));
    let mut tail = Tail::new(dir, after);
    let mut quiet_since = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        if runs.live(id).is_some() {
            quiet_since = Instant::now();
        } else if quiet_since.elapsed() > LINGER {
            break;
        }
        match ws.read() {
            Ok(Message::Text(text)) => {
                quiet_since = Instant::now();
                let reply = answer(runs, id, text.as_str());
                if ws.send(Message::text(reply.to_string())).is_err() {
                    return;
                }
            }
            Ok(_) => {}
            Err(WsError::Io(e))
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(WsError::ConnectionClosed | WsError::AlreadyClosed) => return,
            Err(e) => {
                log::debug!("serve: ws {id}: {e}");
                return;
            }
        }
        let lines = tail.next();
        if lines.is_empty() {
            continue;
        }
        for (n, text) in lines {
            let frame = format!("{{\"type\":\"event\",\"id\":{n},\"event\":{text}}}");
            if ws.write(Message::text(frame)).is_err() {
                return;
            }
        }
        if ws.flush().is_err() {
            return;
        }
    }
    let _ = ws.close(None);
    let _ = ws.flush();
}

/// Carries out one client message; the reply to send back.
fn answer(runs: &Runs, id: &str, text: &str) -> serde_json::Value {
    let incoming: Incoming = match serde_json::from_str(text) {
        Ok(m) => m,
        Err(e) => return refusal(400, &format!("not a message: {e}")),
    };
    let done = |action: &str| serde_json::json!({"type": "ok", "action": action, "run": id});
    match incoming.kind.as_str() {
        "message" | "answer" => {
            let Some(text) = incoming.text else {
                return refusal(400, "text: missing");
            };
            match runs.resume(id, Some(&text)) {
                Ok(()) => done("message"),
                Err(r) => {
                    let (status, message) = api::refused(&r);
                    refusal(status, &message)
                }
            }
        }
        "cancel" => match runs.cancel(id) {
            Ok(()) => done("cancel"),
            Err(r) => {
                let (status, message) = api::refused(&r);
                refusal(status, &message)
            }
        },
        kind @ ("approve" | "deny" | "edit") => {
            let Some(call) = incoming.call else {
                return refusal(400, "call: missing (the id of the tool call)");
            };
            let verdict = serde_json::json!({
                "decision": kind,
                "reason": incoming.reason,
                "arguments": incoming.arguments,
            });
            let decision = serde_json::from_value::<api::Verdict>(verdict)
                .map_err(|e| e.to_string())
                .and_then(api::Verdict::decision);
            match decision.map(|d| runs.decide(id, &call, d)) {
                Ok(Ok(())) => done(kind),
                Ok(Err(r)) => {
                    let (status, message) = api::refused(&r);
                    refusal(status, &message)
                }
                Err(message) => refusal(400, &message),
            }
        }
        other => refusal(
            400,
            &format!(
                "type: unknown message type '{other}' (known: message, answer, cancel, approve, deny, edit)"
            ),
        ),
    }
}

fn refusal(status: u16, message: &str) -> serde_json::Value {
    serde_json::json!({"type": "error", "status": status, "error": message})
}
