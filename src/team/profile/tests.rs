use std::path::Path;

use super::*;
use crate::team::agent::parse_agent;
use crate::team::template::Variables;

fn agent(front: &str) -> Result<crate::team::AgentSpec, crate::team::TeamError> {
    parse_agent(
        Path::new("agents/a.md"),
        &format!("---\n{front}\n---\n"),
        |_| Ok("You write.".into()),
    )
}

#[test]
fn a_segment_holds_only_when_its_condition_does() {
    let a = agent(
        "name: a\nrole: member\nprompt_segments:\n  - text: \"{{ soul }}\"\n  - when: \"phase == 'review'\"\n    text: Review round {{ round }}.\n",
    )
    .unwrap();
    let mut state = eval::sample_state("a", "member", Variables::default());
    state.soul = "You write.".into();
    state.phase = "draft".into();
    assert_eq!(a.profile.system_prompt(&state).unwrap(), "You write.");
    state.phase = "review".into();
    state.round = 2;
    assert_eq!(
        a.profile.system_prompt(&state).unwrap(),
        "You write.\n\nReview round 2."
    );
}

#[test]
fn toolsets_expand_in_tools_and_rules_decide_in_order() {
    let a = agent(
        "name: a\nrole: master\ntoolsets:\n  files: [workspace_read, workspace_write]\ntools: [files, plan_read]\nflow_decider:\n  - when: \"'?' in answer\"\n    action: await_user_input\n  - action: end_agent_turn\npost_turn_observers:\n  - name: reflect\n    when: not tools_called\n    inbox: You called no tool in {{ phase }}.\n",
    )
    .unwrap();
    assert_eq!(a.tools, ["workspace_read", "workspace_write", "plan_read"]);
    let mut state = eval::sample_state("a", "master", Variables::default());
    state.answer = "Which city?".into();
    assert_eq!(a.profile.decide(&state), FlowAction::AwaitUserInput);
    state.answer = "Done.".into();
    assert_eq!(a.profile.decide(&state), FlowAction::EndAgentTurn);
    assert!(a.profile.after_turn(&state).is_empty());
    state.tools_called.clear();
    state.phase = "plan".into();
    assert_eq!(
        a.profile.after_turn(&state),
        [(
            "reflect".to_string(),
            "You called no tool in plan.".to_string()
        )]
    );
}

#[test]
fn bad_profiles_name_their_line() {
    let err = |front: &str| agent(front).unwrap_err().to_string();
    assert_eq!(
        err("name: a\nrole: member\nprompt_segments:\n  - when: \"phase ==\"\n    text: x\n"),
        "agents/a.md:5: prompt_segments[1]: when 'phase ==': unexpected end of input, expected expression"
    );
    assert_eq!(
        err("name: a\nrole: member\nprompt_segments:\n  - text: \"{% if x %}\"\n"),
        "agents/a.md:5: prompt_segments[1]: line 1: template: unexpected end of input, expected end of block"
    );
    assert_eq!(
        err(
            "name: a\nrole: member\nflow_decider:\n  - action: end_agent_turn\n  - when: round > 1\n    action: finish\n"
        ),
        "agents/a.md:5: flow_decider[1]: a rule without 'when' is the default and must come last (the rules after it would never be read)"
    );
    assert!(
        err("name: a\nrole: member\nflow_decider:\n  - action: jump\n")
            .starts_with("agents/a.md:5:"),
    );
}

#[test]
fn names_and_actions_are_checked_against_the_team() {
    let a = agent(
        "name: a\nrole: member\npost_turn_observers:\n  - when: not tool_called\n    inbox: x\n",
    )
    .unwrap();
    let e = check_profile(&a, &[], crate::team::Process::Blackboard)
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("agents/a.md:5: post_turn_observers[1]: when 'not tool_called': unknown name 'tool_called' (did you mean 'tools_called'?)"),
        "{e}"
    );
    let a = agent(
        "name: a\nrole: member\nflow_decider:\n  - when: round > 1\n    action: await_user_input\n",
    )
    .unwrap();
    assert_eq!(
        check_profile(&a, &[], crate::team::Process::Blackboard)
            .unwrap_err()
            .to_string(),
        "agents/a.md:6: flow_decider[1]: action 'await_user_input' is the master's in a blackboard team (a member's draft goes to the master)"
    );
    let a = agent(
        "name: a\nrole: member\nprompt_segments:\n  - text: |\n      Hello\n      {{ tone }}\n",
    )
    .unwrap();
    assert_eq!(
        check_profile(&a, &["topic".to_string()], crate::team::Process::Blackboard)
            .unwrap_err()
            .to_string(),
        "agents/a.md:6: prompt_segments[1]: undeclared variable '{{ tone }}' (known: topic, agent, role, round, phase, tools_called, inbox, module_status, modules, answer, soul)"
    );
}
