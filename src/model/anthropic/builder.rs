//! [`AnthropicBuilder`]: the settings of an [`Anthropic`] model, checked
//! when it is built.

use std::sync::Arc;
use std::time::Duration;

use super::{Anthropic, DEFAULT_MAX_TOKENS, Inner, Messages, redact_url};
use crate::model::ModelSpecError;
use crate::model::http::{Dialect, RetryPolicy, Settings};

/// Settings for an [`Anthropic`] model; [`AnthropicBuilder::build`]
/// makes it.
#[derive(Clone)]
pub struct AnthropicBuilder {
    settings: Settings,
    label: Option<String>,
    tools: bool,
    cache: bool,
    max_tokens: u32,
}

impl std::fmt::Debug for AnthropicBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = &self.settings;
        f.debug_struct("AnthropicBuilder")
            .field("base_url", &redact_url(&s.base_url))
            .field("model", &s.model)
            .field("key", &s.key)
            .field("stream", &s.stream)
            .field("prompt_cache", &self.cache)
            .finish_non_exhaustive()
    }
}

impl AnthropicBuilder {
    /// The defaults, for `model` at `base_url`; the key is read from
    /// `ANTHROPIC_API_KEY`.
    pub(super) fn new(base_url: String, model: String) -> AnthropicBuilder {
        AnthropicBuilder {
            settings: Settings::new(base_url, model, "ANTHROPIC_API_KEY"),
            label: None,
            tools: true,
            cache: false,
            max_tokens: DEFAULT_MAX_TOKENS,
        }
    }

    /// The name used in logs and errors (default: `anthropic:<model>`).
    #[must_use]
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    /// The base URL (default `ANTHROPIC_BASE_URL`, else
    /// `https://api.anthropic.com`); requests go to `{base}/v1/messages`.
    #[must_use]
    pub fn base_url(mut self, base_url: impl Into<String>) -> Self {
        self.settings.base_url = base_url.into();
        self
    }

    /// The API key, sent as `x-api-key`.
    #[must_use]
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.settings.set_key(&key.into());
        self
    }

    /// Reads the API key from the environment variable `var` (named in
    /// error messages about authentication). Unset or empty: no key.
    #[must_use]
    pub fn api_key_env(mut self, var: impl Into<String>) -> Self {
        self.settings.key_from_env(&var.into());
        self
    }

    /// The deadline of one call (default 300 s), every attempt and wait
    /// included, as [`OpenAiBuilder::timeout`](crate::model::OpenAiBuilder::timeout).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.settings.timeout = timeout;
        self
    }

    /// A hard cap on the requests in flight at once through this model
    /// (1 to 4096), below the endpoint's adaptive limit.
    #[must_use]
    pub fn max_in_flight(mut self, n: usize) -> Self {
        self.settings.max_in_flight = Some(n.clamp(1, 4096));
        self
    }

    /// Streams answers over SSE (the default) or asks for whole answers.
    #[must_use]
    pub fn stream(mut self, stream: bool) -> Self {
        self.settings.stream = stream;
        self
    }

    /// Whether the model is offered tools (default true).
    #[must_use]
    pub fn tools(mut self, tools: bool) -> Self {
        self.tools = tools;
        self
    }

    /// Marks the stable start of every request (the tools and the system
    /// prompt: the soul, the roster, the rules) for Anthropic's prompt
    /// cache (`cache_control`); off by default. Cached tokens are counted
    /// in [`Usage`](crate::model::Usage).
    #[must_use]
    pub fn prompt_cache(mut self, on: bool) -> Self {
        self.cache = on;
        self
    }

    /// The `max_tokens` sent when the agent sets none (default
    /// [`DEFAULT_MAX_TOKENS`]).
    #[must_use]
    pub fn max_tokens(mut self, n: u32) -> Self {
        self.max_tokens = n.max(1);
        self
    }

    /// How failed requests are retried.
    #[must_use]
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.settings.retry = policy;
        self
    }

    /// What waits between attempts (default: `std::thread::sleep`).
    #[must_use]
    pub fn sleep_with(mut self, sleep: impl Fn(Duration) + Send + Sync + 'static) -> Self {
        self.settings.sleep = Arc::new(sleep);
        self
    }

    /// Builds the model.
    ///
    /// # Errors
    ///
    /// A [`ModelSpecError`] when the base URL is not an `http://` or
    /// `https://` URL, the model name is empty, or the timeout is out of
    /// range (1 ms to 24 h).
    pub fn build(mut self) -> Result<Anthropic, ModelSpecError> {
        self.settings.label = self
            .label
            .unwrap_or_else(|| format!("anthropic:{}", self.settings.model.trim()));
        Ok(Anthropic {
            inner: Arc::new(Inner {
                client: self.settings.build(Messages::PATH)?,
                tools: self.tools,
                cache: self.cache,
                max_tokens: self.max_tokens,
            }),
        })
    }
}
