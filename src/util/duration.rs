//! Durations from people: `50ms`, `1.5s`, `2` (seconds) in specs, or a
//! number of seconds in YAML. One parser and one range check for every
//! place that takes a duration, so that no value (huge, NaN, negative) can
//! reach `Duration::from_secs_f64` and panic.

use std::time::Duration;

/// The values a duration setting allows, both ends included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DurationRange {
    /// The smallest value allowed (zero where zero means "none").
    pub(crate) min: Duration,
    /// The largest value allowed.
    pub(crate) max: Duration,
}

/// A model call's deadline (`timeout=`, team.yaml `timeout:`): 1 ms to 24 h.
pub(crate) const CALL_TIMEOUT: DurationRange = DurationRange {
    min: Duration::from_millis(1),
    max: Duration::from_secs(24 * 3600),
};

/// A whole run's wall-clock limit (`--timeout`, team.yaml `timeout:`):
/// 1 ms to 365 days.
pub(crate) const RUN_TIMEOUT: DurationRange = DurationRange {
    min: Duration::from_millis(1),
    max: Duration::from_secs(365 * 24 * 3600),
};

/// The sim's simulated latency: none to 1 h.
pub(crate) const SIM_LATENCY: DurationRange = DurationRange {
    min: Duration::ZERO,
    max: Duration::from_secs(3600),
};

/// An MCP server's request timeout: 1 ms to 24 h.
pub(crate) const MCP_TIMEOUT: DurationRange = DurationRange {
    min: Duration::from_millis(1),
    max: Duration::from_secs(24 * 3600),
};

impl DurationRange {
    /// `1ms to 24h`, for messages.
    pub(crate) fn describe(&self) -> String {
        format!("{} to {}", human(self.min), human(self.max))
    }

    /// A number of seconds (as YAML gives it) checked against the range.
    /// `what` names the setting in the message.
    pub(crate) fn check_secs_f64(&self, what: &str, secs: f64) -> Result<Duration, String> {
        let shown = if secs.is_nan() {
            ".nan".to_string()
        } else if secs.is_infinite() {
            if secs > 0.0 { ".inf" } else { "-.inf" }.to_string()
        } else if secs.abs() >= 1e9 {
            format!("{secs:e}")
        } else {
            secs.to_string()
        };
        self.check_secs(what, &format!("{shown} seconds"), secs)
    }

    /// Parses `50ms`, `1.5s`, `2m`, `1h` or `2` (seconds) and checks it.
    pub(crate) fn parse(&self, what: &str, value: &str) -> Result<Duration, String> {
        let v = value.trim();
        let (num, scale) = if let Some(n) = v.strip_suffix("ms") {
            (n, 0.001)
        } else if let Some(n) = v.strip_suffix('s') {
            (n, 1.0)
        } else if let Some(n) = v.strip_suffix('m') {
            (n, 60.0)
        } else if let Some(n) = v.strip_suffix('h') {
            (n, 3600.0)
        } else {
            (v, 1.0)
        };
        let num = num.trim();
        // Only plain decimal numbers: no `inf`, `nan`, signs or hex.
        let plain = !num.is_empty()
            && num
                .chars()
                .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '-' | '+'))
            && num.starts_with(|c: char| c.is_ascii_digit() || c == '.' || c == '-');
        let Some(x) = num.parse::<f64>().ok().filter(|_| plain) else {
            return Err(format!(
                "{what}: '{value}' is not a duration (try 500ms, 1.5s, 2m or 1h; allowed {})",
                self.describe()
            ));
        };
        self.check_secs(what, value, x * scale)
    }

    fn check_secs(&self, what: &str, shown: &str, secs: f64) -> Result<Duration, String> {
        let what = if what.is_empty() {
            String::new()
        } else {
            format!("{what}: ")
        };
        let ok =
            secs.is_finite() && secs >= self.min.as_secs_f64() && secs <= self.max.as_secs_f64();
        if !ok {
            return Err(format!(
                "{what}{shown} is out of range (allowed {})",
                self.describe()
            ));
        }
        let d = Duration::from_secs_f64(secs);
        if d < self.min {
            return Err(format!(
                "{what}{shown} is out of range (allowed {})",
                self.describe()
            ));
        }
        Ok(d)
    }
}

