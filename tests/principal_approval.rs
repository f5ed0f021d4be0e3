//! A principal run whose associate asks for a call `approve:` names stops
//! with status `awaiting_approval` (not as out of tokens), saved with the
//! call and the dispatch in flight, and a resume with a decision finishes
//! it from the reply that asked.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

use boardroom::store::load_run;
use boardroom::testing::Scripted;
use boardroom::{
    AgentSpec, ChatResponse, Decision, FinishReason, RunStatus, Runtime, Team, TeamConfig, ToolCall,
};
use serde_json::json;

/// A tool that counts its calls.
#[derive(Debug, Clone, Default)]
struct Launch(Arc<AtomicUsize>);

impl boardroom::Tool for Launch {
    fn name(&self) -> &str {
        "launch"
    }
    fn description(&self) -> &str {
        "Launches a rocket"
    }
    fn parameters(&self) -> serde_json::Value {
        json!({"type": "object", "properties": {"target": {"type": "string"}}})
    }
    fn call(
        &self,
        args: serde_json::Value,
        _ctx: &boardroom::ToolContext<'_>,
    ) -> Result<String, boardroom::ToolError> {
        self.0.fetch_add(1, SeqCst);
        Ok(format!("launched to {}", args["target"]))
    }
}

fn call(id: &str, name: &str, args: serde_json::Value) -> ChatResponse {
    ChatResponse {
        tool_calls: vec![ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: args.to_string(),
        }],
        finish: FinishReason::ToolCalls,
        ..ChatResponse::default()
    }
}

#[test]
fn an_associates_call_awaiting_approval_stops_the_run_resumable() {
    let runs = tempfile::tempdir().unwrap();
    let mut config = TeamConfig::default();
    config.process = boardroom::Process::Principal;
    let mut writer = AgentSpec::member("writer", "Writes", "You write.").with_tools(["launch"]);
    writer.approve = vec!["launch".into()];
    let team = Team::new(
        "principal-approvals",
        config,
        vec![AgentSpec::master("lead", "You lead."), writer],
    )
    .unwrap();
    let scripted = Scripted::new()
        .respond(
            "lead",
            call(
                "m1",
                "manage_work_modules",
                json!({"modules": [{"description": "Launch it", "agent": "writer"}]}),
            ),
        )
        .respond(
            "lead",
            call(
                "d1",
                "dispatch_submodules",
                json!({"module_ids": ["task_001"]}),
            ),
        )
        .respond("lead", call("f1", "finish_flow", json!({"summary": "ok"})))
        .respond(
            "writer",
            call("call-p", "launch", json!({"target": "moon"})),
        )
        .reply("writer", r#"{"summary": "launched"}"#);
    let launch = Launch::default();
    let rt = Runtime::new(team, scripted.clone())
        .tool(launch.clone())
        .runs_dir(runs.path());
    let run = rt.run("Go").unwrap();
    assert_eq!(run.status, RunStatus::AwaitingApproval, "{}", run.answer);
    assert_eq!(launch.0.load(SeqCst), 0);
    let dir = runs.path().join(&run.run_id);
    let saved = load_run(&dir).unwrap();
    assert_eq!(saved.state.status(), RunStatus::AwaitingApproval);
    let pending = saved.state.pending_approvals();
    assert_eq!(pending.len(), 1, "{pending:?}");
    assert_eq!(pending[0].call_id, "call-p");

    let again = rt
        .start_resume_deciding(&dir, [("call-p".to_string(), Decision::Approve)])
        .unwrap()
        .wait()
        .unwrap();
    assert_eq!(again.status, RunStatus::Done, "{}", again.answer);
    assert_eq!(launch.0.load(SeqCst), 1, "the approved call ran once");
    let writer_calls = scripted
        .requests()
        .iter()
        .filter(|r| r.agent == "writer")
        .count();
    assert_eq!(
        writer_calls, 2,
        "the resume went on from the reply that asked"
    );
    let saved = load_run(&dir).unwrap();
    assert_eq!(saved.state.status(), RunStatus::Done);
    assert!(saved.state.pending_approvals().is_empty());
}
