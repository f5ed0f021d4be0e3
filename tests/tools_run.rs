//! Whole runs in which members use tools: the sim and scripted models ask
//! for calls, the runtime runs them and feeds the results back (issue 5).

mod mcp_support;
mod support;

use boardroom::board::EntryKind;
use boardroom::testing::{Scripted, Sim, SimOptions, SimToolCall};
use boardroom::{
    AgentSpec, ChatResponse, Event, EventKind, FinishReason, Role, RunError, Runtime, Team,
    TeamConfig, ToolCall,
};
use serde_json::json;

fn team(tools: &[&str], config: TeamConfig) -> Team {
    Team::new(
        "tools",
        config,
        vec![
            AgentSpec::master("lead", "You lead."),
            AgentSpec::member("writer", "Writes", "You write.").with_tools(tools.iter().copied()),
        ],
    )
    .unwrap()
}

fn call(id: &str, name: &str, args: serde_json::Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args.to_string(),
    }
}

fn asks(calls: Vec<ToolCall>) -> ChatResponse {
    ChatResponse {
        tool_calls: calls,
        finish: FinishReason::ToolCalls,
        ..ChatResponse::default()
    }
}

#[test]
fn a_member_uses_an_mcp_tool_and_a_workspace_tool_in_a_whole_run() {
    let mut config = TeamConfig::default();
    config
        .mcp_servers
        .insert("everything".into(), mcp_support::everything());
    let team = team(&["workspace_write", "everything.echo"], config);
    let sim = Sim::with_options(SimOptions {
        tool_calls: vec![
            SimToolCall::new(
                "writer",
                "everything.echo",
                json!({"message": "from the server"}),
            ),
            SimToolCall::new(
                "writer",
                "workspace_write",
                json!({"path": "drafts/writer.md", "content": "the draft"}),
            ),
        ],
        ..SimOptions::default()
    });
    let ws = tempfile::tempdir().unwrap();
    let (tx, rx) = crossbeam_channel::unbounded::<Event>();
    let runtime = Runtime::new(team, sim).workspace(ws.path()).events(tx);
    let (outcome, events, servers) = std::thread::scope(|s| {
        let watcher = s.spawn(move || {
            let mut events = Vec::new();
            let mut servers = Vec::new();
            for e in rx {
                // While tools run, the MCP server is a child of this process.
                if matches!(e.kind, EventKind::ToolResult { .. }) {
                    servers.extend(mcp_support::children());
                }
                events.push(e);
            }
            (events, servers)
        });
        let outcome = runtime.run("Write a short note");
        drop(runtime);
        let (events, servers) = watcher.join().unwrap();
        (outcome, events, servers)
    });
    let outcome = outcome.unwrap();

    let draft = outcome
        .board
        .iter()
        .find(|e| e.author == "writer" && e.kind == EntryKind::Draft)
        .expect("a draft by the writer");
    assert!(
        draft.text.contains("Echo: from the server"),
        "{}",
        draft.text
    );
    assert!(
        draft.text.contains("wrote 9 bytes to drafts/writer.md"),
        "{}",
        draft.text
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join("drafts/writer.md")).unwrap(),
        "the draft"
    );

    let calls: Vec<&str> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolCall { tool, .. } => Some(tool.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(calls.len(), 2);
    assert!(calls.contains(&"everything.echo") && calls.contains(&"workspace_write"));
    let results = events
        .iter()
        .filter(|e| {
            matches!(
                e.kind,
                EventKind::ToolResult {
                    is_error: false,
                    ..
                }
            )
        })
        .count();
    assert_eq!(results, 2);
    assert!(events.iter().any(|e| e.agent == "writer"
        && e.parent.as_deref() == Some("lead")
        && e.kind
            == EventKind::WorkspaceFile {
                path: "drafts/writer.md".into(),
                bytes: 9
            }));

    assert!(!servers.is_empty(), "no MCP server process was seen");
    for pid in servers {
        assert!(!mcp_support::alive(pid), "process {pid} outlived the run");
    }
}

