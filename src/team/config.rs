//! `team.yaml`: what belongs to the team as a whole.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::TeamError;
use super::yaml::read_checked;

/// Keys `team.yaml` may hold.
const TEAM_KEYS: &[&str] = &[
    "name",
    "description",
    "process",
    "max_rounds",
    "max_parallel",
    "models",
    "token_budget",
    "protocol",
    "mcpServers",
    "timeout",
];

/// How the team works.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Process {
    /// Master, parallel members, challenge round, review (the default).
    #[default]
    Blackboard,
}

/// A model named in `team.yaml`: either a spec string (`sim`,
/// `sim:latency=50ms`, ...) or a table of settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ModelConfig {
    /// A model spec, as `--model` takes it.
    Spec(String),
    /// Settings for an OpenAI-compatible endpoint.
    Endpoint(EndpointConfig),
}

/// Settings of an OpenAI-compatible endpoint in `team.yaml`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndpointConfig {
    /// Base URL, e.g. `http://127.0.0.1:8080/v1`.
    #[serde(default)]
    pub base_url: Option<String>,
    /// The model name the server knows.
    #[serde(default)]
    pub model: Option<String>,
    /// The environment variable that holds the API key.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Per-call timeout in seconds.
    #[serde(default)]
    pub timeout: Option<f64>,
    /// Requests in flight at once to this endpoint.
    #[serde(default)]
    pub max_in_flight: Option<usize>,
    /// Whether to stream answers over SSE (default true).
    #[serde(default)]
    pub stream: Option<bool>,
}

/// The contents of `team.yaml`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TeamConfig {
    /// The team's name.
    #[serde(default)]
    pub name: Option<String>,
    /// What the team is for.
    #[serde(default)]
    pub description: Option<String>,
    /// How it works.
    #[serde(default)]
    pub process: Process,
    /// Rounds before the master must answer (default 5).
    #[serde(default)]
    pub max_rounds: Option<u32>,
    /// Members that run at once (default: all of a round).
    #[serde(default)]
    pub max_parallel: Option<usize>,
    /// Named models agents refer to by `model:`.
    #[serde(default)]
    pub models: BTreeMap<String, ModelConfig>,
    /// Tokens a run may use before it ends with the best answer so far.
    #[serde(default)]
    pub token_budget: Option<u64>,
    /// How the master and challengers write decisions: `line` or `json`.
    #[serde(default)]
    pub protocol: Option<crate::protocol::Protocol>,
    /// MCP servers, in the `mcpServers` format MCP clients share (also read
    /// from an `mcp.json` beside `team.yaml`).
    #[serde(default, rename = "mcpServers")]
    pub mcp_servers: BTreeMap<String, crate::tools::McpServerConfig>,
    /// Wall-clock limit of a run: `90s`, `10m`, `1h`, or seconds as a
    /// number. The run then ends with the best answer on the board.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "duration_text"
    )]
    pub timeout: Option<String>,
}

/// `timeout: 600` and `timeout: 10m` both read as text.
fn duration_text<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let v = Option::<serde_yaml::Value>::deserialize(d)?;
    Ok(match v {
        None | Some(serde_yaml::Value::Null) => None,
        Some(serde_yaml::Value::String(s)) => Some(s),
        Some(serde_yaml::Value::Number(n)) => Some(n.to_string()),
        Some(other) => Some(format!("{other:?}")),
    })
}

impl TeamConfig {
    /// Reads `team.yaml`.
    ///
    /// # Errors
    ///
    /// A [`TeamError`] naming the file and line of an unknown key or a bad
    /// value.
    pub fn load(path: &Path) -> Result<Self, TeamError> {
        let text = std::fs::read_to_string(path).map_err(|source| TeamError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let config: TeamConfig = read_checked(path, &text, 1, TEAM_KEYS)?;
        if config.max_rounds == Some(0) {
            let line = super::yaml::key_line(&text, 1, "max_rounds").unwrap_or(1);
            return Err(TeamError::at(path, line, "max_rounds must be at least 1"));
        }
        if config.max_parallel == Some(0) {
            let line = super::yaml::key_line(&text, 1, "max_parallel").unwrap_or(1);
            return Err(TeamError::at(path, line, "max_parallel must be at least 1"));
        }
        if let Some(t) = &config.timeout {
            if let Err(e) = crate::runtime::parse_timeout(t) {
                let line = super::yaml::key_line(&text, 1, "timeout").unwrap_or(1);
                return Err(TeamError::at(path, line, format!("timeout: {e}")));
            }
        }
        Ok(config)
    }

    /// The run's wall-clock limit, from `timeout`.
    pub fn timeout(&self) -> Option<std::time::Duration> {
        self.timeout
            .as_deref()
            .and_then(|t| crate::runtime::parse_timeout(t).ok())
    }
}
