//! One attempt of a call: the request, its status, and the answer read
//! whole or streamed (to the stream's end, then drained so that the
//! connection is reused); and the errors an attempt ends with.

use std::io::Read;
use std::time::{Duration, Instant, SystemTime};

use super::body::{self, StreamError, read_capped};
use super::limit::EndpointPermit;
use super::{Client, Dialect, StreamRead, drain, mask_key, redact_url, retry, sse};
use crate::model::{ChatRequest, ChatResponse, ModelError};

/// Why one attempt failed.
pub(super) enum Failure {
    /// Worth another attempt (after `retry_after`, if the server said).
    Retry {
        error: ModelError,
        retry_after: Option<Duration>,
        /// Refused while other requests to the endpoint were in flight:
        /// the retry waits for a slot (one of them to end), not a backoff.
        queue: bool,
        /// Refused for load (429, 503), not for a spent quota: the server
        /// is up and takes the request later, so it is retried until the
        /// call's deadline however many attempts that takes.
        refused: bool,
    },
    /// Not worth another attempt.
    Fatal(ModelError),
}

/// `e` with its attempt count set to `n`.
pub(super) fn with_attempts(mut e: ModelError, n: u32) -> ModelError {
    match &mut e {
        ModelError::Http { attempts, .. } | ModelError::Transport { attempts, .. } => *attempts = n,
        _ => {}
    }
    e
}

