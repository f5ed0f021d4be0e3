use std::fmt;
use std::path::PathBuf;

use super::mcp::McpError;

/// Why a tool call (or setting up the tools) failed.
///
/// A failing call never ends a run: the runtime hands the message back to
/// the model as the tool's result.
#[derive(Debug)]
#[non_exhaustive]
pub enum ToolError {
    /// The arguments are not what the tool's schema asks for.
    BadArguments {
        /// The tool.
        tool: String,
        /// What is wrong with them.
        detail: String,
    },
    /// No tool has this name, or the agent was not granted it.
    Unknown {
        /// The name asked for.
        name: String,
    },
    /// A workspace tool was called in a run without a workspace.
    NoWorkspace,
    /// A path would lead out of the workspace.
    PathEscape {
        /// The path as the model wrote it.
        path: String,
        /// Why it is refused.
        detail: String,
    },
    /// Reading or writing a file failed.
    Io {
        /// The path, relative to the workspace.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A plan tool was asked about a module that does not exist, or for a
    /// change it cannot make.
    Plan {
        /// What is wrong.
        detail: String,
    },
    /// The MCP server could not be reached or did not answer.
    Mcp {
        /// The server's name.
        server: String,
        /// The cause.
        source: McpError,
    },
    /// An agent is granted a tool that no tool has (file and line inside).
    Policy(crate::team::TeamError),
    /// The tool ran and reported a failure (MCP `isError: true`).
    Failed {
        /// The tool.
        tool: String,
        /// What it said.
        detail: String,
    },
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToolError::BadArguments { tool, detail } => {
                write!(f, "tool '{tool}': bad arguments: {detail}")
            }
            ToolError::Unknown { name } => write!(f, "unknown tool '{name}'"),
            ToolError::NoWorkspace => write!(f, "workspace: this run has no workspace directory"),
            ToolError::PathEscape { path, detail } => {
                write!(f, "workspace: path '{path}' refused: {detail}")
            }
            ToolError::Io { path, source } => {
                write!(f, "workspace: {}: {source}", path.display())
            }
            ToolError::Plan { detail } => write!(f, "plan: {detail}"),
            ToolError::Mcp { server, source } => write!(f, "mcp server '{server}': {source}"),
            ToolError::Policy(e) => write!(f, "{e}"),
            ToolError::Failed { tool, detail } => write!(f, "tool '{tool}' failed: {detail}"),
        }
    }
}

impl std::error::Error for ToolError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ToolError::Io { source, .. } => Some(source),
            ToolError::Mcp { source, .. } => Some(source),
            // Displayed as the team error's own text: pass its cause on.
            ToolError::Policy(e) => e.source(),
            _ => None,
        }
    }
}
