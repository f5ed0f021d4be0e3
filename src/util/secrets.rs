//! Secrets the process knows, and the one masker every output goes through.
//!
//! A secret is remembered where it is read: a model's API key, an MCP
//! server's credential headers and the `${VAR}` values filled into its URL,
//! the OTLP headers and URL credentials. Whatever is written to a run
//! directory (events, turns, journal, `run.json`, `plan.json`, the report),
//! handed to a model as a tool result, exported as a span or printed in a
//! log line goes through [`mask`] (or [`mask_json`]) first.
//!
//! The rule: any piece of 6 characters or more of a secret, at any
//! position, becomes `***` (a server may echo a key cut short, without its
//! `sk-` prefix, or in the middle of a longer word). A secret shorter than
//! that is masked only where it stands as a whole word, so a key `x` never
//! turns `engine` into `engin***`.
//!
//! The set is process-wide: a CLI process runs one run; a library caller
//! running several masks every run's secrets in all of them, which errs on
//! the side of hiding. A process that knows no secret (the `sim` model)
//! pays one atomic load per write.

use std::borrow::Cow;
use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use std::sync::{PoisonError, RwLock};

/// The shortest piece of a secret that is masked wherever it appears.
pub(crate) const PIECE: usize = 6;

/// What a masked piece becomes.
const MASK: &str = "***";

static ANY: AtomicBool = AtomicBool::new(false);
static KNOWN: RwLock<Option<Arc<Masker>>> = RwLock::new(None);
/// What was remembered: each secret, and whether it is masked only where
/// it appears whole.
static ADDED: RwLock<Vec<(String, bool)>> = RwLock::new(Vec::new());

/// Remembers `secret` (trimmed; empty is ignored) for every later mask.
pub(crate) fn remember(secret: &str) {
    add(secret, false);
}

fn add(secret: &str, whole: bool) {
    let secret = secret.trim();
    if secret.is_empty() {
        return;
    }
    let mut added = ADDED.write().unwrap_or_else(PoisonError::into_inner);
    if added.iter().any(|(s, w)| s == secret && *w == whole) {
        return;
    }
    added.push((secret.to_string(), whole));
    let masker = Masker::with_whole(
        added.iter().filter(|(_, w)| !w).map(|(s, _)| s.as_str()),
        added.iter().filter(|(_, w)| *w).map(|(s, _)| s.as_str()),
    );
    *KNOWN.write().unwrap_or_else(PoisonError::into_inner) = Some(Arc::new(masker));
    ANY.store(true, Ordering::Release);
}

/// Remembers the secret in a credential header value: for `Scheme token`
/// (`Bearer ...`, `Basic ...`) the token, in any piece, and the whole value
/// where it appears whole (the word `Bearer` alone stays readable); else
/// the value.
pub(crate) fn remember_header_value(value: &str) {
    match value.trim().split_once(' ') {
        Some((_scheme, token)) => {
            remember(token);
            add(value, true);
        }
        None => remember(value),
    }
}

/// Remembers the credentials a URL carries: the password of a
/// `user:password@`, and the value of a query parameter whose name says it
/// is a credential (`token`, `key`, `secret`, `password`, `auth`, `sig`, in
/// any case and inside a longer name). Other query values (an
/// `api-version`) are printed redacted but not masked in text.
pub(crate) fn remember_url(url: &str) {
    let Some((_, rest)) = url.split_once("://") else {
        return;
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    if let Some((userinfo, _)) = authority.rsplit_once('@') {
        match userinfo.split_once(':') {
            Some((_, password)) => remember(password),
            None => remember(userinfo),
        }
    }
    let Some((_, query)) = rest[authority_end..].split_once('?') else {
        return;
    };
    let query = query.split('#').next().unwrap_or("");
    for (name, value) in query.split('&').filter_map(|p| p.split_once('=')) {
        if is_credential_name(name) {
            remember(value);
        }
    }
}

/// Whether a header or query parameter name says its value is a credential.
pub(crate) fn is_credential_name(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    [
        "token",
        "key",
        "secret",
        "password",
        "passwd",
        "auth",
        "sig",
        "credential",
        "cookie",
    ]
    .iter()
    .any(|w| name.contains(w))
}

fn known() -> Option<Arc<Masker>> {
    if !ANY.load(Ordering::Acquire) {
        return None;
    }
    KNOWN.read().unwrap_or_else(PoisonError::into_inner).clone()
}

/// Whether any secret is known (a process that knows none masks nothing).
pub(crate) fn any() -> bool {
    ANY.load(Ordering::Acquire)
}

/// `text` with every known secret masked.
pub(crate) fn mask(text: &str) -> Cow<'_, str> {
    match known() {
        Some(m) => m.mask(text),
        None => Cow::Borrowed(text),
    }
}

