//! Issue 28, finding 5: a non-streamed reply with many tool calls runs them
//! on a bounded number of threads, and past 128 calls answers the rest with
//! an error instead of running them.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

use boardroom::testing::Scripted;
use boardroom::{AgentSpec, ChatResponse, FinishReason, Runtime, Team, TeamConfig, ToolCall};
use serde_json::json;

#[derive(Debug, Default)]
struct Counts {
    in_flight: AtomicUsize,
    most: AtomicUsize,
    calls: AtomicUsize,
}

#[derive(Debug, Clone, Default)]
struct Crowd(Arc<Counts>);

impl boardroom::Tool for Crowd {
    fn name(&self) -> &str {
        "crowd"
    }
    fn description(&self) -> &str {
        "Waits a moment for company"
    }
    fn parameters(&self) -> serde_json::Value {
        json!({"type": "object", "properties": {"n": {"type": "integer"}}})
    }
    fn call(
        &self,
        args: serde_json::Value,
        _ctx: &boardroom::ToolContext<'_>,
    ) -> Result<String, boardroom::ToolError> {
        let c = &self.0;
        c.calls.fetch_add(1, SeqCst);
        let now = c.in_flight.fetch_add(1, SeqCst) + 1;
        c.most.fetch_max(now, SeqCst);
        // Give the other calls a moment to arrive (not asserted on time:
        // only the most seen at once is).
        for _ in 0..20 {
            if c.in_flight.load(SeqCst) > 16 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        c.most.fetch_max(c.in_flight.load(SeqCst), SeqCst);
        c.in_flight.fetch_sub(1, SeqCst);
        Ok(format!("done {}", args["n"]))
    }
}

#[test]
fn three_hundred_calls_in_one_reply_run_on_a_few_threads() {
    let team = Team::new(
        "tools",
        TeamConfig::default(),
        vec![
            AgentSpec::master("lead", "You lead."),
            AgentSpec::member("writer", "Writes", "You write.").with_tools(["crowd"]),
        ],
    )
    .unwrap();
    let calls: Vec<ToolCall> = (0..300)
        .map(|n| ToolCall {
            id: format!("c{n}"),
            name: "crowd".into(),
            arguments: json!({ "n": n }).to_string(),
        })
        .collect();
    let model = Scripted::new()
        .reply("lead", "ASSIGN:writer:Gather everyone")
        .respond(
            "writer",
            ChatResponse {
                tool_calls: calls,
                finish: FinishReason::ToolCalls,
                ..ChatResponse::default()
            },
        )
        .reply("writer", "Gathered.")
        .reply("lead", "DONE\nok");
    let crowd = Crowd::default();
    Runtime::new(team, model.clone())
        .tool(crowd.clone())
        .run("Gather")
        .unwrap();
    let most = crowd.0.most.load(SeqCst);
    assert!(most <= 8, "{most} calls ran at once");
    assert_eq!(
        crowd.0.calls.load(SeqCst),
        128,
        "calls past 128 are not run"
    );
    let last = model
        .requests()
        .into_iter()
        .rfind(|r| r.agent == "writer")
        .unwrap();
    let results = support::tool_results(&last);
    assert_eq!(results.len(), 300, "one result per call, in order");
    assert_eq!(results[0], "done 0");
    assert_eq!(results[127], "done 127");
    assert_eq!(
        results[128],
        "error: tool 'crowd' not run: a reply may ask for at most 128 tool calls; ask for fewer at a time"
    );
}
