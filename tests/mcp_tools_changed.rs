//! `notifications/tools/list_changed` refreshes a server's tools before the
//! next lookup of an agent's tools (the next agent turn), over stdio and
//! over Streamable HTTP, from one test body (issue 10).

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use boardroom::mcp::{McpPool, McpServerConfig};
use boardroom::tools::ToolRegistry;
use boardroom::{AgentSpec, ToolContext};
use serde_json::{Value, json};
use support::{Reply, Request, Server};

/// A stdio peer: one tool `a`; calling it announces a change, and the next
/// list has `a` and `b`.
const PEER: &str = r#"
read -r l
echo '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"peer"}}}'
read -r l
read -r l
echo '{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"a"}]}}'
read -r l
echo '{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}'
echo '{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"added b"}]}}'
read -r l
echo '{"jsonrpc":"2.0","id":4,"result":{"tools":[{"name":"a"},{"name":"b"}]}}'
read -r l
"#;

/// The same over HTTP: the change is announced on the call's event stream.
fn http_peer() -> Server {
    let changed = Arc::new(AtomicBool::new(false));
    Server::start(move |req: &Request| {
        let id = &req.body["id"];
        let ok = |result: Value| {
            Reply::status(
                200,
                &json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string(),
            )
        };
        match req.body["method"].as_str() {
            None if req.body.is_null() => Reply::status(405, ""),
            Some("initialize") => ok(json!({"protocolVersion": "2025-06-18",
                "capabilities": {"tools": {"listChanged": true}}, "serverInfo": {"name": "peer"}})),
            Some("tools/list") if changed.load(Ordering::SeqCst) => {
                ok(json!({"tools": [{"name": "a"}, {"name": "b"}]}))
            }
            Some("tools/list") => ok(json!({"tools": [{"name": "a"}]})),
            Some("tools/call") => {
                changed.store(true, Ordering::SeqCst);
                Reply::Sse(vec![
                    "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n"
                        .into(),
                    format!(
                        "data: {}\n\n",
                        json!({"jsonrpc": "2.0", "id": id,
                               "result": {"content": [{"type": "text", "text": "added b"}]}})
                    ),
                ])
            }
            _ => Reply::status(202, ""),
        }
    })
}

fn granted(registry: &ToolRegistry, agent: &AgentSpec) -> Vec<String> {
    registry
        .granted(agent)
        .unwrap()
        .iter()
        .map(|t| t.name().to_string())
        .collect()
}

fn the_tool_list_follows_the_server(config: McpServerConfig) {
    let mut servers = BTreeMap::new();
    servers.insert("remote".to_string(), config);
    let mut registry = ToolRegistry::builtin();
    registry
        .add_mcp(McpPool::start(&servers, None).unwrap())
        .unwrap();
    let agent = AgentSpec::member("writer", "Writes", "You write.").with_tools(["remote.*"]);
    assert_eq!(granted(&registry, &agent), ["remote.a"]);
    let a = registry.get("remote.a").unwrap();
    assert_eq!(
        a.call(json!({}), &ToolContext::new("writer")).unwrap(),
        "added b"
    );
    // The next turn sees the new list.
    assert_eq!(granted(&registry, &agent), ["remote.a", "remote.b"]);
    assert!(registry.names().contains(&"remote.b".to_string()));
}

#[test]
fn over_stdio() {
    the_tool_list_follows_the_server(McpServerConfig::new("sh", ["-c", PEER]));
}

#[test]
fn over_http() {
    let server = http_peer();
    the_tool_list_follows_the_server(McpServerConfig::http(format!(
        "http://127.0.0.1:{}/mcp",
        server.port
    )));
}