#[test]
fn the_loop_feeds_results_back_and_a_failing_tool_does_not_end_the_run() {
    let team = team(
        &["plan_add_task", "plan_read", "workspace_read"],
        TeamConfig::default(),
    );
    let model = Scripted::new()
        .reply("lead", "ASSIGN:writer:Plan the work")
        .respond(
            "writer",
            asks(vec![
                call("c1", "plan_add_task", json!({"description": "outline"})),
                call("c2", "workspace_read", json!({"path": "missing.md"})),
            ]),
        )
        .respond("writer", asks(vec![call("c3", "plan_read", json!({}))]))
        .reply("writer", "Planned: one module.")
        .reply("lead", "DONE\nPlanned.");
    let run = Runtime::new(team, model.clone()).run("Plan it").unwrap();
    assert_eq!(run.answer, "Planned.");
    // The assignment is a work module of its own; the tool added a second.
    assert_eq!(run.plan.tasks.len(), 2);
    assert_eq!(run.plan.tasks[0].description, "Plan the work");
    assert_eq!(run.plan.tasks[0].assigned_agent.as_deref(), Some("writer"));
    assert_eq!(run.plan.tasks[1].description, "outline");
    assert!(
        run.board
            .iter()
            .any(|e| e.author == "writer" && e.text == "Planned: one module.")
    );

    let writer: Vec<_> = model
        .requests()
        .into_iter()
        .filter(|r| r.agent == "writer")
        .collect();
    assert_eq!(writer.len(), 3);
    let offered: Vec<&str> = writer[0].tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(offered, ["plan_add_task", "plan_read", "workspace_read"]);
    // The last request holds the whole exchange: both rounds of calls and
    // one result per call, the failure included.
    let last = &writer[2].messages;
    let tail: Vec<(Role, usize, Option<&str>)> = last
        .iter()
        .skip(last.len() - 5)
        .map(|m| (m.role, m.tool_calls.len(), m.tool_call_id.as_deref()))
        .collect();
    assert_eq!(
        tail,
        [
            (Role::Assistant, 2, None),
            (Role::Tool, 0, Some("c1")),
            (Role::Tool, 0, Some("c2")),
            (Role::Assistant, 1, None),
            (Role::Tool, 0, Some("c3")),
        ]
    );
    let n = last.len();
    assert_eq!(last[n - 4].content, "added task_002");
    assert_eq!(
        last[n - 3].content,
        "error: workspace: this run has no workspace directory"
    );
    assert!(last[n - 1].content.contains("\"outline\""));
}

#[test]
fn an_ungranted_or_unknown_tool_call_goes_back_as_an_error() {
    let team = team(&["plan_read"], TeamConfig::default());
    let model = Scripted::new()
        .reply("lead", "ASSIGN:writer:Try")
        .respond(
            "writer",
            asks(vec![call(
                "x",
                "workspace_write",
                json!({"path": "a", "content": "b"}),
            )]),
        )
        .reply("writer", "Could not write.")
        .reply("lead", "DONE\nok");
    Runtime::new(team, model.clone()).run("Try").unwrap();
    let last = model
        .requests()
        .into_iter()
        .rfind(|r| r.agent == "writer")
        .unwrap();
    assert_eq!(
        last.messages.last().unwrap().content,
        "error: unknown tool 'workspace_write'"
    );
}

#[test]
fn the_step_cap_ends_the_loop_and_says_so() {
    let team = team(&["plan_read"], TeamConfig::default());
    let mut model = Scripted::new().reply("lead", "ASSIGN:writer:Loop");
    for i in 0..9 {
        model = model.respond(
            "writer",
            asks(vec![call(&format!("c{i}"), "plan_read", json!({}))]),
        );
    }
    let model = model.reply("lead", "DONE\nstopped");
    let run = Runtime::new(team, model.clone()).run("Loop").unwrap();
    let draft = run
        .board
        .iter()
        .find(|e| e.author == "writer")
        .expect("the writer's entry");
    assert_eq!(
        draft.text,
        "[the tool loop stopped after 8 steps; the agent was still asking for tools]"
    );
    let writer: Vec<_> = model
        .requests()
        .into_iter()
        .filter(|r| r.agent == "writer")
        .collect();
    assert_eq!(writer.len(), 9);
    // The last call offers no tools and says why.
    assert!(writer[8].tools.is_empty());
    assert!(
        writer[8]
            .messages
            .last()
            .unwrap()
            .content
            .starts_with("You have used all 8 tool steps")
    );
}

