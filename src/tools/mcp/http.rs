//! The Streamable HTTP transport (MCP spec 2025-06-18 and 2025-11-25,
//! "Transports"), blocking, over ureq.
//!
//! Every message is POSTed to the server's URL with
//! `Accept: application/json, text/event-stream`; the answer is a JSON body
//! or an event stream that may carry notifications and server requests
//! before the response. The calling thread reads it and hands each message
//! to the [`Session`]. A stream that ends before the response, after the
//! server gave its events ids, is resumed with a GET and `Last-Event-ID`
//! after the server's `retry:` delay. The `Mcp-Session-Id` the server hands
//! out at `initialize` and the negotiated `MCP-Protocol-Version` go on
//! every later request. One listener thread keeps the optional GET stream
//! open for messages the server sends on its own (a server that does not
//! offer one answers 405 and the thread ends). Shutting down sends DELETE.

use std::io::{BufReader, Read};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, TryRecvError, bounded};
use parking_lot::{Mutex, RwLock};
use serde_json::Value;

use super::config::expand_env;
use super::lines::MAX_LINE;
use super::session::Session;
use super::sse::{SseError, SseReader};
use super::{McpError, McpServerConfig};

mod stream;

/// Attempts of one POST when the server cannot be reached or answers
/// 429/502/503/504 (the message was not taken).
const ATTEMPTS: u32 = 3;
/// The first wait between attempts (doubled each time).
const BACKOFF: Duration = Duration::from_millis(250);
/// How long connecting may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one GET of the listening stream stays open before it is
/// reconnected (with `Last-Event-ID`); also the longest a shutdown waits
/// for a server that ignores the DELETE.
const LISTEN_WINDOW: Duration = Duration::from_secs(5);
/// How long the server may take to answer the GET with its headers.
const LISTEN_HEADERS: Duration = Duration::from_secs(5);
/// Reconnections of a stream that ended before the response.
const RESUMES: u32 = 5;
/// The wait before reconnecting when the server gave no `retry:`.
const DEFAULT_RETRY: Duration = Duration::from_secs(1);
/// The longest `retry:` honoured.
const MAX_RETRY: Duration = Duration::from_secs(30);
/// Failed listening connections in a row after which the listener stops.
const LISTEN_FAILURES: u32 = 3;
/// Bytes of an error body read.
const ERROR_BODY: u64 = 64 * 1024;
/// The longest wait for the server to take the answer to one of its
/// requests (a ping); never past the deadline of the exchange it came in.
const REPLY_TIMEOUT: Duration = Duration::from_secs(30);

/// The session's HTTP state.
#[derive(Debug, Default)]
struct State {
    session_id: Option<String>,
    protocol: Option<String>,
    /// Bumped whenever a new session id is taken (re-initialization).
    generation: u64,
}

#[derive(Debug)]
struct Inner {
    server: String,
    url: String,
    /// The url as configured (`${VAR}` not filled), for messages.
    shown_url: String,
    headers: Vec<(String, String)>,
    agent: ureq::Agent,
    state: RwLock<State>,
}

/// A session with a Streamable HTTP server.
#[derive(Debug)]
pub(crate) struct Http {
    inner: Arc<Inner>,
    stop: Mutex<Option<Sender<()>>>,
    listener: Mutex<Option<JoinHandle<()>>>,
}

/// The bounds of one exchange: its deadline, and whether the requests the
/// server sends in it are answered. They are not inside the exchange of an
/// answer: a server whose every answer brings a new request would nest
/// exchanges without end (until the stack runs out).
#[derive(Debug, Clone, Copy)]
struct Within {
    deadline: Instant,
    answer: bool,
}

/// What came back for one POST.
enum Outcome {
    /// Handled (the response, if one was expected, was delivered).
    Done,
    /// The stream ended before the response; resume from this event id.
    Resume(String, Option<Duration>),
}

