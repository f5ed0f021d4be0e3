//! Which model each agent uses: its `model:` names a model in `team.yaml`,
//! or is a spec; otherwise (or `default`) it uses the runtime's default,
//! which the caller builds (the CLI: `--model`, `BOARDROOM_MODEL`, then
//! `team.yaml`'s `default`, then `sim`).

use std::collections::HashMap;
use std::sync::Arc;

use crate::connect::resolve_model;
use crate::model::{ModelSpecError, SharedModel};
use crate::team::{ModelConfig, Team};

impl Team {
    /// Builds the model `name` names: a model in `team.yaml`, or a spec.
    ///
    /// # Errors
    ///
    /// A [`ModelSpecError`] when the spec cannot be understood.
    pub fn model(&self, name: &str) -> Result<SharedModel, ModelSpecError> {
        build(self, name)
    }
}

/// Resolves every agent's model once per run; agents naming the same model
/// share one instance (and so its limits).
pub(crate) fn resolve_agents(
    team: &Team,
    default: &SharedModel,
) -> Result<HashMap<String, SharedModel>, (String, ModelSpecError)> {
    let mut by_name: HashMap<String, SharedModel> = HashMap::new();
    let mut out = HashMap::new();
    for agent in team.agents() {
        let model = match agent.model.as_deref() {
            _ if agent.chat_model.is_some() => {
                Arc::clone(agent.chat_model.as_ref().map_or(default, |m| &m.0))
            }
            None | Some("default") => Arc::clone(default),
            Some(name) => match by_name.get(name) {
                Some(m) => Arc::clone(m),
                None => {
                    let m = build(team, name).map_err(|e| (agent.name.clone(), e))?;
                    by_name.insert(name.to_string(), Arc::clone(&m));
                    m
                }
            },
        };
        out.insert(agent.name.clone(), model);
    }
    Ok(out)
}

fn build(team: &Team, name: &str) -> Result<SharedModel, ModelSpecError> {
    match team.config().models.get(name) {
        Some(ModelConfig::Spec(spec)) => resolve_model(spec),
        Some(ModelConfig::Endpoint(cfg)) => crate::model::from_endpoint(name, cfg),
        None => resolve_model(name).map_err(|e| match did_you_mean(team, name) {
            Some(hint) => ModelSpecError {
                detail: format!("{} ({hint})", e.detail),
                ..e
            },
            None => e,
        }),
    }
}

/// For a plain word that is neither a model in `team.yaml` nor a provider:
/// the closest name it could have meant.
fn did_you_mean(team: &Team, name: &str) -> Option<String> {
    if name.contains([':', '/', '#', ',']) {
        return None;
    }
    let mut known: Vec<&str> = team.config().models.keys().map(String::as_str).collect();
    known.extend(["default", "sim", "openai"]);
    crate::util::text::closest(name, &known).map(|c| format!("did you mean '{c}'?"))
}
