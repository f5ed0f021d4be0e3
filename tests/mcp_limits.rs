//! An MCP server that writes an endless line (issue 8, finding 3): on
//! stdout it becomes an MCP error at the 16 MiB cap; on stderr it is
//! drained without being kept. Real processes (`cat /dev/zero`); the peak
//! memory of this test process is read from /proc and must stay far below
//! what keeping the line would take.
//!
//! One test function, so that no other test of this binary adds to the
//! peak it reads.

mod mcp_support;

use std::collections::BTreeMap;

use boardroom::mcp::{McpPool, McpServerConfig};
use serde_json::json;

/// The process's peak resident memory in MiB (`VmHWM`).
fn peak_mib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .expect("VmHWM in /proc/self/status");
    kb / 1024
}

fn start(name: &str, config: McpServerConfig) -> Result<McpPool, boardroom::ToolError> {
    let mut servers = BTreeMap::new();
    servers.insert(name.to_string(), config);
    McpPool::start(&servers, None)
}

#[test]
fn endless_lines_on_stdout_and_stderr_are_capped() {
    // stdout: `cat /dev/zero` writes one line that never ends.
    let err = start("zero", McpServerConfig::new("cat", ["/dev/zero"]))
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "mcp server 'zero': the server wrote a line of more than 16 MiB to stdout \
         (the limit)"
    );

    // stderr: 300 MB of one line while the server works; calls go on.
    let script = mcp_support::server_script("server-everything");
    let flood = McpServerConfig::new(
        "sh",
        [
            "-c".to_string(),
            format!(
                "head -c 300000000 /dev/zero >&2 & exec node '{}' stdio",
                script.display()
            ),
        ],
    );
    let pool = start("flood", flood).unwrap();
    assert_eq!(
        pool.call("flood", "echo", json!({"message": "still fine"}))
            .unwrap(),
        "Echo: still fine"
    );
    drop(pool);

    // stderr, then exit: the error keeps a short tail, not the line.
    let dies = McpServerConfig::new(
        "sh",
        [
            "-c",
            "head -c 200000000 /dev/zero | tr '\\0' x >&2; echo >&2; echo last words >&2; exit 3",
        ],
    );
    let err = start("dies", dies).unwrap_err().to_string();
    assert!(
        err.starts_with("mcp server 'dies': the server process ended (stderr: xxx")
            && err.ends_with("| last words)"),
        "{}",
        &err[..err.len().min(300)]
    );
    assert!(err.len() < 2000, "the error kept {} bytes", err.len());

    // Keeping any of these lines whole would take 200 MB or more.
    let peak = peak_mib();
    assert!(peak < 150, "peak memory {peak} MiB");
}
