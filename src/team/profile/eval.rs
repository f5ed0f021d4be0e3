//! A profile at work: its conditions judged and its texts rendered over
//! the agent's state.
//!
//! A condition or text that fails at run time (a comparison of a number
//! with a text, say) is logged as a warning and counts as not holding:
//! `check` renders every one over sample values first, so this is rare,
//! and a profile's slip must not end a run.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use minijinja::Value;

use super::{FlowAction, Observer, Profile};
use crate::team::template::{Variables, environment, render_with, to_template_value};

/// The names a condition or text may use besides the team's variables.
pub(crate) const STATE_NAMES: &[&str] = &[
    "agent",
    "role",
    "round",
    "phase",
    "tools_called",
    "inbox",
    "module_status",
    "modules",
    "answer",
    "soul",
];

/// A role as conditions name it: `master`, `member`, `partner`.
pub(crate) fn role_name(role: crate::team::AgentRole) -> &'static str {
    match role {
        crate::team::AgentRole::Master => "master",
        crate::team::AgentRole::Partner => "partner",
        _ => "member",
    }
}

/// The environment every condition compiles in (strict, with fuel).
static ENV: LazyLock<minijinja::Environment<'static>> = LazyLock::new(environment);

/// A condition compiled.
pub(crate) fn compile(
    when: &str,
) -> Result<minijinja::Expression<'static, 'static>, minijinja::Error> {
    ENV.compile_expression_owned(when.to_string())
}

/// What an agent's conditions and texts read: its state at a turn, and the
/// team's context variables (a state name wins over a variable of the
/// same name).
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct AgentState {
    /// The agent's name.
    pub agent: String,
    /// `master`, `member` or `partner`.
    pub role: String,
    /// The round (blackboard) or step (handoff); 0 while planning.
    pub round: u32,
    /// `plan`, `draft`, `challenge`, `review`, `final`, `step`, ….
    pub phase: String,
    /// The tools the agent called: in its last turn before a turn, in the
    /// reply after it (flow decider, post-turn observers).
    pub tools_called: Vec<String>,
    /// The kinds of the items waiting in its inbox (`observation`, …).
    pub inbox: Vec<String>,
    /// The status of the work module the turn works on (`""` for none).
    pub module_status: String,
    /// How many work modules have each status (`pending`, `ongoing`, ...).
    pub modules: BTreeMap<String, u32>,
    /// The reply (flow decider, post-turn observers; `""` before).
    pub answer: String,
    /// The soul file's text (with the agent file's notes below it).
    pub soul: String,
    /// The team's context variables.
    pub vars: Variables,
}

impl AgentState {
    fn context(&self) -> Value {
        let mut pairs: Vec<(String, Value)> = self
            .vars
            .iter()
            .map(|(n, v)| (n.to_string(), to_template_value(v)))
            .collect();
        pairs.retain(|(n, _)| !STATE_NAMES.contains(&n.as_str()));
        pairs.extend([
            ("agent".to_string(), Value::from(self.agent.as_str())),
            ("role".to_string(), Value::from(self.role.as_str())),
            ("round".to_string(), Value::from(self.round)),
            ("phase".to_string(), Value::from(self.phase.as_str())),
            (
                "tools_called".to_string(),
                Value::from(self.tools_called.clone()),
            ),
            ("inbox".to_string(), Value::from(self.inbox.clone())),
            (
                "module_status".to_string(),
                Value::from(self.module_status.as_str()),
            ),
            (
                "modules".to_string(),
                Value::from_object(
                    self.modules
                        .iter()
                        .map(|(k, v)| (Value::from(k.as_str()), Value::from(*v)))
                        .collect::<BTreeMap<Value, Value>>(),
                ),
            ),
            ("answer".to_string(), Value::from(self.answer.as_str())),
            ("soul".to_string(), Value::from(self.soul.as_str())),
        ]);
        Value::from_object(
            pairs
                .into_iter()
                .map(|(k, v)| (Value::from(k), v))
                .collect::<BTreeMap<Value, Value>>(),
        )
    }
}

/// Whether `when` holds (an absent condition always does).
///
/// # Errors
///
/// Why it could not be judged.
pub(crate) fn holds(when: Option<&str>, ctx: &Value) -> Result<bool, String> {
    let Some(when) = when else {
        return Ok(true);
    };
    let expr = compile(when).map_err(|e| e.to_string())?;
    expr.eval(ctx.clone())
        .map(|v| v.is_true())
        .map_err(|e| format!("when '{when}': {e}"))
}

/// Renders a text over the state.
///
/// # Errors
///
/// Why it could not be rendered.
pub(crate) fn render_text(text: &str, ctx: &Value) -> Result<String, String> {
    render_with(text, ctx.clone()).map_err(|e| e.to_string())
}

