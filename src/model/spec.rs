//! Model specs: the strings `--model`, `BOARDROOM_MODEL` and `team.yaml`
//! use to name a model, written as users type them.
//!
//! - `sim` or `sim:latency=50ms,challenge=1,fail=writer,never_done`
//!   (`hold=FILE`: the members' drafts wait until FILE exists, at most 60 s)
//! - OpenAI: `openai:gpt-4o-mini`, `openai/gpt-4o-mini`, a bare OpenAI
//!   model name (see [`is_openai_model_name`]: `gpt-4o-mini`, `o3-mini`,
//!   `chatgpt-4o-latest`) or a fine-tuned one (`ft:gpt-4o-mini:org::id`),
//!   at `OPENAI_BASE_URL` (default the OpenAI API) with `OPENAI_API_KEY`
//! - Ollama: `ollama:llama3.2`, its OpenAI-compatible endpoint at
//!   `OLLAMA_HOST` (default `http://127.0.0.1:11434`; `host:port` without a
//!   scheme as Ollama takes it) with no API key (`OLLAMA_API_KEY` if set)
//! - `http://127.0.0.1:8080/v1#model`, `https://...`: any OpenAI-compatible
//!   endpoint (see [`OpenAi`](super::OpenAi))
//!
//! Options follow a comma: `gpt-4o-mini,stream=false`,
//! `ollama:qwen3,tools=false,timeout=10m`.

use std::fmt;
use std::sync::Arc;

use super::{AnthropicBuilder, OpenAiBuilder, SharedModel};

/// A model spec that could not be understood.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ModelSpecError {
    /// The spec as given.
    pub spec: String,
    /// What is wrong with it.
    pub detail: String,
}

impl fmt::Display for ModelSpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "model spec '{}': {}", self.spec, self.detail)
    }
}

impl std::error::Error for ModelSpecError {}

/// The forms a spec can take, an example each, for the message about a
/// spec that is none of them.
const ACCEPTED: &str = "accepted: sim (offline), gpt-4o-mini or openai/gpt-4o-mini or \
     openai:gpt-4o-mini (OpenAI, or OPENAI_BASE_URL), ollama:llama3.2 (Ollama at OLLAMA_HOST), claude-sonnet-4-5 or anthropic:claude-sonnet-4-5 (Anthropic), \
     http://127.0.0.1:8080/v1#MODEL (any OpenAI-compatible server), or a model named in team.yaml";

/// Where Ollama listens when `OLLAMA_HOST` is unset.
const OLLAMA_DEFAULT_HOST: &str = "http://127.0.0.1:11434";

/// What a spec names, read from its text; nothing is built yet.
#[derive(Debug)]
pub(crate) enum ModelSpec {
    /// The offline sim, with the options after `sim:` (the sim reads
    /// them).
    Sim {
        /// The text after `sim:` (empty for plain `sim`).
        options: String,
    },
    /// A model over HTTP.
    Http(Box<HttpSpec>),
}

/// A model over HTTP as a spec names it: its settings, checked when it
/// is built.
#[derive(Debug)]
pub(crate) struct HttpSpec {
    /// The spec as errors show it (without credentials).
    shown: String,
    builder: Builder,
}

/// A provider's builder.
#[derive(Debug)]
enum Builder {
    OpenAi(OpenAiBuilder),
    Anthropic(AnthropicBuilder),
}

impl HttpSpec {
    /// The model.
    ///
    /// # Errors
    ///
    /// A [`ModelSpecError`] naming the spec, for a setting out of range.
    pub(crate) fn build(self) -> Result<SharedModel, ModelSpecError> {
        let built: Result<SharedModel, ModelSpecError> = match self.builder {
            Builder::OpenAi(b) => b.build().map(|m| Arc::new(m) as SharedModel),
            Builder::Anthropic(b) => b.build().map(|m| Arc::new(m) as SharedModel),
        };
        built.map_err(|e| ModelSpecError {
            spec: self.shown,
            detail: e.detail,
        })
    }
}

