//! Issue 27 review: `approve:` holds for the chat partner's tool calls:
//! the partner asks the user in the chat, and a call the user says no to
//! never runs (counted at the plan it would change).

use boardroom::chat::{Chat, ChatEvent, ChatIo};
use boardroom::testing::{Scripted, Sim};
use boardroom::{Cancel, ChatResponse, FinishReason, Runtime, Team, ToolCall};

#[derive(Default)]
struct Io {
    answer: bool,
    asked: Vec<String>,
}

impl ChatIo for Io {
    fn emit(&mut self, _event: &ChatEvent) {}

    fn consent(&mut self, question: &str) -> bool {
        self.asked.push(question.to_string());
        self.answer
    }
}

#[test]
fn the_partner_asks_before_a_call_approve_names() {
    for answer in [false, true] {
        let tmp = tempfile::tempdir().unwrap();
        let base = Team::builtin().unwrap();
        let mut config = base.config().clone();
        config.approve = vec!["plan_add_task".into()];
        let team = Team::new(base.name(), config, base.agents().to_vec()).unwrap();
        let model = Scripted::new()
            .respond(
                "partner",
                ChatResponse {
                    tool_calls: vec![ToolCall {
                        id: "c1".into(),
                        name: "plan_add_task".into(),
                        arguments: r#"{"description": "Find a venue"}"#.into(),
                    }],
                    finish: FinishReason::ToolCalls,
                    ..ChatResponse::default()
                },
            )
            .reply("partner", "Noted.");
        let rt = Runtime::new(team, Sim::new()).runs_dir(tmp.path());
        let mut chat = Chat::new(rt, std::sync::Arc::new(model), tmp.path()).unwrap();
        let mut io = Io {
            answer,
            ..Io::default()
        };
        chat.user_says("Plan a team offsite", &mut io);
        chat.turn(&mut io, &Cancel::new()).unwrap();
        assert_eq!(
            io.asked,
            [
                r#"The partner asks to run plan_add_task with {"description": "Find a venue"}: run it? [y/N]"#
            ]
        );
        assert_eq!(
            chat.plan().tasks.len(),
            usize::from(answer),
            "a denied call never runs"
        );
        chat.close();
    }
}
