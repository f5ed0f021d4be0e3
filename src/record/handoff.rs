//! What a handoff run keeps between steps (saved in `run.json`).

use serde::{Deserialize, Serialize};

use crate::util::vars::Variables;

/// How the agent after a step was chosen. Written as `tool`, `line`,
/// `rule N`, `router` or `after_work` (in `run.json` and in `handoff`
/// events); a name this build does not know reads as
/// [`HandoffHow::Other`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HandoffHow {
    /// The agent called the `handoff` tool.
    Tool,
    /// The agent wrote a `HANDOFF:` line.
    Line,
    /// The team's handoff rule number N (from 1, in `team.yaml` order).
    Rule(usize),
    /// The routing fallback over the roster.
    Router,
    /// `after_work_behavior`.
    AfterWork,
    /// A name this build does not know (written by a newer one).
    Other(String),
}

impl HandoffHow {
    /// The how a name stands for.
    #[must_use]
    pub fn from_name(name: &str) -> HandoffHow {
        match name {
            "tool" => HandoffHow::Tool,
            "line" => HandoffHow::Line,
            "router" => HandoffHow::Router,
            "after_work" => HandoffHow::AfterWork,
            other => match other.strip_prefix("rule ").map(str::parse) {
                Some(Ok(n)) => HandoffHow::Rule(n),
                _ => HandoffHow::Other(other.to_string()),
            },
        }
    }
}

impl std::fmt::Display for HandoffHow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HandoffHow::Tool => f.write_str("tool"),
            HandoffHow::Line => f.write_str("line"),
            HandoffHow::Rule(n) => write!(f, "rule {n}"),
            HandoffHow::Router => f.write_str("router"),
            HandoffHow::AfterWork => f.write_str("after_work"),
            HandoffHow::Other(name) => f.write_str(name),
        }
    }
}

impl From<&str> for HandoffHow {
    fn from(name: &str) -> Self {
        HandoffHow::from_name(name)
    }
}

impl PartialEq<str> for HandoffHow {
    fn eq(&self, other: &str) -> bool {
        *self == HandoffHow::from_name(other)
    }
}

impl PartialEq<&str> for HandoffHow {
    fn eq(&self, other: &&str) -> bool {
        *self == HandoffHow::from_name(other)
    }
}

impl Serialize for HandoffHow {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for HandoffHow {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Ok(HandoffHow::from_name(&name))
    }
}

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
    /// How the next agent was chosen, as [`HandoffHow`] writes it (`tool`,
    /// `line`, `rule N`, `router`, `after_work`); none when the run ended
    /// after this step. [`HandoffStep::how_kind`] reads it.
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

impl HandoffStep {
    /// How the next agent was chosen, as a type.
    #[must_use]
    pub fn how_kind(&self) -> Option<HandoffHow> {
        self.how.as_deref().map(HandoffHow::from_name)
    }
}

impl HandoffState {
    /// The id of the next step.
    pub(crate) fn next_id(&self) -> String {
        format!("s{}", self.steps.len() + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 22: `how` is a type, written as the same strings; a name this
    /// build does not know still reads, and writes back the same.
    #[test]
    fn how_reads_and_writes_the_old_strings() {
        for (text, how) in [
            ("tool", HandoffHow::Tool),
            ("line", HandoffHow::Line),
            ("rule 2", HandoffHow::Rule(2)),
            ("router", HandoffHow::Router),
            ("after_work", HandoffHow::AfterWork),
            ("rule x", HandoffHow::Other("rule x".into())),
            ("by magic", HandoffHow::Other("by magic".into())),
        ] {
            let json = format!("\"{text}\"");
            let back: HandoffHow = serde_json::from_str(&json).unwrap();
            assert_eq!(back, how, "{text}");
            assert_eq!(serde_json::to_string(&back).unwrap(), json);
        }
    }
}
