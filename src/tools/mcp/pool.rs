//! One shared session per configured MCP server.
//!
//! Every thread of a run calls through the same session (requests are
//! multiplexed by id). A server that dies is restarted once: the call that
//! found it dead returns an error, the calls after it go to the new
//! process (over HTTP: a URL that stopped answering gets a new session,
//! initialized by the next call); a second death is final. Dropping the pool (or
//! [`McpPool::shutdown`]) kills and reaps every server process.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde_json::Value;

use super::client::{CallOutput, McpClient};
use super::{DEFAULT_CALL_TIMEOUT, McpError, McpServerConfig};
use crate::tools::ToolError;

/// Restarts allowed per server per pool.
const MAX_RESTARTS: u32 = 1;

/// A tool an MCP server offers.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct McpToolInfo {
    /// The server's name (from the config).
    pub server: String,
    /// The tool's name on the server.
    pub name: String,
    /// Its description.
    pub description: String,
    /// JSON schema of its arguments.
    pub input_schema: Value,
}

struct Server {
    config: McpServerConfig,
    timeout: Duration,
    session: Mutex<Option<Arc<McpClient>>>,
    restart_lock: Mutex<()>,
    restarts: AtomicU32,
    tools: Mutex<Vec<McpToolInfo>>,
}

/// Running MCP servers, one shared session each. Ends them all on drop.
pub struct McpPool {
    servers: BTreeMap<String, Server>,
    base_dir: Option<PathBuf>,
    closed: AtomicBool,
}

