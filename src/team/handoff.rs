//! The settings of a handoff team (`process: handoff`): the entry agent,
//! the rules that pick the next agent when one hands off to nobody, the
//! after-work behaviour and the caps. Checked against the roster and the
//! declared context variables when the team is built, each mistake at its
//! line of `team.yaml`.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::template::check_template;
use super::yaml::{Outline, Step};
use super::{AgentSpec, Process, TeamConfig, TeamError};
use crate::util::text::closest;

/// Handoffs a run may make unless `max_handoffs` says otherwise.
pub(super) const DEFAULT_MAX_HANDOFFS: u32 = 20;
/// Agent turns a run may take unless `max_turns` says otherwise.
pub(super) const DEFAULT_MAX_TURNS: u32 = 40;

/// What happens when the active agent hands off to nobody and no rule or
/// routing call picks the next one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum AfterWork {
    /// The run waits for the user's reply (status `awaiting_user`).
    #[default]
    ReturnToUser,
    /// The run ends, done, with the last answer.
    Terminate,
    /// The same agent takes another turn.
    Continue,
}

impl AfterWork {
    /// The name as `team.yaml` spells it.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            AfterWork::ReturnToUser => "return_to_user",
            AfterWork::Terminate => "terminate",
            AfterWork::Continue => "continue",
        }
    }
}

/// One handoff rule, checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HandoffRule {
    /// The agent it applies to, or `"*"` for any agent.
    pub from_agent: String,
    /// The agent to activate.
    pub to_agent: String,
    /// When it applies, in natural language; a template over the context
    /// variables. `None`: it always applies.
    pub condition: Option<String>,
    /// Higher first.
    pub priority: i64,
    /// The line of `condition:` in team.yaml, where the rule was read
    /// from one: `boardroom check` names it when the condition fails to
    /// render.
    #[serde(skip)]
    pub(crate) condition_line: Option<usize>,
}

impl HandoffRule {
    /// Whether it applies to an agent that just finished.
    #[must_use]
    pub fn applies_to(&self, agent: &str) -> bool {
        (self.from_agent == "*" || self.from_agent == agent) && self.to_agent != agent
    }
}

/// The handoff settings of a team ([`Team::handoff`](super::Team::handoff)).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct HandoffSettings {
    /// The agent that acts first.
    pub entry: String,
    /// The rules, highest priority first, ties in file order.
    pub rules: Vec<HandoffRule>,
    /// What happens when nothing picks the next agent.
    pub after_work: AfterWork,
    /// Handoffs a run may make.
    pub max_handoffs: u32,
    /// Agent turns a run may take.
    pub max_turns: u32,
}

impl HandoffSettings {
    /// The rules that apply to an agent that just finished, in the order
    /// they are tried.
    pub fn rules_from<'a>(&'a self, agent: &'a str) -> impl Iterator<Item = &'a HandoffRule> {
        self.rules.iter().filter(move |r| r.applies_to(agent))
    }
}

/// Where team.yaml is, to name lines in errors.
pub(super) struct Source<'a> {
    pub(super) path: &'a Path,
    pub(super) outline: &'a Outline,
}

/// Keys only a handoff team may use.
const HANDOFF_ONLY: &[&str] = &[
    "entry",
    "handoffs",
    "after_work_behavior",
    "max_handoffs",
    "max_turns",
];

