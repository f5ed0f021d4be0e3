//! What an endpoint's limit changes are told as: [`LimitChange`], and the
//! [`LimitWatch`] a watcher holds.

use std::sync::Arc;

use super::limit::Endpoint;

/// Why an endpoint's limit changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LimitReason {
    /// The server answered 429 (too many requests).
    RateLimited,
    /// The server answered 503 (overloaded).
    Overloaded,
    /// Answers came well slower than their recent floor.
    Latency,
    /// A window of answers came back without congestion.
    Growth,
}

impl LimitReason {
    /// The snake_case name used in events.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            LimitReason::RateLimited => "rate_limited",
            LimitReason::Overloaded => "overloaded",
            LimitReason::Latency => "latency",
            LimitReason::Growth => "growth",
        }
    }
}

/// A change of an endpoint's in-flight limit.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LimitChange {
    /// The endpoint (its URL, without credentials; never the key).
    pub endpoint: String,
    /// The limit before.
    pub from: usize,
    /// The limit now.
    pub to: usize,
    /// Requests in flight to the endpoint when it changed.
    pub in_flight: usize,
    /// Why.
    pub reason: LimitReason,
    /// The agent whose answer changed it (for a wave's steps told as one
    /// change, the last of them).
    pub agent: String,
}

/// What a watcher of limit changes is called with.
pub type LimitWatcher = Arc<dyn Fn(&LimitChange) + Send + Sync>;

/// A subscription to an endpoint's limit changes; dropping it ends it.
pub struct LimitWatch {
    pub(super) endpoint: Arc<Endpoint>,
    pub(super) id: u64,
}

impl std::fmt::Debug for LimitWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LimitWatch")
            .field("endpoint", &self.endpoint.name())
            .finish_non_exhaustive()
    }
}

impl LimitWatch {
    /// Whether `other` watches the same endpoint (a run watches each
    /// endpoint once, however many of its models point at it).
    #[must_use]
    pub fn same_endpoint(&self, other: &LimitWatch) -> bool {
        Arc::ptr_eq(&self.endpoint, &other.endpoint)
    }
}

impl Drop for LimitWatch {
    fn drop(&mut self) {
        self.endpoint.unwatch(self.id);
    }
}
