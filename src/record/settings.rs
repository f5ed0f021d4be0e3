//! The settings a run was started with, as `run.json` keeps them.

use serde::{Deserialize, Serialize};

use super::Executor;
use crate::protocol::Protocol;

/// The settings of a run, as the runtime had them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RunSettings {
    /// The default model's name.
    pub model: String,
    /// The model spec it was built from, when the caller said
    /// (`--model`): used again on resume.
    #[serde(default)]
    pub model_spec: Option<String>,
    /// The round cap.
    pub max_rounds: u32,
    /// The cap on members at once.
    #[serde(default)]
    pub max_parallel: Option<usize>,
    /// Whether master memory was on.
    #[serde(default)]
    pub memory: bool,
    /// The token budget the caller set (`--token-budget`), if any; the team's
    /// own `token_budget` is in the saved team.
    #[serde(default)]
    pub token_budget: Option<u64>,
    /// The protocol the caller chose (`--protocol`), if any.
    #[serde(default)]
    pub protocol: Option<Protocol>,
    /// The context variables the caller set (`--var name=value`), in order:
    /// a resumed run renders its souls and task over the same values.
    #[serde(default)]
    pub vars: Vec<(String, String)>,
    /// The executor the caller chose (`--executor`), if any: a resumed run
    /// runs on it too (absent in runs saved before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executor: Option<Executor>,
}
