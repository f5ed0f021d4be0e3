//! The OpenAI-compatible provider: `POST {base}/chat/completions` over the
//! blocking `ureq` client, for OpenAI itself, Ollama, llama.cpp's server,
//! vLLM, LM Studio and anything else that speaks the same JSON.
//!
//! Around every call: the endpoint's adaptive in-flight limit (shared by
//! every model in the process that points at the same base URL with the
//! same key; see [`limit`]), the model's own hard cap where
//! `max_in_flight` sets one, the transport retry (429 with `Retry-After`,
//! 5xx, timeouts, resets; exponential backoff with full jitter), and one
//! deadline for the whole call that every attempt and wait counts against
//! (each attempt's socket timeouts are what is left of it). The API key is
//! kept in a wrapper that never prints it, and masked in anything a server
//! echoes back before that is shortened.

mod agents;
mod drain;
mod limit;
mod resolve;
mod retry;
mod spec;
mod sse;
mod wire;

use std::io::Read;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use parking_lot::Mutex;

use super::{ChatModel, ChatRequest, ChatResponse, ModelError};
use limit::{Endpoint, EndpointPermit, Limit};
pub use limit::{LimitChange, LimitReason, LimitWatch, LimitWatcher};
pub use retry::RetryPolicy;
pub(crate) use spec::{from_endpoint, from_spec};

/// How many transport-retry waits an [`OpenAi`] keeps for its probe.
const KEPT_WAITS: usize = 64;

/// The base URL used when neither the caller nor `OPENAI_BASE_URL` names one.
pub const OPENAI_DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// An API key. Its `Debug` prints `***`; there is no `Display`.
#[derive(Clone)]
struct ApiKey(String);

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("***")
    }
}

type SleepFn = Arc<dyn Fn(Duration) + Send + Sync>;

/// A model behind an OpenAI-compatible endpoint. Cheap to clone: clones
/// share the connection pool, the in-flight limit and the retry record.
///
/// # Examples
///
/// ```no_run
/// use boardroom::{OpenAi, Runtime, Team};
/// let model = OpenAi::builder("http://127.0.0.1:8080/v1", "gemma")
///     .max_in_flight(4)
///     .build()?;
/// let run = Runtime::new(Team::builtin()?, model).run("Plan a picnic")?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct OpenAi {
    inner: Arc<Inner>,
}

struct Inner {
    label: String,
    url: String,
    model: String,
    key: Option<ApiKey>,
    key_env: String,
    stream: bool,
    timeout: Duration,
    /// The hard cap an explicit `max_in_flight` sets on this model.
    cap: Option<Limit>,
    /// The endpoint's adaptive limit, shared.
    endpoint: Arc<Endpoint>,
    retry: RetryPolicy,
    sleep: SleepFn,
    /// The last transport-retry waits, bounded (a test probe).
    waits: Mutex<Vec<Duration>>,
}

impl std::fmt::Debug for OpenAi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let i = &self.inner;
        f.debug_struct("OpenAi")
            .field("label", &i.label)
            .field("url", &redact_url(&i.url))
            .field("model", &i.model)
            .field("key", &i.key)
            .field("stream", &i.stream)
            .field("max_in_flight", &i.cap.as_ref().map(Limit::max))
            .field("limit", &i.endpoint.limit())
            .field("retry", &i.retry)
            .finish_non_exhaustive()
    }
}

/// Settings for an [`OpenAi`] model; [`OpenAiBuilder::build`] makes it.
#[derive(Clone)]
pub struct OpenAiBuilder {
    label: Option<String>,
    base_url: String,
    model: String,
    key: Option<ApiKey>,
    key_env: String,
    timeout: Duration,
    max_in_flight: Option<usize>,
    stream: bool,
    retry: RetryPolicy,
    sleep: SleepFn,
}

impl std::fmt::Debug for OpenAiBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiBuilder")
            .field("base_url", &redact_url(&self.base_url))
            .field("model", &self.model)
            .field("key", &self.key)
            .field("stream", &self.stream)
            .finish_non_exhaustive()
    }
}

