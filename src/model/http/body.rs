//! What every provider reads from a server the same way: a body read
//! with a cap, a body that is not JSON described for a person, a server's
//! error shortened, and why a streamed event could not be applied.

use std::io::Read;

use serde_json::Value;

/// The largest answer taken from a server, streamed or not (32 MiB): its
/// text and tool-call arguments together, or one whole response body.
pub(crate) const MAX_ANSWER_BYTES: u64 = 32 * 1024 * 1024;

/// Why a streamed event could not be applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StreamError {
    /// The event's data is not a JSON chunk (a cut connection, where the
    /// stream ended inside it).
    Chunk(String),
    /// The server said something is wrong, or the answer is too large.
    Answer(String),
    /// The server said it cannot answer now (overloaded): another attempt
    /// may do, where no text was shown yet.
    Retry(String),
}

impl std::fmt::Display for StreamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StreamError::Chunk(e) => write!(f, "bad stream chunk: {e}"),
            StreamError::Answer(e) | StreamError::Retry(e) => f.write_str(e),
        }
    }
}

/// A body that is not JSON, described for a person: HTML gets its own
/// words (a wrong base URL usually), and the first bytes are shown.
pub(crate) fn not_json(content_type: &str, body: &str, e: &serde_json::Error) -> String {
    let start: String = body
        .trim_start()
        .chars()
        .take(120)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let more = if body.trim_start().chars().count() > 120 {
        "…"
    } else {
        ""
    };
    let looks_html = content_type.contains("html")
        || start
            .get(..5)
            .is_some_and(|s| s.eq_ignore_ascii_case("<!doc"))
        || start
            .get(..5)
            .is_some_and(|s| s.eq_ignore_ascii_case("<html"));
    if looks_html {
        let ct = if content_type.is_empty() {
            "no content-type"
        } else {
            content_type
        };
        format!(
            "the server answered HTML ({ct}), not JSON: is the base url the API's \
             (it usually ends in /v1)? it began: {start}{more}"
        )
    } else {
        format!("not json ({e}); it began: {start}{more}")
    }
}

/// A server's error body, shortened for a message: `error.message` where
/// there is one.
pub(crate) fn error_detail(body: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let text = match parsed.as_ref().and_then(|v| v.get("error")) {
        Some(e) => short(e),
        None => body.trim().to_string(),
    };
    let mut text: String = text.chars().take(300).collect();
    if text.len() < body.trim().len() && text.chars().count() == 300 {
        text.push('…');
    }
    text
}

/// An error object's `message` (or the whole of it).
pub(crate) fn short(err: &Value) -> String {
    match err {
        Value::String(s) => s.clone(),
        v => v
            .get("message")
            .and_then(Value::as_str)
            .map_or_else(|| v.to_string(), str::to_string),
    }
}

/// Reads at most `cap` bytes of `reader` (decompressed, as held in
/// memory) as text; `false` when there was more. Invalid UTF-8 is
/// replaced.
pub(crate) fn read_capped(reader: impl Read, cap: u64) -> std::io::Result<(String, bool)> {
    let mut bytes = Vec::new();
    reader.take(cap.saturating_add(1)).read_to_end(&mut bytes)?;
    let whole = bytes.len() as u64 <= cap;
    bytes.truncate(usize::try_from(cap).unwrap_or(usize::MAX));
    let text = match String::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    };
    Ok((text, whole))
}
