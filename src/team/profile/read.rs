//! Reading a profile from an agent's front matter and checking it: the
//! syntax of every condition and text when the file is read, the names
//! they use and the actions the process has when the team is assembled.
//! Every error names the file and the line of the `when:`, `text:`,
//! `inbox:` or `action:` at fault.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::eval::{STATE_NAMES, compile};
use super::{FlowAction, FlowRule, Observer, Profile, Segment};
use crate::team::yaml::{Outline, Step};
use crate::team::{AgentRole, AgentSpec, Process, TeamError};

/// The profile keys of a front matter, as read.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ProfileKeys {
    #[serde(default)]
    pub(crate) prompt_segments: Vec<Segment>,
    #[serde(default)]
    pub(crate) toolsets: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    pub(crate) flow_decider: Vec<FlowRule>,
    #[serde(default)]
    pub(crate) pre_turn_observers: Vec<Observer>,
    #[serde(default)]
    pub(crate) post_turn_observers: Vec<Observer>,
}

/// The line of `key` of item `i` of list `list` (the item's, then the
/// list's, where the key is not there).
fn line(outline: &Outline, list: &str, i: usize, key: &str) -> usize {
    outline
        .line(&[Step::Key(list), Step::Item(i), Step::Key(key)])
        .or_else(|| outline.line(&[Step::Key(list), Step::Item(i)]))
        .or_else(|| outline.line(&[Step::Key(list)]))
        .unwrap_or(1)
}

/// The profile of an agent file, its syntax checked; `tools` has each
/// toolset it names replaced by the set's tools.
pub(crate) fn read_profile(
    path: &Path,
    outline: &Outline,
    keys: ProfileKeys,
    tools: &mut Vec<String>,
) -> Result<Profile, TeamError> {
    let ProfileKeys {
        mut prompt_segments,
        toolsets,
        mut flow_decider,
        mut pre_turn_observers,
        mut post_turn_observers,
    } = keys;
    let at = |line: usize, why: String| TeamError::at(path, line, why);
    for (i, s) in prompt_segments.iter_mut().enumerate() {
        s.lines = super::Lines(
            line(outline, "prompt_segments", i, "when"),
            line(outline, "prompt_segments", i, "text"),
        );
        syntax(s.when.as_deref(), &s.text).map_err(|(on_when, why)| {
            let l = if on_when { s.lines.0 } else { s.lines.1 };
            at(l, format!("prompt_segments[{}]: {why}", i + 1))
        })?;
    }
    for (list, observers) in [
        ("pre_turn_observers", &mut pre_turn_observers),
        ("post_turn_observers", &mut post_turn_observers),
    ] {
        for (i, o) in observers.iter_mut().enumerate() {
            o.lines = super::Lines(
                line(outline, list, i, "when"),
                line(outline, list, i, "inbox"),
            );
            syntax(o.when.as_deref(), &o.inbox).map_err(|(on_when, why)| {
                let l = if on_when { o.lines.0 } else { o.lines.1 };
                at(l, format!("{list}[{}]: {why}", i + 1))
            })?;
        }
    }
    let rules = flow_decider.len();
    for (i, r) in flow_decider.iter_mut().enumerate() {
        r.lines = super::Lines(
            line(outline, "flow_decider", i, "when"),
            line(outline, "flow_decider", i, "action"),
        );
        if let Some(when) = &r.when {
            compile_check(when)
                .map_err(|why| at(r.lines.0, format!("flow_decider[{}]: {why}", i + 1)))?;
        } else if i + 1 < rules {
            return Err(at(
                r.lines.1,
                format!(
                    "flow_decider[{}]: a rule without 'when' is the default and must come last \
                     (the rules after it would never be read)",
                    i + 1
                ),
            ));
        }
    }
    for (name, set) in &toolsets {
        let l = outline
            .line(&[Step::Key("toolsets"), Step::Key(name)])
            .unwrap_or(1);
        if set.is_empty() {
            return Err(at(l, format!("toolsets.{name}: the set is empty")));
        }
    }
    let mut expanded = Vec::new();
    for t in tools.drain(..) {
        match toolsets.get(&t) {
            Some(set) => expanded.extend(set.iter().cloned()),
            None => expanded.push(t),
        }
    }
    expanded.dedup();
    *tools = expanded;
    Ok(Profile {
        prompt_segments,
        toolsets,
        flow_decider,
        pre_turn_observers,
        post_turn_observers,
    })
}

/// Checks a condition and a text; on error, whether the condition is at
/// fault and why.
fn syntax(when: Option<&str>, text: &str) -> Result<(), (bool, String)> {
    if let Some(when) = when {
        compile_check(when).map_err(|why| (true, why))?;
    }
    crate::team::bound::check_bound(text, None).map_err(|e| (false, e.to_string()))?;
    crate::team::template::environment()
        .template_from_str(text)
        .map(|_| ())
        .map_err(|e| (false, crate::team::template::syntax_error(e).to_string()))
}

