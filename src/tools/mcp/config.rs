//! Server settings in the `mcpServers` format MCP clients share:
//! `{"mcpServers": {"name": {"command": "...", "args": [...], "env": {...}}}}`.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::team::TeamError;

/// How to start one MCP server.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// The program to run.
    pub command: String,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Environment variables to set for it.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The working directory (relative paths: from the team directory).
    #[serde(default)]
    pub cwd: Option<String>,
    /// Seconds a tool call may take (default 60; allowed 0.001 to 86400).
    #[serde(default, deserialize_with = "crate::model::duration::de_mcp_timeout")]
    pub timeout: Option<f64>,
}

impl McpServerConfig {
    /// A server started as `command args...`.
    pub fn new<I, S>(command: impl Into<String>, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        McpServerConfig {
            command: command.into(),
            args: args.into_iter().map(Into::into).collect(),
            ..McpServerConfig::default()
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct McpJson {
    #[serde(rename = "mcpServers", default)]
    mcp_servers: BTreeMap<String, McpServerConfig>,
}

/// Reads an `mcp.json` file (`{"mcpServers": {...}}`).
///
/// # Errors
///
/// A [`TeamError`] naming the file (and line) when it cannot be read or
/// does not have that shape.
pub(crate) fn load_mcp_json(path: &Path) -> Result<BTreeMap<String, McpServerConfig>, TeamError> {
    let text = std::fs::read_to_string(path).map_err(|source| TeamError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let parsed: McpJson = serde_json::from_str(&text).map_err(|e| TeamError::Invalid {
        path: path.to_path_buf(),
        line: Some(e.line()),
        message: strip_position(&e.to_string()),
    })?;
    Ok(parsed.mcp_servers)
}

/// serde_json appends " at line L column C"; the error prints its own line.
fn strip_position(msg: &str) -> String {
    msg.find(" at line ")
        .map_or(msg, |p| &msg[..p])
        .replace('`', "'")
}

/// Server names must be usable in `server.tool`.
pub(crate) fn check_server_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "bad mcp server name '{name}': use letters, digits, '_' and '-'"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_shared_format() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mcp.json");
        std::fs::write(
            &path,
            r#"{"mcpServers": {"fs": {"command": "node", "args": ["x.js", "/tmp"], "env": {"A": "1"}}}}"#,
        )
        .unwrap();
        let servers = load_mcp_json(&path).unwrap();
        assert_eq!(servers["fs"].command, "node");
        assert_eq!(servers["fs"].args, ["x.js", "/tmp"]);
        assert_eq!(servers["fs"].env["A"], "1");

        std::fs::write(&path, "{\"mcpServers\": {\"fs\": {\"comand\": \"node\"}}}").unwrap();
        let err = load_mcp_json(&path).unwrap_err().to_string();
        assert!(err.contains("mcp.json:1: unknown field 'comand'"), "{err}");
    }
}