impl Http {
    /// Reads the url and headers (filling `${VAR}`s); nothing is sent yet.
    pub(crate) fn new(name: &str, config: &McpServerConfig) -> Result<Http, McpError> {
        let template = config.url.clone().unwrap_or_default();
        let shown_url = crate::model::redact_url(&template);
        let bad = |detail: String| McpError::Config { detail };
        let mut secrets = Vec::new();
        let url = expand_env(&template, &mut secrets).map_err(|e| bad(format!("url: {e}")))?;
        if let Err(e) = url.parse::<ureq::http::Uri>() {
            return Err(bad(format!("url '{shown_url}' is not a valid URL: {e}")));
        }
        let mut headers = Vec::new();
        for (key, template) in &config.headers {
            let value = expand_env(template, &mut secrets)
                .map_err(|e| bad(format!("header '{key}': {e}")))?;
            // Checked here, so that the error names the header (and never
            // shows the value).
            if ureq::http::HeaderName::from_bytes(key.as_bytes()).is_err() {
                return Err(bad(format!("header '{key}': not a valid header name")));
            }
            if ureq::http::HeaderValue::from_str(&value).is_err() {
                return Err(bad(format!(
                    "header '{key}': the value holds a line break or another control character"
                )));
            }
            // What a value holds is only known for `${VAR}`s and the usual
            // credential headers; masking every value would also hide
            // harmless words like a client name in error texts.
            // (`${VAR}` values are remembered by `expand_env`.)
            if template.contains("${") || is_credential(key) {
                crate::util::secrets::remember_header_value(&value);
            }
            headers.push((key.clone(), value));
        }
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(CONNECT_TIMEOUT))
            // Like curl without -L: a redirect would carry the headers (a
            // key) to whatever host the server names; it is reported.
            .max_redirects(0)
            .max_idle_connections_per_host(32)
            .build()
            .into();
        Ok(Http {
            inner: Arc::new(Inner {
                server: name.to_string(),
                url,
                shown_url,
                headers,
                agent,
                state: RwLock::new(State::default()),
            }),
            stop: Mutex::new(None),
            listener: Mutex::new(None),
        })
    }

    /// The session generation (changes when a new session id is taken).
    pub(crate) fn generation(&self) -> u64 {
        self.inner.state.read().generation
    }

    /// Forgets the session id and protocol version, before initializing
    /// again.
    pub(crate) fn reset(&self) {
        let mut s = self.inner.state.write();
        s.session_id = None;
        s.protocol = None;
    }

    /// Whether the server gave a session id.
    pub(crate) fn has_session(&self) -> bool {
        self.inner.state.read().session_id.is_some()
    }

    /// Sends `MCP-Protocol-Version: version` from now on.
    pub(crate) fn set_protocol(&self, version: &str) {
        self.inner.state.write().protocol = Some(version.to_string());
    }

    /// POSTs a message and reads what comes back, routing every message to
    /// `session`; for a request, until its response arrived (`expect`).
    pub(crate) fn post(
        &self,
        msg: &Value,
        session: &Session,
        expect: Option<u64>,
        timeout: Duration,
    ) -> Result<(), McpError> {
        self.inner.post(msg, session, expect, timeout, true)
    }

    /// Opens the GET stream (its first connection here, so that it is
    /// open before the first request) and starts the listener thread that
    /// reads it and keeps it open.
    ///
    /// Called again after a re-initialization: a listener that gave up (the
    /// old session was gone) is started again; a running one is kept.
    pub(crate) fn listen(&self, session: &Arc<Session>) -> Result<(), McpError> {
        {
            let mut running = self.listener.lock();
            match running.take() {
                Some(h) if !h.is_finished() => {
                    *running = Some(h);
                    return Ok(());
                }
                Some(h) => {
                    let _ = h.join();
                }
                None => {}
            }
        }
        let first = self.inner.open_stream(None);
        let (tx, rx) = bounded::<()>(0);
        let inner = Arc::clone(&self.inner);
        let session = Arc::clone(session);
        let handle = std::thread::Builder::new()
            .name(format!("mcp-{}-listen", self.inner.server))
            .spawn(move || inner.listen(first, &session, &rx))
            .map_err(|e| McpError::Spawn {
                command: self.inner.shown_url.clone(),
                detail: format!("cannot start a thread: {e}"),
                source: Some(std::sync::Arc::new(e)),
            })?;
        *self.stop.lock() = Some(tx);
        *self.listener.lock() = Some(handle);
        Ok(())
    }

    /// Ends the session: DELETE (so the server closes its streams), then
    /// joins the listener. Idempotent.
    pub(crate) fn shutdown(&self) {
        let stop = self.stop.lock().take();
        drop(stop);
        let id = self.inner.state.write().session_id.take();
        if let Some(id) = id {
            let mut req = self
                .inner
                .agent
                .delete(&self.inner.url)
                .config()
                .timeout_global(Some(Duration::from_secs(2)))
                .build()
                .header("Mcp-Session-Id", &id);
            for (k, v) in &self.inner.headers {
                req = req.header(k, v);
            }
            match req.call() {
                Ok(r) => log::debug!(
                    "mcp '{}': DELETE of the session: http {}",
                    self.inner.server,
                    r.status().as_u16()
                ),
                Err(e) => log::debug!(
                    "mcp '{}': DELETE of the session: {}",
                    self.inner.server,
                    self.inner.mask(&e.to_string())
                ),
            }
        }
        if let Some(h) = self.listener.lock().take() {
            let _ = h.join();
        }
    }
}

