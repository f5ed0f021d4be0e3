//! The partner agrees the team's make-up (issue 23, item 7): for a
//! principal team, a launch whose modules do not each name an associate
//! is corrected and asks nobody; once they do, the user is shown the
//! modules with their associates and asked once, and the run the yes
//! launches is a principal run on those modules.

use boardroom::chat::{Chat, ChatEvent, ChatIo};
use boardroom::testing::{Scripted, Sim};
use boardroom::{Cancel, ChatResponse, FinishReason, Role, Runtime, Team, ToolCall, Usage};

#[derive(Default)]
struct Io {
    events: Vec<ChatEvent>,
    asked: Vec<String>,
}

impl ChatIo for Io {
    fn emit(&mut self, event: &ChatEvent) {
        self.events.push(event.clone());
    }

    fn consent(&mut self, question: &str) -> bool {
        self.asked.push(question.to_string());
        true
    }
}

fn calls(calls: &[(&str, &str)]) -> ChatResponse {
    ChatResponse {
        tool_calls: calls
            .iter()
            .enumerate()
            .map(|(i, (name, args))| ToolCall {
                id: format!("c{i}-{name}"),
                name: (*name).into(),
                arguments: (*args).into(),
            })
            .collect(),
        finish: FinishReason::ToolCalls,
        usage: Usage::default(),
        ..ChatResponse::default()
    }
}

#[test]
fn a_principal_team_is_launched_with_the_associates_the_user_agreed_to() {
    let tmp = tempfile::tempdir().unwrap();
    let example = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/teams/principal");
    let team = Team::load(example).unwrap();
    let model = Scripted::new()
        .respond(
            "partner",
            calls(&[
                (
                    "plan_add_task",
                    r#"{"description": "The costs", "assigned_agent": "researcher"}"#,
                ),
                ("plan_add_task", r#"{"description": "The options"}"#),
                ("launch_team", r#"{"brief": "Decide on CI"}"#),
            ]),
        )
        .respond(
            "partner",
            calls(&[
                (
                    "plan_update_task",
                    r#"{"task_id": "task_002", "assigned_agent": "analyst"}"#,
                ),
                ("launch_team", r#"{"brief": "Decide on CI"}"#),
            ]),
        )
        .reply("partner", "Launched.");
    let rt = Runtime::new(team, Sim::new()).runs_dir(tmp.path());
    let mut chat = Chat::new(rt, std::sync::Arc::new(model.clone()), tmp.path()).unwrap();
    let mut io = Io::default();
    chat.user_says("Should we move CI to GitHub Actions?", &mut io);
    chat.turn(&mut io, &Cancel::new()).unwrap();
    // The partner was told to propose the make-up.
    let first = &model.requests()[0];
    assert!(
        first.messages[0]
            .content
            .contains("every module goes to one associate")
    );
    // The first launch: module 2 has no associate; nobody was asked.
    let second = &model.requests()[1];
    let result = second.messages.last().unwrap();
    assert_eq!(result.role, Role::Tool);
    assert!(
        result
            .content
            .starts_with("error: module 2 has no associate"),
        "{}",
        result.content
    );
    assert_eq!(
        io.asked,
        vec!["Launch the team on these 2 modules with researcher, analyst? [y/N]".to_string()]
    );
    let shown = io
        .events
        .iter()
        .find_map(|e| match e {
            ChatEvent::Notice { text } if text.starts_with("the team would get") => {
                Some(text.clone())
            }
            _ => None,
        })
        .unwrap();
    assert!(
        shown.contains("1. [pending] The costs (researcher)"),
        "{shown}"
    );
    assert!(
        shown.contains("these associates:\n- researcher: Finds facts"),
        "{shown}"
    );
    // The launched run: a principal run on the agreed modules.
    chat.wait_run();
    let runs = chat.runs();
    assert_eq!(runs.len(), 1);
    let dir = tmp.path().join(&runs[0]);
    let events = std::fs::read_to_string(dir.join("events.jsonl")).unwrap();
    assert!(
        events
            .lines()
            .next()
            .unwrap()
            .contains(r#""process":"principal""#)
    );
    let state = boardroom::store::load_run(&dir).unwrap().state;
    let agents: Vec<_> = state
        .plan()
        .tasks
        .iter()
        .map(|m| m.assigned_agent.clone().unwrap_or_default())
        .collect();
    assert_eq!(agents, vec!["researcher", "analyst"]);
    assert!(state.plan().tasks.iter().all(|m| m.deliverable.is_some()));
}
