//! Where and how spans are sent: `--otlp URL` or the standard
//! `OTEL_EXPORTER_OTLP_*` variables.

use std::time::Duration;

/// Where the spans of a run go, and what they may hold.
///
/// # Examples
///
/// ```
/// use boardroom::otlp::OtlpConfig;
///
/// let config = OtlpConfig::new("http://127.0.0.1:6006")?.content(false);
/// assert_eq!(config.endpoint(), "http://127.0.0.1:6006/v1/traces");
/// # Ok::<(), boardroom::otlp::OtlpError>(())
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct OtlpConfig {
    pub(crate) endpoint: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) service_name: String,
    pub(crate) content: bool,
    pub(crate) timeout: Duration,
    pub(crate) queue: usize,
    pub(crate) batch: usize,
}

/// Header values (credentials) and a password in the URL stay out.
impl std::fmt::Debug for OtlpConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let headers: Vec<&str> = self.headers.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("OtlpConfig")
            .field("endpoint", &shown(&self.endpoint))
            .field("headers", &headers)
            .field("service_name", &self.service_name)
            .field("content", &self.content)
            .field("timeout", &self.timeout)
            .field("queue", &self.queue)
            .field("batch", &self.batch)
            .finish()
    }
}

/// A URL as it may be printed: a `user:password@` in it becomes `***@`,
/// every query value `***` (a token may travel there; issue 28).
pub(crate) fn shown(url: &str) -> String {
    let redacted = crate::util::secrets::redact_url(url);
    let Some((_, rest)) = url.split_once("://") else {
        return redacted;
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    if rest[..authority_end].contains('@') {
        redacted.replacen("://", "://***@", 1)
    } else {
        redacted
    }
}

/// The traces URL of a base URL: `/v1/traces` goes at the end of the path,
/// before any query or fragment (`http://h:4318?k=v` gives
/// `http://h:4318/v1/traces?k=v`); a URL whose path already ends in
/// `/v1/traces` is kept.
fn traces_url(url: &str) -> String {
    let split = url.split_once("://").map_or(0, |(scheme, rest)| {
        scheme.len() + 3 + rest.find(['?', '#']).unwrap_or(rest.len())
    });
    let (base, tail) = url.split_at(split);
    let base = base.trim_end_matches('/');
    if base.ends_with("/v1/traces") {
        format!("{base}{tail}")
    } else {
        format!("{base}/v1/traces{tail}")
    }
}

/// What is wrong with an OTLP setting, or why a saved run could not be
/// exported.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum OtlpError {
    /// The endpoint is not an `http://` or `https://` URL.
    BadEndpoint {
        /// Where it came from (`--otlp`, an environment variable).
        source: String,
        /// The value.
        value: String,
    },
    /// `OTEL_EXPORTER_OTLP_HEADERS` holds an entry that is not `key=value`.
    BadHeader {
        /// The entry's position, from 1.
        index: usize,
    },
    /// A timeout setting is not a number of milliseconds.
    BadTimeout {
        /// The variable.
        source: String,
        /// The value.
        value: String,
    },
    /// The exporter's threads could not be started.
    Thread(std::sync::Arc<std::io::Error>),
    /// A saved run could not be read.
    Store(std::sync::Arc<crate::store::StoreError>),
    /// A saved run has no events to export.
    NoEvents {
        /// The run directory.
        dir: std::path::PathBuf,
    },
}

impl std::fmt::Display for OtlpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OtlpError::BadEndpoint { source, value } => write!(
                f,
                "{source}: '{value}' is not an OTLP/HTTP endpoint (expected http://host:port or https://..., e.g. http://127.0.0.1:4318)"
            ),
            OtlpError::BadHeader { index } => write!(
                f,
                "OTEL_EXPORTER_OTLP_HEADERS: entry {index} is not key=value (expected key1=value1,key2=value2)"
            ),
            OtlpError::BadTimeout { source, value } => write!(
                f,
                "{source}: '{value}' is not a timeout in milliseconds (expected e.g. 10000)"
            ),
            OtlpError::Thread(e) => write!(f, "otlp: cannot start the exporter thread: {e}"),
            OtlpError::Store(e) => write!(f, "{e}"),
            OtlpError::NoEvents { dir } => write!(
                f,
                "{}: no events to export (events.jsonl is missing or empty)",
                dir.display()
            ),
        }
    }
}

