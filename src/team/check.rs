//! `check_models`: every model an agent can use is built (no network), so
//! that a bad spec or endpoint is reported at its file and line before a
//! run starts, by `boardroom check` as by `boardroom run`.

use std::path::{Path, PathBuf};

use super::template::{Variables, render};
use super::yaml::{self, Step};
use super::{ModelConfig, Process, Team, TeamError};

impl Team {
    /// Builds every model in `team.yaml`'s `models` and every model an
    /// agent names with `model:` (a name from `models` or a spec).
    ///
    /// # Errors
    ///
    /// A [`TeamError`] naming the file and line of the first model that
    /// cannot be built, and why.
    pub fn check_models(&self) -> Result<(), TeamError> {
        let team_yaml = self.dir().map(|d| d.join("team.yaml"));
        for (name, cfg) in &self.config().models {
            if let Err(e) = self.model(name) {
                let detail = match cfg {
                    ModelConfig::Spec(_) => e.to_string(),
                    ModelConfig::Endpoint(_) => e.detail,
                };
                return Err(at_model(team_yaml.as_deref(), name, detail));
            }
        }
        for agent in self.agents() {
            let Some(model) = agent.model.as_deref() else {
                continue;
            };
            if model == "default" || self.config().models.contains_key(model) {
                continue;
            }
            if let Err(e) = self.model(model) {
                let mut detail = e.to_string();
                if !model.contains([':', ',']) && !detail.contains("did you mean") {
                    let known: Vec<&str> =
                        self.config().models.keys().map(String::as_str).collect();
                    detail.push_str(&if known.is_empty() {
                        " (no models are named in team.yaml)".to_string()
                    } else {
                        format!(" (models named in team.yaml: {})", known.join(", "))
                    });
                }
                let path = agent
                    .source
                    .clone()
                    .unwrap_or_else(|| PathBuf::from(format!("agent '{}'", agent.name)));
                let line = front_matter_line(&path, "model").unwrap_or(1);
                return Err(TeamError::at(path, line, format!("model: {detail}")));
            }
        }
        Ok(())
    }

    /// Renders every template `run` renders, with the declared defaults
    /// (a variable declared without a value stands as `<name>`, as a
    /// `--var` would give): each soul of a handoff team or of a team with
    /// context variables, and each handoff condition. Loading checked
    /// that they parse and name only declared variables; this finds what
    /// fails only when rendered (an unknown filter, a division by zero).
    ///
    /// # Errors
    ///
    /// A [`TeamError`] for the first template that fails: the soul file
    /// and the template's line, or team.yaml and the line of the rule's
    /// `condition:` (the file alone where no line is known).
    pub fn check_templates(&self) -> Result<(), TeamError> {
        self.check_profiles()?;
        let handoff = self.config().process == Process::Handoff;
        if !handoff && self.variables().is_empty() {
            return Ok(());
        }
        let vars = check_values(self);
        let souls = self.dir().map(|d| d.join("souls"));
        for agent in self.agents() {
            let (text, path) = super::handoff::soul_source(agent, souls.as_deref());
            render(&text, &vars).map_err(|e| super::handoff::soul_error(path, &e))?;
        }
        let Some(settings) = self.handoff() else {
            return Ok(());
        };
        let yaml = self.dir().map(|d| d.join("team.yaml"));
        for rule in &settings.rules {
            let Some(condition) = &rule.condition else {
                continue;
            };
            if let Err(e) = render(condition, &vars) {
                let message = format!(
                    "{} (handoff rule {} → {})",
                    e.message(),
                    rule.from_agent,
                    rule.to_agent
                );
                let path = yaml
                    .clone()
                    .unwrap_or_else(|| PathBuf::from("a handoff rule's condition"));
                return Err(match (&yaml, rule.condition_line) {
                    (Some(_), Some(line)) => TeamError::at(path, line, message),
                    _ => TeamError::in_file(path, message),
                });
            }
        }
        Ok(())
    }
}

impl Team {
    /// Judges every condition and renders every text of every agent's
    /// profile over a sample state and the declared defaults: what fails
    /// only when rendered (an unknown filter, a comparison of a number
    /// with a text) is found before a run (`check` and `run` call it).
    ///
    /// # Errors
    ///
    /// A [`TeamError`] at the agent file's line of the first condition or
    /// text that fails.
    pub fn check_profiles(&self) -> Result<(), TeamError> {
        use super::profile::eval_check;
        let vars = check_values(self);
        for agent in self.agents() {
            if agent.profile.is_empty() {
                continue;
            }
            let role = super::role_name(agent.role);
            let state = super::profile::sample_state(&agent.name, role, vars.clone());
            if let Err((line, why)) = eval_check(&agent.profile, &state) {
                let path = agent
                    .source
                    .clone()
                    .unwrap_or_else(|| PathBuf::from(format!("agent '{}'", agent.name)));
                return Err(TeamError::at(path, line.max(1), why));
            }
        }
        Ok(())
    }
}

/// The team's variables as `check_templates` renders with them: each
/// declared default, and for one declared without a value (`null`) a
/// placeholder text, `<name>`.
fn check_values(team: &Team) -> Variables {
    Variables::declare(team.variables().iter().map(|(name, value)| {
        let value = if value.is_null() {
            serde_json::Value::String(format!("<{name}>"))
        } else {
            value.clone()
        };
        (name.to_string(), value)
    }))
}

/// `team.yaml:LINE: models.NAME: detail`, at the line of `NAME:`.
fn at_model(team_yaml: Option<&Path>, name: &str, detail: String) -> TeamError {
    let message = format!("models.{name}: {detail}");
    match team_yaml {
        Some(path) => {
            let line = super::read_text(path)
                .ok()
                .and_then(|text| yaml::Outline::parse(path, &text, 1).ok())
                .and_then(|o| o.line(&[Step::Key("models"), Step::Key(name)]));
            match line {
                Some(line) => TeamError::at(path, line, message),
                None => TeamError::in_file(path, message),
            }
        }
        None => TeamError::in_file("team config", message),
    }
}

/// The file line of the item `item` in the list under top-level `key` of
/// an agent file's front matter (the key's line if the item is not there).
pub(crate) fn front_matter_item_line(path: &Path, key: &str, item: &str) -> Option<usize> {
    let text = super::read_text(path).ok()?;
    let (front, first, _) = super::split_front_matter(path, &text).ok()?;
    yaml::Outline::parse(path, &front, first)
        .ok()?
        .item_line(&[Step::Key(key)], item)
}

/// The file line of top-level `key` in an agent file's front matter.
pub(super) fn front_matter_line(path: &Path, key: &str) -> Option<usize> {
    let text = super::read_text(path).ok()?;
    let (front, first, _) = super::split_front_matter(path, &text).ok()?;
    yaml::Outline::parse(path, &front, first)
        .ok()?
        .line(&[Step::Key(key)])
}
