//! The partner's own tools: `launch_team(brief)` (intercepted by the chat,
//! which asks the user for consent) and `team_status` (the plan and the
//! recent events of the run it launched).

use std::fmt::Write as _;

use serde_json::{Value, json};

use crate::model::ToolSpec;
use crate::plan::{ModuleStatus, Plan};

/// The name of the launch tool.
pub(crate) const LAUNCH_TEAM: &str = "launch_team";
/// The name of the status tool.
pub(crate) const TEAM_STATUS: &str = "team_status";
/// The name of the follow-up tool.
pub(crate) const FOLLOW_UP: &str = "follow_up";

pub(crate) fn launch_team_spec() -> ToolSpec {
    ToolSpec {
        name: LAUNCH_TEAM.into(),
        description: "Propose to launch the team on the work modules of the plan. The user is \
                      asked for consent; the result says whether the team was launched."
            .into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "brief": {
                    "type": "string",
                    "description": "A few sentences for the team: the goal, the user's constraints, \
                                    what the final report must contain"
                }
            },
            "required": ["brief"]
        }),
    }
}

pub(crate) fn team_status_spec() -> ToolSpec {
    ToolSpec {
        name: TEAM_STATUS.into(),
        description: "How the launched team is doing: the run's status, every work module with \
                      its status, and the latest events."
            .into(),
        parameters: json!({"type": "object", "properties": {}}),
    }
}

pub(crate) fn follow_up_spec() -> ToolSpec {
    ToolSpec {
        name: FOLLOW_UP.into(),
        description: "Propose a follow-up round on the team's last run (a shorter version, \
                      more depth on one module, a change the user asks for while the team \
                      works): the team reviews its board with the message and works again. \
                      While the run is under way the follow-up is queued and sent when it \
                      finishes. The user is asked for consent."
            .into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "message": {
                    "type": "string",
                    "description": "What the team should change or add, in the user's terms"
                }
            },
            "required": ["message"]
        }),
    }
}

/// The `message` of a `follow_up` call, or the corrective error.
pub(crate) fn message_of(arguments: &str) -> Result<String, String> {
    let args: Value = serde_json::from_str(if arguments.trim().is_empty() {
        "{}"
    } else {
        arguments
    })
    .map_err(|e| format!("the arguments are not JSON ({e}): give {{\"message\": \"...\"}}"))?;
    match args.get("message") {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.trim().to_string()),
        _ => Err("'message' is missing or empty: say what the team should change".into()),
    }
}

/// The `brief` of a `launch_team` call, or the corrective error.
pub(crate) fn brief_of(arguments: &str) -> Result<String, String> {
    let args: Value = if arguments.trim().is_empty() {
        json!({})
    } else {
        serde_json::from_str(arguments)
            .map_err(|e| format!("the arguments are not JSON ({e}): give {{\"brief\": \"...\"}}"))?
    };
    match args.get("brief") {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.trim().to_string()),
        _ => Err("'brief' is missing or empty: give the team a brief of a few sentences".into()),
    }
}

/// The corrective error for a launch with nothing to launch, if the plan
/// is empty.
pub(crate) fn check_launchable(plan: &Plan) -> Result<usize, String> {
    let open = plan
        .tasks
        .iter()
        .filter(|m| m.status != ModuleStatus::Completed)
        .count();
    if open == 0 {
        return Err(format!(
            "the plan has no open work modules, so there is nothing to launch: add them with \
             plan_add_task first, show them to the user as a numbered list, then call {LAUNCH_TEAM}"
        ));
    }
    Ok(open)
}

/// The team's make-up the partner proposes with a launch (seed 000,
/// "Team Formation"): the associates, by profile, the open modules need.
/// Every module names one of `members` (name, description) when
/// `required` (a principal team, whose modules each go to one
/// associate); a module naming an agent that is not a member is refused
/// either way. The associates chosen, in the order first named, or the
/// corrective error.
pub(crate) fn team_make_up<'m>(
    plan: &Plan,
    members: &'m [(String, String)],
    required: bool,
) -> Result<Vec<&'m (String, String)>, String> {
    let roster = || {
        members
            .iter()
            .map(|(n, d)| format!("{n} ({d})"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut chosen: Vec<&(String, String)> = Vec::new();
    for (i, m) in plan.tasks.iter().enumerate() {
        if m.status == ModuleStatus::Completed {
            continue;
        }
        match m.assigned_agent.as_deref() {
            Some(a) => {
                let Some(member) = members.iter().find(|(n, _)| n.eq_ignore_ascii_case(a)) else {
                    return Err(format!(
                        "module {} names '{a}', who is not on the team: propose one of {}                          (plan_update_task with assigned_agent), then call {LAUNCH_TEAM} again",
                        i + 1,
                        roster()
                    ));
                };
                if !chosen.contains(&member) {
                    chosen.push(member);
                }
            }
            None if required => {
                return Err(format!(
                    "module {} has no associate: propose the associate each module needs                      (plan_update_task with assigned_agent) from {}, show the user the modules                      with their associates, then call {LAUNCH_TEAM} again",
                    i + 1,
                    roster()
                ));
            }
            None => {}
        }
    }
    Ok(chosen)
}

/// The plan as a numbered list, as the user is shown it.
pub(crate) fn module_lines(plan: &Plan) -> String {
    let mut out = String::new();
    for (i, m) in plan.tasks.iter().enumerate() {
        let who = m
            .assigned_agent
            .as_deref()
            .map(|a| format!(" ({a})"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "{}. [{}] {}{who}",
            i + 1,
            m.status,
            m.description.trim()
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_launch_without_modules_is_corrected() {
        let err = check_launchable(&Plan::default()).unwrap_err();
        assert!(
            err.starts_with("the plan has no open work modules"),
            "{err}"
        );
        let mut plan = Plan::default();
        plan.add("one", None);
        plan.add("two", None);
        assert_eq!(check_launchable(&plan), Ok(2));
        assert_eq!(brief_of(r#"{"brief": " go "}"#), Ok("go".into()));
        assert!(
            brief_of("{}")
                .unwrap_err()
                .starts_with("'brief' is missing")
        );
        assert!(
            brief_of("{oops")
                .unwrap_err()
                .starts_with("the arguments are not JSON")
        );
        assert_eq!(module_lines(&plan), "1. [pending] one\n2. [pending] two\n");
    }

    #[test]
    fn a_launch_proposes_the_associates_each_module_needs() {
        let members = vec![
            ("analyst".to_string(), "weighs options".to_string()),
            ("researcher".to_string(), "finds facts".to_string()),
        ];
        let mut plan = Plan::default();
        plan.add("facts", Some("Researcher".into()));
        plan.add("options", None);
        let err = team_make_up(&plan, &members, true).unwrap_err();
        assert!(err.starts_with("module 2 has no associate"), "{err}");
        assert!(err.contains("analyst (weighs options)"), "{err}");
        // Not required (a blackboard team): the named ones are the make-up.
        let chosen = team_make_up(&plan, &members, false).unwrap();
        assert_eq!(chosen, vec![&members[1]]);
        plan.get_mut("task_002").unwrap().assigned_agent = Some("writer".into());
        let err = team_make_up(&plan, &members, false).unwrap_err();
        assert!(
            err.starts_with("module 2 names 'writer', who is not on the team"),
            "{err}"
        );
        plan.get_mut("task_002").unwrap().assigned_agent = Some("analyst".into());
        let chosen = team_make_up(&plan, &members, true).unwrap();
        assert_eq!(chosen, vec![&members[1], &members[0]]);
    }
}
