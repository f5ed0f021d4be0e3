//! Issue 28, finding 9: an MCP stdio server that tries to outlive its run
//! is not left running. A real `sh` server ignores SIGTERM and the close
//! of its input, leaves a sleeping grandchild in its group and another in a
//! session of its own (`setsid`); once the pool (or the run that started
//! it) ends, none of the three is running.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use boardroom::mcp::{McpPool, McpServerConfig};
use boardroom::testing::Sim;
use boardroom::{AgentSpec, RunStatus, Runtime, Team, TeamConfig};

/// Writes its own pid and its two children's into `$1`, answers the
/// handshake and the tool list, then outlives the close of its input.
const STUBBORN: &str = r#"
trap '' TERM HUP INT
sleep 300 </dev/null >/dev/null 2>&1 &
grand=$!
setsid sleep 300 </dev/null >/dev/null 2>&1 &
escaped=$!
echo "$$ $grand $escaped" > "$1.tmp" && mv "$1.tmp" "$1"
read -r l
echo '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"stubborn"}}}'
read -r l
read -r l
echo '{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"t","inputSchema":{"type":"object"}}]}}'
while read -r l; do :; done
sleep 300
"#;

fn config(pid_file: &Path) -> McpServerConfig {
    McpServerConfig::new("sh", ["-c", STUBBORN, "sh", pid_file.to_str().unwrap()])
}

/// Whether `pid` still runs (a zombie has ended).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            !state.starts_with('Z') && !state.starts_with('X')
        }
        Err(_) => false,
    }
}

fn pids(file: &Path) -> Vec<u32> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(text) = std::fs::read_to_string(file) {
            return text
                .split_whitespace()
                .map(|p| p.parse().unwrap())
                .collect();
        }
        assert!(Instant::now() < deadline, "the server never started");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Kills what the code under test left behind, whatever happened.
struct Reap(Vec<u32>);

impl Drop for Reap {
    fn drop(&mut self) {
        for pid in &self.0 {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
    }
}

fn assert_all_end(reap: &Reap) {
    let deadline = Instant::now() + Duration::from_secs(10);
    for &pid in &reap.0 {
        while alive(pid) {
            assert!(
                Instant::now() < deadline,
                "process {pid} of the server (server, grandchild, setsid child: {:?}) \
                 outlived it",
                reap.0
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

#[test]
fn finding9_dropping_the_pool_ends_a_stubborn_server_and_everything_it_started() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("pids");
    let mut servers = BTreeMap::new();
    servers.insert("stubborn".to_string(), config(&file));
    let pool = McpPool::start(&servers, None).unwrap();
    let reap = Reap(pids(&file));
    assert_eq!(reap.0.len(), 3);
    assert!(
        reap.0.iter().all(|&p| alive(p)),
        "all run while the pool does"
    );
    drop(pool);
    assert_all_end(&reap);
}

#[test]
fn finding9_a_run_leaves_no_process_of_its_servers_behind() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("pids");
    let mut team = TeamConfig::default();
    team.mcp_servers.insert("stubborn".into(), config(&file));
    let team = Team::new(
        "stubborn",
        team,
        vec![
            AgentSpec::master("lead", "You lead."),
            AgentSpec::member("writer", "Writes", "You write.").with_tools(["stubborn.*"]),
        ],
    )
    .unwrap();
    let outcome = Runtime::new(team, Sim::new()).run("Write a note").unwrap();
    assert_eq!(outcome.status, RunStatus::Done, "{}", outcome.answer);
    let reap = Reap(pids(&file));
    assert_all_end(&reap);
}
