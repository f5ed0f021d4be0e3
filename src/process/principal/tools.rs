//! The principal's tools and the associate's: their specs, and what
//! `manage_work_modules` does to the plan. The other tools are handled by
//! the driver: `dispatch_submodules` and `finish_flow` end the principal's
//! turn (the driver acts on them), `generate_markdown_report` and
//! `generate_message_summary` answer with instructions (Common Ground's
//! instruction-generator tools).

use std::fmt::Write as _;

use serde_json::{Value, json};

use crate::model::ToolSpec;
use crate::plan::{ModuleStatus, Plan};

pub(super) const MANAGE: &str = "manage_work_modules";
pub(super) const DISPATCH: &str = "dispatch_submodules";
pub(super) const REPORT: &str = "generate_markdown_report";
pub(super) const FINISH: &str = "finish_flow";
pub(super) const SUMMARY: &str = "generate_message_summary";

/// The principal's tools.
pub(super) fn principal_specs() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: MANAGE.into(),
            description: "Create work modules, or update them: description, associate, status \
                          (pending, ongoing, pending_review, completed) and a note. A module \
                          without an id is created (pending); one with an id is changed. To \
                          accept a delivered module set it completed; to send it back for \
                          rework set it pending with a note saying what to change."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "modules": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "id": {"type": "string", "description": "task_001, ... (omit to create)"},
                                "description": {"type": "string"},
                                "agent": {"type": "string", "description": "the associate for it"},
                                "status": {"type": "string", "enum": ["pending", "ongoing", "pending_review", "completed"]},
                                "note": {"type": "string", "description": "why it is sent back, what to change"}
                            }
                        }
                    }
                },
                "required": ["modules"]
            }),
        },
        ToolSpec {
            name: DISPATCH.into(),
            description: "Send pending work modules to their associates, who work on them in \
                          parallel, each from a briefing of its own. Each delivered module \
                          comes back to your inbox as a tool result, for your review."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "module_ids": {"type": "array", "items": {"type": "string"}}
                },
                "required": ["module_ids"]
            }),
        },
        ToolSpec {
            name: REPORT.into(),
            description: "Once every module is completed: get the instructions for the final \
                          report, then write the report in Markdown as your reply."
                .into(),
            parameters: json!({"type": "object", "properties": {}}),
        },
        ToolSpec {
            name: FINISH.into(),
            description: "End the whole flow, after the report is written.".into(),
            parameters: json!({
                "type": "object",
                "properties": {"summary": {"type": "string", "description": "one line on the outcome"}}
            }),
        },
    ]
}

/// The associate's tool.
pub(super) fn summary_spec() -> ToolSpec {
    ToolSpec {
        name: SUMMARY.into(),
        description: "When your work on the module is done: get the instructions for your \
                      deliverable, then reply with it as JSON."
            .into(),
        parameters: json!({"type": "object", "properties": {}}),
    }
}

/// The instructions `generate_message_summary` answers with.
pub(super) fn summary_instructions(module: &str, schema: &Value) -> String {
    format!(
        "Summarise your work on module {module} as your deliverable: one JSON object, and \
         nothing else (no prose, no code fence), that follows this JSON schema:\n<schema>{}</schema>\n\
         Fill every required field from your work; keep each text field concise and concrete.",
        schema
    )
}

/// The instructions `generate_markdown_report` answers with.
pub(super) fn report_instructions(plan: &Plan) -> String {
    let mut s = String::from(
        "Write the final report now, in Markdown, as your reply (no tool call in it): a title \
         (`# ...`), a short summary of the outcome, then one section per work module built \
         from its deliverable, then open questions if any. Use only what the deliverables \
         say. After the report, call finish_flow.\nThe deliverables:\n",
    );
    for m in &plan.tasks {
        let d = m
            .deliverable
            .as_ref()
            .map_or_else(|| "(none)".to_string(), Value::to_string);
        let _ = writeln!(
            s,
            "<deliverable module=\"{}\" status=\"{}\">{}</deliverable>",
            m.task_id,
            m.status,
            crate::util::text::escape_xml(&d)
        );
    }
    s
}

/// One change `manage_work_modules` asks for.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Change {
    pub(super) id: Option<String>,
    pub(super) description: Option<String>,
    pub(super) agent: Option<String>,
    pub(super) status: Option<ModuleStatus>,
    pub(super) note: Option<String>,
}

