//! `check` renders a team's templates as `run` would: a soul or a handoff
//! condition that parses but fails when rendered (an unknown filter, a
//! division by zero, a loop that runs out of fuel) is bad input at its
//! FILE:LINE before any run, not a failed run.

use std::path::{Path, PathBuf};

use boardroom::Process;
use boardroom::Team;
use boardroom::template::{TemplateError, Variables, render};

/// The team's variables as `check` renders with them: each declared
/// default, and for one declared without a value (`null`) a placeholder
/// text, `<name>`, as a `--var` would give.
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

/// Renders every soul `run` renders (a handoff team's, or a team's with
/// context variables) and every handoff condition; the first failure as
/// `FILE:LINE: template: …`.
pub(super) fn render_all(team: &Team) -> Result<(), String> {
    let handoff = team.config().process == Process::Handoff;
    if !handoff && team.variables().is_empty() {
        return Ok(());
    }
    let vars = check_values(team);
    let souls = team.dir().map(|d| Path::new(d).join("souls"));
    for agent in team.agents() {
        // From disk, the file as written, so that lines match it.
        let file = souls.as_ref().map(|d| d.join(format!("{}.md", agent.name)));
        let raw = file
            .as_deref()
            .and_then(|p| std::fs::read_to_string(p).ok())
            .filter(|t| t.trim() == agent.soul);
        let (text, place) = match (&raw, file) {
            (Some(t), Some(p)) => (t.as_str(), p),
            _ => (
                agent.soul.as_str(),
                PathBuf::from(format!("the soul of '{}'", agent.name)),
            ),
        };
        render(text, &vars).map_err(|e| located(&place, 0, &e))?;
    }
    let Some(settings) = team.handoff() else {
        return Ok(());
    };
    let yaml = team.dir().map(|d| Path::new(d).join("team.yaml"));
    for rule in &settings.rules {
        let Some(condition) = &rule.condition else {
            continue;
        };
        if let Err(e) = render(condition, &vars) {
            let place = yaml
                .clone()
                .unwrap_or_else(|| PathBuf::from("a handoff rule's condition"));
            let first = yaml.as_deref().map_or(0, |p| line_of(p, condition));
            return Err(format!(
                "{} (handoff rule {} → {})",
                located(&place, first, &e),
                rule.from_agent,
                rule.to_agent
            ));
        }
    }
    Ok(())
}

/// `PLACE:LINE: template: …`, where `LINE` is the template's line after
/// `before` lines of its file (no line when neither is known).
fn located(place: &Path, before: usize, e: &TemplateError) -> String {
    match (e.line(), before) {
        (Some(line), _) => format!("{}:{}: {}", place.display(), before + line, e.message()),
        (None, 0) => format!("{}: {}", place.display(), e.message()),
        (None, _) => format!("{}:{}: {}", place.display(), before + 1, e.message()),
    }
}

/// Lines of `path` before the first one (not a comment) holding `text`'s
/// first line, as written in the YAML; 0 when not found.
fn line_of(path: &Path, text: &str) -> usize {
    let first = text.lines().next().unwrap_or("").trim();
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| {
            // Not a comment that quotes it.
            t.lines().position(|l| {
                !first.is_empty() && !l.trim_start().starts_with('#') && l.contains(first)
            })
        })
        .unwrap_or(0)
}