/// A server's text as one line for an error message: control characters
/// (terminal escapes, line breaks) become spaces, runs of spaces one.
fn one_line(text: &str) -> String {
    let plain: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    plain.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A `Retry-After` of seconds (an HTTP date is not honoured), at most a
/// day.
fn retry_after(r: &ureq::http::Response<ureq::Body>) -> Option<Duration> {
    let secs: f64 = r
        .headers()
        .get("retry-after")?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(86_400.0)))
}

/// Whether a header usually carries a credential.
fn is_credential(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    ["auth", "token", "key", "secret", "cookie", "passw"]
        .iter()
        .any(|w| name.contains(w))
}

impl Inner {
    /// One GET of the listening stream.
    fn open_stream(
        &self,
        last_id: Option<&str>,
    ) -> Result<ureq::http::Response<ureq::Body>, ureq::Error> {
        let mut req = self.with_session(
            self.agent
                .get(&self.url)
                .config()
                .timeout_global(Some(LISTEN_WINDOW))
                .timeout_recv_response(Some(LISTEN_HEADERS))
                .build()
                .header("Accept", "text/event-stream"),
        );
        if let Some(id) = last_id {
            req = req.header("Last-Event-ID", id);
        }
        req.call()
    }

    /// `text` with every configured secret, and any piece of one of 6
    /// characters or more (a server may echo it cut short), replaced by
    /// `***`, as for the model API key.
    fn mask(&self, text: &str) -> String {
        // Every configured secret is one the process knows (issue 28).
        crate::util::secrets::mask(text).into_owned()
    }

    fn unreachable(&self, detail: &str) -> McpError {
        self.unreachable_from(detail, None)
    }

    /// An unreachable server that keeps `cause` as its source, unless the
    /// cause's text holds a configured secret.
    fn unreachable_from(&self, detail: &str, cause: Option<ureq::Error>) -> McpError {
        let cause = cause.filter(|c| {
            let text = c.to_string();
            self.mask(&text) == text
        });
        McpError::Unreachable {
            url: self.shown_url.clone(),
            detail: self.mask(detail),
            source: cause.map(|c| std::sync::Arc::new(c) as _),
        }
    }

    /// The headers of every request but the first: session and version.
    fn with_session<B>(&self, mut req: ureq::RequestBuilder<B>) -> ureq::RequestBuilder<B> {
        for (k, v) in &self.headers {
            req = req.header(k, v);
        }
        let s = self.state.read();
        if let Some(id) = &s.session_id {
            req = req.header("Mcp-Session-Id", id);
        }
        if let Some(v) = &s.protocol {
            req = req.header("MCP-Protocol-Version", v);
        }
        req
    }

