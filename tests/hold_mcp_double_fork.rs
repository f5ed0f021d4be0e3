//! Issue 28, finding 9 (the rest): an MCP stdio server whose child
//! double-forks (the middle process exits, the grandchild is reparented to
//! init or the nearest subreaper, calls `setsid` and keeps the server's
//! stdout and stderr open) is out of the server's group and out of its
//! descendants. Its reader never sees the end of the output; the run's
//! answer must not wait on it beyond a bound, and it must not outlive the
//! run. A real `sh` server does this.

use std::path::Path;
use std::time::{Duration, Instant};

use boardroom::mcp::McpServerConfig;
use boardroom::testing::Sim;
use boardroom::{AgentSpec, RunStatus, Runtime, Team, TeamConfig};

/// Double-forks a `sleep` into a session of its own that keeps stdout and
/// stderr (its pid into `$1`, once its parent has exited), answers the
/// handshake and the tool list, then waits for its input to end.
const SERVER: &str = r#"
sh -c 'setsid sh -c "echo \$\$ > \"$1.tmp\"; exec sleep 300" &' sh "$1"
while [ ! -s "$1.tmp" ]; do sleep 0.01; done
mv "$1.tmp" "$1"
read -r l
echo '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"forker"}}}'
read -r l
read -r l
echo '{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"t","inputSchema":{"type":"object"}}]}}'
while read -r l; do :; done
"#;

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

/// The parent id of `pid`.
fn parent(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

fn wait_for_pid(file: &Path) -> u32 {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(pid) = std::fs::read_to_string(file)
            .ok()
            .and_then(|t| t.trim().parse().ok())
        {
            return pid;
        }
        assert!(Instant::now() < deadline, "the server never forked");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Kills the escaped process when the test ends, whatever happened.
struct Reap(u32);

impl Drop for Reap {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill")
            .args(["-KILL", &self.0.to_string()])
            .status();
    }
}

#[test]
fn finding9_a_double_forked_child_neither_holds_the_answer_nor_outlives_the_run() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("escaped.pid");
    let mut config = TeamConfig::default();
    config.mcp_servers.insert(
        "forker".into(),
        McpServerConfig::new("sh", ["-c", SERVER, "sh", file.to_str().unwrap()]),
    );
    let team = Team::new(
        "forker",
        config,
        vec![
            AgentSpec::master("lead", "You lead."),
            AgentSpec::member("writer", "Writes", "You write.").with_tools(["forker.*"]),
        ],
    )
    .unwrap();
    // The run on a thread of its own: the test sees whether it returns.
    let (done_tx, done) = crossbeam_channel::bounded(1);
    let run = std::thread::spawn(move || {
        let outcome = Runtime::new(team, Sim::new()).run("Write a note");
        let _ = done_tx.send(());
        outcome
    });
    let escaped = wait_for_pid(&file);
    let _reap = Reap(escaped);
    // It escaped: not a child of the server any more (reparented when its
    // parent exited), in a session of its own.
    let deadline = Instant::now() + Duration::from_secs(10);
    while parent(escaped).is_some_and(|p| p != 1 && alive(p) && p != std::process::id()) {
        let p = parent(escaped).unwrap_or(0);
        let comm = std::fs::read_to_string(format!("/proc/{p}/comm")).unwrap_or_default();
        if !comm.trim().starts_with("sh") {
            break; // a subreaper
        }
        assert!(Instant::now() < deadline, "the middle process never exited");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        done.recv_timeout(Duration::from_secs(60)).is_ok(),
        "the run's answer waited on a double-forked child of its MCP server (it lives 300 s)"
    );
    let outcome = run.join().unwrap().unwrap();
    assert_eq!(outcome.status, RunStatus::Done, "{}", outcome.answer);
    let deadline = Instant::now() + Duration::from_secs(10);
    while alive(escaped) {
        assert!(
            Instant::now() < deadline,
            "process {escaped}, double-forked away from the MCP server, outlived the run"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
