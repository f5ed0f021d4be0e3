//! MCP clients: the client (one session per server, over stdio — a
//! process, newline-delimited JSON-RPC 2.0, one reader thread — or over
//! Streamable HTTP — POSTs answered with JSON or event streams, a GET
//! stream for what the server sends on its own), the session state both
//! share (callers waiting for their response by id, answers to server
//! requests) and the pool (one shared session per configured server,
//! restarted once if it dies, every process ended when the pool drops).

mod client;
mod config;
mod http;
mod lines;
mod pool;
mod probe;
mod reap;
mod session;
mod sse;
mod stdio;

use std::fmt;
use std::time::Duration;

pub use crate::team::{Elicitation, McpServerConfig};
pub use pool::{McpPool, McpToolInfo};

/// The protocol version the client asks for; it accepts what the server
/// answers with.
pub(crate) const PROTOCOL_VERSION: &str = "2025-06-18";

/// How long a tool call may take unless the server's config says otherwise.
pub(crate) const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// An underlying error an [`McpError`] keeps as its `source()`: shared, so
/// the error stays `Clone`.
type Cause = Option<std::sync::Arc<dyn std::error::Error + Send + Sync + 'static>>;

/// Why talking to an MCP server failed.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum McpError {
    /// The server process could not be started.
    Spawn {
        /// The command.
        command: String,
        /// The cause.
        detail: String,
        /// The operating system's error.
        source: Cause,
    },
    /// The server process ended (or closed its output) before answering.
    Closed {
        /// The last lines it wrote to stderr, if any.
        stderr: String,
    },
    /// No answer within the timeout.
    Timeout {
        /// The method.
        method: String,
        /// The timeout.
        after: Duration,
    },
    /// The server answered with a JSON-RPC error.
    Rpc {
        /// The method.
        method: String,
        /// The error code.
        code: i64,
        /// The error message.
        message: String,
    },
    /// The server's answer does not have the shape MCP gives it.
    Protocol {
        /// What is wrong.
        detail: String,
        /// The JSON parser's error, where there is one.
        source: Cause,
    },
    /// The server died again after its one restart.
    GaveUp {
        /// How many times it was restarted.
        restarts: u32,
    },
    /// The server answered an HTTP request with an error status.
    Http {
        /// The status.
        status: u16,
        /// The start of the body (secrets masked).
        detail: String,
    },
    /// The server's URL could not be reached (after the retries).
    Unreachable {
        /// The URL as configured (`${VAR}`s not filled).
        url: String,
        /// The cause.
        detail: String,
        /// The connection's error, where there is one and its text holds
        /// no configured secret.
        source: Cause,
    },
    /// The server wrote a line (or an HTTP body) longer than the cap.
    LineTooLong {
        /// Where: `stdout`, `the event stream`, `the http body`.
        stream: &'static str,
        /// The cap in bytes.
        limit: usize,
    },
    /// The server lists more tools than boardroom takes: more than 1000
    /// tools, or a list in one answer of more than 200,000 JSON values.
    TooManyTools,
    /// The server's settings are wrong (a `${VAR}` that is not set, both
    /// or neither of `command` and `url`, ...).
    Config {
        /// What is wrong.
        detail: String,
    },
    /// No server with this name is configured.
    UnknownServer {
        /// The name.
        name: String,
    },
}

impl fmt::Display for McpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            McpError::Spawn {
                command, detail, ..
            } => write!(f, "cannot start '{command}': {detail}"),
            McpError::Closed { stderr } if stderr.is_empty() => {
                write!(f, "the server process ended")
            }
            McpError::Closed { stderr } => {
                write!(f, "the server process ended (stderr: {stderr})")
            }
            McpError::Timeout { method, after } => {
                write!(f, "{method}: no answer within {:.1}s", after.as_secs_f64())
            }
            McpError::Rpc {
                method,
                code,
                message,
            } => write!(f, "{method}: error {code}: {message}"),
            McpError::Protocol { detail, .. } => write!(f, "protocol error: {detail}"),
            McpError::GaveUp { restarts } => write!(
                f,
                "the server died again after {restarts} restart(s); not restarting it"
            ),
            McpError::Http { status, detail } if detail.is_empty() => {
                write!(f, "http status {status}")
            }
            McpError::Http { status, detail } => write!(f, "http status {status}: {detail}"),
            McpError::Unreachable { url, detail, .. } => write!(f, "cannot reach {url}: {detail}"),
            McpError::LineTooLong { stream, limit } => write!(
                f,
                "the server wrote a line of more than {} MiB to {stream} (the limit)",
                limit >> 20
            ),
            McpError::TooManyTools => write!(
                f,
                "tools/list: the server lists more tools than boardroom takes (at most {} \
                 tools, {} JSON values in one answer)",
                lines::MAX_TOOLS,
                lines::MAX_VALUES
            ),
            McpError::Config { detail } => write!(f, "{detail}"),
            McpError::UnknownServer { name } => write!(f, "no mcp server '{name}' is configured"),
        }
    }
}

impl std::error::Error for McpError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            McpError::Spawn {
                source: Some(e), ..
            }
            | McpError::Protocol {
                source: Some(e), ..
            }
            | McpError::Unreachable {
                source: Some(e), ..
            } => Some(e.as_ref()),
            _ => None,
        }
    }
}