    fn post(
        &self,
        msg: &Value,
        session: &Session,
        expect: Option<u64>,
        timeout: Duration,
        answer: bool,
    ) -> Result<(), McpError> {
        let deadline = Instant::now() + timeout;
        let within = Within { deadline, answer };
        let method = msg.get("method").and_then(Value::as_str).unwrap_or("");
        let body = msg.to_string();
        let mut attempt = 0;
        let response = loop {
            attempt += 1;
            let left = deadline.saturating_duration_since(Instant::now());
            let req = self.with_session(
                self.agent
                    .post(&self.url)
                    .config()
                    .timeout_global(Some(left.max(Duration::from_millis(1))))
                    .build()
                    .header("Content-Type", "application/json")
                    .header("Accept", "application/json, text/event-stream"),
            );
            let mut asked: Option<Duration> = None;
            let retry_reason = match req.send(&body) {
                Ok(r) if matches!(r.status().as_u16(), 429 | 502 | 503 | 504) => {
                    asked = retry_after(&r);
                    format!("http status {}", r.status().as_u16())
                }
                Ok(r) => break r,
                Err(ureq::Error::Timeout(_)) => {
                    return Err(McpError::Timeout {
                        method: method.to_string(),
                        after: timeout,
                    });
                }
                Err(e @ (ureq::Error::ConnectionFailed | ureq::Error::HostNotFound)) => {
                    e.to_string()
                }
                Err(ureq::Error::Io(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                    e.to_string()
                }
                Err(e) => return Err(self.unreachable_from(&e.to_string(), Some(e))),
            };
            // The server's `Retry-After` (seconds), as for model calls,
            // when it asks for longer than the backoff.
            let wait = asked.map_or(BACKOFF * 2u32.pow(attempt - 1), |a| {
                a.max(BACKOFF * 2u32.pow(attempt - 1))
            });
            if attempt < ATTEMPTS
                && Instant::now() + wait >= deadline
                && let Some(a) = asked
            {
                return Err(self.unreachable(&format!(
                    "{retry_reason}: the server asked to wait {} s, past the call's \
                         timeout of {} s",
                    a.as_secs_f64(),
                    timeout.as_secs_f64()
                )));
            }
            if attempt >= ATTEMPTS || Instant::now() + wait >= deadline {
                return Err(self.unreachable(&format!("{retry_reason} after {attempt} attempts")));
            }
            log::debug!(
                "mcp '{}': {method}: {retry_reason}; trying again in {wait:?}",
                self.server
            );
            std::thread::sleep(wait);
        };
        let status = response.status().as_u16();
        if method == "initialize" && (200..300).contains(&status) {
            let id = response
                .headers()
                .get("mcp-session-id")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            let mut s = self.state.write();
            s.session_id = id;
            s.generation += 1;
        }
        if (300..400).contains(&status) {
            let to = response
                .headers()
                .get("location")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            return Err(McpError::Http {
                status,
                detail: format!(
                    "the server redirects to '{}'; redirects are not followed (they would \
                     carry the headers there): set that url",
                    self.mask(&crate::model::redact_url(to))
                        .chars()
                        .take(300)
                        .collect::<String>()
                ),
            });
        }
        if !(200..300).contains(&status) {
            let mut response = response;
            // Capped after any `Content-Encoding` is undone.
            let mut bytes = Vec::new();
            let _ = response
                .body_mut()
                .as_reader()
                .take(ERROR_BODY)
                .read_to_end(&mut bytes);
            let text = String::from_utf8_lossy(&bytes).into_owned();
            let detail: String = one_line(&self.mask(&text)).chars().take(300).collect();
            return Err(McpError::Http { status, detail });
        }
        let kind = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        // A stream (or its resumption) that broke because the call's time
        // was up is a timeout, not an unreachable server.
        let timed_out = |e| match e {
            McpError::Unreachable { .. } if Instant::now() >= deadline => McpError::Timeout {
                method: method.to_string(),
                after: timeout,
            },
            other => other,
        };
        let outcome = if kind.starts_with("text/event-stream") {
            let reader = BufReader::new(response.into_body().into_reader());
            let mut events = SseReader::new(reader, MAX_LINE);
            self.read_stream(&mut events, session, expect, method, within)
                .map_err(timed_out)?
        } else if kind.starts_with("application/json") {
            let text = self.read_json_body(method, timeout, response.into_body())?;
            self.route_json(&text, session, within)?;
            // A request's JSON answer is its response (spec); one without it
            // is not waited on until the call's timeout.
            if expect.is_some_and(|id| session.is_waiting(id)) {
                return Err(McpError::Protocol {
                    detail: format!("{method}: the server's JSON answer holds no response to it"),
                    source: None,
                });
            }
            Outcome::Done
        } else if status == 202 || status == 204 || expect.is_none() {
            Outcome::Done
        } else {
            return Err(McpError::Protocol {
                detail: format!("{method}: the server answered with content type '{kind}'"),
                source: None,
            });
        };
        match outcome {
            Outcome::Done => Ok(()),
            Outcome::Resume(last_id, retry) => self
                .resume(session, expect, method, last_id, retry, within, timeout)
                .map_err(timed_out),
        }
    }

    /// A JSON body, capped at [`MAX_LINE`] bytes as held in memory: after
    /// any `Content-Encoding` is undone (a small gzip body can expand a
    /// thousandfold).
    fn read_json_body(
        &self,
        method: &str,
        timeout: Duration,
        body: ureq::Body,
    ) -> Result<String, McpError> {
        let mut bytes = Vec::new();
        if let Err(e) = body
            .into_reader()
            .take(MAX_LINE as u64 + 1)
            .read_to_end(&mut bytes)
        {
            if let Some(u) = e.get_ref().and_then(|i| i.downcast_ref::<ureq::Error>()) {
                return Err(self.read_error(method, timeout, u));
            }
            if e.kind() == std::io::ErrorKind::TimedOut {
                return Err(McpError::Timeout {
                    method: method.to_string(),
                    after: timeout,
                });
            }
            return Err(self.unreachable(&format!("reading the answer: {e}")));
        }
        if bytes.len() > MAX_LINE {
            return Err(McpError::LineTooLong {
                stream: "the http body (decompressed)",
                limit: MAX_LINE,
            });
        }
        Ok(match String::from_utf8(bytes) {
            Ok(t) => t,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        })
    }

    fn read_error(&self, method: &str, timeout: Duration, e: &ureq::Error) -> McpError {
        match e {
            ureq::Error::Timeout(_) => McpError::Timeout {
                method: method.to_string(),
                after: timeout,
            },
            ureq::Error::BodyExceedsLimit(_) => McpError::LineTooLong {
                stream: "the http body",
                limit: MAX_LINE,
            },
            other => self.unreachable(&format!("reading the answer: {other}")),
        }
    }

    /// Routes a JSON body: one message or a batch.
    fn route_json(&self, text: &str, session: &Session, within: Within) -> Result<(), McpError> {
        if text.trim().is_empty() {
            return Ok(());
        }
        // At most MAX_VALUES parsed values, as on stdio: one message past
        // it becomes an error answer to its request; a batch, an error.
        if text.trim_start().starts_with('[') && super::lines::too_many_values(text.as_bytes()) {
            return Err(McpError::Protocol {
                detail: format!(
                    "the server's answer holds more than {} JSON values ({} bytes); \
                     boardroom keeps at most {}",
                    super::lines::MAX_VALUES,
                    text.len(),
                    super::lines::MAX_VALUES
                ),
                source: None,
            });
        }
        let value: Value =
            super::lines::parse_message(text.as_bytes()).map_err(|e| McpError::Protocol {
                detail: format!("the server's answer is not JSON: {e}"),
                source: Some(std::sync::Arc::new(e)),
            })?;
        let messages = match value {
            Value::Array(items) => items,
            one => vec![one],
        };
        for m in messages {
            self.route(m, session, within);
        }
        Ok(())
    }

    /// Hands one message to the session and sends back any answer it
    /// gives, taking no longer than `within.deadline` (that of the exchange the
    /// message came in: a server whose requests hang must not stretch a
    /// call, or keep a listener from stopping); returns the id of the
    /// response it delivered.
    fn route(&self, msg: Value, session: &Session, within: Within) -> Option<u64> {
        let (reply, delivered) = session.handle(msg);
        if let Some(reply) = reply {
            let left = within
                .deadline
                .saturating_duration_since(Instant::now())
                .min(REPLY_TIMEOUT);
            if !within.answer {
                log::debug!(
                    "mcp '{}': a request inside the answer to a request: not answered",
                    self.server
                );
            } else if left.is_zero() {
                log::debug!(
                    "mcp '{}': no time left to answer a server request",
                    self.server
                );
            } else if let Err(e) = self.post(&reply, session, None, left, false) {
                log::warn!("mcp '{}': answering a server request: {e}", self.server);
            }
        }
        delivered
    }
}