/// Reads a spec string: which provider, which model, which options.
///
/// # Errors
///
/// A [`ModelSpecError`] for an unknown provider or a bad option.
pub(crate) fn parse(spec: &str) -> Result<ModelSpec, ModelSpecError> {
    let err = |detail: String| ModelSpecError {
        spec: spec.to_string(),
        detail,
    };
    // Errors name the spec as the user wrote it, not the form it became.
    let as_given = |e: ModelSpecError| ModelSpecError {
        spec: super::redact_url(spec),
        detail: e.detail,
    };
    let http = |builder| {
        Ok(ModelSpec::Http(Box::new(HttpSpec {
            shown: super::redact_url(spec),
            builder,
        })))
    };
    let anthropic = |name: &str, options: &str| {
        super::anthropic::builder_from_spec(name, options, spec).map(Builder::Anthropic)
    };
    let (head, options) = spec.split_once(',').unwrap_or((spec, ""));
    let head = head.trim();
    if let Some(name) = head.strip_prefix("openai/") {
        return http(Builder::OpenAi(openai(name, options).map_err(as_given)?));
    }
    if is_openai_model_name(head) || head.starts_with("ft:") {
        return http(Builder::OpenAi(openai(head, options).map_err(as_given)?));
    }
    if let Some(name) = head.strip_prefix("anthropic/") {
        return http(anthropic(name, options)?);
    }
    if is_anthropic_model_name(head) {
        return http(anthropic(head, options)?);
    }
    let (provider, rest) = spec.split_once(':').unwrap_or((spec, ""));
    match provider.trim() {
        "sim" => Ok(ModelSpec::Sim {
            options: rest.to_string(),
        }),
        "openai" | "http" | "https" => {
            http(Builder::OpenAi(super::openai::builder_from_spec(spec)?))
        }
        "ollama" => {
            let (name, options) = rest.split_once(',').unwrap_or((rest, ""));
            http(Builder::OpenAi(
                ollama(name.trim(), options).map_err(as_given)?,
            ))
        }
        "anthropic" => {
            let (name, options) = rest.split_once(',').unwrap_or((rest, ""));
            http(anthropic(name, options)?)
        }
        _ => Err(err(match head.split_once(':') {
            Some((provider, _)) => format!("unknown provider '{}' ({ACCEPTED})", provider.trim()),
            None => format!("unknown model '{head}' ({ACCEPTED})"),
        })),
    }
}

/// Whether `name` is an OpenAI model name as users type it without a
/// provider: it starts with `gpt-`, `chatgpt-` or `o` and a digit (`o1`,
/// `o3-mini`, `o4-mini-high`), and holds no `:`, `/` or `#`. Any other
/// bare word is a name from `team.yaml` or a mistake (and gets a
/// did-you-mean), never a request to OpenAI.
pub(crate) fn is_openai_model_name(name: &str) -> bool {
    if name.contains([':', '/', '#', ' ']) {
        return false;
    }
    let o_series = name
        .strip_prefix('o')
        .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()));
    let rest_ok = |r: &str| !r.is_empty();
    o_series
        || name.strip_prefix("gpt-").is_some_and(rest_ok)
        || name.strip_prefix("chatgpt-").is_some_and(rest_ok)
}

/// Whether `name` is a Claude model name as users type it without a
/// provider: `claude-` and more, with no `:`, `/`, `#` or space.
pub(crate) fn is_anthropic_model_name(name: &str) -> bool {
    !name.contains([':', '/', '#', ' '])
        && name.strip_prefix("claude-").is_some_and(|r| !r.is_empty())
}

/// `openai:NAME,OPTIONS`.
fn openai(name: &str, options: &str) -> Result<OpenAiBuilder, ModelSpecError> {
    let name = name.trim();
    if name.is_empty() {
        return Err(ModelSpecError {
            spec: String::new(),
            detail: "no model name after 'openai/' (e.g. openai/gpt-4o-mini)".into(),
        });
    }
    let spec = join_options(&format!("openai:{name}"), options);
    super::openai::builder_from_spec(&spec)
}