/// serde `deserialize_with` for a model call's `timeout:` in seconds: an
/// out-of-range value is an error at its own line.
pub(crate) fn de_call_timeout<'de, D>(d: D) -> Result<Option<f64>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    de_checked(d, CALL_TIMEOUT)
}

/// serde `deserialize_with` for an MCP server's `timeout:` in seconds.
pub(crate) fn de_mcp_timeout<'de, D>(d: D) -> Result<Option<f64>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    de_checked(d, MCP_TIMEOUT)
}

fn de_checked<'de, D>(d: D, range: DurationRange) -> Result<Option<f64>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    d.deserialize_option(SecsVisitor(range))
}

/// Checks the number inside the deserializer's own call, so that the
/// error carries the value's line and path.
struct SecsVisitor(DurationRange);

impl<'de> serde::de::Visitor<'de> for SecsVisitor {
    type Value = Option<f64>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "a number of seconds ({})", self.0.describe())
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_f64(self)
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Self::Value, E> {
        self.0.check_secs_f64("", v).map_err(E::custom)?;
        Ok(Some(v))
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Self::Value, E> {
        self.visit_f64(v as f64)
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Self::Value, E> {
        self.visit_f64(v as f64)
    }
}

/// `0`, `1ms`, `2s`, `24h`: the shortest exact form.
pub(crate) fn human(d: Duration) -> String {
    let ms = d.as_millis();
    if ms == 0 {
        "0".into()
    } else if ms.is_multiple_of(3_600_000) {
        format!("{}h", ms / 3_600_000)
    } else if ms.is_multiple_of(60_000) {
        format!("{}m", ms / 60_000)
    } else if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units_and_rejects_out_of_range() {
        let r = CALL_TIMEOUT;
        assert_eq!(r.parse("timeout", "50ms"), Ok(Duration::from_millis(50)));
        assert_eq!(r.parse("timeout", "1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(r.parse("timeout", "2m"), Ok(Duration::from_secs(120)));
        assert_eq!(r.parse("timeout", " 3 "), Ok(Duration::from_secs(3)));
        assert_eq!(
            r.parse("timeout", "1e300s").unwrap_err(),
            "timeout: 1e300s is out of range (allowed 1ms to 24h)"
        );
        assert_eq!(
            r.parse("timeout", "0s").unwrap_err(),
            "timeout: 0s is out of range (allowed 1ms to 24h)"
        );
        assert_eq!(
            r.parse("timeout", "inf").unwrap_err(),
            "timeout: 'inf' is not a duration (try 500ms, 1.5s, 2m or 1h; allowed 1ms to 24h)"
        );
        assert!(r.parse("timeout", "NaN").is_err());
        assert!(r.parse("timeout", "-1s").is_err());
        assert_eq!(
            SIM_LATENCY
                .parse("latency", "20000000000000000000")
                .unwrap_err(),
            "latency: 20000000000000000000 is out of range (allowed 0 to 1h)"
        );
        assert_eq!(SIM_LATENCY.parse("latency", "0"), Ok(Duration::ZERO));
        assert_eq!(
            r.check_secs_f64("timeout", f64::NAN).unwrap_err(),
            "timeout: .nan seconds is out of range (allowed 1ms to 24h)"
        );
        assert_eq!(
            r.check_secs_f64("timeout", 1e300).unwrap_err(),
            "timeout: 1e300 seconds is out of range (allowed 1ms to 24h)"
        );
        assert_eq!(
            r.check_secs_f64("timeout", 2.5),
            Ok(Duration::from_millis(2500))
        );
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
    RUN_TIMEOUT.parse("", text).map_err(TimeoutError)
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

#[cfg(test)]
mod run_timeout_tests {
    use super::*;
    use crate::util::text::humantime;
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