/// The changes in a `manage_work_modules` call's arguments.
pub(super) fn changes(arguments: &str) -> Result<Vec<Change>, String> {
    let args: Value = serde_json::from_str(if arguments.trim().is_empty() {
        "{}"
    } else {
        arguments
    })
    .map_err(|e| format!("the arguments are not JSON ({e})"))?;
    let Some(items) = args.get("modules").and_then(Value::as_array) else {
        return Err("'modules' is missing: give a list of modules to create or change".into());
    };
    let text = |v: &Value, k: &str| {
        v.get(k)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let status = match text(item, "status") {
            Some(s) => Some(ModuleStatus::parse(&s).ok_or_else(|| {
                format!(
                    "modules[{i}]: unknown status '{s}' (pending, ongoing, pending_review, completed)"
                )
            })?),
            None => None,
        };
        out.push(Change {
            id: text(item, "id"),
            description: text(item, "description"),
            agent: text(item, "agent"),
            status,
            note: text(item, "note"),
        });
    }
    Ok(out)
}

/// Applies the changes to the plan; `associates` are the agents a module
/// may go to. Returns what was done, one line each, or the first problem
/// (nothing is changed then).
pub(super) fn apply(
    plan: &mut Plan,
    changes: &[Change],
    associates: &[&str],
) -> Result<Vec<String>, String> {
    let known = |a: &str| -> Result<String, String> {
        associates
            .iter()
            .find(|n| n.eq_ignore_ascii_case(a))
            .map(|n| (*n).to_string())
            .ok_or_else(|| {
                format!(
                    "unknown associate '{a}' (the associates are {})",
                    associates.join(", ")
                )
            })
    };
    // Checked first, so a bad change leaves the plan as it was.
    for c in changes {
        match &c.id {
            Some(id) if plan.get(id).is_none() => return Err(format!("no module '{id}'")),
            None if c.description.is_none() => {
                return Err("a new module needs a description".into());
            }
            _ => {}
        }
        if let Some(a) = &c.agent {
            known(a)?;
        }
    }
    let mut done = Vec::new();
    for c in changes {
        let agent = c.agent.as_deref().map(known).transpose()?;
        let id = match &c.id {
            Some(id) => id.clone(),
            None => {
                let id = plan.add(c.description.clone().unwrap_or_default(), agent.clone());
                done.push(format!("created {id}"));
                id
            }
        };
        let Some(m) = plan.get_mut(&id) else { continue };
        if c.id.is_some() {
            if let Some(d) = &c.description {
                m.description.clone_from(d);
            }
            if agent.is_some() {
                m.assigned_agent = agent;
            }
        }
        if let Some(note) = &c.note {
            m.metadata
                .insert("review_note".into(), Value::from(note.clone()));
        }
        if let Some(status) = c.status {
            if m.status == ModuleStatus::PendingReview && status == ModuleStatus::Pending {
                let n = m
                    .metadata
                    .get("reworks")
                    .and_then(Value::as_u64)
                    .unwrap_or(0);
                m.metadata.insert("reworks".into(), Value::from(n + 1));
            }
            if status == ModuleStatus::Completed {
                m.metadata.remove("review_note");
            }
            m.status = status;
            done.push(format!("{id} is {status}"));
        } else if c.id.is_some() {
            done.push(format!("{id} updated"));
        }
    }
    Ok(done)
}

/// The plan as the principal reads it in a tool result: one line a module.
pub(super) fn plan_lines(plan: &Plan) -> String {
    let mut s = String::new();
    for m in &plan.tasks {
        let _ = writeln!(
            s,
            "{} [{}] ({}) {}",
            m.task_id,
            m.status,
            m.assigned_agent.as_deref().unwrap_or("no associate"),
            m.description
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manage_work_modules_creates_reviews_and_refuses_what_is_wrong() {
        let mut plan = Plan::default();
        let c = changes(r#"{"modules": [{"description": "Find facts", "agent": "Researcher"}]}"#)
            .unwrap();
        let done = apply(&mut plan, &c, &["researcher"]).unwrap();
        assert_eq!(done, vec!["created task_001"]);
        assert_eq!(plan.tasks[0].assigned_agent.as_deref(), Some("researcher"));
        plan.tasks[0].status = ModuleStatus::PendingReview;
        let c =
            changes(r#"{"modules": [{"id": "task_001", "status": "pending", "note": "cite"}]}"#)
                .unwrap();
        apply(&mut plan, &c, &["researcher"]).unwrap();
        assert_eq!(plan.tasks[0].metadata["reworks"], 1);
        assert_eq!(plan.tasks[0].metadata["review_note"], "cite");
        let bad = changes(r#"{"modules": [{"id": "task_009", "status": "completed"}]}"#).unwrap();
        assert_eq!(
            apply(&mut plan, &bad, &["researcher"]),
            Err("no module 'task_009'".into())
        );
        let bad = changes(r#"{"modules": [{"description": "x", "agent": "nobody"}]}"#).unwrap();
        assert!(
            apply(&mut plan, &bad, &["researcher"])
                .unwrap_err()
                .starts_with("unknown associate")
        );
        assert_eq!(plan.tasks.len(), 1, "a refused change adds nothing");
        assert!(changes(r#"{"modules": [{"id": "task_001", "status": "finished"}]}"#).is_err());
    }
}