impl OpenAiBuilder {
    /// The name used in logs and errors (default: `openai:<model>`).
    #[must_use]
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    /// The API key, sent as `Authorization: Bearer ...`.
    #[must_use]
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        let key = key.into();
        self.key = (!key.trim().is_empty()).then(|| ApiKey(key.trim().to_string()));
        self
    }

    /// Reads the API key from the environment variable `var` (named in
    /// error messages about authentication). Unset or empty: no key.
    #[must_use]
    pub fn api_key_env(mut self, var: impl Into<String>) -> Self {
        self.key_env = var.into();
        self.key = std::env::var(&self.key_env)
            .ok()
            .filter(|k| !k.trim().is_empty())
            .map(|k| ApiKey(k.trim().to_string()));
        self
    }

    /// The deadline of one call (default 300 s): every attempt, the answer
    /// and every wait between attempts count against it, and an attempt's
    /// socket timeouts are what is left of it. The clock starts when the
    /// call first holds an in-flight slot (waiting behind other calls to
    /// the same endpoint is bounded by their deadlines).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// A hard cap on the requests in flight at once through this model (at
    /// least 1, at most 4096); more callers wait for a slot. Without it the
    /// endpoint's adaptive limit alone decides (it starts at 1024 and finds
    /// the server's capacity); with it the adaptive limit still works below
    /// the cap.
    #[must_use]
    pub fn max_in_flight(mut self, n: usize) -> Self {
        self.max_in_flight = Some(n.clamp(1, 4096));
        self
    }

    /// Streams answers over SSE (the default) or asks for whole answers.
    #[must_use]
    pub fn stream(mut self, stream: bool) -> Self {
        self.stream = stream;
        self
    }

    /// How failed requests are retried.
    #[must_use]
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.retry = policy;
        self
    }

    /// What waits between attempts (default: `std::thread::sleep`). Tests
    /// pass a function that only records the wait.
    #[must_use]
    pub fn sleep_with(mut self, sleep: impl Fn(Duration) + Send + Sync + 'static) -> Self {
        self.sleep = Arc::new(sleep);
        self
    }

    /// Builds the model.
    ///
    /// # Errors
    ///
    /// A [`ModelSpecError`](crate::openai::ModelSpecError) when the base URL is not
    /// an `http://` or `https://` URL, the model name is empty, or the
    /// timeout is out of range (1 ms to 24 h).
    pub fn build(self) -> Result<OpenAi, crate::openai::ModelSpecError> {
        let err = |detail: String| crate::openai::ModelSpecError {
            spec: redact_url(&self.base_url),
            detail,
        };
        let base = self.base_url.trim().trim_end_matches('/');
        // The value is named (without any credentials in it): in
        // team.yaml the message is all a user sees of it.
        let shown = redact_url(base);
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(err(format!(
                "the base url '{shown}' must start with http:// or https://"
            )));
        }
        if let Err(e) = format!("{base}/chat/completions").parse::<ureq::http::Uri>() {
            return Err(err(format!(
                "the base url '{shown}' is not a valid url: {e}"
            )));
        }
        if base
            .split_once("://")
            .is_none_or(|(_, rest)| rest.split(['/', '?', '#']).next().is_none_or(str::is_empty))
        {
            return Err(err(format!("the base url '{shown}' has no host")));
        }
        if self.model.trim().is_empty() {
            return Err(err("no model name (add #MODEL to the url)".into()));
        }
        let timeout = crate::model::duration::CALL_TIMEOUT;
        if self.timeout < timeout.min || self.timeout > timeout.max {
            return Err(err(format!(
                "timeout: {} is out of range (allowed {})",
                crate::model::duration::human(self.timeout),
                timeout.describe()
            )));
        }
        let ceiling = self.max_in_flight.unwrap_or(limit::DEFAULT_CEILING);
        let url = format!("{base}/chat/completions");
        Ok(OpenAi {
            inner: Arc::new(Inner {
                label: self
                    .label
                    .unwrap_or_else(|| format!("openai:{}", self.model.trim())),
                endpoint: Endpoint::shared(&url, self.key.as_ref().map(|k| k.0.as_str()), ceiling),
                cap: self.max_in_flight.map(Limit::new),
                url,
                model: self.model.trim().to_string(),
                key: self.key,
                key_env: self.key_env,
                stream: self.stream,
                timeout: self.timeout,
                retry: self.retry,
                sleep: self.sleep,
                waits: Mutex::new(Vec::new()),
            }),
        })
    }
}

impl OpenAi {
    /// Settings for the endpoint at `base_url` (e.g.
    /// `http://127.0.0.1:8080/v1`) and the model the server knows as
    /// `model`. The key is read from `OPENAI_API_KEY` unless set otherwise.
    pub fn builder(base_url: impl Into<String>, model: impl Into<String>) -> OpenAiBuilder {
        OpenAiBuilder {
            label: None,
            base_url: base_url.into(),
            model: model.into(),
            key: None,
            key_env: String::new(),
            timeout: Duration::from_secs(300),
            max_in_flight: None,
            stream: true,
            retry: RetryPolicy::default(),
            sleep: Arc::new(std::thread::sleep),
        }
        .api_key_env("OPENAI_API_KEY")
    }