impl Profile {
    /// The texts of the segments that hold for `state`, rendered, in
    /// order; `None` when the profile declares no segments (the process's
    /// own prompt stands).
    #[must_use]
    pub fn system_prompt(&self, state: &AgentState) -> Option<String> {
        if self.prompt_segments.is_empty() {
            return None;
        }
        let ctx = state.context();
        let mut parts = Vec::new();
        for (i, s) in self.prompt_segments.iter().enumerate() {
            let rendered = holds(s.when.as_deref(), &ctx)
                .and_then(|h| h.then(|| render_text(&s.text, &ctx)).transpose());
            match rendered {
                Ok(Some(text)) if !text.trim().is_empty() => parts.push(text.trim().to_string()),
                Ok(_) => {}
                Err(e) => log::warn!("{}: prompt_segments[{}]: {e}", state.agent, i + 1),
            }
        }
        Some(parts.join("\n\n"))
    }

    /// What follows a reply: the action of the first rule that holds, or
    /// `end_agent_turn`.
    #[must_use]
    pub fn decide(&self, state: &AgentState) -> FlowAction {
        let ctx = state.context();
        for (i, r) in self.flow_decider.iter().enumerate() {
            match holds(r.when.as_deref(), &ctx) {
                Ok(true) => return r.action,
                Ok(false) => {}
                Err(e) => log::warn!("{}: flow_decider[{}]: {e}", state.agent, i + 1),
            }
        }
        FlowAction::EndAgentTurn
    }

    /// The observations of the pre-turn observers that fire for `state`:
    /// (observer, text).
    #[must_use]
    pub fn before_turn(&self, state: &AgentState) -> Vec<(String, String)> {
        fire(&self.pre_turn_observers, "pre_turn_observers", state)
    }

    /// The observations of the post-turn observers that fire for `state`
    /// (the reply in `answer` and `tools_called`).
    #[must_use]
    pub fn after_turn(&self, state: &AgentState) -> Vec<(String, String)> {
        fire(&self.post_turn_observers, "post_turn_observers", state)
    }
}

fn fire(observers: &[Observer], list: &str, state: &AgentState) -> Vec<(String, String)> {
    if observers.is_empty() {
        return Vec::new();
    }
    let ctx = state.context();
    let mut out = Vec::new();
    for (i, o) in observers.iter().enumerate() {
        let name = o
            .name
            .clone()
            .unwrap_or_else(|| format!("{list}[{}]", i + 1));
        match holds(o.when.as_deref(), &ctx)
            .and_then(|h| h.then(|| render_text(&o.inbox, &ctx)).transpose())
        {
            Ok(Some(text)) => out.push((name, text.trim().to_string())),
            Ok(None) => {}
            Err(e) => log::warn!("{}: {name}: {e}", state.agent),
        }
    }
    out
}

/// A state with a sample value for every name (`check` renders each text
/// and judges each condition with it).
pub(crate) fn sample_state(agent: &str, role: &str, vars: Variables) -> AgentState {
    AgentState {
        agent: agent.to_string(),
        role: role.to_string(),
        round: 1,
        phase: "draft".into(),
        tools_called: vec!["workspace_read".into()],
        inbox: vec!["observation".into()],
        module_status: "ongoing".into(),
        modules: BTreeMap::from([("pending".into(), 1), ("completed".into(), 1)]),
        answer: "(the reply)".into(),
        soul: "(the soul)".into(),
        vars,
    }
}

/// Judges every condition and renders every text of `profile` over
/// `state`: the line and the error of the first that fails.
pub(crate) fn eval_check(profile: &Profile, state: &AgentState) -> Result<(), (usize, String)> {
    let ctx = state.context();
    let both = |when: &Option<String>, text: &str, lines: super::Lines, what: String| {
        holds(when.as_deref(), &ctx).map_err(|e| (lines.0, format!("{what}: {e}")))?;
        render_text(text, &ctx).map_err(|e| (lines.1, format!("{what}: {e}")))?;
        Ok(())
    };
    for (i, s) in profile.prompt_segments.iter().enumerate() {
        both(
            &s.when,
            &s.text,
            s.lines,
            format!("prompt_segments[{}]", i + 1),
        )?;
    }
    for (list, observers) in [
        ("pre_turn_observers", &profile.pre_turn_observers),
        ("post_turn_observers", &profile.post_turn_observers),
    ] {
        for (i, o) in observers.iter().enumerate() {
            both(&o.when, &o.inbox, o.lines, format!("{list}[{}]", i + 1))?;
        }
    }
    for (i, r) in profile.flow_decider.iter().enumerate() {
        both(&r.when, "", r.lines, format!("flow_decider[{}]", i + 1))?;
    }
    Ok(())
}
