//! How a run stops before its master has finished: one mechanism for the
//! token budget (`--token-budget` / `token_budget` in `team.yaml` /
//! [`Runtime::token_budget`](super::Runtime::token_budget)), the wall-clock
//! limit (`--timeout` / `timeout` in `team.yaml` /
//! [`Runtime::timeout`](super::Runtime::timeout)) and cancellation (Ctrl-C,
//! [`RunHandle::cancel`](super::RunHandle::cancel)).
//!
//! [`Run::stop_reason`] is checked before every model call and between
//! phases; calls already in flight finish, so a run may end a little over
//! its budget or its time. A spent budget or time ends the run gracefully
//! with the best answer on the board (status `budget_exhausted` or
//! `timed_out`); if the board holds no draft at all, the run fails instead
//! (and stays resumable). A cancelled run saves its state where it stands
//! (status `cancelled`) and can be resumed.

use std::time::Instant;

use crate::model::ModelError;

use super::core::Core;

/// Why a run stops before the master has finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// The caller cancelled it (Ctrl-C).
    Cancelled,
    /// The wall-clock limit passed.
    TimedOut,
    /// The token budget is spent.
    Budget,
}

impl Stop {
    /// What ran out, for messages: "the token budget ran out".
    pub(crate) fn what(self) -> &'static str {
        match self {
            Stop::Cancelled => "the run was stopped",
            Stop::TimedOut => "the time limit ran out",
            Stop::Budget => "the token budget ran out",
        }
    }
}

impl Core<'_> {
    /// The effective budget in tokens, if any.
    pub(crate) fn token_budget(&self) -> Option<u64> {
        self.rt.token_budget.or(self.team.config().token_budget)
    }

    /// Fails when the budget is spent.
    pub(crate) fn budget_check(&self) -> Result<(), ModelError> {
        match self.token_budget() {
            Some(budget) => {
                let used = self.used_tokens();
                if used >= budget {
                    Err(ModelError::BudgetExhausted { used, budget })
                } else {
                    Ok(())
                }
            }
            None => Ok(()),
        }
    }

    /// Whether the run must stop, and why: cancelled first, then the time
    /// limit, then the budget.
    pub(crate) fn stop_reason(&self) -> Option<Stop> {
        if self.cancelled() {
            Some(Stop::Cancelled)
        } else if self.deadline.is_some_and(|d| Instant::now() >= d) {
            Some(Stop::TimedOut)
        } else if self.budget_check().is_err() {
            Some(Stop::Budget)
        } else {
            None
        }
    }

    /// Before a call: fails when the run must stop.
    pub(crate) fn stop_check(&self) -> Result<(), ModelError> {
        match self.stop_reason() {
            None => Ok(()),
            Some(Stop::Budget) => self.budget_check(),
            Some(_) => Err(ModelError::Cancelled),
        }
    }
}

/// Reads a run's time limit: `500ms`, `90s`, `10m`, `1.5h`, or a number of
/// seconds, from 1 ms to 365 days (the one duration parser every setting
/// uses). Zero, negative and non-finite values are refused.
///
/// # Errors
///
/// A message that names the value and what is allowed.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use boardroom::config::parse_timeout;
/// assert_eq!(parse_timeout("10m"), Ok(Duration::from_secs(600)));
/// let e: Box<dyn std::error::Error> = parse_timeout("0s").unwrap_err().into();
/// assert!(!e.to_string().is_empty());
/// ```
///
/// # Errors
///
/// A [`TimeoutError`] that names the value and what is allowed.
pub fn parse_timeout(text: &str) -> Result<std::time::Duration, TimeoutError> {
    crate::model::duration::RUN_TIMEOUT
        .parse("", text)
        .map_err(TimeoutError)
}

/// Why a duration could not be read ([`parse_timeout`]): its message names
/// the value and what is allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimeoutError(String);

impl std::fmt::Display for TimeoutError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TimeoutError {}

pub(crate) fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// `90s` → `1m30s`, `0.5s` → `500ms`.
pub(crate) fn humantime(d: std::time::Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        return format!("{ms}ms");
    }
    if ms < 60_000 && !ms.is_multiple_of(1000) {
        return format!("{:.1}s", d.as_secs_f64());
    }
    let s = d.as_secs();
    match (s / 3600, (s / 60) % 60, s % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, 0) => format!("{m}m"),
        (0, m, s) => format!("{m}m{s}s"),
        (h, m, _) => format!("{h}h{m}m"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn time_limits_parse_and_refuse_zero() {
        assert_eq!(parse_timeout("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_timeout("2"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_timeout("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_timeout("250ms"), Ok(Duration::from_millis(250)));
        for bad in ["0", "-1s", "nan", "soon", ""] {
            assert!(parse_timeout(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn durations_read_as_people_write_them() {
        assert_eq!(humantime(Duration::from_millis(500)), "500ms");
        assert_eq!(humantime(Duration::from_millis(1500)), "1.5s");
        assert_eq!(humantime(Duration::from_secs(90)), "1m30s");
        assert_eq!(humantime(Duration::from_secs(600)), "10m");
        assert_eq!(humantime(Duration::from_secs(3700)), "1h1m");
    }
}
