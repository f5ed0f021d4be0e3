//! [`OpenAiBuilder`]: the settings of an [`OpenAi`] model, checked when it
//! is built.

use std::sync::Arc;
use std::time::Duration;

use super::{Chat, Inner, OpenAi, redact_url};
use crate::model::http::{Dialect, RetryPolicy, Settings};

/// Settings for an [`OpenAi`] model; [`OpenAiBuilder::build`] makes it.
#[derive(Clone)]
pub struct OpenAiBuilder {
    settings: Settings,
    label: Option<String>,
    tools: bool,
}

impl std::fmt::Debug for OpenAiBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = &self.settings;
        f.debug_struct("OpenAiBuilder")
            .field("base_url", &redact_url(&s.base_url))
            .field("model", &s.model)
            .field("key", &s.key)
            .field("stream", &s.stream)
            .field("tools", &self.tools)
            .finish_non_exhaustive()
    }
}

impl OpenAiBuilder {
    /// The defaults, for the endpoint at `base_url` and its `model`; the
    /// key is read from `OPENAI_API_KEY`.
    pub(super) fn new(base_url: String, model: String) -> OpenAiBuilder {
        OpenAiBuilder {
            settings: Settings::new(base_url, model, "OPENAI_API_KEY"),
            label: None,
            tools: true,
        }
    }

    /// The name used in logs and errors (default: `openai:<model>`).
    #[must_use]
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    /// The API key, sent as `Authorization: Bearer ...`.
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

    /// The deadline of one call (default 300 s): every attempt, the answer
    /// and every wait between attempts count against it, and an attempt's
    /// socket timeouts are what is left of it. The clock starts when the
    /// call first holds an in-flight slot (waiting behind other calls to
    /// the same endpoint is bounded by their deadlines).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.settings.timeout = timeout;
        self
    }

    /// A hard cap on the requests in flight at once through this model (at
    /// least 1, at most 4096); more callers wait for a slot. Without it the
    /// endpoint's adaptive limit alone decides (it starts at 1024 and finds
    /// the server's capacity); with it the adaptive limit still works below
    /// the cap.
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

    /// Whether the model can call tools (default true). With `false` its
    /// [`supports_tools`](crate::model::ChatModel::supports_tools) says so: no
    /// call sends it tools, a handoff team's agent on it hands off by its
    /// `HANDOFF:` line, and an agent's granted tools are left out (one
    /// warning a run). For servers that reject or ignore `tools` (small
    /// llama.cpp models, older vLLM set-ups).
    #[must_use]
    pub fn tools(mut self, tools: bool) -> Self {
        self.tools = tools;
        self
    }

    /// How failed requests are retried.
    #[must_use]
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.settings.retry = policy;
        self
    }

    /// What waits between attempts (default: `std::thread::sleep`). Tests
    /// pass a function that only records the wait.
    #[must_use]
    pub fn sleep_with(mut self, sleep: impl Fn(Duration) + Send + Sync + 'static) -> Self {
        self.settings.sleep = Arc::new(sleep);
        self
    }

    /// Builds the model.
    ///
    /// # Errors
    ///
    /// A [`ModelSpecError`](crate::model::ModelSpecError) when the base URL is not
    /// an `http://` or `https://` URL, the model name is empty, or the
    /// timeout is out of range (1 ms to 24 h).
    pub fn build(mut self) -> Result<OpenAi, crate::model::ModelSpecError> {
        self.settings.label = self
            .label
            .unwrap_or_else(|| format!("openai:{}", self.settings.model.trim()));
        Ok(OpenAi {
            inner: Arc::new(Inner {
                client: self.settings.build(Chat::PATH)?,
                tools: self.tools,
            }),
        })
    }
}
