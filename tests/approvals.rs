//! Issue 27, tool-call approval in the library: a call that `approve:`
//! names waits for a decision (the agent pauses; a denied call never runs,
//! counted at the tool); without anyone to wait for it the run stops with
//! status `awaiting_approval`, saved, and a resume with a decision goes on
//! from the reply that asked, not from a new model call.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::time::{Duration, Instant};

use boardroom::store::load_run;
use boardroom::testing::Scripted;
use boardroom::{
    AgentSpec, ApprovalError, ChatResponse, Decision, EventKind, FinishReason, RunError, RunStatus,
    Runtime, Team, TeamConfig, ToolCall,
};
use serde_json::json;

/// A tool that counts its calls and keeps their arguments.
#[derive(Debug, Clone, Default)]
struct Launch(Arc<(AtomicUsize, parking_lot::Mutex<Vec<String>>)>);

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
        self.0.0.fetch_add(1, SeqCst);
        self.0.1.lock().push(args.to_string());
        Ok(format!("launched to {}", args["target"]))
    }
}

impl Launch {
    fn calls(&self) -> usize {
        self.0.0.load(SeqCst)
    }
}

fn team() -> Team {
    let mut writer = AgentSpec::member("writer", "Writes", "You write.").with_tools(["launch"]);
    writer.approve = vec!["laun*".into()];
    Team::new(
        "approvals",
        TeamConfig::default(),
        vec![AgentSpec::master("lead", "You lead."), writer],
    )
    .unwrap()
}

/// The lead assigns, the writer asks for one launch then writes, the lead
/// is done.
fn model() -> Scripted {
    Scripted::new()
        .reply("lead", "ASSIGN:writer:Launch it")
        .respond(
            "writer",
            ChatResponse {
                tool_calls: vec![ToolCall {
                    id: "call-7".into(),
                    name: "launch".into(),
                    arguments: json!({"target": "moon"}).to_string(),
                }],
                finish: FinishReason::ToolCalls,
                ..ChatResponse::default()
            },
        )
        .reply("writer", "Written.")
        .reply("lead", "DONE\nok")
}

/// Waits (at most a generous minute) until the run has a call waiting.
fn first_pending(approvals: &boardroom::Approvals) -> boardroom::PendingApproval {
    let until = Instant::now() + Duration::from_secs(60);
    while Instant::now() < until {
        if let Some(p) = approvals.wait_pending(Duration::from_millis(200)).pop() {
            return p;
        }
    }
    panic!("no call waited for approval");
}

