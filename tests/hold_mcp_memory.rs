//! Issue 28, finding 5: an MCP tool result of 500,000 small items in one
//! line of about 13 MB (the issue saw 808 MB of resident memory for it),
//! and the largest result under the caps (one line near 16 MiB of as many
//! values as are allowed), from a real MCP server over stdio (a Python
//! script the test writes and starts). The peak resident memory of this
//! process (`VmHWM`) stays a small multiple of the 16 MiB line cap.

use std::collections::BTreeMap;

use boardroom::mcp::{McpPool, McpServerConfig};
use serde_json::json;

/// A stdio MCP server: one tool, `many`, whose result is one line of
/// `N` text items of `SIZE` characters each (argv 1 and 2).
const SERVER: &str = r#"
import json, sys
n, size = int(sys.argv[1]), int(sys.argv[2])
item = json.dumps({"type": "text", "text": "x" * size})
for line in sys.stdin:
    req = json.loads(line)
    if "id" not in req:
        continue
    m, i = req["method"], req["id"]
    if m == "initialize":
        res = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
               "serverInfo": {"name": "many"}}
    elif m == "tools/list":
        res = {"tools": [{"name": "many", "inputSchema": {"type": "object"}}]}
    elif m == "tools/call":
        sys.stdout.write('{"jsonrpc":"2.0","id":%s,"result":{"content":[' % json.dumps(i))
        sys.stdout.write(",".join([item] * n))
        sys.stdout.write("]}}\n")
        sys.stdout.flush()
        continue
    else:
        res = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": i, "result": res}) + "\n")
    sys.stdout.flush()
"#;

/// The most resident memory this process has had, in MiB.
fn peak_mib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .expect("VmHWM in /proc/self/status")
        / 1024
}

/// A pool of one stdio server whose tool answers `n` items of `size`.
fn pool(dir: &std::path::Path, n: usize, size: usize) -> McpPool {
    let script = dir.join("many.py");
    std::fs::write(&script, SERVER).unwrap();
    let mut servers = BTreeMap::new();
    servers.insert(
        "many".to_string(),
        McpServerConfig::new(
            "python3",
            [
                script.to_string_lossy().into_owned(),
                n.to_string(),
                size.to_string(),
            ],
        ),
    );
    McpPool::start(&servers, None).expect("python3 runs the MCP server")
}

/// Both cases in one test: `VmHWM` is the whole process's, and tests in
/// one binary run at once.
#[test]
fn finding5_a_huge_mcp_result_costs_a_small_multiple_of_the_line_cap() {
    const CAP_MIB: u64 = 16;
    let dir = tempfile::tempdir().unwrap();

    // 500,000 items of one character: 13.5 MB in one line, refused by
    // the count of values (the issue: 808 MB resident, then accepted).
    let many = pool(dir.path(), 500_000, 1);
    let before = peak_mib();
    let err = many
        .call("many", "many", json!({}))
        .unwrap_err()
        .to_string();
    let peak = peak_mib();
    eprintln!("500,000 items: peak {before} -> {peak} MiB");
    assert!(
        err.contains("holds more than 200000 JSON values"),
        "500,000 items were not refused by their count: {err}"
    );
    assert!(
        peak <= before + 3 * CAP_MIB,
        "500,000 items took this process from {before} to {peak} MiB"
    );
    drop(many);

    // The most the caps let through: 45,000 items of 340 characters,
    // 15.8 MB in one line, 180,000 values, parsed and handed on.
    let big = pool(dir.path(), 45_000, 340);
    let before = peak_mib();
    let result = big
        .call("many", "many", json!({}))
        .expect("a result under the caps");
    let peak = peak_mib();
    eprintln!(
        "45,000 items of 340: peak {before} -> {peak} MiB, result {} bytes",
        result.len()
    );
    assert!(result.len() > 15_000_000, "{}", result.len());
    assert!(
        peak <= before + 6 * CAP_MIB,
        "a 16 MiB result took this process from {before} to {peak} MiB"
    );
}