/// A JSON document (one line or pretty) with every known secret masked in
/// its strings (keys included); it stays valid JSON. Bytes that are not
/// JSON are masked as text.
pub(crate) fn mask_json(bytes: &[u8]) -> Cow<'_, [u8]> {
    let Some(m) = known() else {
        return Cow::Borrowed(bytes);
    };
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Cow::Borrowed(bytes);
    };
    if !m.hits_json(text) {
        return Cow::Borrowed(bytes);
    }
    let Ok(mut value) = serde_json::from_str::<serde_json::Value>(text) else {
        return Cow::Owned(m.mask(text).into_owned().into_bytes());
    };
    m.mask_value(&mut value);
    let pretty = text.trim_end().contains('\n');
    let mut out = if pretty {
        serde_json::to_vec_pretty(&value)
    } else {
        serde_json::to_vec(&value)
    }
    .unwrap_or_else(|_| m.mask(text).into_owned().into_bytes());
    if text.ends_with('\n') {
        out.push(b'\n');
    }
    Cow::Owned(out)
}

/// A URL as it may be printed: no `user:password@`, and every query value
/// replaced by `***` (tokens travel there: `?token=...`, `?key=...`).
pub(crate) fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let host = match authority.rfind('@') {
        Some(at) => &authority[at + 1..],
        None => authority,
    };
    let (path, query) = match tail.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (tail, None),
    };
    let mut out = format!("{scheme}://{host}{path}");
    if let Some(query) = query {
        let (query, fragment) = match query.split_once('#') {
            Some((q, f)) => (q, Some(f)),
            None => (query, None),
        };
        out.push('?');
        let pairs: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((name, _)) => format!("{name}={MASK}"),
                None if pair.is_empty() => String::new(),
                None => MASK.to_string(),
            })
            .collect();
        out.push_str(&pairs.join("&"));
        if let Some(f) = fragment {
            out.push('#');
            out.push_str(f);
        }
    }
    out
}

/// Every URL (`http://` or `https://`) in a line of text redacted as by
/// [`redact_url`] (for log lines).
pub(crate) fn redact_urls(text: &str) -> Cow<'_, str> {
    if !text.contains("://") {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = ["http://", "https://"]
        .iter()
        .filter_map(|s| rest.find(s))
        .min()
    {
        out.push_str(&rest[..start]);
        let url_len = rest[start..]
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | '`'))
            .unwrap_or(rest.len() - start);
        out.push_str(&redact_url(&rest[start..start + url_len]));
        rest = &rest[start + url_len..];
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// A line of text as it may be printed or logged: every `http://` or
/// `https://` URL in it without credentials or query values, and every
/// secret this process knows (model API keys, MCP credential headers and
/// `${VAR}` values, OTLP headers) masked as `***`, any piece of 6
/// characters or more of one included.
///
/// # Examples
///
/// ```
/// let line = "GET https://user:pw@mcp.example/sse?token=abc123";
/// assert_eq!(boardroom::redact(line), "GET https://mcp.example/sse?token=***");
/// ```
#[must_use]
pub fn redact(text: &str) -> Cow<'_, str> {
    let urls = redact_urls(text);
    match mask(&urls) {
        Cow::Borrowed(_) => urls,
        Cow::Owned(m) => Cow::Owned(m),
    }
}

/// A hasher for keys that are already well mixed (a multiply is enough).
#[derive(Default)]
struct MixHasher(u64);

impl Hasher for MixHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (n ^ (n >> 29)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

type FastSet<T> = HashSet<T, BuildHasherDefault<MixHasher>>;

/// The 6-character windows of a set of strings.
#[derive(Default)]
struct Windows {
    /// Windows of six ASCII bytes, packed.
    ascii: FastSet<u64>,
    /// Windows with a non-ASCII character.
    other: FastSet<String>,
    /// The first bytes of all windows: a cheap reject.
    starts: Vec<bool>,
}

fn pack(six: &[u8]) -> u64 {
    six.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b))
}

impl Windows {
    fn insert(&mut self, s: &str) {
        if self.starts.is_empty() {
            self.starts = vec![false; 256];
        }
        let bounds: Vec<usize> = s
            .char_indices()
            .map(|(i, _)| i)
            .chain(std::iter::once(s.len()))
            .collect();
        for k in 0..bounds.len().saturating_sub(PIECE) {
            let w = &s[bounds[k]..bounds[k + PIECE]];
            self.starts[usize::from(w.as_bytes()[0])] = true;
            if w.len() == PIECE {
                self.ascii.insert(pack(w.as_bytes()));
            } else {
                self.other.insert(w.to_string());
            }
        }
    }

    fn is_empty(&self) -> bool {
        self.ascii.is_empty() && self.other.is_empty()
    }