fn compile_check(when: &str) -> Result<(), String> {
    compile(when).map(|_| ()).map_err(|e| {
        format!(
            "when '{when}': {}",
            e.detail()
                .map_or_else(|| e.kind().to_string(), str::to_string)
        )
    })
}

/// Checks an agent's profile against its team: every name its conditions
/// and texts use is a state name or one of `known` (the declared
/// variables), and every action is one the process has for the agent.
///
/// # Errors
///
/// A [`TeamError`] at the line of the condition, text or action at fault.
pub(crate) fn check_profile(
    agent: &AgentSpec,
    known: &[String],
    process: Process,
) -> Result<(), TeamError> {
    let p = &agent.profile;
    let path = agent
        .source
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("agent '{}'", agent.name)));
    let at = |line: usize, why: String| TeamError::at(&path, line.max(1), why);
    let mut names: Vec<String> = known.to_vec();
    names.extend(STATE_NAMES.iter().map(|s| (*s).to_string()));
    let check = |when: Option<&str>, text: &str, lines: super::Lines, what: String| {
        if let Some(when) = when
            && let Some(name) = unknown_in_condition(when, &names)
        {
            return Err(at(
                lines.0,
                format!("{what}: when '{when}': {}", unknown(&name, &names)),
            ));
        }
        crate::team::template::check_template(text, &names).map_err(|e| {
            at(
                lines.1 + e.line().unwrap_or(1).saturating_sub(1),
                format!("{what}: {}", e.message()),
            )
        })
    };
    for (i, s) in p.prompt_segments.iter().enumerate() {
        check(
            s.when.as_deref(),
            &s.text,
            s.lines,
            format!("prompt_segments[{}]", i + 1),
        )?;
    }
    for (list, observers) in [
        ("pre_turn_observers", &p.pre_turn_observers),
        ("post_turn_observers", &p.post_turn_observers),
    ] {
        for (i, o) in observers.iter().enumerate() {
            check(
                o.when.as_deref(),
                &o.inbox,
                o.lines,
                format!("{list}[{}]", i + 1),
            )?;
        }
    }
    if process == Process::Handoff {
        // A handoff step ends by its handoff, rules and after_work_behavior.
        let (key, line) = if let Some(r) = p.flow_decider.first() {
            ("flow_decider", r.lines.0.max(r.lines.1))
        } else if let Some(o) = p.pre_turn_observers.first() {
            ("pre_turn_observers", o.lines.0.max(o.lines.1))
        } else if let Some(o) = p.post_turn_observers.first() {
            ("post_turn_observers", o.lines.0.max(o.lines.1))
        } else {
            ("", 0)
        };
        if !key.is_empty() {
            return Err(at(
                line,
                format!(
                    "{key}: not taken by a handoff team's agents (their steps end by the handoff \
                     tool, the team's handoff rules and after_work_behavior); prompt_segments \
                     and toolsets are"
                ),
            ));
        }
    }
    for (i, r) in p.flow_decider.iter().enumerate() {
        let what = format!("flow_decider[{}]", i + 1);
        check(r.when.as_deref(), "", r.lines, what.clone())?;
        if let Some(why) = unavailable(r.action, agent.role, process) {
            return Err(at(
                r.lines.1,
                format!("{what}: action '{}' {why}", r.action.as_str()),
            ));
        }
    }
    Ok(())
}

/// Why `action` is not one the process has for an agent of `role`.
fn unavailable(action: FlowAction, role: AgentRole, process: Process) -> Option<&'static str> {
    match (action, process) {
        (FlowAction::Handoff, _) => Some(
            "is not one this team's process has (a handoff team's agents hand off with the handoff tool)",
        ),
        (FlowAction::AwaitUserInput | FlowAction::Finish, Process::Blackboard)
            if role != AgentRole::Master =>
        {
            Some("is the master's in a blackboard team (a member's draft goes to the master)")
        }
        _ => None,
    }
}

/// The first name a condition uses that is neither a state name nor a
/// variable.
fn unknown_in_condition(when: &str, names: &[String]) -> Option<String> {
    let expr = compile(when).ok()?;
    let mut undeclared: Vec<String> = expr
        .undeclared_variables(false)
        .into_iter()
        .filter(|n| !names.contains(n))
        .collect();
    undeclared.sort();
    undeclared.into_iter().next()
}

fn unknown(name: &str, names: &[String]) -> String {
    let mut msg = format!("unknown name '{name}'");
    let all: Vec<&str> = names.iter().map(String::as_str).collect();
    if let Some(s) = crate::util::text::closest(name, &all) {
        msg.push_str(&format!(" (did you mean '{s}'?)"));
    }
    msg.push_str(&format!(
        " (state: {}; variables: the team's context_variables)",
        STATE_NAMES.join(", ")
    ));
    msg
}
