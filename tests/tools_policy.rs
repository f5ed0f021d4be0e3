//! Tool policy on a team on disk: `mcpServers` in team.yaml or mcp.json,
//! `boardroom check` listing each agent's tools (MCP ones included) or
//! naming the bad entry by file and line (issue 5).

mod mcp_support;

use std::path::Path;
use std::process::Command;

use boardroom::Team;
use boardroom::testing::McpProbe;
use boardroom::tools::ToolRegistry;

fn write(dir: &Path, rel: &str, text: &str) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A team whose writer grants `tools` (YAML block list lines).
fn team_dir(tools: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "agents/lead.md", "---\nname: lead\nrole: master\n---\n");
    write(d, "souls/lead.md", "You lead.");
    let mut writer = String::from("---\nname: writer\nrole: member\ndescription: Writes\ntools:\n");
    for t in tools {
        writer.push_str(&format!("  - {t}\n"));
    }
    writer.push_str("---\n");
    write(d, "agents/writer.md", &writer);
    write(d, "souls/writer.md", "You write.");
    dir
}

fn everything_json() -> String {
    let script = mcp_support::server_script("server-everything");
    serde_json::json!({"mcpServers": {"everything": {
        "command": "node", "args": [script, "stdio"]
    }}})
    .to_string()
}

fn check(dir: &Path) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_boardroom"))
        .args(["check", "--team"])
        .arg(dir)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn an_unknown_tool_is_named_by_file_and_line() {
    let dir = team_dir(&["workspace_read", "workspace_rite"]);
    let team = Team::load(dir.path()).unwrap();
    let err = ToolRegistry::for_team(&team)
        .unwrap()
        .check(&team)
        .unwrap_err()
        .to_string();
    let file = dir.path().join("agents/writer.md");
    assert_eq!(
        err,
        format!(
            "{}:7: unknown tool 'workspace_rite' (did you mean 'workspace_write'?)",
            file.display()
        )
    );
    let (code, _, stderr) = check(dir.path());
    assert_eq!(code, 2);
    assert_eq!(stderr.trim(), format!("error: {err}"));
}

#[test]
fn an_unconfigured_server_is_named() {
    let dir = team_dir(&["plan_read", "search.query"]);
    let (code, _, stderr) = check(dir.path());
    assert_eq!(code, 2);
    assert!(
        stderr.trim().ends_with(
            "agents/writer.md:7: unknown tool 'search.query' (no mcp server 'search' is \
             configured: add it to team.yaml 'mcpServers' or mcp.json)"
        ),
        "{stderr}"
    );
}

#[test]
fn check_lists_mcp_tools_from_mcp_json() {
    let dir = team_dir(&["workspace_write", "everything.echo", "everything.get-sum"]);
    write(dir.path(), "mcp.json", &everything_json());
    let (code, stdout, stderr) = check(dir.path());
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("[tools: workspace_write, everything.echo, everything.get-sum]"),
        "{stdout}"
    );
    assert!(
        stdout.contains("mcp    everything     mcp-servers/everything (protocol 2025-06-18)"),
        "{stdout}"
    );
}

#[test]
fn a_wildcard_grants_every_tool_of_a_server_configured_in_team_yaml() {
    let dir = team_dir(&["everything.*"]);
    let script = mcp_support::server_script("server-everything");
    write(
        dir.path(),
        "team.yaml",
        &format!(
            "name: t\nmcpServers:\n  everything:\n    command: node\n    args: [\"{}\", stdio]\n",
            script.display()
        ),
    );
    let team = Team::load(dir.path()).unwrap();
    let registry = ToolRegistry::for_team(&team).unwrap();
    let granted: Vec<String> = registry
        .granted(team.agent("writer").unwrap())
        .unwrap()
        .iter()
        .map(|t| t.name().to_string())
        .collect();
    assert!(
        granted.contains(&"everything.echo".to_string()),
        "{granted:?}"
    );
    assert!(
        granted.contains(&"everything.get-sum".to_string()),
        "{granted:?}"
    );
    assert!(granted.iter().all(|n| n.starts_with("everything.")));
    let pid = registry.mcp().unwrap().pid("everything").unwrap();
    drop(registry);
    assert!(
        !mcp_support::alive(pid),
        "server {pid} outlived the registry"
    );
}

#[test]
fn the_same_server_in_team_yaml_and_mcp_json_is_an_error() {
    let dir = team_dir(&[]);
    write(dir.path(), "mcp.json", &everything_json());
    write(
        dir.path(),
        "team.yaml",
        "mcpServers:\n  everything:\n    command: node\n",
    );
    let err = Team::load(dir.path()).unwrap_err().to_string();
    assert!(
        err.ends_with("mcp.json: mcp server 'everything' is also configured in team.yaml"),
        "{err}"
    );
}

#[test]
fn run_with_a_bad_grant_exits_2_naming_the_entry() {
    let dir = team_dir(&["plan_raed"]);
    let out = Command::new(env!("CARGO_BIN_EXE_boardroom"))
        .args(["run", "--model", "sim", "--team"])
        .arg(dir.path())
        .arg("a task")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("agents/writer.md:6: unknown tool 'plan_raed' (did you mean 'plan_read'?)"),
        "{stderr}"
    );
}
