//! [`Client`]: one model's way to its endpoint (URL, key, deadline, caps,
//! retry), checked once from its [`Settings`], and the call every
//! provider makes through it: a slot, attempts, waits, one deadline.

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::attempt::{Failure, with_attempts};
use super::cap::{self, Limit};
use super::limit::{self, Endpoint, EndpointPermit};
use super::{ApiKey, Dialect, RetryPolicy, SleepFn, redact_url};
use crate::model::{ChatRequest, ChatResponse, ModelError, ModelSpecError};

/// How many transport-retry waits a [`Client`] keeps for its probe.
const KEPT_WAITS: usize = 64;

/// The settings of a model over HTTP, as a provider's builder collects
/// them; [`Settings::build`] checks them.
#[derive(Clone)]
pub(crate) struct Settings {
    pub(crate) label: String,
    pub(crate) base_url: String,
    pub(crate) model: String,
    pub(crate) key: Option<ApiKey>,
    pub(crate) key_env: String,
    pub(crate) timeout: Duration,
    pub(crate) max_in_flight: Option<usize>,
    pub(crate) stream: bool,
    pub(crate) retry: RetryPolicy,
    pub(crate) sleep: SleepFn,
}

impl Settings {
    /// The defaults for `model` at `base_url`, the key read from
    /// `key_env`.
    pub(crate) fn new(base_url: String, model: String, key_env: &str) -> Settings {
        let mut s = Settings {
            label: String::new(),
            base_url,
            model,
            key: None,
            key_env: String::new(),
            timeout: Duration::from_secs(300),
            max_in_flight: None,
            stream: true,
            retry: RetryPolicy::default(),
            sleep: Arc::new(std::thread::sleep),
        };
        s.key_from_env(key_env);
        s
    }

    /// The key, as given (blank: none).
    pub(crate) fn set_key(&mut self, key: &str) {
        self.key = (!key.trim().is_empty()).then(|| ApiKey(key.trim().to_string()));
    }

    /// The key read from the environment variable `var` (named in error
    /// messages about authentication). Unset or empty: no key.
    pub(crate) fn key_from_env(&mut self, var: &str) {
        self.key_env = var.to_string();
        self.key = std::env::var(var)
            .ok()
            .filter(|k| !k.trim().is_empty())
            .map(|k| ApiKey(k.trim().to_string()));
    }

    /// The client, once the settings are checked; requests go to
    /// `{base_url}{path}`.
    ///
    /// # Errors
    ///
    /// A [`ModelSpecError`] when the base URL is not an `http://` or
    /// `https://` URL, the model name is empty, or the timeout is out of
    /// range (1 ms to 24 h).
    pub(crate) fn build(self, path: &str) -> Result<Client, ModelSpecError> {
        let err = |detail: String| ModelSpecError {
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
        if let Err(e) = format!("{base}{path}").parse::<ureq::http::Uri>() {
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
        let url = format!("{base}{path}");
        Ok(Client {
            label: self.label,
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
        })
    }
}

/// One model's way to its endpoint, shared by the clones of the model.
pub(crate) struct Client {
    pub(crate) label: String,
    pub(crate) url: String,
    pub(crate) model: String,
    pub(crate) key: Option<ApiKey>,
    pub(crate) key_env: String,
    pub(crate) stream: bool,
    pub(crate) timeout: Duration,
    /// The hard cap an explicit `max_in_flight` sets on this model.
    cap: Option<Limit>,
    /// The endpoint's adaptive limit, shared.
    pub(crate) endpoint: Arc<Endpoint>,
    pub(crate) retry: RetryPolicy,
    pub(crate) sleep: SleepFn,
    /// The last transport-retry waits, bounded (a test probe).
    waits: Mutex<Vec<Duration>>,
}

/// Held while a request is in flight: the model's own cap (if any) and the
/// endpoint's slot.
pub(crate) struct Slot<'a> {
    pub(crate) endpoint: EndpointPermit<'a>,
    _cap: Option<cap::Permit<'a>>,
}

impl Client {
    /// The last waits (at most [`KEPT_WAITS`]) the transport retry chose,
    /// oldest first (all calls).
    pub(crate) fn recent_retry_waits(&self) -> Vec<Duration> {
        self.waits.lock().clone()
    }

    /// The hard cap on requests in flight: `max_in_flight` where set,
    /// else the ceiling of the adaptive limit (1024).
    pub(crate) fn max_in_flight(&self) -> usize {
        self.cap.as_ref().map_or(limit::DEFAULT_CEILING, Limit::max)
    }

    /// Where the model is served, for `check` (never the key).
    pub(crate) fn info(&self, provider: &'static str) -> crate::model::EndpointInfo {
        crate::model::EndpointInfo {
            provider,
            model: self.model.clone(),
            url: redact_url(&self.url),
            key_env: self.key_env.clone(),
            key_set: self.key.is_some(),
        }
    }

