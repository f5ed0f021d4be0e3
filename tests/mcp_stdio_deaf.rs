//! A stdio MCP server that stops reading its input (hung, or stuck
//! writing): a call whose request fills the pipe must still end at its
//! timeout, and ending the pool must not wait for the server to read.
//! A real process (`sh`); the watchdog only turns a hang into a failure.

use std::collections::BTreeMap;
use std::time::Duration;

use boardroom::mcp::{McpPool, McpServerConfig};
use serde_json::json;

/// Answers the handshake and the tool list, then never reads again.
const DEAF: &str = r#"
read -r l
echo '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"deaf"}}}'
read -r l
read -r l
echo '{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"t","inputSchema":{"type":"object"}}]}}'
exec sleep 600
"#;

#[test]
fn a_server_that_stops_reading_cannot_hold_a_call_or_the_pool() {
    let (done_tx, done) = crossbeam_channel::bounded(1);
    std::thread::spawn(move || {
        let mut config = McpServerConfig::new("sh", ["-c", DEAF]);
        // The timeout also bounds the handshake and the tool list at the
        // start (0.5 s raced with sh's start on a loaded machine).
        config.timeout = Some(2.0);
        let mut servers = BTreeMap::new();
        servers.insert("deaf".to_string(), config);
        let pool = McpPool::start(&servers, None).unwrap();
        // 1 MiB of arguments: far more than a pipe holds.
        let big = "x".repeat(1 << 20);
        let errors: Vec<String> = (0..2)
            .map(|_| {
                pool.call("deaf", "t", json!({ "text": big }))
                    .unwrap_err()
                    .to_string()
            })
            .collect();
        drop(pool);
        let _ = done_tx.send(errors);
    });
    let errors = done
        .recv_timeout(Duration::from_secs(30))
        .expect("a call or the end of the pool waited on a server that does not read");
    for e in errors {
        assert_eq!(e, "mcp server 'deaf': tools/call: no answer within 2.0s");
    }
}