/// Builds the handoff settings (for a handoff team) and the variables, and
/// checks every soul and condition against the declared variables.
pub(super) fn build(
    team: &str,
    config: &TeamConfig,
    agents: &[AgentSpec],
    souls_dir: Option<&Path>,
    source: Option<Source<'_>>,
) -> Result<Option<HandoffSettings>, TeamError> {
    let yaml_path = source.as_ref().map_or_else(
        || PathBuf::from(format!("team '{team}'")),
        |s| s.path.to_path_buf(),
    );
    let at = |line: Option<usize>, message: String| match (&source, line) {
        (Some(_), Some(line)) => TeamError::at(&yaml_path, line, message),
        _ => TeamError::in_file(&yaml_path, message),
    };
    let top_line = |key: &str| {
        source
            .as_ref()
            .and_then(|s| s.outline.line(&[Step::Key(key)]))
    };
    let known = config.context_variables.names();
    // Read from team.yaml, names were checked at their own line; a team
    // built in code is checked here.
    for name in &known {
        super::template::check_var_name(name).map_err(|why| {
            at(
                top_line("context_variables"),
                format!("context_variables: {why}"),
            )
        })?;
    }
    let handoff = config.process == Process::Handoff;
    if !handoff {
        let used = [
            config.entry.is_some(),
            !config.handoffs.is_empty(),
            config.after_work_behavior.is_some(),
            config.max_handoffs.is_some(),
            // A principal team caps its principal's turns with it too.
            config.max_turns.is_some() && config.process != Process::Principal,
        ];
        if let Some((key, _)) = HANDOFF_ONLY.iter().zip(used).find(|(_, u)| *u) {
            return Err(at(
                top_line(key),
                format!("'{key}' is for handoff teams: add 'process: handoff' or remove it"),
            ));
        }
    }
    // Souls are templates for a handoff team or a team with variables.
    if handoff || !config.context_variables.is_empty() {
        for agent in agents {
            check_soul(agent, souls_dir, &known)?;
        }
    }
    if !handoff {
        return Ok(None);
    }
    // In the team's order: the master first, then by name.
    // The partner talks with the user and is never on a run's roster.
    let mut sorted: Vec<&AgentSpec> = agents
        .iter()
        .filter(|a| a.role != super::AgentRole::Partner)
        .collect();
    sorted.sort_by_key(|a| (a.role != super::AgentRole::Master, a.name.as_str()));
    let names: Vec<&str> = sorted.iter().map(|a| a.name.as_str()).collect();
    let roster = names.join(", ");
    let find = |name: &str| names.iter().find(|n| n.eq_ignore_ascii_case(name)).copied();
    let unknown = |what: &str, name: &str| {
        let mut m = format!("{what}: unknown agent '{name}'");
        if let Some(s) = closest(name, &names) {
            m.push_str(&format!(" (did you mean '{s}'?)"));
        }
        m.push_str(&format!("; agents: {roster}"));
        m
    };
    let entry = match &config.entry {
        Some(e) => find(e)
            .ok_or_else(|| at(top_line("entry"), unknown("entry", e)))?
            .to_string(),
        None => agents
            .iter()
            .find(|a| a.role == super::AgentRole::Master)
            .map(|a| a.name.clone())
            .unwrap_or_default(),
    };
    let mut rules = Vec::new();
    for (i, raw) in config.handoffs.iter().enumerate() {
        let item = [Step::Key("handoffs"), Step::Item(i)];
        let line_of = |key: &str| source.as_ref().and_then(|s| s.outline.line_in(&item, key));
        let label = format!("handoffs[{}]", i + 1);
        let from = match raw.from_agent.as_deref().map(str::trim) {
            None | Some("") => {
                return Err(at(
                    line_of("from_agent"),
                    format!("{label}: missing 'from_agent' (an agent name or \"*\")"),
                ));
            }
            Some("*") => "*".to_string(),
            Some(name) => find(name)
                .ok_or_else(|| {
                    at(
                        line_of("from_agent"),
                        unknown(&format!("{label}.from_agent"), name),
                    )
                })?
                .to_string(),
        };
        let to = match raw.to_agent.as_deref().map(str::trim) {
            None | Some("") => {
                return Err(at(
                    line_of("to_agent"),
                    format!("{label}: missing 'to_agent'"),
                ));
            }
            Some(name) => find(name)
                .ok_or_else(|| {
                    at(
                        line_of("to_agent"),
                        unknown(&format!("{label}.to_agent"), name),
                    )
                })?
                .to_string(),
        };
        if from == to {
            return Err(at(
                line_of("to_agent"),
                format!(
                    "{label}: a rule from '{from}' to itself (use after_work_behavior: continue for another turn)"
                ),
            ));
        }
        let priority = match &raw.priority {
            None => 1,
            Some(serde_json::Value::Number(n)) if n.as_i64().is_some() => n.as_i64().unwrap_or(1),
            Some(other) => {
                let shown = match other {
                    serde_json::Value::String(s) => format!("'{s}'"),
                    serde_json::Value::Number(n) => n.to_string(),
                    serde_json::Value::Bool(b) => b.to_string(),
                    _ => "this value".to_string(),
                };
                return Err(at(
                    line_of("priority"),
                    format!(
                        "{label}.priority: {shown} is not a whole number (higher numbers are tried first, default 1)"
                    ),
                ));
            }
        };
        let condition = raw
            .condition
            .as_deref()
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(str::to_string);
        if let Some(c) = &condition {
            check_template(c, &known).map_err(|e| {
                at(
                    line_of("condition"),
                    format!("{label}.condition: {}", e.message()),
                )
            })?;
        }
        rules.push(HandoffRule {
            from_agent: from,
            to_agent: to,
            condition_line: condition.as_ref().and_then(|_| line_of("condition")),
            condition,
            priority,
        });
    }
    // Stable: ties keep their file order.
    rules.sort_by_key(|r| std::cmp::Reverse(r.priority));
    Ok(Some(HandoffSettings {
        entry,
        rules,
        after_work: config.after_work_behavior.unwrap_or_default(),
        max_handoffs: config.max_handoffs.unwrap_or(DEFAULT_MAX_HANDOFFS),
        max_turns: config.max_turns.unwrap_or(DEFAULT_MAX_TURNS),
    }))
}

/// A soul must be a valid template over the declared variables; the error
/// names the soul file and its line.
fn check_soul(
    agent: &AgentSpec,
    souls_dir: Option<&Path>,
    known: &[String],
) -> Result<(), TeamError> {
    let (text, path) = soul_source(agent, souls_dir);
    check_template(&text, known).map_err(|e| soul_error(path, &e))
}

/// The soul as its file holds it (read as loading reads it, a byte order
/// mark dropped), so that a template's lines are the file's, with the
/// file's path; the loaded text and `the soul of 'NAME'` when there is no
/// file or it changed since.
pub(super) fn soul_source(agent: &AgentSpec, souls_dir: Option<&Path>) -> (String, PathBuf) {
    let file = souls_dir.map(|d| d.join(format!("{}.md", agent.name)));
    let raw = file
        .as_deref()
        .and_then(|p| super::read_text(p).ok())
        .filter(|t| t.trim() == agent.soul);
    match (raw, file) {
        (Some(t), Some(p)) => (t, p),
        _ => (
            agent.soul.clone(),
            PathBuf::from(format!("the soul of '{}'", agent.name)),
        ),
    }
}

/// `SOUL:LINE: message`, or `SOUL: message` when the template names no
/// line.
pub(super) fn soul_error(path: PathBuf, e: &super::template::TemplateError) -> TeamError {
    match e.line() {
        Some(line) => TeamError::at(path, line, e.message()),
        None => TeamError::in_file(path, e.message()),
    }
}

#[cfg(test)]
#[path = "handoff_tests.rs"]
mod tests;
