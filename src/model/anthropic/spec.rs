//! Anthropic models from specs and from `team.yaml` endpoints:
//!
//! - `anthropic:claude-sonnet-4-5`, `anthropic/claude-…` or a bare
//!   `claude-…` name: `ANTHROPIC_BASE_URL` (default the Anthropic API)
//!   with `ANTHROPIC_API_KEY`;
//! - options after a comma: `claude-sonnet-4-5,stream=false,cache=true,
//!   max_tokens=8192,max_in_flight=4,timeout=30s,key_env=MY_KEY,tools=false`.

use super::{Anthropic, AnthropicBuilder, env_base_url};
use crate::model::endpoint::MAX_IN_FLIGHT;
use crate::model::{EndpointConfig, ModelSpecError};
use crate::util::duration::CALL_TIMEOUT;

/// The options a spec may give, for the message about one it may not.
const KNOWN: &str = "stream=BOOL, cache=BOOL, max_tokens=N, max_in_flight=N, timeout=DUR, \
     key_env=VAR, tools=BOOL";

/// The settings `anthropic:MODEL,OPTIONS` names; errors name `spec`.
pub(crate) fn builder_from_spec(
    model: &str,
    options: &str,
    spec: &str,
) -> Result<AnthropicBuilder, ModelSpecError> {
    let err = |detail: String| ModelSpecError {
        spec: crate::model::redact_url(spec),
        detail,
    };
    let model = model.trim();
    if model.is_empty() {
        return Err(err(
            "no model name after 'anthropic:' (e.g. anthropic:claude-sonnet-4-5)".into(),
        ));
    }
    let b = Anthropic::builder(model);
    apply_options(b, options).map_err(err)
}

fn apply_options(mut b: AnthropicBuilder, options: &str) -> Result<AnthropicBuilder, String> {
    for part in options.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (key, value) = part.split_once('=').unwrap_or((part, ""));
        b = match key {
            "stream" => b.stream(parse_bool("stream", value)?),
            "tools" => b.tools(parse_bool("tools", value)?),
            "cache" => b.prompt_cache(parse_bool("cache", value)?),
            "max_tokens" => b.max_tokens(
                value
                    .trim()
                    .parse()
                    .ok()
                    .filter(|n| *n >= 1)
                    .ok_or_else(|| format!("max_tokens: '{value}' is not a positive number"))?,
            ),
            "max_in_flight" => b.max_in_flight(
                value
                    .trim()
                    .parse()
                    .ok()
                    .filter(|n| (1..=MAX_IN_FLIGHT).contains(n))
                    .ok_or_else(|| {
                        format!("max_in_flight: '{value}' is out of range (allowed 1 to {MAX_IN_FLIGHT})")
                    })?,
            ),
            "timeout" => b.timeout(CALL_TIMEOUT.parse("timeout", value)?),
            "key_env" if !value.is_empty() => b.api_key_env(value),
            _ => return Err(format!("unknown option '{part}' (known: {KNOWN})")),
        };
    }
    Ok(b)
}

fn parse_bool(key: &str, v: &str) -> Result<bool, String> {
    match v.trim() {
        "true" | "on" | "yes" | "1" | "" => Ok(true),
        "false" | "off" | "no" | "0" => Ok(false),
        other => Err(format!(
            "{key}: '{other}' is not true or false (allowed true, false, on, off, yes, no, 1, 0)"
        )),
    }
}

/// Builds the model `name` configures in `team.yaml` with `provider:
/// anthropic`.
pub(crate) fn from_endpoint(name: &str, cfg: &EndpointConfig) -> Result<Anthropic, ModelSpecError> {
    let err = |detail: String| ModelSpecError {
        spec: name.to_string(),
        detail,
    };
    let Some(model) = cfg.model.as_deref().filter(|m| !m.trim().is_empty()) else {
        return Err(err(
            "an anthropic endpoint needs its model (e.g. model: claude-sonnet-4-5)".into(),
        ));
    };
    let mut b = Anthropic::builder(model)
        .label(name)
        .base_url(cfg.base_url.clone().unwrap_or_else(env_base_url))
        .api_key_env(cfg.api_key_env.as_deref().unwrap_or("ANTHROPIC_API_KEY"));
    if let Some(t) = cfg.timeout {
        b = b.timeout(CALL_TIMEOUT.check_secs_f64("timeout", t).map_err(err)?);
    }
    if let Some(n) = cfg.max_in_flight {
        b = b.max_in_flight(n);
    }
    if let Some(s) = cfg.stream {
        b = b.stream(s);
    }
    if let Some(t) = cfg.tools {
        b = b.tools(t);
    }
    if let Some(c) = cfg.prompt_cache {
        b = b.prompt_cache(c);
    }
    b.build().map_err(|e| err(e.detail))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ChatModel, Provider};

    #[test]
    fn specs_and_endpoints() {
        let m = builder_from_spec("claude-x", "stream=false,cache=true,max_tokens=99", "s")
            .unwrap()
            .base_url("http://127.0.0.1:1")
            .build()
            .unwrap();
        assert_eq!(m.name(), "anthropic:claude-x");
        assert!(!m.inner.client.stream && m.inner.cache);
        assert_eq!(m.inner.max_tokens, 99);
        assert_eq!(
            builder_from_spec("claude-x", "strem=no", "claude-x,strem=no")
                .unwrap_err()
                .to_string(),
            format!("model spec 'claude-x,strem=no': unknown option 'strem=no' (known: {KNOWN})")
        );
        let cfg = EndpointConfig {
            provider: Provider::Anthropic,
            base_url: Some("http://127.0.0.1:1/".into()),
            model: Some("claude-y".into()),
            prompt_cache: Some(true),
            ..EndpointConfig::default()
        };
        let m = from_endpoint("fast", &cfg).unwrap();
        assert_eq!(m.name(), "fast");
        assert_eq!(m.inner.client.url, "http://127.0.0.1:1/v1/messages");
        assert_eq!(m.inner.client.key_env, "ANTHROPIC_API_KEY");
        assert!(m.inner.cache);
        let none = EndpointConfig {
            provider: Provider::Anthropic,
            ..EndpointConfig::default()
        };
        assert_eq!(
            from_endpoint("fast", &none).unwrap_err().to_string(),
            "model spec 'fast': an anthropic endpoint needs its model (e.g. model: claude-sonnet-4-5)"
        );
    }
}