impl std::fmt::Debug for McpPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpPool")
            .field("servers", &self.servers.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl McpPool {
    /// Starts every server (in parallel), initializes each session and
    /// lists its tools. Relative `cwd`s are taken from `base_dir`.
    ///
    /// # Errors
    ///
    /// [`ToolError::Mcp`] naming the first server that could not be started
    /// or listed; the servers already started are ended.
    pub fn start(
        servers: &BTreeMap<String, McpServerConfig>,
        base_dir: Option<&Path>,
    ) -> Result<McpPool, ToolError> {
        let mut pool = McpPool {
            servers: BTreeMap::new(),
            base_dir: base_dir.map(Path::to_path_buf),
            closed: AtomicBool::new(false),
        };
        for (name, config) in servers {
            crate::team::check_server_name(name).map_err(|detail| ToolError::Mcp {
                server: name.clone(),
                source: McpError::Protocol {
                    detail,
                    source: None,
                },
            })?;
            let timeout = config
                .timeout
                .and_then(|t| {
                    crate::util::duration::MCP_TIMEOUT
                        .check_secs_f64("timeout", t)
                        .ok()
                })
                .unwrap_or(DEFAULT_CALL_TIMEOUT);
            pool.servers.insert(
                name.clone(),
                Server {
                    config: config.clone(),
                    timeout,
                    session: Mutex::new(None),
                    restart_lock: Mutex::new(()),
                    restarts: AtomicU32::new(0),
                    tools: Mutex::new(Vec::new()),
                },
            );
        }
        let started: Vec<Result<(), ToolError>> = std::thread::scope(|s| {
            let handles: Vec<_> = pool
                .servers
                .keys()
                .map(|name| {
                    let pool = &pool;
                    std::thread::Builder::new()
                        .name(format!("mcp-{name}-start"))
                        .spawn_scoped(s, move || pool.open(name))
                })
                .collect();
            handles
                .into_iter()
                .zip(pool.servers.keys())
                .map(|(h, name)| match h {
                    Ok(h) => h.join().unwrap_or_else(|_| {
                        Err(mcp_err(
                            name,
                            McpError::Protocol {
                                detail: "the start thread panicked".into(),
                                source: None,
                            },
                        ))
                    }),
                    Err(e) => Err(mcp_err(
                        name,
                        McpError::Spawn {
                            command: String::new(),
                            detail: format!("cannot start a thread: {e}"),
                            source: Some(std::sync::Arc::new(e)),
                        },
                    )),
                })
                .collect()
        });
        // On error `pool` drops here and ends what did start.
        started.into_iter().collect::<Result<Vec<()>, _>>()?;
        Ok(pool)
    }

    /// Starts one server's process and lists its tools.
    fn open(&self, name: &str) -> Result<(), ToolError> {
        let server = self.server(name)?;
        let client = McpClient::start(name, &server.config, self.base_dir.as_deref())
            .map_err(|e| mcp_err(name, e))?;
        let tools = list(name, &client, server.timeout)?;
        // The list answers after any change announced before it.
        client.take_tools_changed();
        *server.tools.lock() = tools;
        *server.session.lock() = Some(Arc::new(client));
        Ok(())
    }

    fn server(&self, name: &str) -> Result<&Server, ToolError> {
        self.servers.get(name).ok_or_else(|| {
            mcp_err(
                name,
                McpError::UnknownServer {
                    name: name.to_string(),
                },
            )
        })
    }

    /// The configured servers' names.
    pub fn servers(&self) -> impl Iterator<Item = &str> {
        self.servers.keys().map(String::as_str)
    }

    /// The tools of one server (listed again if it announced a change
    /// with `notifications/tools/list_changed`; the last list when that
    /// fails).
    ///
    /// # Errors
    ///
    /// [`ToolError::Mcp`] for an unknown server.
    pub fn tools(&self, server: &str) -> Result<Vec<McpToolInfo>, ToolError> {
        let s = self.server(server)?;
        let client = s.session.lock().clone();
        if let Some(client) = client.filter(|c| c.is_alive() && c.take_tools_changed()) {
            // One refresh at a time; the others take the list it leaves.
            let _one = s.restart_lock.lock();
            match list(server, &client, s.timeout) {
                Ok(tools) => {
                    log::info!(
                        "mcp '{server}': the tool list changed: {} tools",
                        tools.len()
                    );
                    *s.tools.lock() = tools;
                }
                Err(e) => log::warn!("{e}: keeping the last tool list"),
            }
        }
        Ok(s.tools.lock().clone())
    }

    /// Calls `tool` on `server` and returns its text.
    ///
    /// # Errors
    ///
    /// [`ToolError::Failed`] when the server flags the result with
    /// `isError: true`; [`ToolError::Mcp`] when the server cannot be reached,
    /// times out or died (it is then restarted once for the calls after).
    pub fn call(&self, server: &str, tool: &str, arguments: Value) -> Result<String, ToolError> {
        self.call_within(server, tool, arguments, None)
    }

    /// [`McpPool::call`], ending by `deadline` (the run's) when that comes
    /// before the server's own timeout.
    pub(crate) fn call_within(
        &self,
        server: &str,
        tool: &str,
        arguments: Value,
        deadline: Option<Instant>,
    ) -> Result<String, ToolError> {
        let s = self.server(server)?;
        let timeout = match deadline {
            Some(d) => s.timeout.min(d.saturating_duration_since(Instant::now())),
            None => s.timeout,
        };
        if timeout.is_zero() {
            return Err(mcp_err(
                server,
                McpError::Timeout {
                    method: "tools/call".to_string(),
                    after: timeout,
                },
            ));
        }
        let client = self.session(server, s)?;
        match client.call_tool(tool, arguments, timeout) {
            Ok(CallOutput {
                text,
                is_error: false,
            }) => Ok(text),
            Ok(CallOutput { text, .. }) => Err(ToolError::Failed {
                tool: format!("{server}.{tool}"),
                detail: text,
            }),
            Err(e @ (McpError::Closed { .. } | McpError::LineTooLong { .. }))
                if !client.is_http() =>
            {
                log::warn!("mcp '{server}': the server died during a call to {tool}: {e}");
                if let Err(again) = self.restart(server, s, Some(&client)) {
                    log::warn!("mcp '{server}': {again}");
                }
                Err(mcp_err(server, e))
            }
            Err(e) => Err(mcp_err(server, e)),
        }
    }

    /// The live session, restarting a dead one if it has restarts left.
    fn session(&self, name: &str, s: &Server) -> Result<Arc<McpClient>, ToolError> {
        let current = s.session.lock().clone();
        match current {
            Some(c) if c.is_alive() => Ok(c),
            dead => self.restart(name, s, dead.as_ref()),
        }
    }

    fn restart(
        &self,
        name: &str,
        s: &Server,
        dead: Option<&Arc<McpClient>>,
    ) -> Result<Arc<McpClient>, ToolError> {
        let _one_at_a_time = s.restart_lock.lock();
        if self.closed.load(Ordering::SeqCst) {
            return Err(mcp_err(
                name,
                McpError::Closed {
                    stderr: "the pool was shut down".into(),
                },
            ));
        }
        let current = s.session.lock().clone();
        if let Some(c) = &current {
            let replaced = dead.is_none_or(|d| !Arc::ptr_eq(d, c));
            if c.is_alive() && replaced {
                return Ok(Arc::clone(c));
            }
        }
        let restarts = s.restarts.load(Ordering::SeqCst);
        if restarts >= MAX_RESTARTS {
            return Err(mcp_err(name, McpError::GaveUp { restarts }));
        }
        s.restarts.fetch_add(1, Ordering::SeqCst);
        log::warn!("mcp '{name}': restarting the server");
        let client = McpClient::start(name, &s.config, self.base_dir.as_deref())
            .map_err(|e| mcp_err(name, e))?;
        let client = Arc::new(client);
        let old = s.session.lock().replace(Arc::clone(&client));
        if let Some(old) = old {
            old.shutdown();
        }
        Ok(client)
    }

    /// The process id of a server's current session (stdio servers).
    pub(crate) fn session_pid(&self, server: &str) -> Option<u32> {
        let s = self.servers.get(server)?;
        s.session.lock().as_ref().and_then(|c| c.pid())
    }

    /// How many times a server was restarted.
    pub(crate) fn restart_count(&self, server: &str) -> u32 {
        self.servers
            .get(server)
            .map_or(0, |s| s.restarts.load(Ordering::SeqCst))
    }

    /// The methods of the notifications the current session received, in
    /// order.
    pub(crate) fn received_notifications(&self, server: &str) -> Vec<String> {
        let client = self
            .servers
            .get(server)
            .and_then(|s| s.session.lock().clone());
        client.map(|c| c.notifications()).unwrap_or_default()
    }

    /// The protocol version the server negotiated, and the name it gave.
    pub fn server_info(&self, server: &str) -> Option<(String, String)> {
        let client = self
            .servers
            .get(server)
            .and_then(|s| s.session.lock().clone())?;
        Some((client.protocol_version(), client.server_name()))
    }

    /// Ends every server process and waits for it. Calls after this fail.
    pub fn shutdown(&self) {
        self.closed.store(true, Ordering::SeqCst);
        for s in self.servers.values() {
            let _wait_for_restarts = s.restart_lock.lock();
            let client = s.session.lock().take();
            if let Some(c) = client {
                c.shutdown();
            }
        }
    }
}

impl Drop for McpPool {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn mcp_err(server: &str, source: McpError) -> ToolError {
    ToolError::Mcp {
        server: server.to_string(),
        source,
    }
}

fn list(
    server: &str,
    client: &McpClient,
    timeout: Duration,
) -> Result<Vec<McpToolInfo>, ToolError> {
    let raw = client.list_tools(timeout).map_err(|e| mcp_err(server, e))?;
    raw.into_iter()
        .map(|t| {
            let name = t.get("name").and_then(Value::as_str).ok_or_else(|| {
                mcp_err(
                    server,
                    McpError::Protocol {
                        detail: "a tool without a name".into(),
                        source: None,
                    },
                )
            })?;
            Ok(McpToolInfo {
                server: server.to_string(),
                name: name.to_string(),
                description: t
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                input_schema: t
                    .get("inputSchema")
                    .cloned()
                    .unwrap_or_else(|| serde_json::json!({"type": "object"})),
            })
        })
        .collect()
}
