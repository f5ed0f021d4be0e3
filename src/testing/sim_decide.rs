//! What the sim writes on a panel that decides: each member's stand from
//! its angle, and the decision the chair composes from them.

use std::fmt::Write as _;

use super::{Length, Notes, Parsed, capital, list, lower_first, premise};

/// A member's stand on a question (a panel that decides).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stance {
    Trial,
    Reversible,
    Wait,
}

impl Stance {
    /// The stand of a member from its angle (risk: try it first; cost:
    /// keep it reversible; people: wait), else by its name.
    pub(super) fn of(agent: &str, angle: &str) -> Stance {
        let a = angle.to_lowercase();
        if a.contains("risk") {
            Stance::Trial
        } else if a.contains("cost") || a.contains("money") {
            Stance::Reversible
        } else if a.contains("people") || a.contains("user") {
            Stance::Wait
        } else {
            [Stance::Trial, Stance::Reversible, Stance::Wait]
                [crate::util::shard::shard_of(agent, 3)]
        }
    }

    /// The member's recommendation, in one sentence.
    pub(super) fn recommendation(self) -> &'static str {
        match self {
            Stance::Trial => "Go ahead, as a time-boxed trial with a date to review it.",
            Stance::Reversible => {
                "Go ahead, provided the change can be undone cheaply if it does not work."
            }
            Stance::Wait => {
                "Wait: first fix what makes the current way fall short, then decide again."
            }
        }
    }

    /// What would change the member's view.
    pub(super) fn change(self) -> &'static str {
        match self {
            Stance::Trial => "a trial that shows no gain by its review date",
            Stance::Reversible => "a cost of going back that turns out higher than expected",
            Stance::Wait => "the people affected asking for the change themselves",
        }
    }
}

/// A panel's decision: the recommendation first, then where the views
/// agree and differ, and what would change it.
pub(super) fn decision(out: &mut String, user: &Notes, parsed: &[(String, Parsed)]) {
    let views: Vec<(String, &str, Stance)> = parsed
        .iter()
        .filter_map(|(_, p)| {
            let r = p.recommendation.as_deref()?;
            let angle = p.topic.clone().unwrap_or_else(|| "another".into());
            let stance = if r.starts_with("Wait") {
                Stance::Wait
            } else if r.contains("undone") {
                Stance::Reversible
            } else {
                Stance::Trial
            };
            Some((lower_first(&angle), r, stance))
        })
        .collect();
    let go: Vec<&(String, &str, Stance)> = views.iter().filter(|v| v.2 != Stance::Wait).collect();
    let wait: Vec<&(String, &str, Stance)> = views.iter().filter(|v| v.2 == Stance::Wait).collect();
    let recommendation = if go.len() >= wait.len() {
        let trial = go.iter().any(|v| v.2 == Stance::Trial);
        let undo = go.iter().any(|v| v.2 == Stance::Reversible);
        match (trial, undo) {
            (true, true) => {
                "Go ahead, as a time-boxed trial with a date to review it, and only in a form that can be undone cheaply."
            }
            (true, false) => "Go ahead, as a time-boxed trial with a date to review it.",
            _ => "Go ahead, in a form that can be undone cheaply if it does not work.",
        }
    } else {
        "Wait: fix what makes the current way fall short first, then decide again."
    };
    let _ = writeln!(out, "**Recommendation:** {recommendation}\n");
    premise(out, user);
    let angles = |vs: &[&(String, &str, Stance)]| {
        list(
            &vs.iter()
                .map(|v| format!("the {} view", v.0))
                .collect::<Vec<_>>(),
        )
    };
    let _ = write!(out, "## Where the views agree\n\n");
    if go.is_empty() || wait.is_empty() {
        let _ = writeln!(
            out,
            "Every view ({}) comes to the same answer; they differ only in the conditions they \
             set.\n",
            angles(&views.iter().collect::<Vec<_>>())
        );
    } else {
        let _ = writeln!(
            out,
            "{} favour{} going ahead, with the conditions above.\n",
            capital(&angles(&go)),
            if go.len() == 1 { "s" } else { "" }
        );
    }
    if user.length == Length::Short {
        return;
    }
    let _ = write!(out, "## Where they differ\n\n");
    if wait.is_empty() || go.is_empty() {
        let _ = writeln!(
            out,
            "Only on emphasis: each view puts its own reasons first.\n"
        );
    } else {
        let _ = writeln!(
            out,
            "{} would rather wait and fix the current way first. It is weighed as a condition \
             to check at the review date rather than a reason to wait, because a trial tests it \
             at little cost.\n",
            capital(&angles(&wait))
        );
    }
    let _ = write!(out, "## What would change the decision\n\n");
    for (_, p) in parsed {
        if let Some(c) = &p.change {
            let _ = writeln!(out, "- {}", capital(c));
        }
    }
}
