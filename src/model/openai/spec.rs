//! OpenAI-compatible models from specs and from `team.yaml` endpoints:
//!
//! - `openai` or `openai:gpt-4o-mini`: `OPENAI_BASE_URL` (default the
//!   OpenAI API) with `OPENAI_API_KEY`;
//! - `http://127.0.0.1:8080/v1#model` or `https://...`: that endpoint;
//! - options after a comma: `openai:gpt-4o-mini,stream=false,max_in_flight=4,
//!   timeout=30s,key_env=MY_KEY,tools=false`.

use super::{OpenAi, OpenAiBuilder, env_base_url, env_model, redact_url};
use crate::model::{EndpointConfig, ModelSpecError};
use crate::util::duration::CALL_TIMEOUT;

/// Builds the model a spec names (`openai:...`, `http://...`, `https://...`).
#[cfg(test)]
pub(crate) fn from_spec(spec: &str) -> Result<OpenAi, ModelSpecError> {
    builder_from_spec(spec)?
        .build()
        .map_err(|e| ModelSpecError {
            spec: redact_url(spec),
            detail: e.detail,
        })
}

/// The settings a spec names (`openai:...`, `http://...`, `https://...`),
/// not yet checked: [`OpenAiBuilder::build`] does that.
pub(crate) fn builder_from_spec(spec: &str) -> Result<OpenAiBuilder, ModelSpecError> {
    let err = |detail: String| ModelSpecError {
        spec: redact_url(spec),
        detail,
    };
    let (head, options) = match spec.find(',') {
        Some(at) => (&spec[..at], &spec[at + 1..]),
        None => (spec, ""),
    };
    let builder = if let Some(model) = head.strip_prefix("openai") {
        let model = model.strip_prefix(':').unwrap_or(model).trim();
        let model = if model.is_empty() {
            env_model()
        } else {
            model.to_string()
        };
        OpenAi::builder(env_base_url(), model.clone()).label(format!("openai:{model}"))
    } else {
        let (url, model) = head.split_once('#').unwrap_or((head, ""));
        let model = if model.trim().is_empty() {
            env_model()
        } else {
            model.trim().to_string()
        };
        OpenAi::builder(url, model).label(redact_url(head))
    };
    apply_options(builder, options).map_err(err)
}

fn apply_options(mut b: OpenAiBuilder, options: &str) -> Result<OpenAiBuilder, String> {
    for part in options.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (key, value) = part.split_once('=').unwrap_or((part, ""));
        b = match key {
            "stream" => b.stream(parse_bool("stream", value)?),
            "tools" => b.tools(parse_bool("tools", value)?),
            "max_in_flight" => b.max_in_flight(
                value
                    .trim()
                    .parse()
                    .ok()
                    .filter(|n| (1..=crate::model::endpoint::MAX_IN_FLIGHT).contains(n))
                    .ok_or_else(|| {
                        format!(
                            "max_in_flight: '{value}' is out of range (allowed 1 to {})",
                            crate::model::endpoint::MAX_IN_FLIGHT
                        )
                    })?,
            ),
            "timeout" => b.timeout(CALL_TIMEOUT.parse("timeout", value)?),
            "key_env" if !value.is_empty() => b.api_key_env(value),
            _ => {
                return Err(format!(
                    "unknown option '{part}' (known: stream=BOOL, max_in_flight=N, timeout=DUR, key_env=VAR, tools=BOOL)"
                ));
            }
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

/// Builds the model `name` configures in `team.yaml`.
pub(crate) fn from_endpoint(name: &str, cfg: &EndpointConfig) -> Result<OpenAi, ModelSpecError> {
    let base = cfg.base_url.clone().unwrap_or_else(env_base_url);
    let model = cfg.model.clone().unwrap_or_else(env_model);
    let mut b = OpenAi::builder(base, model)
        .label(name)
        .api_key_env(cfg.api_key_env.as_deref().unwrap_or("OPENAI_API_KEY"));
    if let Some(t) = cfg.timeout {
        let t = CALL_TIMEOUT
            .check_secs_f64("timeout", t)
            .map_err(|detail| ModelSpecError {
                spec: name.to_string(),
                detail,
            })?;
        b = b.timeout(t);
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
    b.build().map_err(|e| ModelSpecError {
        spec: name.to_string(),
        detail: e.detail,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ChatModel;

    #[test]
    fn specs() {
        let m = from_spec("http://127.0.0.1:8080/v1#gemma,stream=false,max_in_flight=3").unwrap();
        assert_eq!(m.name(), "http://127.0.0.1:8080/v1#gemma");
        assert_eq!(m.inner.client.model, "gemma");
        assert!(!m.inner.client.stream);
        assert_eq!(m.max_in_flight(), 3);
        assert_eq!(
            m.inner.client.url,
            "http://127.0.0.1:8080/v1/chat/completions"
        );
        let m = from_spec("openai:gpt-4o-mini").unwrap();
        assert_eq!(m.name(), "openai:gpt-4o-mini");
        assert_eq!(
            from_spec("openai:x,strem=no").unwrap_err().to_string(),
            "model spec 'openai:x,strem=no': unknown option 'strem=no' \
             (known: stream=BOOL, max_in_flight=N, timeout=DUR, key_env=VAR, tools=BOOL)"
        );
        let cfg = EndpointConfig {
            base_url: Some("http://127.0.0.1:1/v1/".into()),
            model: Some("m".into()),
            max_in_flight: Some(2),
            stream: Some(false),
            ..EndpointConfig::default()
        };
        let m = from_endpoint("default", &cfg).unwrap();
        assert_eq!(m.name(), "default");
        assert_eq!(m.inner.client.url, "http://127.0.0.1:1/v1/chat/completions");
        assert_eq!(m.max_in_flight(), 2);
    }

    /// Issue 15: every way of leaving the model out ends at the same model
    /// (`OPENAI_MODEL`, read in one place, with one default).
    #[test]
    fn an_unnamed_model_is_the_same_everywhere() {
        let expected = super::env_model();
        assert_eq!(from_spec("openai").unwrap().inner.client.model, expected);
        assert_eq!(from_spec("openai:").unwrap().inner.client.model, expected);
        assert_eq!(
            from_spec("http://127.0.0.1:1/v1")
                .unwrap()
                .inner
                .client
                .model,
            expected
        );
        assert_eq!(
            from_spec("http://127.0.0.1:1/v1#")
                .unwrap()
                .inner
                .client
                .model,
            expected
        );
        let cfg = EndpointConfig::default();
        assert_eq!(
            from_endpoint("e", &cfg).unwrap().inner.client.model,
            expected
        );
        assert_eq!(OpenAi::from_env().unwrap().inner.client.model, expected);
    }
}