#[test]
fn a_grant_no_tool_has_stops_the_run_before_it_starts() {
    let team = team(&["workspace_rite"], TeamConfig::default());
    let err = Runtime::new(team, Sim::new()).run("x").unwrap_err();
    assert!(matches!(err, RunError::Tools(_)), "{err:?}");
    assert_eq!(
        err.to_string(),
        "tools: agent 'writer': unknown tool 'workspace_rite' (did you mean 'workspace_write'?)"
    );
}

/// A program's own tool that waits (a bounded number of times) until
/// `want` calls are in flight at once, and records the most it saw.
#[derive(Debug, Default)]
struct Meet {
    in_flight: std::sync::atomic::AtomicUsize,
    most: std::sync::atomic::AtomicUsize,
}

#[derive(Debug, Clone, Default)]
struct MeetTool(std::sync::Arc<Meet>);

impl boardroom::Tool for MeetTool {
    fn name(&self) -> &str {
        "meet"
    }
    fn description(&self) -> &str {
        "Waits for the other calls"
    }
    fn parameters(&self) -> serde_json::Value {
        json!({"type": "object", "properties": {"who": {"type": "string"}}})
    }
    fn call(
        &self,
        args: serde_json::Value,
        ctx: &boardroom::ToolContext<'_>,
    ) -> Result<String, boardroom::ToolError> {
        use std::sync::atomic::Ordering::SeqCst;
        let now = self.0.in_flight.fetch_add(1, SeqCst) + 1;
        self.0.most.fetch_max(now, SeqCst);
        for _ in 0..5000 {
            if self.0.in_flight.load(SeqCst) >= 3 || self.0.most.load(SeqCst) >= 3 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        self.0.most.fetch_max(self.0.in_flight.load(SeqCst), SeqCst);
        self.0.in_flight.fetch_sub(1, SeqCst);
        Ok(format!(
            "{} met {}",
            ctx.agent(),
            args["who"].as_str().unwrap_or("?")
        ))
    }
}

#[test]
fn a_programs_own_tool_runs_and_several_calls_run_at_once() {
    let team = team(&["meet"], TeamConfig::default());
    let model = Scripted::new()
        .reply("lead", "ASSIGN:writer:Meet everyone")
        .respond(
            "writer",
            asks(vec![
                call("a", "meet", json!({"who": "ann"})),
                call("b", "meet", json!({"who": "bob"})),
                call("c", "meet", json!({"who": "cy"})),
            ]),
        )
        .reply("writer", "Met them all.")
        .reply("lead", "DONE\nok");
    let meet = MeetTool::default();
    Runtime::new(team, model.clone())
        .tool(meet.clone())
        .run("Meet")
        .unwrap();
    assert_eq!(meet.0.most.load(std::sync::atomic::Ordering::SeqCst), 3);
    let last = model
        .requests()
        .into_iter()
        .rfind(|r| r.agent == "writer")
        .unwrap();
    let results = support::tool_results(&last);
    assert_eq!(
        results,
        ["writer met ann", "writer met bob", "writer met cy"]
    );
}

#[test]
fn every_step_of_a_tool_loop_counts_toward_usage_even_when_a_later_step_fails() {
    // Review finding: the usage of earlier steps was lost when a later model
    // call of the same turn failed.
    // A second member drafts: a run with no draft at all fails (issue 9).
    let team = Team::new(
        "tools",
        TeamConfig::default(),
        vec![
            AgentSpec::master("lead", "You lead."),
            AgentSpec::member("writer", "Writes", "You write.").with_tools(["plan_read"]),
            AgentSpec::member("helper", "Helps", "You help."),
        ],
    )
    .unwrap();
    let mut step = asks(vec![call("c1", "plan_read", json!({}))]);
    step.usage = boardroom::Usage {
        prompt_tokens: 1000,
        completion_tokens: 7,
        ..boardroom::Usage::default()
    };
    let model = Scripted::new()
        .reply("lead", "ASSIGN:writer:Look at the plan\nASSIGN:helper:Help")
        .reply("helper", "Help given.")
        .respond("writer", step)
        .fail("writer", "the server went away")
        .reply("lead", "DONE\nFine.");
    let run = Runtime::new(team, model).run("Plan it").unwrap();
    assert!(
        run.board
            .iter()
            .any(|e| e.author == "writer" && e.kind == boardroom::board::EntryKind::Error),
        "the failed turn is an error entry"
    );
    let writer = run.usage_by_agent["writer"];
    assert_eq!(writer.prompt_tokens, 1000);
    assert_eq!(writer.completion_tokens, 7);
}