impl Client {
    /// One request and its answer.
    pub(super) fn attempt<D: Dialect>(
        &self,
        dialect: &D,
        body: &str,
        request: &ChatRequest,
        deadline: Instant,
        slot: &EndpointPermit<'_>,
        on_delta: &mut dyn FnMut(&str),
    ) -> Result<ChatResponse, Failure> {
        let left = deadline
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(1));
        let mut req = slot
            .agent(&request.agent)
            .post(&self.url)
            .config()
            .timeout_global(Some(left))
            .timeout_connect(Some(left.min(Duration::from_secs(10))))
            .build()
            .header("Content-Type", "application/json");
        if self.stream {
            req = req.header("Accept", "text/event-stream");
        }
        for (name, value) in dialect.headers(self.key.as_ref().map(|k| k.0.as_str())) {
            req = req.header(name, value);
        }
        let mut response = req.send(body).map_err(|e| {
            let retry = retryable_error(&e);
            self.transport_from(&e.to_string(), retry, Some(Box::new(e)))
        })?;
        let status = response.status().as_u16();
        // The endpoint's limit learns from the status and the time to it.
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| retry::parse_retry_after(v, SystemTime::now()));
        let congestion = dialect.congestion(status);
        let queue = match (status, congestion) {
            (200..=299, _) => {
                slot.succeeded(&request.agent);
                false
            }
            // `Retry-After: 0` says nothing about time.
            (_, Some(reason)) => slot.congested(
                reason,
                &request.agent,
                retry_after.is_some_and(|d| !d.is_zero()),
            ),
            _ => false,
        };
        if (300..400).contains(&status) {
            let to = response
                .headers()
                .get("location")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            let to: String = self.redact(&redact_url(to)).chars().take(300).collect();
            let detail = match to.strip_suffix(D::PATH) {
                _ if to.is_empty() => {
                    "the endpoint redirected (with no Location); redirects are not followed"
                        .to_string()
                }
                Some(base) if base.contains("://") => format!(
                    "the endpoint redirected to '{to}'; redirects are not followed: set the \
                     base URL to '{base}'"
                ),
                _ => format!(
                    "the endpoint redirected to '{to}'; redirects are not followed: set the \
                     base URL to where it points"
                ),
            };
            return Err(Failure::Fatal(self.http_error(dialect, status, &detail)));
        }
        if !(200..300).contains(&status) {
            let text = read_capped(response.body_mut().as_reader(), 64 * 1024)
                .map(|(t, _)| t)
                .unwrap_or_default();
            // Mask the key first, then shorten: a cut must never leave a
            // piece of the key that the mask no longer recognises.
            let error = self.http_error(dialect, status, &body::error_detail(&self.redact(&text)));
            // A 429 for a spent quota or credit is not load: more attempts
            // do not help, and the policy's count ends them.
            let refused = congestion.is_some() && !text.to_ascii_lowercase().contains("quota");
            return Err(if dialect.retryable_status(status) {
                Failure::Retry {
                    error,
                    retry_after,
                    queue,
                    refused,
                }
            } else {
                Failure::Fatal(error)
            });
        }
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let is_sse = content_type.contains("text/event-stream");
        if is_sse {
            let reusable = drain::reusable(response.headers());
            return self.read_stream(
                dialect,
                response.into_body().into_reader(),
                reusable,
                request,
                on_delta,
            );
        }
        // The cap counts the bytes held, after any `Content-Encoding` is
        // undone: 1 MB of gzip can expand to 1 GB.
        let (text, whole) = read_capped(response.body_mut().as_reader(), body::MAX_ANSWER_BYTES)
            .map_err(|e| {
                self.transport_from(&format!("reading the answer: {e}"), true, Some(Box::new(e)))
            })?;
        if !whole {
            return Err(Failure::Fatal(self.bad(format!(
                "the answer is larger than {} MiB (decompressed)",
                body::MAX_ANSWER_BYTES >> 20
            ))));
        }
        let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
            let mut error = self.bad(body::not_json(&content_type, &self.redact(&text), &e));
            if let ModelError::BadResponse { source, .. } = &mut error {
                *source = Some(std::sync::Arc::new(e));
            }
            Failure::Fatal(error)
        })?;
        let answer = dialect
            .parse_response(request, &json)
            .map_err(|e| Failure::Fatal(self.bad(e)))?;
        if !answer.text.is_empty() {
            on_delta(&answer.text);
        }
        Ok(answer)
    }

    /// Reads a streamed answer to its end (`[DONE]`); then, where the
    /// connection can serve another request (`reusable`), to the end of
    /// the body.
    fn read_stream<D: Dialect>(
        &self,
        dialect: &D,
        mut reader: impl Read,
        reusable: bool,
        request: &ChatRequest,
        on_delta: &mut dyn FnMut(&str),
    ) -> Result<ChatResponse, Failure> {
        let mut decoder = sse::SseDecoder::default();
        let mut state = dialect.stream();
        let mut buf = [0u8; 8192];
        // The first bytes, and whether any event came: a server that sends
        // JSON labelled as an event stream is told apart from a cut.
        let mut first = Vec::new();
        let mut events_seen = false;
        loop {
            let n = reader.read(&mut buf).map_err(|e| {
                self.transport_from(&format!("reading the stream: {e}"), true, Some(Box::new(e)))
            })?;
            if first.len() < 64 {
                let take = n.min(64 - first.len());
                first.extend_from_slice(&buf[..take]);
            }
            let events = if n == 0 {
                decoder.finish()
            } else {
                decoder.push(&buf[..n])
            }
            .map_err(|e| Failure::Fatal(self.bad(e)))?;
            events_seen |= !events.is_empty();
            for data in events {
                let delta = match state.apply(&data) {
                    Ok(delta) => delta,
                    // The connection ended inside an event: a cut, not a
                    // bad answer (retried where no text was shown yet).
                    Err(StreamError::Chunk(e)) if n == 0 => {
                        return Err(self.transport(
                            &format!("the stream was cut inside an event ({e})"),
                            true,
                        ));
                    }
                    Err(StreamError::Retry(e)) => return Err(self.transport(&e, true)),
                    Err(e) => return Err(Failure::Fatal(self.bad(self.redact(&e.to_string())))),
                };
                if let Some(delta) = delta {
                    on_delta(&delta);
                }
            }
            if n == 0 || state.done() {
                if n != 0 && reusable {
                    drain::drain(&mut reader);
                }
                break;
            }
        }
        if !state.done() {
            let start = String::from_utf8_lossy(&first);
            let start = start.trim_start();
            if !events_seen && (start.starts_with('{') || start.starts_with('[')) {
                return Err(Failure::Fatal(
                    self.bad(
                        "the endpoint sent JSON labelled as an event stream (Content-Type: \
                     text/event-stream, no 'data:' lines): it does not stream this way; turn \
                     streaming off for this model (stream=false in the model spec)"
                            .to_string(),
                    ),
                ));
            }
            return Err(self.transport(&format!("the stream ended before {}", D::STREAM_END), true));
        }
        Ok(state.finish(request))
    }

    /// The call ran out of time.
    pub(super) fn past_deadline(&self, attempts: u32) -> ModelError {
        ModelError::Transport {
            model: self.label.clone(),
            detail: self.deadline_note(),
            attempts: attempts.max(1),
            source: None,
        }
    }

    fn deadline_note(&self) -> String {
        format!(
            "no complete answer within the call deadline of {} (every attempt and wait \
             included; change it with timeout= in the model spec or timeout: in team.yaml)",
            crate::util::duration::human(self.timeout)
        )
    }

    /// The next backoff would end past the call's deadline: say that the
    /// deadline ended the retries, and what the server said last.
    pub(super) fn out_of_time(&self, mut error: ModelError) -> ModelError {
        let note = self.deadline_note();
        if let ModelError::Http { detail, .. } | ModelError::Transport { detail, .. } = &mut error {
            *detail = if detail.is_empty() {
                note
            } else {
                format!("{note} (server said: {detail})")
            };
        }
        error
    }

    /// The call ran out of time: the caller's deadline where it came
    /// first, else the call's own.
    pub(super) fn past(&self, caller_first: bool, attempts: u32) -> ModelError {
        if caller_first {
            self.past_caller_deadline(attempts)
        } else {
            self.past_deadline(attempts)
        }
    }

    /// The caller's deadline passed before an answer.
    pub(super) fn past_caller_deadline(&self, attempts: u32) -> ModelError {
        ModelError::Transport {
            model: self.label.clone(),
            detail: "no complete answer before the caller's deadline (a run's time limit, or \
                     the memory note's own)"
                .to_string(),
            attempts: attempts.max(1),
            source: None,
        }
    }

    /// The server asked for a wait (`Retry-After`) that would end past the
    /// call's deadline: say so instead of failing without a reason.
    pub(super) fn over_deadline(&self, mut error: ModelError, asked: Duration) -> ModelError {
        let note = format!(
            "the server asked to wait {} s (Retry-After), which is over the call deadline of {}",
            asked.as_secs_f64().ceil() as u64,
            crate::util::duration::human(self.timeout)
        );
        if let ModelError::Http { detail, .. } | ModelError::Transport { detail, .. } = &mut error {
            *detail = if detail.is_empty() {
                note
            } else {
                format!("{note} (server said: {detail})")
            };
        }
        error
    }

    pub(super) fn redact(&self, text: &str) -> String {
        match &self.key {
            Some(key) => mask_key(text, &key.0),
            None => text.to_string(),
        }
    }

    pub(super) fn transport(&self, detail: &str, retryable: bool) -> Failure {
        self.transport_from(detail, retryable, None)
    }

    /// A transport failure that keeps `cause` as its source, unless the
    /// cause's text holds the key.
    pub(super) fn transport_from(
        &self,
        detail: &str,
        retryable: bool,
        cause: Option<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Failure {
        let cause = cause.filter(|c| {
            let text = c.to_string();
            self.redact(&text) == text
        });
        let error = ModelError::Transport {
            model: self.label.clone(),
            detail: self.redact(detail),
            attempts: 1,
            source: cause.map(std::sync::Arc::from),
        };
        if retryable {
            Failure::Retry {
                error,
                retry_after: None,
                queue: false,
                refused: false,
            }
        } else {
            Failure::Fatal(error)
        }
    }

    pub(super) fn bad(&self, detail: String) -> ModelError {
        ModelError::BadResponse {
            model: self.label.clone(),
            detail,
            source: None,
        }
    }

    /// An HTTP error with advice a person can act on.
    pub(crate) fn http_error<D: Dialect>(
        &self,
        dialect: &D,
        status: u16,
        server: &str,
    ) -> ModelError {
        let env = if self.key_env.is_empty() {
            "the api key"
        } else {
            self.key_env.as_str()
        };
        let advice = dialect
            .advice(status, self)
            .unwrap_or_else(|| match status {
                401 => format!("check {env}"),
                403 => format!("check {env} and its access to model '{}'", self.model),
                404 => format!("check the base url and the model name '{}'", self.model),
                _ => String::new(),
            });
        let server = self.redact(server);
        let detail = match (advice.is_empty(), server.is_empty()) {
            (true, _) => server,
            (false, true) => advice,
            (false, false) => format!("{advice} (server said: {server})"),
        };
        ModelError::Http {
            model: self.label.clone(),
            status,
            url: redact_url(&self.url),
            detail,
            attempts: 1,
        }
    }
}

/// Connection failures, timeouts and cut connections are worth another
/// attempt; a bad URL, an unknown host or a TLS failure is not.
fn retryable_error(e: &ureq::Error) -> bool {
    matches!(
        e,
        ureq::Error::Io(_)
            | ureq::Error::Timeout(_)
            | ureq::Error::ConnectionFailed
            | ureq::Error::Protocol(_)
            | ureq::Error::BodyStalled
    )
}
