//! [`EndpointConfig`]: a model's endpoint as a table of settings in
//! `team.yaml` (`models: { gpt: { base_url: ..., model: ... } }`), and
//! the [`Provider`] whose API it speaks.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::{ModelSpecError, SharedModel};

/// Requests in flight to one endpoint: at least 1, at most this.
pub(crate) const MAX_IN_FLIGHT: usize = 4096;

/// The API an endpoint speaks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Provider {
    /// OpenAI's chat completions (`POST {base}/chat/completions`), as
    /// OpenAI, Ollama, llama.cpp, vLLM and many others serve it.
    #[default]
    OpenAi,
    /// Anthropic's Messages API (`POST {base}/v1/messages`).
    Anthropic,
}

impl Provider {
    /// Every provider, by the name `team.yaml` gives it.
    pub const ALL: &'static [Provider] = &[Provider::OpenAi, Provider::Anthropic];

    /// The name `team.yaml` gives it (`openai`).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::OpenAi => "openai",
            Provider::Anthropic => "anthropic",
        }
    }

    /// The names of every provider, for messages: `openai, anthropic`.
    fn known() -> String {
        Provider::ALL
            .iter()
            .map(|p| p.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn is_default(&self) -> bool {
        *self == Provider::default()
    }
}

impl std::str::FromStr for Provider {
    type Err = String;

    /// `openai`; anything else is an error naming the value and the
    /// known ones.
    fn from_str(s: &str) -> Result<Provider, String> {
        Provider::ALL
            .iter()
            .copied()
            .find(|p| p.as_str() == s.trim())
            .ok_or_else(|| format!("unknown provider '{s}' (known: {})", Provider::known()))
    }
}

impl<'de> Deserialize<'de> for Provider {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// Settings of a model's endpoint in `team.yaml`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndpointConfig {
    /// The API the endpoint speaks (default `openai`).
    #[serde(default, skip_serializing_if = "Provider::is_default")]
    pub provider: Provider,
    /// Base URL, e.g. `http://127.0.0.1:8080/v1`.
    #[serde(default)]
    pub base_url: Option<String>,
    /// The model name the server knows.
    #[serde(default)]
    pub model: Option<String>,
    /// The environment variable that holds the API key.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// The deadline of one model call in seconds, every retry and wait
    /// included (default 300; allowed 0.001 to 86400).
    #[serde(default, deserialize_with = "crate::util::duration::de_call_timeout")]
    pub timeout: Option<f64>,
    /// Requests in flight at once to this endpoint (1 to 4096).
    #[serde(default, deserialize_with = "de_max_in_flight")]
    pub max_in_flight: Option<usize>,
    /// Whether to stream answers over SSE (default true).
    #[serde(default)]
    pub stream: Option<bool>,
    /// Whether the model can call tools (default true). `false` for a
    /// server that rejects or ignores `tools`: its agents are sent none
    /// (see [`ChatModel::supports_tools`](crate::model::ChatModel::supports_tools)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<bool>,
    /// Anthropic: mark the stable start of every request (tools, system
    /// prompt) for the prompt cache (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_cache: Option<bool>,
}

/// Keys of an endpoint in `models`.
const ENDPOINT_KEYS: &[&str] = &[
    "provider",
    "base_url",
    "model",
    "api_key_env",
    "timeout",
    "max_in_flight",
    "stream",
    "tools",
    "prompt_cache",
];

impl EndpointConfig {
    /// Reads an endpoint's mapping key by key, so that an error inside a
    /// value keeps its path (`models.gpt.timeout`) and line.
    ///
    /// # Errors
    ///
    /// The map's own, an unknown key, or a value out of range.
    pub(crate) fn from_map<'de, A: serde::de::MapAccess<'de>>(
        mut map: A,
    ) -> Result<EndpointConfig, A::Error> {
        let mut c = EndpointConfig::default();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "provider" => c.provider = map.next_value()?,
                "base_url" => c.base_url = map.next_value()?,
                "model" => c.model = map.next_value()?,
                "api_key_env" => c.api_key_env = map.next_value()?,
                "timeout" => c.timeout = map.next_value::<CallTimeout>()?.0,
                "max_in_flight" => c.max_in_flight = map.next_value::<MaxInFlight>()?.0,
                "stream" => c.stream = map.next_value()?,
                "tools" => c.tools = map.next_value()?,
                "prompt_cache" => c.prompt_cache = map.next_value()?,
                other => {
                    return Err(serde::de::Error::unknown_field(other, ENDPOINT_KEYS));
                }
            }
        }
        Ok(c)
    }
}

/// Builds the model `name` configures in `team.yaml`, in its provider's
/// API.
///
/// # Errors
///
/// A [`ModelSpecError`] naming `name`, for a setting out of range.
pub(crate) fn from_endpoint(
    name: &str,
    cfg: &EndpointConfig,
) -> Result<SharedModel, ModelSpecError> {
    match cfg.provider {
        Provider::OpenAi => Ok(Arc::new(super::openai::from_endpoint(name, cfg)?)),
        Provider::Anthropic => Ok(Arc::new(super::anthropic::from_endpoint(name, cfg)?)),
    }
}

struct CallTimeout(Option<f64>);

impl<'de> Deserialize<'de> for CallTimeout {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        crate::util::duration::de_call_timeout(d).map(CallTimeout)
    }
}

struct MaxInFlight(Option<usize>);

impl<'de> Deserialize<'de> for MaxInFlight {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        de_max_in_flight(d).map(MaxInFlight)
    }
}

fn de_max_in_flight<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    /// Checks inside the deserializer's call, so the error has its line.
    struct V;
    impl<'de> serde::de::Visitor<'de> for V {
        type Value = Option<usize>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "a number from 1 to {MAX_IN_FLIGHT}")
        }
        fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_i64(self)
        }
        fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<Self::Value, E> {
            match usize::try_from(n) {
                Ok(n) if (1..=MAX_IN_FLIGHT).contains(&n) => Ok(Some(n)),
                _ => Err(E::custom(format!(
                    "{n} is out of range (allowed 1 to {MAX_IN_FLIGHT})"
                ))),
            }
        }
        fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<Self::Value, E> {
            match usize::try_from(n) {
                Ok(n) if (1..=MAX_IN_FLIGHT).contains(&n) => Ok(Some(n)),
                _ => Err(E::custom(format!(
                    "{n} is out of range (allowed 1 to {MAX_IN_FLIGHT})"
                ))),
            }
        }
    }
    d.deserialize_option(V)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_provider_names_itself_and_the_known_ones() {
        assert_eq!("openai".parse::<Provider>(), Ok(Provider::OpenAi));
        assert_eq!("anthropic".parse::<Provider>(), Ok(Provider::Anthropic));
        assert_eq!(
            "gemini".parse::<Provider>().unwrap_err(),
            "unknown provider 'gemini' (known: openai, anthropic)"
        );
    }
}