    /// The model named by `OPENAI_MODEL` (default `gpt-4o-mini`) at
    /// `OPENAI_BASE_URL` (default the OpenAI API), with `OPENAI_API_KEY`,
    /// as the official SDKs read them.
    ///
    /// # Errors
    ///
    /// A [`ModelSpecError`](crate::openai::ModelSpecError) for a bad base URL.
    pub fn from_env() -> Result<OpenAi, crate::openai::ModelSpecError> {
        OpenAi::builder(env_base_url(), env_model()).build()
    }

    /// The last waits (at most [`KEPT_WAITS`]) the transport retry chose,
    /// oldest first (all calls); read through `testing::OpenAiProbe`.
    pub(crate) fn recent_retry_waits(&self) -> Vec<Duration> {
        self.inner.waits.lock().clone()
    }

    /// The hard cap on requests in flight: `max_in_flight` where set,
    /// else the ceiling of the adaptive limit (1024).
    pub fn max_in_flight(&self) -> usize {
        self.inner
            .cap
            .as_ref()
            .map_or(limit::DEFAULT_CEILING, Limit::max)
    }

    /// The endpoint's adaptive in-flight limit now (shared by every model
    /// in this process at the same base URL with the same key).
    #[must_use]
    pub fn in_flight_limit(&self) -> usize {
        self.inner.endpoint.limit().min(self.max_in_flight())
    }

    /// The most requests in flight at once to the endpoint so far (all
    /// models sharing it).
    #[must_use]
    pub fn peak_in_flight(&self) -> usize {
        self.inner.endpoint.peak_in_flight()
    }

    /// How many times the endpoint's limit changed so far.
    #[must_use]
    pub fn limit_changes(&self) -> u64 {
        self.inner.endpoint.changes()
    }
}

/// Held while a request is in flight: the model's own cap (if any) and the
/// endpoint's slot.
struct Slot<'a> {
    endpoint: EndpointPermit<'a>,
    _cap: Option<limit::Permit<'a>>,
}

impl OpenAi {
    /// Waits for a slot: out any `Retry-After` pause of the endpoint, then
    /// the model's cap, then the endpoint's limit. `None` at `deadline`.
    fn slot(&self, deadline: Option<Instant>) -> Option<Slot<'_>> {
        let i = &self.inner;
        if let Some(pause) = i.endpoint.pause_left() {
            let pause = match deadline {
                Some(d) => pause.min(d.saturating_duration_since(Instant::now())),
                None => pause,
            };
            (i.sleep)(pause);
        }
        let cap = match &i.cap {
            Some(c) => Some(c.acquire_until(deadline)?),
            None => None,
        };
        let endpoint = i.endpoint.acquire_until(deadline)?;
        Some(Slot {
            endpoint,
            _cap: cap,
        })
    }
}

/// The model a spec or endpoint that names none uses: `OPENAI_MODEL`, as
/// the official SDKs read it, else [`DEFAULT_MODEL`]. The one place it is
/// read (issue 15).
pub(crate) fn env_model() -> String {
    std::env::var("OPENAI_MODEL")
        .ok()
        .filter(|m| !m.trim().is_empty())
        .unwrap_or_else(|| DEFAULT_MODEL.to_string())
}

/// The model used when neither a spec nor `OPENAI_MODEL` names one.
pub(crate) const DEFAULT_MODEL: &str = "gpt-4o-mini";

/// `OPENAI_BASE_URL`, else the OpenAI API.
pub(crate) fn env_base_url() -> String {
    std::env::var("OPENAI_BASE_URL")
        .ok()
        .filter(|u| !u.trim().is_empty())
        .unwrap_or_else(|| OPENAI_DEFAULT_BASE_URL.to_string())
}

/// A URL without any `user:password@` part, for messages.
pub(crate) fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{scheme}://{}", &rest[at + 1..]),
        None => url.to_string(),
    }
}

/// The shortest piece of the key that is masked where it appears.
const KEY_PREFIX_MASKED: usize = 8;

