//! What a handoff run keeps between steps (saved in `run.json`).

use serde::{Deserialize, Serialize};

use crate::team::Variables;

/// How the agent after a step was chosen.
pub(crate) const HOW_TOOL: &str = "tool";
/// By a `HANDOFF:` line.
pub(crate) const HOW_LINE: &str = "line";
/// By the routing fallback over the roster.
pub(crate) const HOW_ROUTER: &str = "router";
/// By `after_work_behavior`.
pub(crate) const HOW_AFTER_WORK: &str = "after_work";

/// One step of a handoff run: an agent's turn, or the user's message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct HandoffStep {
    /// `s1`, `s2`, ... in order.
    pub step_id: String,
    /// The agent that acted (`user` for the user's message).
    pub agent: String,
    /// What it wrote (a `HANDOFF:` line stays in the text).
    pub text: String,
    /// The tools it called in this step, by name (`handoff` and
    /// `set_variable` included: they are handled by the run, not run).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<String>,
    /// Workspace files it wrote.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<String>,
    /// Whether the agent itself handed off (tool or line).
    #[serde(default)]
    pub handoff_triggered: bool,
    /// The agent that acts next, if any.
    #[serde(default)]
    pub handoff_target: Option<String>,
    /// Why control passed on.
    #[serde(default)]
    pub reason: Option<String>,
    /// How the next agent was chosen: `tool`, `line`, `rule N`, `router`,
    /// `after_work`; none when the run ended after this step.
    #[serde(default)]
    pub how: Option<String>,
}

/// A handoff run between steps.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct HandoffState {
    /// The agent whose turn is next.
    pub active: String,
    /// Every step so far.
    #[serde(default)]
    pub steps: Vec<HandoffStep>,
    /// Handoffs so far (against `max_handoffs`).
    #[serde(default)]
    pub handoffs: u32,
    /// The context variables as they stand.
    #[serde(default)]
    pub variables: Variables,
    /// The last step handed off to nobody: the rules, the router and
    /// after-work decide next (again, on resume).
    #[serde(default)]
    pub routing: bool,
    /// Problems with the active agent's last handoff, shown on its next
    /// turn.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub feedback: Vec<String>,
}

impl HandoffState {
    /// The id of the next step.
    pub(crate) fn next_id(&self) -> String {
        format!("s{}", self.steps.len() + 1)
    }
}

/// The author of a user's message in the history.
pub(crate) const USER: &str = "user";
