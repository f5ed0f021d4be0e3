//! The HTTP machinery every provider shares: one deadline per call, the
//! transport retry (429 with `Retry-After`, 5xx, timeouts, resets;
//! exponential backoff with full jitter), the endpoint's adaptive
//! in-flight limit (shared by every model in the process that points at
//! the same URL with the same key; see [`limit`]), the model's own hard
//! cap where `max_in_flight` sets one, the sharded pool of kept-alive
//! connections ([`agents`]) with its caching resolver ([`resolve`]), the
//! bounded drain that lets a streamed connection be reused ([`drain`]),
//! and server-sent events ([`sse`]).
//!
//! A provider is a [`Dialect`]: the path it posts to, its headers, how it
//! reads a whole answer and a streamed one ([`StreamRead`]), which
//! statuses mean congestion. The [`Client`] does the rest. The API key is
//! kept in a wrapper that never prints it, and masked in anything a
//! server echoes back before that is shortened.

mod agents;
mod attempt;
pub(crate) mod body;
mod cap;
mod client;
mod drain;
mod limit;
mod resolve;
mod retry;
mod sse;
mod watch;

use std::sync::Arc;
use std::time::Duration;

pub(crate) use client::{Client, Settings};
pub use limit::{LimitChange, LimitReason, LimitWatch, LimitWatcher};
pub use retry::RetryPolicy;

use super::{ChatRequest, ChatResponse};
use body::StreamError;

/// An API key. Its `Debug` prints `***`; there is no `Display`.
#[derive(Clone)]
pub(crate) struct ApiKey(pub(crate) String);

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("***")
    }
}

/// What waits between attempts (`std::thread::sleep`, or a test's).
pub(crate) type SleepFn = Arc<dyn Fn(Duration) + Send + Sync>;

/// What one provider's wire format brings to a [`Client`].
pub(crate) trait Dialect {
    /// A streamed answer being put together event by event.
    type Stream: StreamRead;

    /// The path the base URL is joined with (`/chat/completions`).
    const PATH: &'static str;

    /// What a stream ends with, for the message about one that ended
    /// early (`[DONE]`).
    const STREAM_END: &'static str;

    /// The headers of every request besides `Content-Type` and `Accept`:
    /// the key's (where there is one) and any the API asks for.
    fn headers(&self, key: Option<&str>) -> Vec<(&'static str, String)>;

    /// A whole (not streamed) answer.
    ///
    /// # Errors
    ///
    /// What is wrong with it, for a person.
    fn parse_response(
        &self,
        req: &ChatRequest,
        body: &serde_json::Value,
    ) -> Result<ChatResponse, String>;

    /// A new streamed answer.
    fn stream(&self) -> Self::Stream;

    /// Whether a status says the server has too much to do, and why: the
    /// endpoint's limit comes down.
    fn congestion(&self, status: u16) -> Option<LimitReason> {
        match status {
            429 => Some(LimitReason::RateLimited),
            503 => Some(LimitReason::Overloaded),
            _ => None,
        }
    }

    /// Whether a status is worth another attempt.
    fn retryable_status(&self, status: u16) -> bool {
        retry::retryable_status(status)
    }

    /// Advice for a status a person must act on, in place of the shared
    /// words (`check OPENAI_API_KEY`); `None` keeps those.
    fn advice(&self, status: u16, client: &Client) -> Option<String> {
        let _ = (status, client);
        None
    }
}

/// A streamed answer being put together, one event's data at a time.
pub(crate) trait StreamRead {
    /// Applies one event's data; returns the text delta it carried.
    ///
    /// # Errors
    ///
    /// A [`StreamError`] for an event that is not what it should be.
    fn apply(&mut self, data: &str) -> Result<Option<String>, StreamError>;

    /// Whether the stream said it is complete.
    fn done(&self) -> bool;

    /// The complete answer.
    fn finish(self, req: &ChatRequest) -> ChatResponse;
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
