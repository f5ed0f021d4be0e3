//! [`OpenAiBuilder`]: the settings of an [`OpenAi`] model, checked when it
//! is built.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use super::cap::Limit;
use super::limit::{self, Endpoint};
use super::{ApiKey, Inner, OpenAi, RetryPolicy, SleepFn, redact_url};

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
    tools: bool,
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
            .field("tools", &self.tools)
            .finish_non_exhaustive()
    }
}

impl OpenAiBuilder {
    /// The defaults, for the endpoint at `base_url` and its `model`; the
    /// key is read from `OPENAI_API_KEY`.
    pub(super) fn new(base_url: String, model: String) -> OpenAiBuilder {
        OpenAiBuilder {
            label: None,
            base_url,
            model,
            key: None,
            key_env: String::new(),
            timeout: Duration::from_secs(300),
            max_in_flight: None,
            stream: true,
            tools: true,
            retry: RetryPolicy::default(),
            sleep: Arc::new(std::thread::sleep),
        }
        .api_key_env("OPENAI_API_KEY")
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

    /// Whether the model can call tools (default true). With `false` its
    /// [`supports_tools`](crate::ChatModel::supports_tools) says so: no
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
        let timeout = crate::util::duration::CALL_TIMEOUT;
        if self.timeout < timeout.min || self.timeout > timeout.max {
            return Err(err(format!(
                "timeout: {} is out of range (allowed {})",
                crate::util::duration::human(self.timeout),
                timeout.describe()
            )));
        }
        // Masked in every file, span, log line and tool result (issue 28).
        if let Some(k) = &self.key {
            crate::util::secrets::remember(&k.0);
        }
        crate::util::secrets::remember_url(base);
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
                tools: self.tools,
                timeout: self.timeout,
                retry: self.retry,
                sleep: self.sleep,
                waits: Mutex::new(Vec::new()),
            }),
        })
    }
}