/// `text` with the key, and any piece of it of 8 characters or more from
/// its start (a server may echo a cut key), replaced by `***`.
pub(crate) fn mask_key(text: &str, key: &str) -> String {
    let key = key.as_bytes();
    if key.is_empty() {
        return text.to_string();
    }
    let probe = &key[..key.len().min(KEY_PREFIX_MASKED)];
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i..].starts_with(probe) {
            let len = bytes[i..]
                .iter()
                .zip(key)
                .take_while(|(a, b)| a == b)
                .count();
            out.extend_from_slice(b"***");
            i += len;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    // A match can end inside a multi-byte character only where the key
    // and the text share that character's first bytes: lossy keeps that
    // rare case printable.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Why one attempt failed.
enum Failure {
    /// Worth another attempt (after `retry_after`, if the server said).
    Retry {
        error: ModelError,
        retry_after: Option<Duration>,
        /// Refused while other requests to the endpoint were in flight:
        /// the retry waits for a slot (one of them to end), not a backoff.
        queue: bool,
    },
    /// Not worth another attempt.
    Fatal(ModelError),
}

impl ChatModel for OpenAi {
    fn name(&self) -> String {
        self.inner.label.clone()
    }

    fn watch_limit(&self, f: LimitWatcher) -> Option<LimitWatch> {
        Some(self.inner.endpoint.watch(f))
    }

    fn chat(
        &self,
        request: &ChatRequest,
        on_delta: &mut dyn FnMut(&str),
    ) -> Result<ChatResponse, ModelError> {
        let i = &self.inner;
        let body = wire::request_json(&i.model, request, i.stream);
        // The deadline starts once the call holds its first slot: waiting
        // behind other calls is bounded by their own deadlines.
        let mut first_slot = self.slot(None);
        let deadline = Instant::now() + i.timeout;
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            let mut delivered = false;
            let outcome = {
                let slot = match first_slot.take() {
                    Some(slot) => Some(slot),
                    None => self.slot(Some(deadline)),
                };
                let Some(mut slot) = slot else {
                    return Err(self.past_deadline(attempt - 1));
                };
                log::debug!(
                    "{}: POST {} for {} (attempt {attempt})",
                    i.label,
                    redact_url(&i.url),
                    request.agent
                );
                slot.endpoint.sending();
                self.attempt(&body, request, deadline, &slot.endpoint, &mut |d: &str| {
                    delivered = true;
                    on_delta(d);
                })
            };
            let (error, retry_after, queue) = match outcome {
                Ok(mut response) => {
                    response.retries = attempt - 1;
                    return Ok(response);
                }
                Err(Failure::Fatal(e)) => return Err(with_attempts(e, attempt)),
                Err(Failure::Retry {
                    error,
                    retry_after,
                    queue,
                }) => (error, retry_after, queue),
            };
            if Instant::now() >= deadline {
                return Err(self.past_deadline(attempt));
            }
            // Refused for too many at once, with no `Retry-After`: the
            // endpoint's limit came down to the requests still in flight,
            // and the next slot is the wait (a sleep would leave the
            // server idle, or send the retries back into the same crowd).
            if queue && retry_after.is_none() && !delivered {
                if attempt >= i.retry.max_attempts.max(1) {
                    return Err(with_attempts(error, attempt));
                }
                log::debug!(
                    "{}: {error}; retrying when a slot frees (attempt {} of {})",
                    i.label,
                    attempt + 1,
                    i.retry.max_attempts
                );
                continue;
            }
            // Text already shown cannot be taken back: no retry mid-answer.
            let wait = if delivered {
                None
            } else {
                i.retry.next_wait(attempt, retry_after)
            };
            let Some(wait) = wait else {
                return Err(with_attempts(error, attempt));
            };
            // Compared as durations: `Instant + wait` overflows (panics)
            // for a `Retry-After` no clock can reach.
            if wait >= deadline.saturating_duration_since(Instant::now()) {
                let error = match retry_after {
                    Some(asked) => self.over_deadline(error, asked),
                    None => error,
                };
                return Err(with_attempts(error, attempt));
            }
            log::info!(
                "{}: {error}; retrying in {} ms (attempt {} of {})",
                i.label,
                wait.as_millis(),
                attempt + 1,
                i.retry.max_attempts
            );
            {
                let mut waits = i.waits.lock();
                if waits.len() == KEPT_WAITS {
                    waits.remove(0);
                }
                waits.push(wait);
            }
            // The server asked every request to wait, not only this one.
            if retry_after.is_some() {
                i.endpoint.pause_until(Instant::now() + wait);
            }
            (i.sleep)(wait);
        }
    }
}

