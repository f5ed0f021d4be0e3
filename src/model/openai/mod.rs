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
mod attempt;
mod builder;
mod cap;
mod drain;
mod limit;
mod resolve;
mod retry;
mod spec;
mod sse;
mod watch;
mod wire;

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::{ChatModel, ChatRequest, ChatResponse, ModelError};
use attempt::{Failure, with_attempts};
pub use builder::OpenAiBuilder;
use cap::Limit;
use limit::{Endpoint, EndpointPermit};
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
    /// Whether the model can call tools (`tools=false` turns it off).
    tools: bool,
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
            .field("tools", &i.tools)
            .field("max_in_flight", &i.cap.as_ref().map(Limit::max))
            .field("limit", &i.endpoint.limit())
            .field("retry", &i.retry)
            .finish_non_exhaustive()
    }
}

impl OpenAi {
    /// Settings for the endpoint at `base_url` (e.g.
    /// `http://127.0.0.1:8080/v1`) and the model the server knows as
    /// `model`. The key is read from `OPENAI_API_KEY` unless set otherwise.
    pub fn builder(base_url: impl Into<String>, model: impl Into<String>) -> OpenAiBuilder {
        OpenAiBuilder::new(base_url.into(), model.into())
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
    _cap: Option<cap::Permit<'a>>,
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

/// `text` with the key, and any piece of it of 6 characters or more at
/// any position (a server may echo a cut key, or one without its `sk-`
/// prefix), replaced by `***`; a key shorter than that only as a whole
/// word. The shared rule of [`crate::util::secrets`].
pub(crate) fn mask_key(text: &str, key: &str) -> String {
    crate::util::secrets::Masker::new([key])
        .mask(text)
        .into_owned()
}

impl ChatModel for OpenAi {
    fn name(&self) -> String {
        self.inner.label.clone()
    }

    fn watch_limit(&self, f: LimitWatcher) -> Option<LimitWatch> {
        Some(self.inner.endpoint.watch(f))
    }

    fn supports_tools(&self) -> bool {
        self.inner.tools
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
        // The caller's deadline (a run's time limit) bounds every wait.
        let mut first_slot = self.slot(request.deadline);
        if first_slot.is_none() {
            return Err(self.past_caller_deadline(0));
        }
        let own = Instant::now() + i.timeout;
        let deadline = request.deadline.map_or(own, |d| d.min(own));
        let caller_first = request.deadline.is_some_and(|d| d < own);
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
                    return Err(self.past(caller_first, attempt - 1));
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
                    // A key the endpoint put in the answer goes no further
                    // (issue 28, finding 19): not into the board, the
                    // answer, the files or the spans.
                    if let std::borrow::Cow::Owned(text) =
                        crate::util::secrets::mask(&response.text)
                    {
                        response.text = text;
                    }
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
                return Err(self.past(caller_first, attempt));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_and_any_long_piece_of_it_are_masked() {
        let key = "sk-abcdefghijklmnop";
        assert_eq!(mask_key("say sk-abcdefghijklmnop now", key), "say *** now");
        // A server that echoes a cut key: 6 characters or more are masked,
        // wherever they start (issue 28, finding 17).
        assert_eq!(mask_key("got sk-abcde…", key), "got ***…");
        assert_eq!(mask_key("got sk-abc", key), "got ***");
        assert_eq!(mask_key("got sk-ab", key), "got sk-ab");
        assert_eq!(mask_key("got ghijklmnop.", key), "got ***.");
        assert_eq!(mask_key("engine failed", "x"), "engine failed");
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
