//! The official MCP client conformance suite
//! (`@modelcontextprotocol/conformance`, installed by
//! scripts/setup-mcp-servers.sh) against boardroom's Streamable HTTP client
//! (`examples/mcp_conformance_client.rs`), issue 10.
//!
//! Every client scenario of the suite that does not need OAuth is run; each
//! check must be SUCCESS (INFO lines are the suite's log, not checks). A
//! WARNING is accepted only where [`ACCEPTED_WARNINGS`] gives the reason.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// The suite version the table in docs/tools.md is for.
const SUITE_VERSION: &str = "0.1.10";

/// The client scenarios of the suite that need no OAuth (`npx conformance
/// list`, minus the `auth/` ones).
const SCENARIOS: &[&str] = &[
    "initialize",
    "tools_call",
    "elicitation-sep1034-client-defaults",
    "sse-retry",
];

/// Warnings accepted, with the reason.
const ACCEPTED_WARNINGS: &[(&str, &str)] = &[(
    // The suite measures the wall-clock delay between its closing a stream
    // and the client's GET: 450-700 ms is SUCCESS, 700-1000 ms WARNING. The
    // client sleeps exactly the `retry:` value (500 ms) and then connects;
    // on a shared 2-core CI machine a debug build can be scheduled late.
    "client-sse-retry-timing",
    "reconnected slightly late: scheduling on a loaded machine, not the client's wait",
)];

/// Builds the example client (cargo is a no-op when it is up to date) and
/// returns its path.
fn client() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(env!("CARGO"))
        .current_dir(manifest)
        .args([
            "build",
            "--quiet",
            "--example",
            "mcp_conformance_client",
            "--message-format=json",
        ])
        .output()
        .expect("run cargo build --example mcp_conformance_client");
    assert!(
        out.status.success(),
        "cargo build --example mcp_conformance_client failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|m| m["target"]["name"] == "mcp_conformance_client")
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
        .expect("cargo did not name the example's executable")
}

fn npx_conformance() -> PathBuf {
    let bin = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
    assert!(
        bin.exists(),
        "{} is missing: run scripts/setup-mcp-servers.sh",
        bin.display()
    );
    bin
}

/// Runs one scenario; returns its checks.
fn run(scenario: &str, client: &Path) -> Vec<Value> {
    let out_dir = tempfile::tempdir().unwrap();
    let out = Command::new("node")
        .arg(npx_conformance())
        .args(["client", "--command"])
        .arg(client)
        .args(["--scenario", scenario, "--timeout", "60000", "-o"])
        .arg(out_dir.path())
        .env("RUST_LOG", "warn")
        .output()
        .expect("run the conformance suite (node)");
    let dir = std::fs::read_dir(out_dir.path())
        .unwrap()
        .flatten()
        .find(|e| e.path().join("checks.json").exists())
        .unwrap_or_else(|| {
            panic!(
                "{scenario}: no checks.json; suite output:\n{}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        });
    let text = std::fs::read_to_string(dir.path().join("checks.json")).unwrap();
    let checks: Value = serde_json::from_str(&text).unwrap();
    checks.as_array().cloned().unwrap_or_default()
}

#[test]
fn every_client_scenario_without_oauth_passes() {
    let client = client();
    let mut table = vec![format!(
        "{:<38} {:>7} {:>7} {:>7}",
        format!("scenario (conformance {SUITE_VERSION})"),
        "success",
        "warning",
        "failure"
    )];
    let mut problems = Vec::new();
    for scenario in SCENARIOS {
        let checks = run(scenario, &client);
        let count = |s: &str| checks.iter().filter(|c| c["status"] == s).count();
        table.push(format!(
            "{scenario:<38} {:>7} {:>7} {:>7}",
            count("SUCCESS"),
            count("WARNING"),
            count("FAILURE")
        ));
        if count("SUCCESS") == 0 {
            problems.push(format!("{scenario}: no successful check at all"));
        }
        for c in &checks {
            let id = c["id"].as_str().unwrap_or("?");
            let why = c["errorMessage"].as_str().unwrap_or("");
            match c["status"].as_str() {
                Some("SUCCESS" | "INFO") => {}
                Some("WARNING") if ACCEPTED_WARNINGS.iter().any(|(w, _)| *w == id) => {
                    eprintln!("{scenario}: accepted warning {id}: {why}");
                }
                other => problems.push(format!("{scenario}: {id}: {other:?}: {why}")),
            }
        }
    }
    // Straight to stderr, past the test harness's capture, so that the
    // table is in the log of every run, passing or not.
    let _ = writeln!(std::io::stderr(), "{}", table.join("\n"));
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
