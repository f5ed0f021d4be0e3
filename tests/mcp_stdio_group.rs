//! Issue 15: ending the MCP pool ends a stdio server's whole process
//! group, not just the process it started (`npx` runs the real server as
//! a grandchild). A real `sh` server leaves a background `sleep` behind,
//! in its group; after the pool is dropped that `sleep` must be gone.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use boardroom::mcp::{McpPool, McpServerConfig};

/// Starts a grandchild (its pid into `$1`), answers the handshake and the
/// tool list, then waits.
const PARENT: &str = r#"
sleep 600 </dev/null >/dev/null 2>&1 &
echo $! > "$1"
read -r l
echo '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"parent"}}}'
read -r l
read -r l
echo '{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"t","inputSchema":{"type":"object"}}]}}'
while read -r l; do :; done
wait
"#;

/// Whether `pid` still runs (a zombie nobody reaped has ended).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            !state.starts_with('Z') && !state.starts_with('X')
        }
        Err(_) => false,
    }
}

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

#[test]
fn dropping_the_pool_ends_the_servers_grandchildren() {
    let tmp = tempfile::tempdir().unwrap();
    let pid_file = tmp.path().join("grandchild.pid");
    let config = McpServerConfig::new("sh", ["-c", PARENT, "sh", pid_file.to_str().unwrap()]);
    let mut servers = BTreeMap::new();
    servers.insert("parent".to_string(), config);
    let pool = McpPool::start(&servers, None).unwrap();
    let grandchild = wait_for_pid(&pid_file);
    assert!(alive(grandchild), "the grandchild runs while the pool does");

    drop(pool);
    let deadline = Instant::now() + Duration::from_secs(10);
    while alive(grandchild) {
        if Instant::now() > deadline {
            // Clean up what the code under test left behind, then fail.
            let _ = std::process::Command::new("kill")
                .args(["-KILL", &grandchild.to_string()])
                .status();
            panic!("the server's grandchild {grandchild} outlived the pool");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
