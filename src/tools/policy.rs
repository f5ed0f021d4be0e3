//! The tool policy check: every name in an agent's `tools:` list must be a
//! tool the registry has. A bad entry is reported at its own line.

use std::path::{Path, PathBuf};

use super::ToolRegistry;
use crate::protocol::closest;
use crate::team::{Team, TeamError};

pub(super) fn check(registry: &ToolRegistry, team: &Team) -> Result<(), TeamError> {
    let all = registry.names();
    let names: Vec<&str> = all.iter().map(String::as_str).collect();
    let servers: Vec<&str> = team
        .config()
        .mcp_servers
        .keys()
        .map(String::as_str)
        .collect();
    for agent in team.agents() {
        for grant in &agent.tools {
            if !registry.expand(grant).is_empty() {
                continue;
            }
            let mut msg = format!("unknown tool '{grant}'");
            match grant.split_once('.') {
                Some((server, _)) if !servers.contains(&server) => {
                    msg.push_str(&format!(" (no mcp server '{server}' is configured"));
                    if servers.is_empty() {
                        msg.push_str(": add it to team.yaml 'mcpServers' or mcp.json)");
                    } else {
                        msg.push_str(&format!("; configured: {})", servers.join(", ")));
                    }
                }
                _ => {
                    if let Some(s) = closest(grant, &names) {
                        msg.push_str(&format!(" (did you mean '{s}'?)"));
                    }
                }
            }
            let (path, line) = locate(agent.source.as_deref(), &agent.name, grant);
            return Err(match line {
                Some(line) => TeamError::at(path, line, msg),
                None => TeamError::in_file(path, msg),
            });
        }
    }
    Ok(())
}

/// The file of an agent and the line of `item` in its `tools:` list.
fn locate(source: Option<&Path>, agent: &str, item: &str) -> (PathBuf, Option<usize>) {
    let Some(path) = source else {
        return (PathBuf::from(format!("agent '{agent}'")), None);
    };
    let line = std::fs::read_to_string(path)
        .ok()
        .and_then(|text| item_line(&text, "tools", item));
    (path.to_path_buf(), line)
}

/// The 1-based line of `item` in the list under top-level `key` of a
/// file's front matter: the key's own line for a flow list (`[a, b]`),
/// the `- item` line for a block list.
pub(crate) fn item_line(text: &str, key: &str, item: &str) -> Option<usize> {
    let mut lines = text.lines().enumerate();
    let mut key_line = None;
    for (i, line) in lines.by_ref() {
        if i > 0 && line.trim_end() == "---" {
            return None;
        }
        if let Some(rest) = line.strip_prefix(key).and_then(|r| r.strip_prefix(':')) {
            if !rest.trim().is_empty() && !rest.trim().starts_with('#') {
                return Some(i + 1);
            }
            key_line = Some(i + 1);
            break;
        }
    }
    let key_line = key_line?;
    for (i, line) in lines {
        if !(line.starts_with([' ', '\t', '-']) || line.trim().is_empty()) {
            break;
        }
        if let Some(value) = line.trim().strip_prefix('-') {
            let value = value.split(" #").next().unwrap_or("").trim();
            if value.trim_matches(['"', '\'']) == item {
                return Some(i + 1);
            }
        }
    }
    Some(key_line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_line_of_a_list_item() {
        let block =
            "---\nname: w\nrole: member\ntools:\n  - workspace_read\n  - \"plan_reed\"\n---\n";
        assert_eq!(item_line(block, "tools", "plan_reed"), Some(6));
        assert_eq!(item_line(block, "tools", "workspace_read"), Some(5));
        let flow = "---\nname: w\ntools: [a, b]\n---\n";
        assert_eq!(item_line(flow, "tools", "b"), Some(3));
        assert_eq!(
            item_line("---\nname: w\n---\ntools: [x]\n", "tools", "x"),
            None
        );
    }
}