impl std::error::Error for OtlpError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            OtlpError::Thread(e) => Some(e.as_ref()),
            OtlpError::Store(e) => Some(e.as_ref()),
            _ => None,
        }
    }
}

/// The default per-request timeout (the OTLP specification's 10 s).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

impl OtlpConfig {
    /// Spans for the collector at `url`: a base URL (`http://host:4318`,
    /// to which `/v1/traces` is added) or the full traces URL (ending in
    /// `/v1/traces`, used as it is).
    ///
    /// # Errors
    ///
    /// [`OtlpError::BadEndpoint`] when `url` is not http(s).
    pub fn new(url: &str) -> Result<Self, OtlpError> {
        Self::with_endpoint(url, "--otlp", true)
    }

    fn with_endpoint(url: &str, source: &str, base: bool) -> Result<Self, OtlpError> {
        let url = url.trim();
        let rest = url
            .strip_prefix("http://")
            .or_else(|| url.strip_prefix("https://"));
        if rest.is_none_or(|r| r.is_empty() || r.starts_with('/')) {
            return Err(OtlpError::BadEndpoint {
                source: source.to_string(),
                value: shown(url),
            });
        }
        let endpoint = if base {
            traces_url(url)
        } else {
            url.to_string()
        };
        // Its credentials are masked wherever they appear (issue 28).
        crate::util::secrets::remember_url(url);
        Ok(OtlpConfig {
            endpoint,
            headers: Vec::new(),
            service_name: "boardroom".to_string(),
            content: false,
            timeout: DEFAULT_TIMEOUT,
            queue: 2048,
            batch: 256,
        })
    }

