//! The OpenAI-compatible provider: `POST {base}/chat/completions` over the
//! blocking `ureq` client, for OpenAI itself, Ollama, llama.cpp's server,
//! vLLM, LM Studio and anything else that speaks the same JSON.
//!
//! This folder holds the wire format ([`wire`]), the builder and the spec
//! forms; around every call the shared [`http`] machinery keeps the
//! endpoint's adaptive limit, the model's cap, the transport retry and
//! the call's one deadline.

mod builder;
mod spec;
mod wire;

use std::sync::Arc;

use super::http::{Client, Dialect, LimitWatch, LimitWatcher, redact_url};
use super::{ChatModel, ChatRequest, ChatResponse, ModelError};
pub use builder::OpenAiBuilder;
pub(crate) use spec::{builder_from_spec, from_endpoint};

/// The base URL used when neither the caller nor `OPENAI_BASE_URL` names one.
pub const OPENAI_DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

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
    client: Client,
    /// Whether the model can call tools (`tools=false` turns it off).
    tools: bool,
}

/// The OpenAI wire format, for the shared [`Client`].
struct Chat;

impl Dialect for Chat {
    type Stream = wire::StreamState;

    const PATH: &'static str = "/chat/completions";

    const STREAM_END: &'static str = "[DONE]";

    fn headers(&self, key: Option<&str>) -> Vec<(&'static str, String)> {
        key.map(|k| ("Authorization", format!("Bearer {k}")))
            .into_iter()
            .collect()
    }

    fn parse_response(
        &self,
        req: &ChatRequest,
        body: &serde_json::Value,
    ) -> Result<ChatResponse, String> {
        wire::parse_response(req, body)
    }

    fn stream(&self) -> wire::StreamState {
        wire::StreamState::default()
    }
}

impl std::fmt::Debug for OpenAi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let c = &self.inner.client;
        f.debug_struct("OpenAi")
            .field("label", &c.label)
            .field("url", &redact_url(&c.url))
            .field("model", &c.model)
            .field("key", &c.key)
            .field("stream", &c.stream)
            .field("tools", &self.inner.tools)
            .field("max_in_flight", &c.max_in_flight())
            .field("limit", &c.endpoint.limit())
            .field("retry", &c.retry)
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
    /// A [`ModelSpecError`](crate::model::ModelSpecError) for a bad base URL.
    pub fn from_env() -> Result<OpenAi, crate::model::ModelSpecError> {
        OpenAi::builder(env_base_url(), env_model()).build()
    }

    /// The last waits (at most 64) the transport retry chose, oldest
    /// first (all calls); read through `testing::OpenAiProbe`.
    pub(crate) fn recent_retry_waits(&self) -> Vec<std::time::Duration> {
        self.inner.client.recent_retry_waits()
    }

    /// The hard cap on requests in flight: `max_in_flight` where set,
    /// else the ceiling of the adaptive limit (1024).
    #[must_use]
    pub fn max_in_flight(&self) -> usize {
        self.inner.client.max_in_flight()
    }

    /// The endpoint's adaptive in-flight limit now (shared by every model
    /// in this process at the same base URL with the same key).
    #[must_use]
    pub fn in_flight_limit(&self) -> usize {
        self.inner.client.in_flight_limit()
    }

    /// The most requests in flight at once to the endpoint so far (all
    /// models sharing it).
    #[must_use]
    pub fn peak_in_flight(&self) -> usize {
        self.inner.client.endpoint.peak_in_flight()
    }

    /// How many times the endpoint's limit changed so far.
    #[must_use]
    pub fn limit_changes(&self) -> u64 {
        self.inner.client.endpoint.changes()
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

impl ChatModel for OpenAi {
    fn name(&self) -> String {
        self.inner.client.label.clone()
    }

    fn watch_limit(&self, f: LimitWatcher) -> Option<LimitWatch> {
        Some(self.inner.client.endpoint.watch(f))
    }

    fn supports_tools(&self) -> bool {
        self.inner.tools
    }

    fn release_idle(&self, keep: &str) {
        self.inner.client.endpoint.release_idle(keep);
    }

    fn endpoint(&self) -> Option<super::EndpointInfo> {
        Some(self.inner.client.info("openai"))
    }

    fn chat(
        &self,
        request: &ChatRequest,
        on_delta: &mut dyn FnMut(&str),
    ) -> Result<ChatResponse, ModelError> {
        let c = &self.inner.client;
        let body = wire::request_json(&c.model, request, c.stream);
        c.call(&Chat, &body, request, on_delta)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::http::mask_key;

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
        let e = m
            .inner
            .client
            .http_error(&Chat, 401, "bad key sk-secret-123");
        assert_eq!(
            e.to_string(),
            "model 'openai:m': http 401 from http://127.0.0.1:9/v1/chat/completions: \
             check OPENAI_API_KEY (server said: bad key ***)"
        );
    }
}
