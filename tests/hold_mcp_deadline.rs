//! Issue 28, finding 8: the run's time limit bounds an MCP tool call in
//! flight. A real stdio server answers the handshake and its tool list,
//! then never answers `tools/call` (its own timeout is the default 60 s);
//! a run with a 3 s limit whose member calls it ends by about the limit,
//! timed out, not when the call would have.

use std::time::{Duration, Instant};

use boardroom::mcp::McpServerConfig;
use boardroom::testing::{Sim, SimOptions, SimToolCall};
use boardroom::{AgentSpec, RunStatus, Runtime, Team, TeamConfig};
use serde_json::json;

/// Answers `initialize` and `tools/list`, then reads and never answers.
const HANGS: &str = r#"
read -r l
echo '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"hangs"}}}'
read -r l
read -r l
echo '{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"wait","inputSchema":{"type":"object"}}]}}'
while read -r l; do :; done
"#;

#[test]
fn finding8_the_runs_timeout_bounds_an_mcp_call_in_flight() {
    let mut config = TeamConfig::default();
    config.mcp_servers.insert(
        "slow".into(),
        McpServerConfig::new("sh", ["-c", HANGS, "sh"]),
    );
    let team = Team::new(
        "slow",
        config,
        vec![
            AgentSpec::master("lead", "You lead."),
            AgentSpec::member("writer", "Writes", "You write.").with_tools(["slow.*"]),
        ],
    )
    .unwrap();
    let sim = Sim::with_options(SimOptions {
        tool_calls: vec![SimToolCall::new("writer", "slow.wait", json!({}))],
        ..SimOptions::default()
    });
    let started = Instant::now();
    let outcome = Runtime::new(team, sim)
        .timeout(Duration::from_secs(3))
        .run("Write a note")
        .unwrap();
    let took = started.elapsed();
    assert_eq!(outcome.status, RunStatus::TimedOut, "{}", outcome.answer);
    assert!(
        took < Duration::from_secs(10),
        "a run limited to 3 s took {took:?} (the tool call's own timeout is 60 s)"
    );
}
