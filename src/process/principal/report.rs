//! The answer of a run that ended without the principal's report (a cap,
//! the time limit, the budget, or `finish_flow` before a report): one
//! section per module from its deliverable.

use std::fmt::Write as _;

use crate::plan::Plan;

/// A report built from the deliverables as they stand.
pub(super) fn fallback(task: &str, plan: &Plan) -> String {
    let title = task.trim().lines().next().unwrap_or("Report").trim();
    let mut s = format!("# {title}\n\n");
    if plan.tasks.is_empty() {
        s.push_str("No work module was created.\n");
        return s;
    }
    for m in &plan.tasks {
        let _ = writeln!(s, "## {} ({})\n", m.description.trim(), m.status);
        match &m.deliverable {
            Some(d) => {
                let _ = writeln!(
                    s,
                    "```json\n{}\n```\n",
                    serde_json::to_string_pretty(d).unwrap_or_default()
                );
            }
            None => s.push_str("No deliverable.\n\n"),
        }
    }
    s
}
