//! What `boardroom check` adds for a handoff team (and for any team with
//! context variables): the entry, the rules with their priorities, the
//! variables with their defaults, the after-work behaviour and the caps.

use boardroom::Team;

/// What follows the agent count in the first line: the process, when it
/// is not the default.
pub(super) fn process_note(team: &Team) -> &'static str {
    if team.handoff().is_some() {
        ", handoff process"
    } else {
        ""
    }
}

/// The lines to print after the agents, each indented like them.
pub(super) fn lines(team: &Team) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(h) = team.handoff() {
        out.push(format!("  {:<6} {}", "entry", h.entry));
        if h.rules.is_empty() {
            out.push(format!(
                "  {:<6} none (a turn without a handoff goes to the router)",
                "rules"
            ));
        }
        for r in &h.rules {
            let condition = r.condition.as_deref().unwrap_or("always");
            out.push(format!(
                "  {:<6} {} -> {} [priority {}] when: {}",
                "rule",
                r.from_agent,
                r.to_agent,
                r.priority,
                one_line(condition)
            ));
        }
    }
    for (name, _) in team.variables().iter() {
        let value = team.variables().get_text(name).unwrap_or_default();
        out.push(format!("  {:<6} {name} = {}", "var", one_line(&value)));
    }
    if let Some(h) = team.handoff() {
        out.push(format!(
            "  {:<6} {} (when no handoff, rule or router picks the next agent)",
            "after",
            h.after_work.as_str()
        ));
        out.push(format!(
            "  {:<6} max_handoffs {}, max_turns {}",
            "caps", h.max_handoffs, h.max_turns
        ));
    }
    out
}

/// A value on one line, safe for a terminal.
fn one_line(s: &str) -> String {
    let joined = s.split_whitespace().collect::<Vec<_>>().join(" ");
    super::text::one_line(&joined, 200)
}