    /// The endpoint's adaptive in-flight limit now.
    pub(crate) fn in_flight_limit(&self) -> usize {
        self.endpoint.limit().min(self.max_in_flight())
    }

    /// Waits for a slot: out any `Retry-After` pause of the endpoint, then
    /// the model's cap, then the endpoint's limit. `None` at `deadline`.
    fn slot(&self, deadline: Option<Instant>) -> Option<Slot<'_>> {
        if let Some(pause) = self.endpoint.pause_left() {
            let pause = match deadline {
                Some(d) => pause.min(d.saturating_duration_since(Instant::now())),
                None => pause,
            };
            (self.sleep)(pause);
        }
        let cap = match &self.cap {
            Some(c) => Some(c.acquire_until(deadline)?),
            None => None,
        };
        let endpoint = self.endpoint.acquire_until(deadline)?;
        Some(Slot {
            endpoint,
            _cap: cap,
        })
    }

    /// One call: `body` posted until an answer, the attempts, the retry's
    /// waits and the endpoint's slots all within one deadline.
    ///
    /// # Errors
    ///
    /// A [`ModelError`] when no attempt gave an answer.
    pub(crate) fn call<D: Dialect>(
        &self,
        dialect: &D,
        body: &str,
        request: &ChatRequest,
        on_delta: &mut dyn FnMut(&str),
    ) -> Result<ChatResponse, ModelError> {
        // The deadline starts once the call holds its first slot: waiting
        // behind other calls is bounded by their own deadlines.
        // The caller's deadline (a run's time limit) bounds every wait.
        let mut first_slot = self.slot(request.deadline);
        if first_slot.is_none() {
            return Err(self.past_caller_deadline(0));
        }
        let own = Instant::now() + self.timeout;
        let deadline = request.deadline.map_or(own, |d| d.min(own));
        let caller_first = request.deadline.is_some_and(|d| d < own);
        let mut attempt = 0u32;
        // The failures the policy's attempts count: all but refusals for
        // load that say when to come back (`Retry-After`, or a slot of
        // the crowd that was refused with them); those are retried until
        // the deadline.
        let mut failures = 0u32;
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
                    self.label,
                    redact_url(&self.url),
                    request.agent
                );
                slot.endpoint.sending();
                self.attempt(
                    dialect,
                    body,
                    request,
                    deadline,
                    &slot.endpoint,
                    &mut |d: &str| {
                        delivered = true;
                        on_delta(d);
                    },
                )
            };
            let (error, retry_after, queue, refused) = match outcome {
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
                    refused,
                }) => (error, retry_after, queue, refused),
            };
            if Instant::now() >= deadline {
                return Err(self.past(caller_first, attempt));
            }
            // Issue 28: a member refused for load five times in a crowd
            // (timing decides how often) was lost, and a wave of 429s with
            // `Retry-After` lost members on the count too; the server is
            // up and takes it later, so only the deadline ends these.
            let timed = retry_after.is_some_and(|d| !d.is_zero());
            let counted = !(refused && (queue || timed));
            if counted {
                failures += 1;
            }
            // Refused for too many at once, with no `Retry-After`: the
            // endpoint's limit came down to the requests still in flight,
            // and the next slot is the wait (a sleep would leave the
            // server idle, or send the retries back into the same crowd).
            if queue && retry_after.is_none() && !delivered {
                if counted && failures >= self.retry.max_attempts.max(1) {
                    return Err(with_attempts(error, attempt));
                }
                log::debug!(
                    "{}: {error}; retrying when a slot frees (attempt {})",
                    self.label,
                    attempt + 1,
                );
                continue;
            }
            // Text already shown cannot be taken back: no retry mid-answer.
            let wait = if delivered {
                None
            } else if !counted {
                retry_after
            } else {
                self.retry.next_wait(failures, retry_after)
            };
            let Some(wait) = wait else {
                return Err(with_attempts(error, attempt));
            };
            // Compared as durations: `Instant + wait` overflows (panics)
            // for a `Retry-After` no clock can reach.
            if wait >= deadline.saturating_duration_since(Instant::now()) {
                let error = match retry_after {
                    Some(asked) => self.over_deadline(error, asked),
                    None => self.out_of_time(error),
                };
                return Err(with_attempts(error, attempt));
            }
            log::info!(
                "{}: {error}; retrying in {} ms (attempt {}{})",
                self.label,
                wait.as_millis(),
                attempt + 1,
                if !counted {
                    " (refused for load: retried until the call's deadline)".to_string()
                } else {
                    format!(" of {}", self.retry.max_attempts)
                }
            );
            {
                let mut waits = self.waits.lock();
                if waits.len() == KEPT_WAITS {
                    waits.remove(0);
                }
                waits.push(wait);
            }
            // The server asked every request to wait, not only this one.
            if retry_after.is_some() {
                self.endpoint.pause_until(Instant::now() + wait);
            }
            (self.sleep)(wait);
        }
    }
}
