//! The Anthropic provider: `POST {base}/v1/messages`, Anthropic's own
//! Messages API, for Claude models (`anthropic:claude-sonnet-4-5`, or a
//! bare `claude-…` name).
//!
//! The key goes in `x-api-key` with `anthropic-version`; the system
//! prompt is the top-level `system`; `max_tokens` is always sent (the
//! agent's, else [`DEFAULT_MAX_TOKENS`]); a schema is a tool the model is
//! made to call; a 529 (overloaded) is congestion as a 503 is. The wire
//! format is [`wire`] and [`stream`]; everything around a call (the
//! deadline, retries, the endpoint's adaptive limit, the pool) is the
//! shared [`http`] machinery.

mod builder;
mod spec;
mod stream;
mod wire;

use std::sync::Arc;

use super::http::{Client, Dialect, LimitReason, LimitWatch, LimitWatcher, redact_url};
use super::{ChatModel, ChatRequest, ChatResponse, EndpointInfo, ModelError};
pub use builder::AnthropicBuilder;
pub(crate) use spec::{builder_from_spec, from_endpoint};

/// The base URL used when neither the caller nor `ANTHROPIC_BASE_URL`
/// names one (requests go to `{base}/v1/messages`).
pub const ANTHROPIC_DEFAULT_BASE_URL: &str = "https://api.anthropic.com";

/// The `max_tokens` sent when neither the agent nor the model sets one
/// (the Messages API requires it).
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// The API version sent as `anthropic-version`.
const API_VERSION: &str = "2023-06-01";

/// A Claude model behind Anthropic's Messages API. Cheap to clone: clones
/// share the connection pool, the in-flight limit and the retry record.
///
/// # Examples
///
/// ```no_run
/// use boardroom::{Anthropic, Runtime, Team};
/// let model = Anthropic::builder("claude-sonnet-4-5") // ANTHROPIC_API_KEY
///     .prompt_cache(true)
///     .build()?;
/// let run = Runtime::new(Team::builtin()?, model).run("Plan a picnic")?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Anthropic {
    inner: Arc<Inner>,
}

struct Inner {
    client: Client,
    tools: bool,
    cache: bool,
    max_tokens: u32,
}

impl std::fmt::Debug for Anthropic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let c = &self.inner.client;
        f.debug_struct("Anthropic")
            .field("label", &c.label)
            .field("url", &redact_url(&c.url))
            .field("model", &c.model)
            .field("key", &c.key)
            .field("stream", &c.stream)
            .field("tools", &self.inner.tools)
            .field("prompt_cache", &self.inner.cache)
            .field("max_tokens", &self.inner.max_tokens)
            .field("limit", &c.endpoint.limit())
            .finish_non_exhaustive()
    }
}

impl Anthropic {
    /// Settings for `model` (`claude-sonnet-4-5`) at `ANTHROPIC_BASE_URL`
    /// (default the Anthropic API), with the key from
    /// `ANTHROPIC_API_KEY`, as Anthropic's SDKs read them.
    pub fn builder(model: impl Into<String>) -> AnthropicBuilder {
        AnthropicBuilder::new(env_base_url(), model.into())
    }

    /// The endpoint's adaptive in-flight limit now (shared by every model
    /// in this process at the same base URL with the same key).
    #[must_use]
    pub fn in_flight_limit(&self) -> usize {
        self.inner.client.in_flight_limit()
    }
}

/// `ANTHROPIC_BASE_URL`, else the Anthropic API.
pub(crate) fn env_base_url() -> String {
    std::env::var("ANTHROPIC_BASE_URL")
        .ok()
        .filter(|u| !u.trim().is_empty())
        .unwrap_or_else(|| ANTHROPIC_DEFAULT_BASE_URL.to_string())
}

/// The Messages API, for the shared [`Client`].
struct Messages;

impl Dialect for Messages {
    type Stream = stream::StreamState;

