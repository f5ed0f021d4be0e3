//! The transport retry: which failures are worth another attempt, how long
//! to wait before it (exponential backoff with full jitter, or what the
//! server's `Retry-After` asks), and when to give up.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How a provider retries a failed request.
///
/// The wait before attempt `n + 1` is a random duration in
/// `0..=min(max_delay, base_delay * 2^(n-1))` ("full jitter"), unless the
/// server sent `Retry-After`, which is honoured as given. The call gives up
/// after `max_attempts` failed attempts, or when the next wait would end
/// past the call's deadline ([`OpenAiBuilder::timeout`](crate::model::OpenAiBuilder::timeout),
/// default 300 s, which every attempt and wait counts against). A refusal
/// for load (429 or 503, not a spent quota) that says when to come back
/// (`Retry-After`, or one of a crowd refused together, which waits for a
/// slot) is not counted: the server is up and takes the request later, so
/// it is retried until the call's deadline.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// let policy = boardroom::openai::RetryPolicy {
///     max_attempts: 3,
///     ..boardroom::openai::RetryPolicy::default()
/// };
/// assert_eq!(policy.base_delay, Duration::from_millis(500));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included (at least 1).
    pub max_attempts: u32,
    /// The backoff ceiling of the first retry.
    pub base_delay: Duration,
    /// The largest backoff ceiling.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 5,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
        }
    }
}

/// Statuses worth another attempt: rate limited, server trouble, gateway
/// timeouts. Everything else (400, 401, 403, 404, ...) is the caller's to fix.
pub(crate) fn retryable_status(status: u16) -> bool {
    matches!(status, 408 | 429 | 500 | 502 | 503 | 504)
}

impl RetryPolicy {
    /// The wait before the attempt after `attempt` (1-based) failed, or
    /// `None` when the attempts are used up. The caller checks the wait
    /// against the time left before the call's deadline.
    pub(crate) fn next_wait(
        &self,
        attempt: u32,
        retry_after: Option<Duration>,
    ) -> Option<Duration> {
        if attempt >= self.max_attempts.max(1) {
            return None;
        }
        Some(retry_after.unwrap_or_else(|| {
            let exp = 2u32.saturating_pow(attempt.saturating_sub(1).min(30));
            jitter(self.base_delay.saturating_mul(exp).min(self.max_delay))
        }))
    }
}

/// A random duration in `0..=ceiling` (xorshift, seeded from the clock and
/// a counter: good enough to spread retries, not for secrets).
fn jitter(ceiling: Duration) -> Duration {
    static COUNTER: AtomicU64 = AtomicU64::new(0x9E37_79B9_7F4A_7C15);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mut x = nanos ^ COUNTER.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed);
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    let millis = ceiling.as_millis() as u64;
    Duration::from_millis(if millis == 0 { 0 } else { x % (millis + 1) })
}

/// Parses `Retry-After`: delay seconds (`120`) or an HTTP date
/// (`Wed, 21 Oct 2015 07:28:00 GMT`), relative to `now`. A date in the past
/// means "now".
pub(crate) fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    if let Ok(secs) = value.parse::<f64>() {
        // A wait longer than any clock holds is as good as forever (and
        // past any deadline), never a panic.
        return (secs >= 0.0).then(|| Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX));
    }
    let at = parse_http_date(value)?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// An HTTP date in any of the three forms HTTP/1.1 allows (IMF-fixdate
/// `Sun, 06 Nov 1994 08:49:37 GMT`, RFC 850, asctime), through the
/// `httpdate` crate rather than calendar arithmetic of our own.
fn parse_http_date(value: &str) -> Option<SystemTime> {
    httpdate::parse_http_date(value).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_seconds_and_dates() {
        let now = UNIX_EPOCH + Duration::from_secs(784_111_777); // Sun, 06 Nov 1994 08:49:37 GMT
        let secs = |n| Some(Duration::from_secs(n));
        let cases = [
            ("1", secs(1)),
            (" 120 ", secs(120)),
            ("Sun, 06 Nov 1994 08:49:40 GMT", secs(3)),
            ("Sun, 06 Nov 1994 08:00:00 GMT", secs(0)),
            // Issue 15: the obsolete forms a server may still send.
            ("Sunday, 06-Nov-94 08:49:40 GMT", secs(3)),
            ("Sun Nov  6 08:49:40 1994", secs(3)),
            ("soon", None),
            ("Sun, 06 Nov 1994 08:49:40 PST", None),
        ];
        for (value, wait) in cases {
            assert_eq!(parse_retry_after(value, now), wait, "{value:?}");
        }
    }

    mod props {
        use super::super::parse_retry_after;
        use proptest::prelude::*;
        use std::time::SystemTime;

        proptest! {
            #![proptest_config(ProptestConfig { cases: 10_000, ..ProptestConfig::default() })]

            /// Whatever a server sends as `Retry-After` (seconds of any
            /// size, floats, dates of any year), parsing never panics.
            #[test]
            fn retry_after_never_panics(
                value in prop_oneof![
                    any::<u64>().prop_map(|n| n.to_string()),
                    any::<f64>().prop_map(|f| f.to_string()),
                    "[-+.0-9eE]{1,30}",
                    "(Sun, )?[0-9]{1,3} (Jan|Dec|Xyz) [0-9]{1,25} [0-9]{1,3}:[0-9]{1,3}:[0-9]{1,3} (GMT|UTC)",
                    "\\PC{0,40}",
                ],
            ) {
                let _ = parse_retry_after(&value, SystemTime::now());
            }
        }
    }

    #[test]
    fn backoff_is_capped_jittered_and_bounded() {
        let p = RetryPolicy {
            max_attempts: 4,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(300),
        };
        for _ in 0..200 {
            assert!(p.next_wait(1, None).unwrap() <= Duration::from_millis(100));
            assert!(p.next_wait(2, None).unwrap() <= Duration::from_millis(200));
            assert!(p.next_wait(3, None).unwrap() <= Duration::from_millis(300));
        }
        assert_eq!(p.next_wait(4, None), None);
        let after = Some(Duration::from_secs(2));
        assert_eq!(p.next_wait(1, after), after);
        assert!(retryable_status(429) && retryable_status(503) && !retryable_status(401));
    }
}
