//! What the sim writes in the steps of a handoff team: a researcher's
//! notes, a writer's draft (revised when a reviewer asked), a reviewer's
//! corrections, and the published text.

use std::fmt::Write as _;

use super::{
    Length, Manner, Notes, capital, document, lower_first, parse, subject_and_points, title,
};

/// A researcher's notes on the task (a handoff team's first step).
pub(crate) fn research_notes(agent: &str, task: &str, user: &Notes) -> String {
    let (subject, mut points) = subject_and_points(task.lines().next().unwrap_or(""));
    let own = points.len();
    points.extend(user.additions.iter().cloned());
    let mut out = format!("{} on {subject}\n\n", Manner::Facts.label());
    for (i, p) in points.iter().enumerate() {
        let sentence = Manner::Facts.sentence(agent, i, own, &subject, false);
        let _ = writeln!(out, "{}. **{}.** {sentence}", i + 1, capital(p));
    }
    out.trim_end().to_string()
}

/// A writer's draft: a section a point, its own advice first, then what
/// the research `facts` say on the point. A revision adds a reason to
/// every point; a user who asked for less gets the advice alone.
pub(crate) fn handoff_draft(
    agent: &str,
    task: &str,
    facts: Option<&str>,
    user: &Notes,
    revised: bool,
) -> String {
    let first = task.lines().next().unwrap_or("");
    let (subject, task_points) = subject_and_points(first);
    let own = task_points.len();
    let facts = facts.map(parse).map(|p| p.items).unwrap_or_default();
    let mut points: Vec<String> = if facts.is_empty() {
        task_points
    } else {
        facts.iter().map(|(p, _)| p.clone()).collect()
    };
    for a in &user.additions {
        if !points.iter().any(|p| p.eq_ignore_ascii_case(a)) {
            points.push(a.clone());
        }
    }
    let mut out = format!(
        "Draft{}: {}\n\n",
        if revised {
            " (revised: every point now gives its reason)"
        } else {
            ""
        },
        title(first)
    );
    for (i, point) in points.iter().enumerate() {
        let mut text = Manner::Writer.sentence(agent, i, own, &subject, false);
        if user.length != Length::Short
            && let Some((_, fact)) = facts.iter().find(|(p, _)| p.eq_ignore_ascii_case(point))
        {
            let _ = write!(text, " {fact}");
        }
        if revised {
            let why = Manner::Analyst.sentence(agent, i, own, &subject, false);
            let _ = write!(text, " Why: {}", lower_first(&why));
        }
        let _ = write!(out, "## {}\n\n{text}\n\n", capital(point));
    }
    out.trim_end().to_string()
}

/// Lines `## Heading` and the text under each.
pub(crate) fn sections_of(doc: &str) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for line in doc.lines() {
        if let Some(h) = line.strip_prefix("## ") {
            out.push((h.trim().to_string(), Vec::new()));
        } else if let Some((_, text)) = out.last_mut() {
            let t = line.trim();
            if !t.is_empty() && !t.starts_with("VERDICT:") {
                text.push(t.to_string());
            }
        }
    }
    out
}

/// A reviewer that fixes what it finds: the list of its changes, then the
/// corrected text (the draft with a closing check in its last section).
pub(crate) fn corrected(doc: &str) -> String {
    let mut sections = sections_of(doc);
    let Some((last, text)) = sections.last_mut() else {
        return "Nothing to correct: the history holds no draft.".into();
    };
    let check = "Check the result at the end, and change one thing at a time.";
    text.push(check.to_string());
    let mut out = format!(
        "Changes:\n1. \"{last}\" now ends with a check, so the reader can tell it worked.\n\n"
    );
    for (h, t) in &sections {
        let _ = write!(out, "## {h}\n\n{}\n\n", t.join(" "));
    }
    out.trim_end().to_string()
}

/// The published text: the latest draft under the task's title, with the
/// simulated line and a one-line summary.
pub(crate) fn publish(task: &str, doc: &str, user: &Notes) -> String {
    document(&title(task), &sections_of(doc), user)
}