    /// The configuration the standard variables describe, or `None` when
    /// neither `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used as it is) nor
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` (a base, `/v1/traces` added) is set.
    /// `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_SERVICE_NAME` and
    /// `OTEL_EXPORTER_OTLP_(TRACES_)TIMEOUT` are read in either case;
    /// `url` (from `--otlp`) wins over the endpoint variables.
    ///
    /// # Errors
    ///
    /// An [`OtlpError`] naming the variable that holds a bad value.
    pub fn from_env(url: Option<&str>) -> Result<Option<Self>, OtlpError> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let mut config = if let Some(url) = url {
            Self::new(url)?
        } else if let Some(v) = var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
            Self::with_endpoint(&v, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", false)?
        } else if let Some(v) = var("OTEL_EXPORTER_OTLP_ENDPOINT") {
            Self::with_endpoint(&v, "OTEL_EXPORTER_OTLP_ENDPOINT", true)?
        } else {
            return Ok(None);
        };
        if let Some(h) = var("OTEL_EXPORTER_OTLP_HEADERS") {
            config.headers = parse_headers(&h)?;
            for (name, value) in &config.headers {
                remember_header(name, value);
            }
        }
        if let Some(name) = var("OTEL_SERVICE_NAME") {
            config.service_name = name;
        }
        for name in [
            "OTEL_EXPORTER_OTLP_TIMEOUT",
            "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
        ] {
            if let Some(v) = var(name) {
                let ms: u64 = v.trim().parse().map_err(|_| OtlpError::BadTimeout {
                    source: name.to_string(),
                    value: v.clone(),
                })?;
                config.timeout = Duration::from_millis(ms.max(1));
            }
        }
        Ok(Some(config))
    }

    /// Adds a header to every request (e.g. `Authorization` for Langfuse).
    #[must_use]
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        let (name, value) = (name.into(), value.into());
        remember_header(&name, &value);
        self.headers.push((name, value));
        self
    }

    /// The `service.name` resource attribute (default `boardroom`).
    #[must_use]
    pub fn service_name(mut self, name: impl Into<String>) -> Self {
        self.service_name = name.into();
        self
    }

    /// Whether prompts, answers, tool arguments and results go into the
    /// spans (default: no; the task and model text stay out).
    #[must_use]
    pub fn content(mut self, on: bool) -> Self {
        self.content = on;
        self
    }

    /// The time one request may take, connection included (default 10 s).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// How many spans may wait for the collector before new ones are
    /// dropped (default 2048; at least 1).
    #[must_use]
    pub fn queue_capacity(mut self, spans: usize) -> Self {
        self.queue = spans.max(1);
        self
    }

    /// The traces URL requests go to.
    #[must_use]
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The traces URL as it may be printed (a password in it masked).
    pub(crate) fn shown_endpoint(&self) -> String {
        shown(&self.endpoint)
    }
}

/// Remembers a header's value as a secret to mask wherever it appears
/// (issue 28): a credential's (by its name) always, another's when it is
/// long enough to be a key (`x-honeycomb-team`), not a word like `red`.
fn remember_header(name: &str, value: &str) {
    if crate::util::secrets::is_credential_name(name) || value.trim().len() >= 8 {
        crate::util::secrets::remember_header_value(value);
    }
}

/// `key1=value1,key2=value2`, values percent-decoded (W3C baggage style,
/// as the OpenTelemetry SDKs read it).
fn parse_headers(text: &str) -> Result<Vec<(String, String)>, OtlpError> {
    let mut out = Vec::new();
    for (i, pair) in text.split(',').enumerate() {
        if pair.trim().is_empty() {
            continue;
        }
        let Some((k, v)) = pair.split_once('=') else {
            return Err(OtlpError::BadHeader { index: i + 1 });
        };
        let k = percent_decode(k.trim());
        if k.is_empty() {
            return Err(OtlpError::BadHeader { index: i + 1 });
        }
        out.push((k, percent_decode(v.trim())));
    }
    Ok(out)
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && s.is_char_boundary(i + 3)
            && let Ok(b) = u8::from_str_radix(&s[i + 1..i + 3], 16)
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_get_the_traces_path_once() {
        let c = OtlpConfig::new("http://127.0.0.1:4318/").unwrap();
        assert_eq!(c.endpoint(), "http://127.0.0.1:4318/v1/traces");
        let c = OtlpConfig::new("https://cloud.langfuse.com/api/public/otel/v1/traces").unwrap();
        assert_eq!(
            c.endpoint(),
            "https://cloud.langfuse.com/api/public/otel/v1/traces"
        );
        // Issue 28, finding 18: the path goes before the query.
        let c = OtlpConfig::new("http://127.0.0.1:4318/?tenant=a&key=b").unwrap();
        assert_eq!(
            c.endpoint(),
            "http://127.0.0.1:4318/v1/traces?tenant=a&key=b"
        );
        let c = OtlpConfig::new("http://h:4318/otel/v1/traces?k=v").unwrap();
        assert_eq!(c.endpoint(), "http://h:4318/otel/v1/traces?k=v");
        assert_eq!(c.shown_endpoint(), "http://h:4318/otel/v1/traces?k=***");
        let e = OtlpConfig::new("localhost:4318").unwrap_err();
        assert_eq!(
            e.to_string(),
            "--otlp: 'localhost:4318' is not an OTLP/HTTP endpoint (expected http://host:port or https://..., e.g. http://127.0.0.1:4318)"
        );
    }

    #[test]
    fn neither_debug_nor_errors_show_header_values_or_url_passwords() {
        let c = OtlpConfig::new("https://user:pa55@collector.example/otel")
            .unwrap()
            .header("Authorization", "Basic c2VjcmV0");
        let debug = format!("{c:?}");
        assert!(debug.contains("Authorization"), "{debug}");
        assert!(!debug.contains("c2VjcmV0"), "{debug}");
        assert!(!debug.contains("pa55"), "{debug}");
        assert_eq!(
            c.shown_endpoint(),
            "https://***@collector.example/otel/v1/traces"
        );
        assert_eq!(shown("http://h:1/a@b"), "http://h:1/a@b");
        let e = OtlpConfig::new("ftp://user:pa55@host").unwrap_err();
        assert!(!e.to_string().contains("pa55"), "{e}");
    }

    #[test]
    fn headers_are_pairs_with_percent_decoded_values() {
        let h = parse_headers("Authorization=Basic%20abc%3D%3D, x-team = red").unwrap();
        assert_eq!(
            h,
            vec![
                ("Authorization".to_string(), "Basic abc==".to_string()),
                ("x-team".to_string(), "red".to_string())
            ]
        );
        assert!(matches!(
            parse_headers("a=1,broken").unwrap_err(),
            OtlpError::BadHeader { index: 2 }
        ));
    }
}
