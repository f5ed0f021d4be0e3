//! Agent profiles: what an agent's front matter may declare, beside its
//! settings, about how it behaves (seed 001 §4.1).
//!
//! - `prompt_segments`: the system prompt, as ordered segments, each with
//!   an optional `when:` condition and a templated `text:`; the segments
//!   whose condition holds make the agent's part of its system prompt (in
//!   place of its soul, which a segment shows with `{{ soul }}`).
//! - `toolsets`: named sets of tools; `tools:` may name a set.
//! - `flow_decider`: rules read in order after each reply, `when:` →
//!   `action:`; the first that holds decides, a rule without `when:` is
//!   the default (the last rule), and with none the turn ends.
//! - `pre_turn_observers` / `post_turn_observers`: `when:` → `inbox:`, an
//!   observation put in the agent's own inbox before its turn, or after its
//!   reply for its next turn.
//!
//! Conditions are Jinja expressions over the agent's state
//! ([`AgentState`]: `role`, `round`, `phase`, `tools_called`, `inbox`,
//! `module_status`, `modules`, `answer`, …) and the team's context
//! variables: `phase == 'review' and not tools_called`,
//! `'observation' in inbox`, `round > 1`. Texts are templates over the
//! same names. Both are checked when the agent file is read (syntax, and
//! that every name is a state name or a declared variable), with the file
//! and line of the `when:` or `text:`.

mod eval;
mod read;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use eval::AgentState;
pub(crate) use eval::{eval_check, role_name, sample_state};
pub(crate) use read::{ProfileKeys, check_profile, read_profile};

/// An agent's declarative profile; empty for an agent that declares none
/// (it behaves as the process has it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Profile {
    /// The system prompt's segments, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prompt_segments: Vec<Segment>,
    /// Named sets of tools.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub toolsets: BTreeMap<String, Vec<String>>,
    /// What follows a reply: rules in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flow_decider: Vec<FlowRule>,
    /// Observations put in the inbox before a turn.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pre_turn_observers: Vec<Observer>,
    /// Observations put in the inbox after a reply (for the next turn).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub post_turn_observers: Vec<Observer>,
}

impl Profile {
    /// Whether it declares nothing.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        *self == Profile::default()
    }

    /// One line per segment, rule and observer, as `check` lists them:
    /// `segment 2 review: when phase == 'review'`.
    #[must_use]
    pub fn describe(&self) -> Vec<String> {
        let when = |w: &Option<String>| match w {
            Some(w) => format!("when {w}"),
            None => "always".to_string(),
        };
        let mut out = Vec::new();
        for (i, s) in self.prompt_segments.iter().enumerate() {
            let name = s
                .name
                .as_deref()
                .map(|n| format!(" {n}"))
                .unwrap_or_default();
            out.push(format!("segment {}{name}: {}", i + 1, when(&s.when)));
        }
        for (name, set) in &self.toolsets {
            out.push(format!("toolset {name}: {}", set.join(", ")));
        }
        for (i, r) in self.flow_decider.iter().enumerate() {
            let cond = match &r.when {
                Some(w) => format!("when {w}"),
                None => "otherwise".to_string(),
            };
            out.push(format!("flow {}: {cond} -> {}", i + 1, r.action.as_str()));
        }
        for (kind, list) in [
            ("pre-turn", &self.pre_turn_observers),
            ("post-turn", &self.post_turn_observers),
        ] {
            for (i, o) in list.iter().enumerate() {
                let name = o
                    .name
                    .as_deref()
                    .map(|n| format!(" {n}"))
                    .unwrap_or_default();
                out.push(format!(
                    "{kind} observer {}{name}: {}",
                    i + 1,
                    when(&o.when)
                ));
            }
        }
        out
    }
}

/// Where a segment, rule or observer was written: the lines of its
/// `when:` and of its body (0 where unknown). Not part of what it is: two
/// are equal wherever they were written, and a saved team keeps no lines.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Lines(pub(crate) usize, pub(crate) usize);

impl PartialEq for Lines {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// One segment of a system prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Segment {
    /// A name for `check`'s list (`segment N` when none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// When it is part of the prompt (always when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<String>,
    /// Its text, a template over the state and the variables.
    pub text: String,
    /// The file lines of its `when:` and `text:` (0 where unknown).
    #[serde(skip)]
    pub(crate) lines: Lines,
}

/// One rule of a flow decider.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct FlowRule {
    /// When it decides (always when absent: the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<String>,
    /// What it decides.
    pub action: FlowAction,
    /// The file lines of its `when:` and `action:` (0 where unknown).
    #[serde(skip)]
    pub(crate) lines: Lines,
}

/// What follows an agent's reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FlowAction {
    /// The reply is not the turn's end: the agent is asked again (with
    /// what its inbox holds by then), to go on with its tools.
    ContinueWithTool,
    /// The reply stands: the turn ends (what every agent does without a
    /// flow decider).
    EndAgentTurn,
    /// The run stops and waits for its user; the reply is the question
    /// (`resume --message` answers it).
    AwaitUserInput,
    /// Control passes on (handoff teams: the router picks the next agent).
    Handoff,
    /// The reply is the final answer (the master of a blackboard team; the
    /// active agent of a handoff team).
    Finish,
}

impl FlowAction {
    /// Its name in a profile.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            FlowAction::ContinueWithTool => "continue_with_tool",
            FlowAction::EndAgentTurn => "end_agent_turn",
            FlowAction::AwaitUserInput => "await_user_input",
            FlowAction::Handoff => "handoff",
            FlowAction::Finish => "finish",
        }
    }
}

/// One observer: a condition and the observation it puts in the inbox.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Observer {
    /// Its name, which the observation carries (`observer N` when none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// When it fires (on every turn when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<String>,
    /// The observation's text, a template over the state and variables.
    pub inbox: String,
    /// The file lines of its `when:` and `inbox:` (0 where unknown).
    #[serde(skip)]
    pub(crate) lines: Lines,
}

#[cfg(test)]
mod tests;
