//! Issue 28, finding 9: an MCP stdio server whose child calls `setsid`
//! (leaving the server's process group) and keeps stdout open held the
//! end of a run for as long as that child lived. The end of a session now
//! waits for the server's output with a bound.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use boardroom::mcp::{McpPool, McpServerConfig};

/// Starts a child in a session of its own that keeps the server's stdout
/// and stderr open (its pid into `$1`), answers the handshake and the
/// tool list, then waits.
const SERVER: &str = r#"
setsid sleep 300 &
echo $! > "$1"
read -r l
echo '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"setsid"}}}'
read -r l
read -r l
echo '{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"t","inputSchema":{"type":"object"}}]}}'
while read -r l; do :; done
"#;

fn wait_for_pid(file: &Path) -> u32 {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(pid) = std::fs::read_to_string(file)
            .ok()
            .and_then(|t| t.trim().parse().ok())
        {
            return pid;
        }
        assert!(
            Instant::now() < deadline,
            "the server never started its child"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Kills the escaped child when the test ends, whatever happened.
struct Reap(u32);

impl Drop for Reap {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill")
            .args(["-KILL", &self.0.to_string()])
            .status();
    }
}

#[test]
fn finding9_a_child_that_left_the_group_does_not_hold_the_end() {
    let tmp = tempfile::tempdir().unwrap();
    let pid_file = tmp.path().join("child.pid");
    let config = McpServerConfig::new("sh", ["-c", SERVER, "sh", pid_file.to_str().unwrap()]);
    let mut servers = BTreeMap::new();
    servers.insert("setsid".to_string(), config);
    let pool = McpPool::start(&servers, None).unwrap();
    let _reap = Reap(wait_for_pid(&pid_file));
    // Dropped on a thread of its own: the test sees whether it returns.
    let (done_tx, done) = crossbeam_channel::bounded(1);
    std::thread::spawn(move || {
        drop(pool);
        let _ = done_tx.send(());
    });
    assert!(
        done.recv_timeout(Duration::from_secs(60)).is_ok(),
        "ending the pool waited on a child outside the server's group (it lives 300 s)"
    );
}