    /// The byte ranges of `text` covered by windows, merged.
    fn cover(&self, text: &str, out: &mut Vec<(usize, usize)>) {
        if self.is_empty() {
            return;
        }
        let bytes = text.as_bytes();
        let mut push = |s: usize, e: usize| match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        };
        if text.is_ascii() {
            if self.ascii.is_empty() {
                return;
            }
            for i in 0..bytes.len().saturating_sub(PIECE - 1) {
                if self.starts[usize::from(bytes[i])]
                    && self.ascii.contains(&pack(&bytes[i..i + PIECE]))
                {
                    push(i, i + PIECE);
                }
            }
            return;
        }
        let bounds: Vec<usize> = text
            .char_indices()
            .map(|(i, _)| i)
            .chain(std::iter::once(text.len()))
            .collect();
        for k in 0..bounds.len().saturating_sub(PIECE) {
            let (s, e) = (bounds[k], bounds[k + PIECE]);
            if !self.starts[usize::from(bytes[s])] {
                continue;
            }
            let hit = if e - s == PIECE {
                self.ascii.contains(&pack(&bytes[s..e]))
            } else {
                self.other.contains(&text[s..e])
            };
            if hit {
                push(s, e);
            }
        }
    }
}

/// Masks a fixed set of secrets (see the module docs for the rule).
pub(crate) struct Masker {
    windows: Windows,
    /// Windows of the secrets as JSON writes them (quotes, backslashes
    /// and control characters escaped), to find them in JSON text.
    json_windows: Windows,
    /// Secrets shorter than [`PIECE`] characters: masked as whole words.
    short: Vec<String>,
    /// Values masked wherever they appear whole (`Bearer <token>`).
    whole: Vec<String>,
}

impl std::fmt::Debug for Masker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Masker").finish_non_exhaustive()
    }
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

impl Masker {
    /// A masker for `secrets` (empty ones ignored).
    pub(crate) fn new<'a>(secrets: impl IntoIterator<Item = &'a str>) -> Self {
        Self::with_whole(secrets, [])
    }

    /// A masker for `secrets`, and for `whole` values masked only where
    /// they appear whole.
    pub(crate) fn with_whole<'a>(
        secrets: impl IntoIterator<Item = &'a str>,
        whole: impl IntoIterator<Item = &'a str>,
    ) -> Self {
        let mut m = Masker {
            windows: Windows::default(),
            json_windows: Windows::default(),
            short: Vec::new(),
            whole: whole
                .into_iter()
                .map(str::trim)
                .filter(|w| !w.is_empty())
                .map(str::to_string)
                .collect(),
        };
        for s in secrets {
            let s = s.trim();
            if s.is_empty() {
                continue;
            }
            if s.chars().count() < PIECE {
                m.short.push(s.to_string());
                continue;
            }
            m.windows.insert(s);
            let quoted = serde_json::to_string(s).unwrap_or_default();
            let escaped = quoted.get(1..quoted.len().saturating_sub(1)).unwrap_or("");
            if escaped != s {
                m.json_windows.insert(escaped);
            }
        }
        m.short.sort();
        m.short.dedup();
        m
    }

    fn ranges(&self, text: &str) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        self.windows.cover(text, &mut out);
        for s in &self.short {
            for (i, _) in text.match_indices(s.as_str()) {
                let end = i + s.len();
                let before = text[..i].chars().next_back();
                let after = text[end..].chars().next();
                let whole = before.is_none_or(|c| !is_word(c) || !s.starts_with(is_word))
                    && after.is_none_or(|c| !is_word(c) || !s.ends_with(is_word));
                if whole {
                    out.push((i, end));
                }
            }
        }
        for w in &self.whole {
            out.extend(
                text.match_indices(w.as_str())
                    .map(|(i, _)| (i, i + w.len())),
            );
        }
        if !self.short.is_empty() || !self.whole.is_empty() {
            out.sort_unstable();
            let mut merged: Vec<(usize, usize)> = Vec::with_capacity(out.len());
            for (s, e) in out {
                match merged.last_mut() {
                    Some(last) if s <= last.1 => last.1 = last.1.max(e),
                    _ => merged.push((s, e)),
                }
            }
            out = merged;
        }
        out
    }

    /// `text` with every piece of a secret masked.
    pub(crate) fn mask<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let ranges = self.ranges(text);
        if ranges.is_empty() {
            return Cow::Borrowed(text);
        }
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for (s, e) in ranges {
            out.push_str(&text[at..s]);
            out.push_str(MASK);
            at = e;
        }
        out.push_str(&text[at..]);
        Cow::Owned(out)
    }

    /// Whether JSON `text` may hold a piece of a secret (raw or escaped).
    fn hits_json(&self, text: &str) -> bool {
        let mut out = Vec::new();
        self.windows.cover(text, &mut out);
        self.json_windows.cover(text, &mut out);
        !out.is_empty()
            || self
                .short
                .iter()
                .chain(&self.whole)
                .any(|s| text.contains(s.as_str()))
    }

    /// Masks every string in `value`, object keys included.
    pub(crate) fn mask_value(&self, value: &mut serde_json::Value) {
        use serde_json::Value;
        match value {
            Value::String(s) => {
                if let Cow::Owned(m) = self.mask(s) {
                    *s = m;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.mask_value(v)),
            Value::Object(map) => {
                let old = std::mem::take(map);
                for (k, mut v) in old {
                    self.mask_value(&mut v);
                    map.insert(self.mask(&k).into_owned(), v);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests;
