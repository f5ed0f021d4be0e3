//! `team.yaml`: what belongs to the team as a whole.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::model::EndpointConfig;

use super::TeamError;
use super::yaml::{Outline, Step, read_checked};

/// Keys `team.yaml` may hold.
const TEAM_KEYS: &[&str] = &[
    "name",
    "description",
    "process",
    "max_rounds",
    "max_parallel",
    "executor",
    "max_assignments_per_member",
    "models",
    "token_budget",
    "protocol",
    "mcpServers",
    "timeout",
    "entry",
    "handoffs",
    "after_work_behavior",
    "max_handoffs",
    "max_turns",
    "context_variables",
    "approve",
];

/// How the team works.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Process {
    /// Master, parallel members, challenge round, review (the default).
    #[default]
    Blackboard,
    /// One agent active at a time, passing control by handoff.
    Handoff,
    /// Common Ground: a principal manages work modules by tools and
    /// dispatches them to associates working in parallel, each handing in a
    /// JSON deliverable the principal reviews.
    Principal,
}

/// A model named in `team.yaml`: either a spec string (`sim`,
/// `sim:latency=50ms`, ...) or a table of settings.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum ModelConfig {
    /// A model spec, as `--model` takes it.
    Spec(String),
    /// Settings for an OpenAI-compatible endpoint.
    Endpoint(EndpointConfig),
}

/// A string is a spec, a mapping is an endpoint. Written by hand (not
/// `untagged`) so that a bad value inside the mapping is reported as itself,
/// at its own line, instead of "did not match any variant".
impl<'de> Deserialize<'de> for ModelConfig {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = ModelConfig;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a model spec string or a mapping of endpoint settings")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<ModelConfig, E> {
                Ok(ModelConfig::Spec(v.to_string()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<ModelConfig, A::Error> {
                EndpointConfig::from_map(map).map(ModelConfig::Endpoint)
            }
        }
        d.deserialize_any(Visitor)
    }
}

/// The contents of `team.yaml`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
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
    /// What runs a round's members: `auto` (default), `rayon` or `threads`
    /// (see [`Executor`](crate::Executor)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executor: Option<crate::record::Executor>,
    /// Assignments one member may get in one round (default 8): `ASSIGN`
    /// lines past it are dropped, and the master is told so in its next
    /// turn (a `review_decision` event's `rejected` says it too).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_assignments_per_member: Option<usize>,
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
    pub mcp_servers: BTreeMap<String, super::McpServerConfig>,
    /// Wall-clock limit of a run: `90s`, `10m`, `1h`, or seconds as a
    /// number. The run then ends with the best answer on the board.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "duration_text"
    )]
    pub timeout: Option<String>,
    /// Handoff teams: the agent that acts first (default: the master).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry: Option<String>,
    /// Handoff teams: who acts next when an agent hands off to nobody.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub handoffs: Vec<HandoffRuleConfig>,
    /// Handoff teams: what happens when no handoff and no rule applies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_work_behavior: Option<super::AfterWork>,
    /// Handoff teams: handoffs a run may make (default 20).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_handoffs: Option<u32>,
    /// Handoff teams: agent turns a run may take (default 40).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_turns: Option<u32>,
    /// Variables for `{{ name }}` templates in souls, tasks and conditions,
    /// with their defaults.
    #[serde(default, skip_serializing_if = "super::Variables::is_empty")]
    pub context_variables: super::Variables,
    /// Tool calls of any agent that wait for a person's decision before
    /// they run: tool names or globs (`workspace_write`, `remote.*`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approve: Vec<String>,
}

/// One `handoffs:` rule as written in `team.yaml` (checked into a
/// [`HandoffRule`](super::HandoffRule) when the team is built).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HandoffRuleConfig {
    /// The agent the rule applies to, or `"*"` for any.
    #[serde(default)]
    pub from_agent: Option<String>,
    /// The agent to activate.
    #[serde(default)]
    pub to_agent: Option<String>,
    /// When it applies, in natural language (a template).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
    /// Higher first (default 1); kept as written until it is checked to be
    /// a whole number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<serde_json::Value>,
}

/// `timeout: 600` and `timeout: 10m` both read as text.
fn duration_text<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let v = Option::<serde_json::Value>::deserialize(d)?;
    Ok(match v {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::String(s)) => Some(s),
        Some(other) => Some(other.to_string()),
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
        Self::load_outlined(path).map(|(config, _)| config)
    }

    /// Reads `team.yaml` and keeps its outline (the line of every key).
    pub(crate) fn load_outlined(path: &Path) -> Result<(Self, Outline), TeamError> {
        let text = super::read_text(path).map_err(|why| TeamError::in_file(path, why))?;
        let (config, outline): (TeamConfig, Outline) = read_checked(path, &text, 1, TEAM_KEYS)?;
        let at = |key: &str, message: String| {
            TeamError::at(path, outline.line(&[Step::Key(key)]).unwrap_or(1), message)
        };
        let zero = [
            ("max_rounds", config.max_rounds == Some(0)),
            ("max_parallel", config.max_parallel == Some(0)),
            (
                "max_assignments_per_member",
                config.max_assignments_per_member == Some(0),
            ),
            ("max_handoffs", config.max_handoffs == Some(0)),
            ("max_turns", config.max_turns == Some(0)),
        ];
        if let Some((key, _)) = zero.iter().find(|(_, zero)| *zero) {
            return Err(at(key, format!("{key} must be at least 1")));
        }
        if let Some(t) = &config.timeout
            && let Err(e) = crate::util::duration::parse_timeout(t)
        {
            return Err(at("timeout", format!("timeout: {e}")));
        }
        for (name, _) in config.context_variables.iter() {
            if let Err(why) = super::template::check_var_name(name) {
                let line = outline
                    .line(&[Step::Key("context_variables"), Step::Key(name)])
                    .unwrap_or(1);
                return Err(TeamError::at(
                    path,
                    line,
                    format!("context_variables: {why}"),
                ));
            }
        }
        super::approve::check_list(path, &config.approve, |i| {
            outline
                .line(&[Step::Key("approve"), Step::Item(i)])
                .or_else(|| outline.line(&[Step::Key("approve")]))
                .unwrap_or(1)
        })?;
        Ok((config, outline))
    }

    /// Assignments one member may get in one round:
    /// `max_assignments_per_member`, else
    /// [`DEFAULT_MAX_ASSIGNMENTS_PER_MEMBER`](crate::protocol::DEFAULT_MAX_ASSIGNMENTS_PER_MEMBER).
    #[must_use]
    pub fn max_assignments_per_member(&self) -> usize {
        self.max_assignments_per_member
            .unwrap_or(crate::protocol::DEFAULT_MAX_ASSIGNMENTS_PER_MEMBER)
            .max(1)
    }

    /// The run's wall-clock limit, from `timeout`.
    #[must_use]
    pub fn timeout(&self) -> Option<std::time::Duration> {
        self.timeout
            .as_deref()
            .and_then(|t| crate::util::duration::parse_timeout(t).ok())
    }
}