#[test]
fn a_denied_call_never_runs_and_the_model_reads_the_reason() {
    let launch = Launch::default();
    let scripted = model();
    let (tx, rx) = crossbeam_channel::unbounded();
    let handle = Runtime::new(team(), scripted.clone())
        .tool(launch.clone())
        .events(tx)
        .wait_for_approvals(true)
        .start("Go")
        .unwrap();
    let pending = first_pending(&handle.approvals());
    assert_eq!(pending.call_id, "call-7");
    assert_eq!(pending.tool, "launch");
    assert_eq!(pending.agent, "writer");
    assert_eq!(pending.arguments, r#"{"target":"moon"}"#);
    assert_eq!(handle.pending_approvals(), vec![pending.clone()]);
    assert!(matches!(
        handle.decide("call-8", Decision::Approve),
        Err(ApprovalError::UnknownCall { call_id }) if call_id == "call-8"
    ));
    handle
        .decide(
            "call-7",
            Decision::Deny {
                reason: Some("not on a Sunday".into()),
            },
        )
        .unwrap();
    assert!(
        matches!(
            handle.decide("call-7", Decision::Approve),
            Err(ApprovalError::UnknownCall { .. })
        ),
        "a call is decided once"
    );
    let run = handle.wait().unwrap();
    assert_eq!(run.status, RunStatus::Done);
    assert_eq!(launch.calls(), 0, "a denied call never runs");
    let last = scripted
        .requests()
        .into_iter()
        .rfind(|r| r.agent == "writer")
        .unwrap();
    assert_eq!(
        support::tool_results(&last),
        vec![
            "error: the user denied this call of 'launch'; it did not run. Their reason: not on a Sunday"
        ]
    );
    let kinds: Vec<EventKind> = rx.try_iter().map(|e| e.kind).collect();
    let asked = kinds
        .iter()
        .position(|k| matches!(k, EventKind::ApprovalRequested { id, .. } if id == "call-7"))
        .expect("approval_requested");
    let decided = kinds
        .iter()
        .position(|k| {
            matches!(k, EventKind::ApprovalDecided { id, decision, reason, .. }
                if id == "call-7" && decision == "denied" && reason.as_deref() == Some("not on a Sunday"))
        })
        .expect("approval_decided");
    assert!(asked < decided);
    assert!(
        !kinds
            .iter()
            .any(|k| matches!(k, EventKind::ToolCall { .. })),
        "no tool_call event for a call that did not run"
    );
}

#[test]
fn edited_arguments_are_what_runs() {
    let launch = Launch::default();
    let handle = Runtime::new(team(), model())
        .tool(launch.clone())
        .wait_for_approvals(true)
        .start("Go")
        .unwrap();
    let p = first_pending(&handle.approvals());
    assert!(matches!(
        handle.decide(
            &p.call_id,
            Decision::Edit {
                arguments: "[1]".into()
            }
        ),
        Err(ApprovalError::NotAnObject { .. })
    ));
    handle
        .decide(
            &p.call_id,
            Decision::Edit {
                arguments: json!({"target": "mars"}).to_string(),
            },
        )
        .unwrap();
    assert_eq!(handle.wait().unwrap().status, RunStatus::Done);
    assert_eq!(launch.calls(), 1);
    assert_eq!(launch.0.1.lock().clone(), vec![r#"{"target":"mars"}"#]);
}

#[test]
fn with_nobody_to_decide_the_run_stops_saved_and_a_resume_decides() {
    let runs = tempfile::tempdir().unwrap();
    let launch = Launch::default();
    let scripted = model();
    let run = Runtime::new(team(), scripted.clone())
        .tool(launch.clone())
        .runs_dir(runs.path())
        .run("Go")
        .unwrap();
    assert_eq!(run.status, RunStatus::AwaitingApproval);
    assert_eq!(launch.calls(), 0);
    let dir = runs.path().join(&run.run_id);
    let saved = load_run(&dir).unwrap();
    assert_eq!(saved.state.status(), RunStatus::AwaitingApproval);
    let pending = saved.state.pending_approvals();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].call_id, "call-7");

    let rt = Runtime::new(team(), scripted.clone())
        .tool(launch.clone())
        .runs_dir(runs.path());
    // A decision for a call the run does not wait for is refused.
    let err = rt
        .start_resume_deciding(&dir, [("call-9".to_string(), Decision::Approve)])
        .unwrap()
        .wait()
        .unwrap_err();
    assert!(
        matches!(&err, RunError::Approval { source: ApprovalError::UnknownCall { call_id }, .. } if call_id == "call-9"),
        "{err}"
    );
    let writer_calls = scripted
        .requests()
        .iter()
        .filter(|r| r.agent == "writer")
        .count();
    let again = rt
        .start_resume_deciding(&dir, [("call-7".to_string(), Decision::Approve)])
        .unwrap()
        .wait()
        .unwrap();
    assert_eq!(again.status, RunStatus::Done, "{}", again.answer);
    assert_eq!(launch.calls(), 1, "the approved call ran once");
    let writer = scripted
        .requests()
        .into_iter()
        .filter(|r| r.agent == "writer")
        .collect::<Vec<_>>();
    assert_eq!(
        writer.len(),
        writer_calls + 1,
        "the resume went on from the reply that asked: one model call, for the text"
    );
    assert_eq!(
        support::tool_results(writer.last().unwrap()),
        vec![r#"launched to "moon""#]
    );
    assert!(load_run(&dir).unwrap().state.pending_approvals().is_empty());
}

#[test]
fn a_time_limit_ends_the_wait_with_the_run_saved_resumable() {
    let runs = tempfile::tempdir().unwrap();
    let launch = Launch::default();
    let handle = Runtime::new(team(), model())
        .tool(launch.clone())
        .runs_dir(runs.path())
        .wait_for_approvals(true)
        // Room for the plan and the call that asks, with their fsyncs, on
        // a loaded machine (500 ms could run out before the ask).
        .timeout(Duration::from_secs(3))
        .start("Go")
        .unwrap();
    let approvals = handle.approvals();
    let run = handle.wait().unwrap();
    assert_eq!(run.status, RunStatus::AwaitingApproval);
    // A decision taken after the wait stopped would never be saved.
    let late = approvals.decide("call-7", Decision::Approve).unwrap_err();
    assert_eq!(
        late.to_string(),
        "tool call 'call-7': the run no longer waits for decisions (saved); \
         decide it when the run is resumed"
    );
    assert_eq!(launch.calls(), 0);
    let saved = load_run(&runs.path().join(&run.run_id)).unwrap();
    assert_eq!(saved.state.pending_approvals().len(), 1);
}

/// The run's other members go on while one waits: the researcher's draft
/// lands on the board before the writer's call is decided.
#[test]
fn other_members_go_on_while_one_waits() {
    let mut writer = AgentSpec::member("writer", "Writes", "You write.").with_tools(["launch"]);
    writer.approve = vec!["launch".into()];
    let team = Team::new(
        "approvals",
        TeamConfig::default(),
        vec![
            AgentSpec::master("lead", "You lead."),
            writer,
            AgentSpec::member("researcher", "Reads", "You read."),
        ],
    )
    .unwrap();
    let scripted = Scripted::new()
        .reply("lead", "ASSIGN:writer:Launch it\nASSIGN:researcher:Read up")
        .respond(
            "writer",
            ChatResponse {
                tool_calls: vec![ToolCall {
                    id: "call-7".into(),
                    name: "launch".into(),
                    arguments: json!({"target": "moon"}).to_string(),
                }],
                finish: FinishReason::ToolCalls,
                ..ChatResponse::default()
            },
        )
        .reply("writer", "Written.")
        .reply("researcher", "Read.")
        .reply("lead", "DONE\nok");
    let (tx, rx) = crossbeam_channel::unbounded();
    let handle = Runtime::new(team, scripted)
        .tool(Launch::default())
        .events(tx)
        .wait_for_approvals(true)
        .start("Go")
        .unwrap();
    let p = first_pending(&handle.approvals());
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        let left = until.saturating_duration_since(Instant::now());
        let e = rx
            .recv_timeout(left)
            .expect("the researcher's draft while the writer waits");
        if e.agent == "researcher" && matches!(e.kind, EventKind::BoardEntry { .. }) {
            break;
        }
    }
    assert_eq!(handle.pending_approvals(), vec![p.clone()], "still waiting");
    handle.decide(&p.call_id, Decision::Approve).unwrap();
    assert_eq!(handle.wait().unwrap().status, RunStatus::Done);
}

/// A handoff agent's call waits the same way, and its resume goes on from
/// the reply that asked: approved it runs, denied it never does.
#[test]
fn a_handoff_agents_call_waits_and_resumes() {
    let runs = tempfile::tempdir().unwrap();
    let mut config = TeamConfig::default();
    config.process = boardroom::Process::Handoff;
    config.approve = vec!["launch".into()];
    config.after_work_behavior = Some(boardroom::config::AfterWork::Terminate);
    let team = Team::new(
        "relay",
        config,
        vec![
            AgentSpec::master("lead", "You lead.").with_tools(["launch"]),
            AgentSpec::member("writer", "Writes", "You write."),
        ],
    )
    .unwrap();
    for deny in [false, true] {
        let scripted = Scripted::new()
            .respond(
                "lead",
                ChatResponse {
                    tool_calls: vec![ToolCall {
                        id: "call-h".into(),
                        name: "launch".into(),
                        arguments: json!({"target": "sun"}).to_string(),
                    }],
                    finish: FinishReason::ToolCalls,
                    ..ChatResponse::default()
                },
            )
            .reply("lead", "Launched.")
            .otherwise("lead", "NONE");
        let launch = Launch::default();
        let rt = Runtime::new(team.clone(), scripted.clone())
            .tool(launch.clone())
            .protocol(boardroom::protocol::Protocol::Line)
            .runs_dir(runs.path());
        let run = rt.run("Go").unwrap();
        assert_eq!(run.status, RunStatus::AwaitingApproval);
        let dir = runs.path().join(&run.run_id);
        assert_eq!(
            load_run(&dir).unwrap().state.pending_approvals()[0].call_id,
            "call-h"
        );
        let decision = if deny {
            Decision::Deny {
                reason: Some("too hot".into()),
            }
        } else {
            Decision::Approve
        };
        let again = rt
            .start_resume_deciding(&dir, [("call-h".to_string(), decision)])
            .unwrap()
            .wait()
            .unwrap();
        assert_eq!(again.status, RunStatus::Done, "{}", again.answer);
        assert_eq!(again.answer, "Launched.");
        assert_eq!(
            launch.calls(),
            usize::from(!deny),
            "a denied call never runs"
        );
        let last = scripted
            .requests()
            .into_iter()
            .rfind(|r| r.agent == "lead" && !support::tool_results(r).is_empty())
            .unwrap();
        let expected = if deny {
            "error: the user denied this call of 'launch'; it did not run. Their reason: too hot"
        } else {
            r#"launched to "sun""#
        };
        assert_eq!(support::tool_results(&last), vec![expected]);
    }
}

fn launch_reply(id: &str, target: &str) -> ChatResponse {
    ChatResponse {
        tool_calls: vec![ToolCall {
            id: id.into(),
            name: "launch".into(),
            arguments: json!({ "target": target }).to_string(),
        }],
        finish: FinishReason::ToolCalls,
        ..ChatResponse::default()
    }
}

/// Waits (at most a generous minute) until `n` calls wait.
fn pending_n(approvals: &boardroom::Approvals, n: usize) -> Vec<boardroom::PendingApproval> {
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        let pending = approvals.wait_pending(Duration::from_millis(200));
        if pending.len() >= n {
            return pending;
        }
        assert!(
            Instant::now() < until,
            "{} call(s) waited, not {n}: {pending:?}",
            pending.len()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A member given the same task twice in a round: each job's call waits
/// for its own decision (one job never adopts the other's paused turn),
/// a denied call never runs, and both drafts reach the board.
#[test]
fn the_same_task_twice_in_a_round_waits_for_each_call() {
    let launch = Launch::default();
    let scripted = Scripted::new()
        .reply("lead", "ASSIGN:writer:Launch it\nASSIGN:writer:Launch it")
        .respond("writer", launch_reply("call-1", "moon"))
        .respond("writer", launch_reply("call-2", "mars"))
        .reply("writer", "Written.")
        .reply("writer", "Written.")
        .reply("lead", "DONE\nok");
    let (tx, rx) = crossbeam_channel::unbounded();
    let handle = Runtime::new(team(), scripted)
        .tool(launch.clone())
        .events(tx)
        .max_parallel(2)
        .wait_for_approvals(true)
        .start("Go")
        .unwrap();
    let mut ids: Vec<String> = pending_n(&handle.approvals(), 2)
        .into_iter()
        .map(|p| p.call_id)
        .collect();
    ids.sort();
    assert_eq!(ids, ["call-1", "call-2"]);
    handle.decide("call-1", Decision::Approve).unwrap();
    handle
        .decide("call-2", Decision::Deny { reason: None })
        .unwrap();
    assert_eq!(handle.wait().unwrap().status, RunStatus::Done);
    assert_eq!(launch.calls(), 1, "the denied call never ran");
    assert_eq!(launch.0.1.lock().clone(), vec![r#"{"target":"moon"}"#]);
    let drafts = rx
        .try_iter()
        .filter(|e| e.agent == "writer" && matches!(e.kind, EventKind::BoardEntry { .. }))
        .count();
    assert_eq!(drafts, 2, "both jobs' drafts reach the board");
}

/// A reply whose calls have no id (an OpenAI-compatible server that
/// omits it) or the same one: each call gets an id of its own, so one
/// decision decides one call, and the model reads each result paired
/// with its call.
#[test]
fn calls_without_an_id_or_with_the_same_one_each_wait_under_their_own() {
    let launch = Launch::default();
    let two = ChatResponse {
        tool_calls: vec![
            ToolCall {
                id: String::new(),
                name: "launch".into(),
                arguments: json!({"target": "moon"}).to_string(),
            },
            ToolCall {
                id: String::new(),
                name: "launch".into(),
                arguments: json!({"target": "mars"}).to_string(),
            },
        ],
        finish: FinishReason::ToolCalls,
        ..ChatResponse::default()
    };
    let scripted = Scripted::new()
        .reply("lead", "ASSIGN:writer:Launch it")
        .respond("writer", two)
        .reply("writer", "Written.")
        .reply("lead", "DONE\nok");
    let handle = Runtime::new(team(), scripted.clone())
        .tool(launch.clone())
        .wait_for_approvals(true)
        .start("Go")
        .unwrap();
    let pending = pending_n(&handle.approvals(), 2);
    assert_eq!(pending[0].call_id, "writer-1-0-0");
    assert_eq!(pending[1].call_id, "writer-1-0-1");
    handle
        .decide(&pending[0].call_id, Decision::Approve)
        .unwrap();
    handle
        .decide(&pending[1].call_id, Decision::Deny { reason: None })
        .unwrap();
    assert_eq!(handle.wait().unwrap().status, RunStatus::Done);
    assert_eq!(launch.0.1.lock().clone(), vec![r#"{"target":"moon"}"#]);
    let last = scripted
        .requests()
        .into_iter()
        .rfind(|r| r.agent == "writer")
        .unwrap();
    let asked: Vec<String> = last
        .messages
        .iter()
        .flat_map(|m| m.tool_calls.iter().map(|c| c.id.clone()))
        .collect();
    let answered: Vec<String> = last
        .messages
        .iter()
        .filter_map(|m| m.tool_call_id.clone())
        .collect();
    assert_eq!(asked, ["writer-1-0-0", "writer-1-0-1"]);
    assert_eq!(answered, asked, "each result is paired with its call");
}

/// A decision made before the run stopped is told once: a resume that
/// decides the other call sends `approval_decided` for that one only.
#[test]
fn a_decision_made_before_a_resume_is_told_once() {
    let runs = tempfile::tempdir().unwrap();
    let launch = Launch::default();
    let mut two = launch_reply("call-a", "moon");
    two.tool_calls
        .push(launch_reply("call-b", "mars").tool_calls.remove(0));
    let scripted = Scripted::new()
        .reply("lead", "ASSIGN:writer:Launch it")
        .respond("writer", two)
        .reply("writer", "Written.")
        .reply("lead", "DONE\nok");
    let (tx, rx) = crossbeam_channel::unbounded();
    let handle = Runtime::new(team(), scripted.clone())
        .tool(launch.clone())
        .runs_dir(runs.path())
        .events(tx)
        .wait_for_approvals(true)
        .start("Go")
        .unwrap();
    pending_n(&handle.approvals(), 2);
    handle.decide("call-a", Decision::Approve).unwrap();
    // The decision is told while the turn still waits for call-b.
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        let left = until.saturating_duration_since(Instant::now());
        let e = rx.recv_timeout(left).expect("approval_decided for call-a");
        if matches!(&e.kind, EventKind::ApprovalDecided { id, .. } if id == "call-a") {
            break;
        }
    }
    handle.approvals().stop_waiting();
    let run = handle.wait().unwrap();
    assert_eq!(run.status, RunStatus::AwaitingApproval);
    let dir = runs.path().join(&run.run_id);
    let (tx, rx) = crossbeam_channel::unbounded();
    let again = Runtime::new(team(), scripted)
        .tool(launch.clone())
        .runs_dir(runs.path())
        .events(tx)
        .start_resume_deciding(&dir, [("call-b".to_string(), Decision::Approve)])
        .unwrap()
        .wait()
        .unwrap();
    assert_eq!(again.status, RunStatus::Done, "{}", again.answer);
    assert_eq!(launch.calls(), 2);
    let told: Vec<String> = rx
        .try_iter()
        .filter_map(|e| match e.kind {
            EventKind::ApprovalDecided { id, .. } => Some(id),
            _ => None,
        })
        .collect();
    assert_eq!(told, ["call-b"], "call-a was told before the resume");
}
