//! Shared by the MCP tests: where the reference servers are installed and
//! which processes are children of this test binary.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use boardroom::McpServerConfig;

/// The entry point of an installed reference server; fails (never skips)
/// when it is missing.
pub fn server_script(package: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("node_modules/@modelcontextprotocol")
        .join(package)
        .join("dist/index.js");
    assert!(
        path.exists(),
        "{} is missing: run scripts/setup-mcp-servers.sh (npm install of the reference MCP servers)",
        path.display()
    );
    path
}

/// `server-everything` over stdio.
pub fn everything() -> McpServerConfig {
    let script = server_script("server-everything");
    McpServerConfig::new(
        "node",
        [script.to_string_lossy().into_owned(), "stdio".into()],
    )
}

/// `server-filesystem` allowed to touch `dir` only.
pub fn filesystem(dir: &Path) -> McpServerConfig {
    let script = server_script("server-filesystem");
    McpServerConfig::new(
        "node",
        [
            script.to_string_lossy().into_owned(),
            dir.to_string_lossy().into_owned(),
        ],
    )
}

/// Whether a process with this id exists (a reaped child does not).
pub fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Kills a process with SIGKILL.
pub fn kill(pid: u32) {
    let status = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(status.success(), "kill {pid} failed");
}

/// Ids of the live child processes of this test binary.
pub fn children() -> Vec<u32> {
    let me = std::process::id();
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in dir.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // "pid (comm) state ppid ...": comm may hold spaces, so split after ')'.
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        let mut fields = rest.split_whitespace();
        let _state = fields.next();
        if fields.next().and_then(|p| p.parse::<u32>().ok()) == Some(me) {
            out.push(pid);
        }
    }
    out
}
