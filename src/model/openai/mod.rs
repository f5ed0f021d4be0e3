//! The OpenAI-compatible provider: `POST {base}/chat/completions` over the
//! blocking `ureq` client, for OpenAI itself, Ollama, llama.cpp's server,
//! vLLM, LM Studio and anything else that speaks the same JSON.
//!
//! Around every call: the endpoint's in-flight limit (shared by every agent
//! that uses this model), and the transport retry (429 with `Retry-After`,
//! 5xx, timeouts, resets; exponential backoff with full jitter). The API
//! key is kept in a wrapper that never prints it.

mod limit;
mod retry;
mod spec;
mod sse;
mod wire;

use std::io::Read;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use parking_lot::Mutex;

use super::{ChatModel, ChatRequest, ChatResponse, ModelError};
use limit::Limit;
pub use retry::RetryPolicy;
pub(crate) use spec::{from_endpoint, from_spec};

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
    agent: ureq::Agent,
    limit: Limit,
    retry: RetryPolicy,
    sleep: SleepFn,
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
            .field("max_in_flight", &i.limit.max())
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
    max_in_flight: usize,
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
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    /// The API key, sent as `Authorization: Bearer ...`.
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        let key = key.into();
        self.key = (!key.trim().is_empty()).then(|| ApiKey(key.trim().to_string()));
        self
    }

    /// Reads the API key from the environment variable `var` (named in
    /// error messages about authentication). Unset or empty: no key.
    pub fn api_key_env(mut self, var: impl Into<String>) -> Self {
        self.key_env = var.into();
        self.key = std::env::var(&self.key_env)
            .ok()
            .filter(|k| !k.trim().is_empty())
            .map(|k| ApiKey(k.trim().to_string()));
        self
    }

    /// The timeout of one attempt, answer included (default 120 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Requests in flight at once through this model (default 8); more
    /// callers wait for a slot.
    pub fn max_in_flight(mut self, n: usize) -> Self {
        self.max_in_flight = n.max(1);
        self
    }

    /// Streams answers over SSE (the default) or asks for whole answers.
    pub fn stream(mut self, stream: bool) -> Self {
        self.stream = stream;
        self
    }

    /// How failed requests are retried.
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.retry = policy;
        self
    }

    /// What waits between attempts (default: `std::thread::sleep`). Tests
    /// pass a function that only records the wait.
    pub fn sleep_with(mut self, sleep: impl Fn(Duration) + Send + Sync + 'static) -> Self {
        self.sleep = Arc::new(sleep);
        self
    }

    /// Builds the model.
    ///
    /// # Errors
    ///
    /// A [`ModelSpecError`](crate::ModelSpecError) when the base URL is not
    /// `http://` or `https://`, or the model name is empty.
    pub fn build(self) -> Result<OpenAi, crate::ModelSpecError> {
        let err = |detail: String| crate::ModelSpecError {
            spec: redact_url(&self.base_url),
            detail,
        };
        let base = self.base_url.trim().trim_end_matches('/');
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(err(
                "the base url must start with http:// or https://".into()
            ));
        }
        if self.model.trim().is_empty() {
            return Err(err("no model name (add #MODEL to the url)".into()));
        }
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(self.timeout))
            .timeout_connect(Some(self.timeout.min(Duration::from_secs(10))))
            .max_idle_connections_per_host(self.max_in_flight.max(3))
            .build();
        Ok(OpenAi {
            inner: Arc::new(Inner {
                label: self
                    .label
                    .unwrap_or_else(|| format!("openai:{}", self.model.trim())),
                url: format!("{base}/chat/completions"),
                model: self.model.trim().to_string(),
                key: self.key,
                key_env: self.key_env,
                stream: self.stream,
                agent: config.into(),
                limit: Limit::new(self.max_in_flight),
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
            timeout: Duration::from_secs(120),
            max_in_flight: 8,
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
    /// A [`ModelSpecError`](crate::ModelSpecError) for a bad base URL.
    pub fn from_env() -> Result<OpenAi, crate::ModelSpecError> {
        let model = std::env::var("OPENAI_MODEL").unwrap_or_else(|_| "gpt-4o-mini".into());
        OpenAi::builder(env_base_url(), model).build()
    }

    /// Every wait the transport retry chose so far, in order (all calls).
    pub fn retry_waits(&self) -> Vec<Duration> {
        self.inner.waits.lock().clone()
    }

    /// The in-flight limit.
    pub fn max_in_flight(&self) -> usize {
        self.inner.limit.max()
    }
}

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

/// Why one attempt failed.
enum Failure {
    /// Worth another attempt (after `retry_after`, if the server said).
    Retry {
        error: ModelError,
        retry_after: Option<Duration>,
    },
    /// Not worth another attempt.
    Fatal(ModelError),
}

impl ChatModel for OpenAi {
    fn name(&self) -> String {
        self.inner.label.clone()
    }

    fn chat(
        &self,
        request: &ChatRequest,
        on_delta: &mut dyn FnMut(&str),
    ) -> Result<ChatResponse, ModelError> {
        let i = &self.inner;
        let body = wire::request_body(&i.model, request, i.stream).to_string();
        let mut spent = Duration::ZERO;
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            let mut delivered = false;
            let started = Instant::now();
            let outcome = {
                let _slot = i.limit.acquire();
                log::debug!(
                    "{}: POST {} for {} (attempt {attempt})",
                    i.label,
                    redact_url(&i.url),
                    request.agent
                );
                self.attempt(&body, request, &mut |d: &str| {
                    delivered = true;
                    on_delta(d);
                })
            };
            spent += started.elapsed();
            let (error, retry_after) = match outcome {
                Ok(mut response) => {
                    response.retries = attempt - 1;
                    return Ok(response);
                }
                Err(Failure::Fatal(e)) => return Err(with_attempts(e, attempt)),
                Err(Failure::Retry { error, retry_after }) => (error, retry_after),
            };
            // Text already shown cannot be taken back: no retry mid-answer.
            let wait = if delivered {
                None
            } else {
                i.retry.next_wait(attempt, retry_after, spent)
            };
            let Some(wait) = wait else {
                return Err(with_attempts(error, attempt));
            };
            log::info!(
                "{}: {error}; retrying in {} ms (attempt {} of {})",
                i.label,
                wait.as_millis(),
                attempt + 1,
                i.retry.max_attempts
            );
            i.waits.lock().push(wait);
            (i.sleep)(wait);
            spent += wait;
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
        on_delta: &mut dyn FnMut(&str),
    ) -> Result<ChatResponse, Failure> {
        let i = &self.inner;
        let mut req = i
            .agent
            .post(&i.url)
            .header("Content-Type", "application/json");
        if i.stream {
            req = req.header("Accept", "text/event-stream");
        }
        if let Some(key) = &i.key {
            req = req.header("Authorization", format!("Bearer {}", key.0));
        }
        let mut response = req
            .send(body)
            .map_err(|e| self.transport(&e.to_string(), retryable_error(&e)))?;
        let status = response.status().as_u16();
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
            let error = self.http_error(status, &wire::error_detail(&text));
            return Err(if retry::retryable_status(status) {
                Failure::Retry { error, retry_after }
            } else {
                Failure::Fatal(error)
            });
        }
        let is_sse = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.contains("text/event-stream"));
        if is_sse {
            return self.read_stream(response.into_body().into_reader(), request, on_delta);
        }
        let text = response
            .body_mut()
            .with_config()
            .limit(32 * 1024 * 1024)
            .read_to_string()
            .map_err(|e| self.transport(&format!("reading the answer: {e}"), true))?;
        let json: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| Failure::Fatal(self.bad(format!("not json: {e}"))))?;
        let answer =
            wire::parse_response(request, &json).map_err(|e| Failure::Fatal(self.bad(e)))?;
        if !answer.text.is_empty() {
            on_delta(&answer.text);
        }
        Ok(answer)
    }

    fn read_stream(
        &self,
        mut reader: impl Read,
        request: &ChatRequest,
        on_delta: &mut dyn FnMut(&str),
    ) -> Result<ChatResponse, Failure> {
        let mut decoder = sse::SseDecoder::default();
        let mut state = wire::StreamState::default();
        let mut buf = [0u8; 8192];
        loop {
            let n = reader
                .read(&mut buf)
                .map_err(|e| self.transport(&format!("reading the stream: {e}"), true))?;
            let events = if n == 0 {
                decoder.finish()
            } else {
                decoder.push(&buf[..n])
            };
            for data in events {
                let delta = state
                    .apply(&data)
                    .map_err(|e| Failure::Fatal(self.bad(self.redact(&e))))?;
                if let Some(delta) = delta {
                    on_delta(&delta);
                }
            }
            if n == 0 || state.done {
                break;
            }
        }
        if !state.done {
            return Err(self.transport("the stream ended before [DONE]", true));
        }
        Ok(state.finish(request))
    }

    fn redact(&self, text: &str) -> String {
        match &self.inner.key {
            Some(key) if !key.0.is_empty() => text.replace(&key.0, "***"),
            _ => text.to_string(),
        }
    }

    fn transport(&self, detail: &str, retryable: bool) -> Failure {
        let error = ModelError::Transport {
            model: self.inner.label.clone(),
            detail: self.redact(detail),
            attempts: 1,
        };
        if retryable {
            Failure::Retry {
                error,
                retry_after: None,
            }
        } else {
            Failure::Fatal(error)
        }
    }

    fn bad(&self, detail: String) -> ModelError {
        ModelError::BadResponse {
            model: self.inner.label.clone(),
            detail,
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