fn with_attempts(mut e: ModelError, n: u32) -> ModelError {
    match &mut e {
        ModelError::Http { attempts, .. } | ModelError::Transport { attempts, .. } => *attempts = n,
        _ => {}
    }
    e
}

impl OpenAi {
    /// One request and its answer.
    fn attempt(
        &self,
        body: &str,
        request: &ChatRequest,
        deadline: Instant,
        slot: &EndpointPermit<'_>,
        on_delta: &mut dyn FnMut(&str),
    ) -> Result<ChatResponse, Failure> {
        let i = &self.inner;
        let left = deadline
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(1));
        let mut req = slot
            .agent(&request.agent)
            .post(&i.url)
            .config()
            .timeout_global(Some(left))
            .timeout_connect(Some(left.min(Duration::from_secs(10))))
            .build()
            .header("Content-Type", "application/json");
        if i.stream {
            req = req.header("Accept", "text/event-stream");
        }
        if let Some(key) = &i.key {
            req = req.header("Authorization", format!("Bearer {}", key.0));
        }
        let mut response = req.send(body).map_err(|e| {
            let retry = retryable_error(&e);
            self.transport_from(&e.to_string(), retry, Some(Box::new(e)))
        })?;
        let status = response.status().as_u16();
        // The endpoint's limit learns from the status and the time to it.
        let queue = match status {
            200..=299 => {
                slot.succeeded(&request.agent);
                false
            }
            429 => slot.congested(LimitReason::RateLimited, &request.agent),
            503 => slot.congested(LimitReason::Overloaded, &request.agent),
            _ => false,
        };
        if !(200..300).contains(&status) {
            let retry_after = response
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| retry::parse_retry_after(v, SystemTime::now()));
            let text = response
                .body_mut()
                .with_config()
                .limit(64 * 1024)
                .read_to_string()
                .unwrap_or_default();
            // Mask the key first, then shorten: a cut must never leave a
            // piece of the key that the mask no longer recognises.
            let error = self.http_error(status, &wire::error_detail(&self.redact(&text)));
            return Err(if retry::retryable_status(status) {
                Failure::Retry {
                    error,
                    retry_after,
                    queue,
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
                response.into_body().into_reader(),
                reusable,
                request,
                on_delta,
            );
        }
        let text = response
            .body_mut()
            .with_config()
            .limit(wire::MAX_ANSWER_BYTES)
            .read_to_string()
            .map_err(|e| match e {
                ureq::Error::BodyExceedsLimit(_) => Failure::Fatal(self.bad(format!(
                    "the answer is larger than {} MiB",
                    wire::MAX_ANSWER_BYTES >> 20
                ))),
                e => self.transport_from(
                    &format!("reading the answer: {e}"),
                    true,
                    Some(Box::new(e)),
                ),
            })?;
        let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
            let mut error = self.bad(wire::not_json(&content_type, &self.redact(&text), &e));
            if let ModelError::BadResponse { source, .. } = &mut error {
                *source = Some(std::sync::Arc::new(e));
            }
            Failure::Fatal(error)
        })?;
        let answer =
            wire::parse_response(request, &json).map_err(|e| Failure::Fatal(self.bad(e)))?;
        if !answer.text.is_empty() {
            on_delta(&answer.text);
        }
        Ok(answer)
    }

    /// Reads a streamed answer to `[DONE]`; then, where the connection can
    /// serve another request (`reusable`), to the end of the body.
    fn read_stream(
        &self,
        mut reader: impl Read,
        reusable: bool,
        request: &ChatRequest,
        on_delta: &mut dyn FnMut(&str),
    ) -> Result<ChatResponse, Failure> {
        let mut decoder = sse::SseDecoder::default();
        let mut state = wire::StreamState::default();
        let mut buf = [0u8; 8192];
        loop {
            let n = reader.read(&mut buf).map_err(|e| {
                self.transport_from(&format!("reading the stream: {e}"), true, Some(Box::new(e)))
            })?;
            let events = if n == 0 {
                decoder.finish()
            } else {
                decoder.push(&buf[..n])
            }
            .map_err(|e| Failure::Fatal(self.bad(e)))?;
            for data in events {
                let delta = match state.apply(&data) {
                    Ok(delta) => delta,
                    // The connection ended inside an event: a cut, not a
                    // bad answer (retried where no text was shown yet).
                    Err(wire::StreamError::Chunk(e)) if n == 0 => {
                        return Err(self.transport(
                            &format!("the stream was cut inside an event ({e})"),
                            true,
                        ));
                    }
                    Err(e) => return Err(Failure::Fatal(self.bad(self.redact(&e.to_string())))),
                };
                if let Some(delta) = delta {
                    on_delta(&delta);
                }
            }
            if n == 0 || state.done {
                if n != 0 && reusable {
                    drain::drain(&mut reader);
                }
                break;
            }
        }
        if !state.done {
            return Err(self.transport("the stream ended before [DONE]", true));
        }
        Ok(state.finish(request))
    }

    /// The call ran out of time.
    fn past_deadline(&self, attempts: u32) -> ModelError {
        ModelError::Transport {
            model: self.inner.label.clone(),
            detail: format!(
                "no complete answer within the call deadline of {} (every attempt and wait \
                 included; change it with timeout= in the model spec or timeout: in team.yaml)",
                crate::model::duration::human(self.inner.timeout)
            ),
            attempts: attempts.max(1),
            source: None,
        }
    }

    /// The server asked for a wait (`Retry-After`) that would end past the
    /// call's deadline: say so instead of failing without a reason.
    fn over_deadline(&self, mut error: ModelError, asked: Duration) -> ModelError {
        let note = format!(
            "the server asked to wait {} s (Retry-After), which is over the call deadline of {}",
            asked.as_secs_f64().ceil() as u64,
            crate::model::duration::human(self.inner.timeout)
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

    fn redact(&self, text: &str) -> String {
        match &self.inner.key {
            Some(key) => mask_key(text, &key.0),
            None => text.to_string(),
        }
    }

    fn transport(&self, detail: &str, retryable: bool) -> Failure {
        self.transport_from(detail, retryable, None)
    }

    /// A transport failure that keeps `cause` as its source, unless the
    /// cause's text holds the key.
    fn transport_from(
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
            model: self.inner.label.clone(),
            detail: self.redact(detail),
            attempts: 1,
            source: cause.map(std::sync::Arc::from),
        };
        if retryable {
            Failure::Retry {
                error,
                retry_after: None,
                queue: false,
            }
        } else {
            Failure::Fatal(error)
        }
    }

    fn bad(&self, detail: String) -> ModelError {
        ModelError::BadResponse {
            model: self.inner.label.clone(),
            detail,
            source: None,
        }
    }

    /// An HTTP error with advice a person can act on.
    fn http_error(&self, status: u16, server: &str) -> ModelError {
        let i = &self.inner;
        let env = if i.key_env.is_empty() {
            "the api key"
        } else {
            i.key_env.as_str()
        };
        let advice = match status {
            401 => format!("check {env}"),
            403 => format!("check {env} and its access to model '{}'", i.model),
            404 => format!("check the base url and the model name '{}'", i.model),
            _ => String::new(),
        };
        let server = self.redact(server);
        let detail = match (advice.is_empty(), server.is_empty()) {
            (true, _) => server,
            (false, true) => advice,
            (false, false) => format!("{advice} (server said: {server})"),
        };
        ModelError::Http {
            model: i.label.clone(),
            status,
            url: redact_url(&i.url),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_and_any_long_prefix_of_it_are_masked() {
        let key = "sk-abcdefghijklmnop";
        assert_eq!(mask_key("say sk-abcdefghijklmnop now", key), "say *** now");
        // A server that echoes a cut key: 8 characters or more are masked.
        assert_eq!(mask_key("got sk-abcde…", key), "got ***…");
        assert_eq!(mask_key("got sk-abcd", key), "got sk-abcd");
        assert_eq!(
            mask_key("twice sk-abcdefgh sk-abcdefghij", key),
            "twice *** ***"
        );
        assert_eq!(mask_key("é sk-abcdefghijklmnopé", key), "é ***é");
        assert_eq!(mask_key("anything", ""), "anything");
    }

    #[test]
    fn key_and_credentials_never_print() {
        let m = OpenAi::builder("http://user:pw@127.0.0.1:9/v1", "m")
            .api_key("sk-secret-123")
            .build()
            .unwrap();
        let debug = format!("{m:?}");
        assert!(!debug.contains("sk-secret-123"), "{debug}");
        assert!(!debug.contains("pw"), "{debug}");
        assert_eq!(redact_url("https://a:b@h:1/v1"), "https://h:1/v1");
        assert_eq!(redact_url("http://h/v1"), "http://h/v1");
        let e = m.http_error(401, "bad key sk-secret-123");
        assert_eq!(
            e.to_string(),
            "model 'openai:m': http 401 from http://127.0.0.1:9/v1/chat/completions: \
             check OPENAI_API_KEY (server said: bad key ***)"
        );
    }
}
