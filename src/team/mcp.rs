//! MCP server settings in the `mcpServers` format MCP clients share:
//! `{"mcpServers": {"name": {"command": "...", "args": [...], "env": {...}}}}`
//! for a server started over stdio, or
//! `{"mcpServers": {"name": {"url": "http://.../mcp", "headers": {...}}}}`
//! for one reached over Streamable HTTP, in `team.yaml` or an `mcp.json`
//! beside it. (`${VAR}` in a header value or the url is filled from the
//! environment when the server is opened, by the MCP client.)

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{TeamConfig, TeamError};

/// How to start (stdio) or reach (Streamable HTTP) one MCP server.
///
/// Exactly one of `command` and `url` is set.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// The program to run (stdio servers).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub command: String,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Environment variables to set for it.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The working directory (relative paths: from the team directory;
    /// default: the team directory, so `./server.py` and relative
    /// arguments are the team's files wherever boardroom runs from).
    #[serde(default)]
    pub cwd: Option<String>,
    /// Seconds a tool call may take (default 60; allowed 0.001 to 86400).
    #[serde(default, deserialize_with = "crate::util::duration::de_mcp_timeout")]
    pub timeout: Option<f64>,
    /// The server's URL (Streamable HTTP servers); `${VAR}` is filled from
    /// the environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// HTTP headers sent with every request (Streamable HTTP servers), e.g.
    /// `Authorization: Bearer ${TOKEN}`; `${VAR}` is filled from the
    /// environment and the values are never saved or logged.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// How to answer a server's `elicitation/create` request: `reject`
    /// (the default: a "not supported" error) or `accept_defaults` (accept
    /// with the defaults the server's schema gives; decline when a required
    /// field has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation: Option<Elicitation>,
}

/// How a client without a user answers a server's request for input.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Elicitation {
    /// Answer with a "not supported" error (the capability is not declared).
    #[default]
    Reject,
    /// Accept with the defaults of the requested schema; decline when a
    /// required field has no default.
    AcceptDefaults,
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

    /// A server reached over Streamable HTTP at `url`.
    pub fn http(url: impl Into<String>) -> Self {
        McpServerConfig {
            url: Some(url.into()),
            ..McpServerConfig::default()
        }
    }

    /// Adds an HTTP header (`${VAR}` is filled from the environment).
    #[must_use]
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.insert(name.into(), value.into());
        self
    }

    /// Checks that exactly one transport is configured, and the settings
    /// that only one of them takes.
    pub(crate) fn check(&self) -> Result<(), String> {
        match (&self.url, self.command.is_empty()) {
            (None, true) => Err("set 'command' (a stdio server) or 'url' (Streamable HTTP)".into()),
            (Some(_), false) => Err("set either 'command' or 'url', not both".into()),
            (Some(url), true) => {
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(format!(
                        "url '{}' must start with http:// or https://",
                        crate::model::redact_url(url)
                    ));
                }
                if !self.args.is_empty() || !self.env.is_empty() || self.cwd.is_some() {
                    return Err("'args', 'env' and 'cwd' are for stdio servers, not 'url'".into());
                }
                Ok(())
            }
            (None, false) => {
                if !self.headers.is_empty() {
                    return Err("'headers' are for 'url' servers, not 'command'".into());
                }
                Ok(())
            }
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
        source: Some(std::sync::Arc::new(e)),
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

/// Adds the servers of an `mcp.json` beside `team.yaml` (if there is one)
/// to the config.
pub(crate) fn merge_mcp_json(config: &mut TeamConfig, path: &Path) -> Result<(), TeamError> {
    if !path.exists() {
        return Ok(());
    }
    for (name, server) in load_mcp_json(path)? {
        if config.mcp_servers.contains_key(&name) {
            return Err(TeamError::in_file(
                path,
                format!("mcp server '{name}' is also configured in team.yaml"),
            ));
        }
        config.mcp_servers.insert(name, server);
    }
    Ok(())
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

        std::fs::write(
            &path,
            r#"{"mcpServers": {"remote": {"url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer ${T}"}}}}"#,
        )
        .unwrap();
        let servers = load_mcp_json(&path).unwrap();
        assert_eq!(
            servers["remote"].url.as_deref(),
            Some("http://127.0.0.1:9/mcp")
        );
        assert_eq!(servers["remote"].headers["Authorization"], "Bearer ${T}");
        assert_eq!(servers["remote"].check(), Ok(()));

        std::fs::write(&path, "{\"mcpServers\": {\"fs\": {\"comand\": \"node\"}}}").unwrap();
        let err = load_mcp_json(&path).unwrap_err().to_string();
        assert!(err.contains("mcp.json:1: unknown field 'comand'"), "{err}");
    }

    #[test]
    fn one_transport_per_server() {
        let none = McpServerConfig::default();
        assert_eq!(
            none.check().unwrap_err(),
            "set 'command' (a stdio server) or 'url' (Streamable HTTP)"
        );
        let mut both = McpServerConfig::http("http://h/mcp");
        both.command = "node".into();
        assert_eq!(
            both.check().unwrap_err(),
            "set either 'command' or 'url', not both"
        );
        let ftp = McpServerConfig::http("ftp://h/mcp");
        assert_eq!(
            ftp.check().unwrap_err(),
            "url 'ftp://h/mcp' must start with http:// or https://"
        );
        let stdio = McpServerConfig::new("node", ["x"]).header("A", "b");
        assert_eq!(
            stdio.check().unwrap_err(),
            "'headers' are for 'url' servers, not 'command'"
        );
    }
}