    const PATH: &'static str = "/v1/messages";

    const STREAM_END: &'static str = "message_stop";

    fn headers(&self, key: Option<&str>) -> Vec<(&'static str, String)> {
        let mut h = vec![("anthropic-version", API_VERSION.to_string())];
        if let Some(k) = key {
            h.push(("x-api-key", k.to_string()));
        }
        h
    }

    fn parse_response(
        &self,
        req: &ChatRequest,
        body: &serde_json::Value,
    ) -> Result<ChatResponse, String> {
        wire::parse_response(req, body)
    }

    fn stream(&self) -> stream::StreamState {
        stream::StreamState::default()
    }

    fn congestion(&self, status: u16) -> Option<LimitReason> {
        match status {
            429 => Some(LimitReason::RateLimited),
            503 | 529 => Some(LimitReason::Overloaded),
            _ => None,
        }
    }

    /// As the SDKs: 408, 409, 429 and every 5xx (529 is "overloaded").
    fn retryable_status(&self, status: u16) -> bool {
        matches!(status, 408 | 409 | 429) || status >= 500
    }

    fn advice(&self, status: u16, client: &Client) -> Option<String> {
        let env = if client.key_env.is_empty() {
            "the api key"
        } else {
            client.key_env.as_str()
        };
        let model = &client.model;
        Some(match status {
            400 => format!(
                "the request for model '{model}' was refused: check its max_tokens \
                 (max_tokens=N in the model spec) and temperature"
            ),
            401 if client.key.is_none() => format!("no key: set {env}"),
            401 => format!("check {env} (the key was not accepted)"),
            403 => format!("the key in {env} lacks permission for model '{model}'"),
            404 => format!(
                "the model name '{model}' is unknown to the API: name a model it serves \
                 (e.g. claude-sonnet-4-5), or check the base url"
            ),
            _ => return None,
        })
    }
}

impl ChatModel for Anthropic {
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

    fn endpoint(&self) -> Option<EndpointInfo> {
        Some(self.inner.client.info("anthropic"))
    }

    fn chat(
        &self,
        request: &ChatRequest,
        on_delta: &mut dyn FnMut(&str),
    ) -> Result<ChatResponse, ModelError> {
        let i = &self.inner;
        let options = wire::Options {
            model: &i.client.model,
            stream: i.client.stream,
            max_tokens: i.max_tokens,
            cache: i.cache,
        };
        let body = wire::request_json(options, request);
        i.client.call(&Messages, &body, request, on_delta)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_never_prints_and_errors_say_the_fix() {
        let m = Anthropic::builder("claude-x")
            .base_url("http://127.0.0.1:9")
            .api_key("sk-ant-secret-123456")
            .build()
            .unwrap();
        let debug = format!("{m:?}");
        assert!(!debug.contains("secret"), "{debug}");
        assert_eq!(m.inner.client.url, "http://127.0.0.1:9/v1/messages");
        let e = m
            .inner
            .client
            .http_error(&Messages, 401, "bad key sk-ant-secret-123456");
        assert_eq!(
            e.to_string(),
            "model 'anthropic:claude-x': http 401 from http://127.0.0.1:9/v1/messages: \
             check ANTHROPIC_API_KEY (the key was not accepted) (server said: bad key ***)"
        );
        let e = m.inner.client.http_error(&Messages, 404, "not_found_error");
        assert!(
            e.to_string()
                .contains("the model name 'claude-x' is unknown to the API: name a model"),
            "{e}"
        );
        let headers = Messages.headers(Some("k"));
        assert!(headers.contains(&("x-api-key", "k".to_string())));
        assert!(headers.contains(&("anthropic-version", API_VERSION.to_string())));
        assert!(Messages.retryable_status(529) && !Messages.retryable_status(400));
        assert_eq!(Messages.congestion(529), Some(LimitReason::Overloaded));
    }
}