/// Ollama's OpenAI-compatible endpoint for model `name`: no API key unless
/// `OLLAMA_API_KEY` is set (an `OPENAI_API_KEY` is never sent to it).
fn ollama(name: &str, options: &str) -> Result<OpenAiBuilder, ModelSpecError> {
    if name.is_empty() {
        return Err(ModelSpecError {
            spec: String::new(),
            detail: "no model name after 'ollama:' (e.g. ollama:llama3.2)".into(),
        });
    }
    let host = std::env::var("OLLAMA_HOST").unwrap_or_default();
    let base = ollama_base_url(&host);
    // The key option comes first: a `key_env=` the user gives wins.
    let spec = join_options(&format!("{base}#{name},key_env=OLLAMA_API_KEY"), options);
    super::openai::builder_from_spec(&spec)
}

fn join_options(head: &str, options: &str) -> String {
    if options.trim().is_empty() {
        head.to_string()
    } else {
        format!("{head},{options}")
    }
}

/// The `/v1` base URL of the Ollama server `OLLAMA_HOST` names, read as
/// Ollama reads it: empty means `127.0.0.1:11434`; without a scheme,
/// `http` and port 11434 (`example.com`, `10.0.0.5:8000`); with `http://`
/// or `https://` and no port, that scheme's port; a path is kept. A
/// listen-on-all address (`0.0.0.0`, `[::]`) means this machine.
pub(crate) fn ollama_base_url(host: &str) -> String {
    let host = host.trim();
    if host.is_empty() {
        return format!("{OLLAMA_DEFAULT_HOST}/v1");
    }
    let (scheme, rest, default_port) = match host.split_once("://") {
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("https") => ("https", rest, "443"),
        Some((_, rest)) => ("http", rest, "80"),
        None => ("http", host, "11434"),
    };
    let (authority, path) = match rest.find('/') {
        Some(at) => (&rest[..at], rest[at..].trim_end_matches('/')),
        None => (rest, ""),
    };
    // `[v6]:port`, `[v6]`, `host:port`, `host`.
    let (hostname, port) = if let Some(v6) = authority.strip_prefix('[') {
        match v6.split_once(']') {
            Some((addr, tail)) => (
                format!("[{addr}]"),
                tail.strip_prefix(':').unwrap_or(default_port),
            ),
            None => (authority.to_string(), default_port),
        }
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) if !h.contains(':') => (h.to_string(), p),
            _ => (authority.to_string(), default_port),
        }
    };
    let hostname = match hostname.as_str() {
        "" | "0.0.0.0" => "127.0.0.1".to_string(),
        "[::]" => "[::1]".to_string(),
        _ => hostname,
    };
    let port = if port.is_empty() { default_port } else { port };
    let path = path.strip_suffix("/v1").unwrap_or(path);
    format!("{scheme}://{hostname}:{port}{path}/v1")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connect::resolve_model;

    #[test]
    fn unknown_models_and_providers() {
        assert_eq!(
            resolve_model("gpt").unwrap_err().to_string(),
            format!("model spec 'gpt': unknown model 'gpt' ({ACCEPTED})")
        );
        assert_eq!(
            resolve_model("gemini:pro,stream=false")
                .unwrap_err()
                .to_string(),
            format!("model spec 'gemini:pro,stream=false': unknown provider 'gemini' ({ACCEPTED})")
        );
    }

    /// Issue 26: Claude models as users type them.
    #[test]
    fn anthropic_names_as_users_type_them() {
        for (spec, name) in [
            ("anthropic:claude-sonnet-4-5", "anthropic:claude-sonnet-4-5"),
            ("claude-sonnet-4-5", "anthropic:claude-sonnet-4-5"),
            (
                "claude-3-5-haiku-latest,stream=false",
                "anthropic:claude-3-5-haiku-latest",
            ),
            ("anthropic/claude-opus-4-1", "anthropic:claude-opus-4-1"),
        ] {
            assert_eq!(resolve_model(spec).unwrap().name(), name, "{spec}");
        }
        for word in ["claude", "claude-", "claude-x:y"] {
            assert!(!is_anthropic_model_name(word), "{word}");
        }
        assert_eq!(
            resolve_model("anthropic:").unwrap_err().to_string(),
            "model spec 'anthropic:': no model name after 'anthropic:' (e.g. anthropic:claude-sonnet-4-5)"
        );
        assert_eq!(
            resolve_model("claude-x,cache=maybe")
                .unwrap_err()
                .to_string(),
            "model spec 'claude-x,cache=maybe': cache: 'maybe' is not true or false \
             (allowed true, false, on, off, yes, no, 1, 0)"
        );
    }

    /// Issue 21: model names as users type them.
    #[test]
    fn openai_names_as_users_type_them() {
        for (spec, name) in [
            ("gpt-4o-mini", "openai:gpt-4o-mini"),
            ("o3-mini", "openai:o3-mini"),
            ("o1", "openai:o1"),
            ("chatgpt-4o-latest", "openai:chatgpt-4o-latest"),
            ("openai/gpt-4o", "openai:gpt-4o"),
            ("gpt-4o,stream=false", "openai:gpt-4o"),
            (
                "ft:gpt-4o-mini:acme::abc123",
                "openai:ft:gpt-4o-mini:acme::abc123",
            ),
            ("openai:gpt-4o-mini", "openai:gpt-4o-mini"),
        ] {
            assert_eq!(resolve_model(spec).unwrap().name(), name, "{spec}");
        }
        for word in [
            "gpt",
            "gpt-",
            "o",
            "omni",
            "fast",
            "llama3",
            "gpt-4o:latest",
        ] {
            assert!(!is_openai_model_name(word), "{word}");
        }
        assert_eq!(
            resolve_model("openai/").unwrap_err().to_string(),
            "model spec 'openai/': no model name after 'openai/' (e.g. openai/gpt-4o-mini)"
        );
        assert_eq!(
            resolve_model("gpt-4o,strem=no").unwrap_err().to_string(),
            "model spec 'gpt-4o,strem=no': unknown option 'strem=no' \
             (known: stream=BOOL, max_in_flight=N, timeout=DUR, key_env=VAR, tools=BOOL)"
        );
    }

    #[test]
    fn ollama_host_as_ollama_reads_it() {
        for (host, base) in [
            ("", "http://127.0.0.1:11434/v1"),
            ("127.0.0.1:11434", "http://127.0.0.1:11434/v1"),
            ("10.0.0.5:8000", "http://10.0.0.5:8000/v1"),
            ("example.com", "http://example.com:11434/v1"),
            ("0.0.0.0", "http://127.0.0.1:11434/v1"),
            ("0.0.0.0:9999", "http://127.0.0.1:9999/v1"),
            ("http://gpu.lan", "http://gpu.lan:80/v1"),
            (
                "https://ollama.example.com",
                "https://ollama.example.com:443/v1",
            ),
            ("http://127.0.0.1:11434/", "http://127.0.0.1:11434/v1"),
            ("http://127.0.0.1:11434/v1", "http://127.0.0.1:11434/v1"),
            (
                "https://proxy.lan/ollama/",
                "https://proxy.lan:443/ollama/v1",
            ),
            ("[::1]:8080", "http://[::1]:8080/v1"),
            ("[::]", "http://[::1]:11434/v1"),
        ] {
            assert_eq!(ollama_base_url(host), base, "OLLAMA_HOST={host:?}");
        }
        assert_eq!(
            resolve_model("ollama:").unwrap_err().to_string(),
            "model spec 'ollama:': no model name after 'ollama:' (e.g. ollama:llama3.2)"
        );
    }
}
