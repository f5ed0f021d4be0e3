//! The tool policy check: every name in an agent's `tools:` list must be a
//! tool the registry has. A bad entry is reported at its own line.

use std::path::{Path, PathBuf};

use super::ToolRegistry;
use crate::team::{Team, TeamError};
use crate::util::text::closest;

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
    let line = crate::team::front_matter_item_line(path, "tools", item);
    (path.to_path_buf(), line)
}
