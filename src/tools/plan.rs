//! `plan_read`, `plan_add_task`, `plan_update_task`: the run's work
//! modules (Roboco's plan tools). Each call holds the plan's lock only for
//! the read or the change.

use serde_json::{Value, json};

use super::workspace::str_arg;
use super::{Tool, ToolContext, ToolError};
use crate::plan::{ModuleStatus, Plan};

/// Shows the plan.
#[derive(Debug)]
pub(crate) struct PlanRead;
/// Adds a work module.
#[derive(Debug)]
pub(crate) struct PlanAddTask;
/// Changes a work module's status, description, agent or notes.
#[derive(Debug)]
pub(crate) struct PlanUpdateTask;

/// Runs `change` on the run's plan under its lock.
fn with_plan<R>(
    ctx: &ToolContext<'_>,
    change: impl FnOnce(&mut Plan) -> R,
) -> Result<R, ToolError> {
    ctx.update_plan(change).ok_or_else(|| ToolError::Plan {
        detail: "this run has no plan".into(),
    })
}

fn opt_str<'v>(tool: &str, args: &'v Value, key: &str) -> Result<Option<&'v str>, ToolError> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(ToolError::BadArguments {
            tool: tool.to_string(),
            detail: format!("'{key}' must be a string"),
        }),
    }
}

impl Tool for PlanRead {
    fn name(&self) -> &str {
        "plan_read"
    }

    fn description(&self) -> &str {
        "Show the team's plan: every work module with its id, status, assigned agent and description."
    }

    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {}})
    }

    fn call(&self, _args: Value, ctx: &ToolContext<'_>) -> Result<String, ToolError> {
        let tasks: Vec<Value> = with_plan(ctx, |plan| {
            plan.tasks
                .iter()
                .map(|t| {
                    json!({
                        "task_id": t.task_id,
                        "status": t.status,
                        "assigned_agent": t.assigned_agent,
                        "description": t.description,
                        "round": t.round,
                        "metadata": t.metadata,
                    })
                })
                .collect()
        })?;
        Ok(serde_json::to_string_pretty(&json!({ "tasks": tasks })).unwrap_or_default())
    }
}

impl Tool for PlanAddTask {
    fn name(&self) -> &str {
        "plan_add_task"
    }

    fn description(&self) -> &str {
        "Add a work module to the team's plan (status pending). Returns its task id."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "description": {"type": "string", "description": "What is to be done"},
                "assigned_agent": {"type": "string", "description": "Who should do it (optional)"}
            },
            "required": ["description"]
        })
    }

    fn call(&self, args: Value, ctx: &ToolContext<'_>) -> Result<String, ToolError> {
        let description = str_arg(self.name(), &args, "description")?.trim();
        if description.is_empty() {
            return Err(ToolError::BadArguments {
                tool: self.name().into(),
                detail: "'description' is empty".into(),
            });
        }
        let agent = opt_str(self.name(), &args, "assigned_agent")?.map(str::to_string);
        let id = with_plan(ctx, |plan| {
            let id = plan.add(description, agent);
            if let Some(m) = plan.get_mut(&id) {
                m.metadata.insert("added_by".into(), json!(ctx.agent()));
            }
            id
        })?;
        Ok(format!("added {id}"))
    }
}

impl Tool for PlanUpdateTask {
    fn name(&self) -> &str {
        "plan_update_task"
    }

    fn description(&self) -> &str {
        "Update a work module of the plan: its status (pending, ongoing, pending_review, completed), \
         description or assigned agent, and/or add a note."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "task_id": {"type": "string", "description": "The module's id, e.g. task_001"},
                "status": {"type": "string", "enum": ["pending", "ongoing", "pending_review", "completed"]},
                "description": {"type": "string"},
                "assigned_agent": {"type": "string"},
                "note": {"type": "string", "description": "A note to keep with the module"}
            },
            "required": ["task_id"]
        })
    }

    fn call(&self, args: Value, ctx: &ToolContext<'_>) -> Result<String, ToolError> {
        let name = self.name();
        let id = str_arg(name, &args, "task_id")?;
        let status = match opt_str(name, &args, "status")? {
            Some(s) => Some(
                ModuleStatus::parse(s).ok_or_else(|| ToolError::BadArguments {
                    tool: name.into(),
                    detail: format!(
                        "unknown status '{s}' (pending, ongoing, pending_review, completed)"
                    ),
                })?,
            ),
            None => None,
        };
        let description = opt_str(name, &args, "description")?;
        let agent = opt_str(name, &args, "assigned_agent")?;
        let note = opt_str(name, &args, "note")?;
        with_plan(ctx, |plan| {
            update(
                plan,
                ctx.agent(),
                name,
                id,
                status,
                description,
                agent,
                note,
            )
        })?
    }
}

/// Applies `plan_update_task`'s changes to module `id`.
#[allow(clippy::too_many_arguments)]
fn update(
    guard: &mut Plan,
    by: &str,
    name: &str,
    id: &str,
    status: Option<ModuleStatus>,
    description: Option<&str>,
    agent: Option<&str>,
    note: Option<&str>,
) -> Result<String, ToolError> {
    let known: Vec<String> = guard.tasks.iter().map(|t| t.task_id.clone()).collect();
    let Some(m) = guard.get_mut(id) else {
        return Err(ToolError::Plan {
            detail: format!(
                "no task '{id}' (the plan has: {})",
                if known.is_empty() {
                    "none".into()
                } else {
                    known.join(", ")
                }
            ),
        });
    };
    let mut changed = Vec::new();
    if let Some(s) = status {
        m.status = s;
        changed.push(format!("status {s}"));
    }
    if let Some(d) = description {
        m.description = d.to_string();
        changed.push("description".to_string());
    }
    if let Some(a) = agent {
        m.assigned_agent = Some(a.to_string());
        changed.push(format!("assigned to {a}"));
    }
    if let Some(n) = note {
        let notes = m.metadata.entry("notes").or_insert_with(|| json!([]));
        if let Some(list) = notes.as_array_mut() {
            list.push(json!({"by": by, "note": n}));
        }
        changed.push("note added".to_string());
    }
    if changed.is_empty() {
        return Err(ToolError::BadArguments {
            tool: name.into(),
            detail: "nothing to change: give status, description, assigned_agent or note".into(),
        });
    }
    Ok(format!("{id}: {}", changed.join(", ")))
}

#[cfg(test)]
mod tests {
    use parking_lot::Mutex;

    use super::*;

    #[test]
    fn add_update_read() {
        let plan = Mutex::new(Plan::default());
        let ctx = ToolContext::new("writer").with_plan(&plan);
        assert_eq!(
            PlanAddTask
                .call(json!({"description": "outline"}), &ctx)
                .unwrap(),
            "added task_001"
        );
        assert_eq!(
            PlanUpdateTask
                .call(
                    json!({"task_id": "task_001", "status": "completed", "note": "ok"}),
                    &ctx
                )
                .unwrap(),
            "task_001: status completed, note added"
        );
        let shown = PlanRead.call(json!({}), &ctx).unwrap();
        assert!(shown.contains("\"completed\""), "{shown}");
        assert_eq!(
            PlanUpdateTask
                .call(json!({"task_id": "task_9", "status": "done"}), &ctx)
                .unwrap_err()
                .to_string(),
            "plan: no task 'task_9' (the plan has: task_001)"
        );
        assert!(
            PlanUpdateTask
                .call(json!({"task_id": "task_001", "status": "later"}), &ctx)
                .unwrap_err()
                .to_string()
                .contains("unknown status 'later'")
        );
    }
}
