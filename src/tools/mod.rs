//! Tools: what agents can do besides writing text.
//!
//! A [`Tool`] has a name, a description, a JSON schema of its arguments
//! and a blocking call. A [`ToolRegistry`] holds the built-ins
//! (`workspace_read`, `workspace_write`, `workspace_list`, `plan_read`,
//! `plan_add_task`, `plan_update_task`), any tools the embedding program
//! adds, and the tools of MCP servers, named `server.tool`. An agent sees
//! exactly the tools its `tools:` list grants (`server.*` grants all of a
//! server's tools).

mod error;
pub mod mcp;
mod plan;
mod policy;
mod workspace;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::Value;

use crate::model::ToolSpec;
use crate::plan::Plan;
use crate::team::{AgentSpec, Team, TeamError};

pub use error::ToolError;
pub(crate) use mcp::{McpPool, McpServerConfig, McpToolInfo};

/// Something an agent can do: a name, a description, a JSON schema of its
/// arguments and a blocking call.
///
/// # Examples
///
/// ```
/// use boardroom::{Tool, ToolContext, ToolError};
/// use serde_json::{Value, json};
///
/// #[derive(Debug)]
/// struct Shout;
///
/// impl Tool for Shout {
///     fn name(&self) -> &str { "shout" }
///     fn description(&self) -> &str { "Upper-cases a text" }
///     fn parameters(&self) -> Value {
///         json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
///     }
///     fn call(&self, args: Value, _ctx: &ToolContext<'_>) -> Result<String, ToolError> {
///         let text = args["text"].as_str().ok_or_else(|| ToolError::BadArguments {
///             tool: "shout".into(),
///             detail: "'text' must be a string".into(),
///         })?;
///         Ok(text.to_uppercase())
///     }
/// }
///
/// let ctx = ToolContext::new("writer");
/// assert_eq!(Shout.call(json!({"text": "hi"}), &ctx).unwrap(), "HI");
/// ```
pub trait Tool: Send + Sync + std::fmt::Debug {
    /// The name agents grant and models call it by.
    fn name(&self) -> &str;

    /// What it does, for the model.
    fn description(&self) -> &str;

    /// JSON schema of its arguments (an object schema).
    fn parameters(&self) -> Value;

    /// Runs it. Blocks until done.
    ///
    /// # Errors
    ///
    /// A [`ToolError`]; the runtime hands its text back to the model as the
    /// result, and the run goes on.
    fn call(&self, args: Value, ctx: &ToolContext<'_>) -> Result<String, ToolError>;
}

/// What a tool call may touch: who is calling, the run's workspace and
/// plan, and where to report written files.
pub struct ToolContext<'a> {
    agent: &'a str,
    workspace: Option<&'a Path>,
    plan: Option<&'a Mutex<Plan>>,
    on_file: Option<&'a FileHook<'a>>,
    deadline: Option<std::time::Instant>,
}

/// Told of every file a tool writes: path relative to the workspace, size.
type FileHook<'a> = dyn Fn(&str, u64) + Sync + 'a;

impl std::fmt::Debug for ToolContext<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolContext")
            .field("agent", &self.agent)
            .field("workspace", &self.workspace)
            .finish_non_exhaustive()
    }
}

impl<'a> ToolContext<'a> {
    /// A context for `agent` with no workspace and no plan.
    #[must_use]
    pub fn new(agent: &'a str) -> Self {
        ToolContext {
            agent,
            workspace: None,
            plan: None,
            on_file: None,
            deadline: None,
        }
    }

    /// Bounds the tools' calls by the run's deadline, when it has one.
    pub(crate) fn with_deadline(mut self, deadline: Option<std::time::Instant>) -> Self {
        self.deadline = deadline;
        self
    }

    /// When the call must end, if the run has a time limit.
    pub(crate) fn deadline(&self) -> Option<std::time::Instant> {
        self.deadline
    }

    /// Gives the tools a workspace directory.
    #[must_use]
    pub fn with_workspace(mut self, dir: &'a Path) -> Self {
        self.workspace = Some(dir);
        self
    }

    /// Gives the tools a plan.
    pub(crate) fn with_plan(mut self, plan: &'a Mutex<Plan>) -> Self {
        self.plan = Some(plan);
        self
    }

    /// Calls `hook(path, bytes)` for every file a tool writes.
    #[must_use]
    pub fn on_file(mut self, hook: &'a (dyn Fn(&str, u64) + Sync)) -> Self {
        self.on_file = Some(hook);
        self
    }

    /// The calling agent.
    #[must_use]
    pub fn agent(&self) -> &str {
        self.agent
    }

    /// The workspace directory, if the run has one.
    #[must_use]
    pub fn workspace(&self) -> Option<&Path> {
        self.workspace
    }

    /// A copy of the run's plan, if the context has one.
    ///
    /// # Examples
    ///
    /// ```
    /// use boardroom::ToolContext;
    ///
    /// // A context made outside a run has no plan.
    /// assert!(ToolContext::new("writer").plan_snapshot().is_none());
    /// ```
    #[must_use]
    pub fn plan_snapshot(&self) -> Option<Plan> {
        self.plan.map(|p| p.lock().clone())
    }

    /// Changes the run's plan through `change`, holding its lock only for
    /// the call, and returns what `change` returns; `None` if the context
    /// has no plan. Do not call a model or another tool inside `change`.
    pub fn update_plan<R>(&self, change: impl FnOnce(&mut Plan) -> R) -> Option<R> {
        self.plan.map(|p| change(&mut p.lock()))
    }

    /// Reports a written file (path relative to the workspace).
    pub fn file_written(&self, path: &str, bytes: u64) {
        if let Some(hook) = self.on_file {
            hook(path, bytes);
        }
    }
}

/// A tool of an MCP server, called through the pool's shared session.
#[derive(Debug)]
struct McpTool {
    full_name: String,
    info: McpToolInfo,
    pool: Arc<McpPool>,
}

impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.full_name
    }

    fn description(&self) -> &str {
        &self.info.description
    }

    fn parameters(&self) -> Value {
        self.info.input_schema.clone()
    }

    fn call(&self, args: Value, ctx: &ToolContext<'_>) -> Result<String, ToolError> {
        self.pool
            .call_within(&self.info.server, &self.info.name, args, ctx.deadline())
    }
}

/// The tools of a run: built-ins, added tools and MCP servers' tools.
///
/// Cheap to clone. The MCP servers it started end when the last clone is
/// dropped.
#[derive(Debug, Clone, Default)]
pub struct ToolRegistry {
    tools: BTreeMap<String, Arc<dyn Tool>>,
    mcp: Option<Arc<McpPool>>,
}

impl ToolRegistry {
    /// An empty registry.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The built-in workspace and plan tools.
    #[must_use]
    pub fn builtin() -> Self {
        let mut r = Self::new();
        r.add(Arc::new(workspace::WorkspaceRead));
        r.add(Arc::new(workspace::WorkspaceWrite));
        r.add(Arc::new(workspace::WorkspaceList));
        r.add(Arc::new(plan::PlanRead));
        r.add(Arc::new(plan::PlanAddTask));
        r.add(Arc::new(plan::PlanUpdateTask));
        r
    }

    /// The built-ins plus the tools of every MCP server the team's agents
    /// use (configured in `team.yaml` `mcpServers` or `mcp.json`), with
    /// those servers started.
    ///
    /// # Errors
    ///
    /// [`ToolError::Mcp`] when a server cannot be started or listed.
    pub fn for_team(team: &Team) -> Result<Self, ToolError> {
        let mut r = Self::builtin();
        let used: BTreeMap<String, McpServerConfig> = team
            .config()
            .mcp_servers
            .iter()
            .filter(|(name, _)| {
                team.agents().iter().any(|a| {
                    a.tools
                        .iter()
                        .any(|t| t.split_once('.').is_some_and(|(s, _)| s == name.as_str()))
                })
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if !used.is_empty() {
            r.add_mcp(McpPool::start(&used, team.dir())?)?;
        }
        Ok(r)
    }

    /// Adds a tool (replacing one of the same name).
    pub fn add(&mut self, tool: Arc<dyn Tool>) {
        self.tools.insert(tool.name().to_string(), tool);
    }

    /// Adds the tools of every server of a started pool, as `server.tool`.
    ///
    /// The registry asks the pool for a server's tools each time an agent's
    /// tools are looked up, so a server that announces
    /// `notifications/tools/list_changed` has its new list before the next
    /// agent turn.
    ///
    /// # Errors
    ///
    /// [`ToolError::Mcp`] when a server's tools cannot be listed.
    pub fn add_mcp(&mut self, pool: McpPool) -> Result<(), ToolError> {
        for server in pool.servers() {
            pool.tools(server)?;
        }
        self.mcp = Some(Arc::new(pool));
        Ok(())
    }

    /// The tools of one MCP server, as the pool knows them now.
    fn mcp_tools(&self, server: &str) -> Vec<Arc<dyn Tool>> {
        let Some(pool) = &self.mcp else {
            return Vec::new();
        };
        if !pool.servers().any(|s| s == server) {
            return Vec::new();
        }
        let infos = pool.tools(server).unwrap_or_else(|e| {
            log::warn!("{e}");
            Vec::new()
        });
        let mut tools: Vec<Arc<dyn Tool>> = infos
            .into_iter()
            .map(|info| {
                Arc::new(McpTool {
                    full_name: format!("{server}.{}", info.name),
                    info,
                    pool: Arc::clone(pool),
                }) as Arc<dyn Tool>
            })
            .collect();
        tools.sort_by(|a, b| a.name().cmp(b.name()));
        tools
    }

    /// The MCP pool, if servers were started.
    #[must_use]
    pub fn mcp(&self) -> Option<&Arc<McpPool>> {
        self.mcp.as_ref()
    }

    /// The tool with this name.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.expand(name).into_iter().next()
    }

    /// Every tool name, sorted (MCP servers' tools as the pool knows them
    /// now).
    #[must_use]
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.tools.keys().cloned().collect();
        if let Some(pool) = &self.mcp {
            for server in pool.servers() {
                names.extend(self.mcp_tools(server).iter().map(|t| t.name().to_string()));
            }
        }
        names.sort();
        names
    }

    /// The tools `agent` is granted, in the order of its `tools:` list
    /// (`server.*` expands to the server's tools, sorted).
    ///
    /// # Errors
    ///
    /// [`ToolError::Unknown`] for the first name no tool has.
    pub fn granted(&self, agent: &AgentSpec) -> Result<Vec<Arc<dyn Tool>>, ToolError> {
        let mut out: Vec<Arc<dyn Tool>> = Vec::new();
        for grant in &agent.tools {
            let found = self.expand(grant);
            if found.is_empty() {
                return Err(ToolError::Unknown {
                    name: grant.clone(),
                });
            }
            for t in found {
                if !out.iter().any(|o| o.name() == t.name()) {
                    out.push(t);
                }
            }
        }
        Ok(out)
    }

    fn expand(&self, grant: &str) -> Vec<Arc<dyn Tool>> {
        if let Some(server) = grant.strip_suffix(".*") {
            let prefix = format!("{server}.");
            let mut found: Vec<Arc<dyn Tool>> = self
                .tools
                .iter()
                .filter(|(n, _)| n.starts_with(&prefix))
                .map(|(_, t)| Arc::clone(t))
                .collect();
            found.extend(self.mcp_tools(server));
            return found;
        }
        if let Some(t) = self.tools.get(grant) {
            return vec![Arc::clone(t)];
        }
        match grant.split_once('.') {
            Some((server, _)) => self
                .mcp_tools(server)
                .into_iter()
                .filter(|t| t.name() == grant)
                .collect(),
            None => Vec::new(),
        }
    }

    /// Checks every agent's `tools:` list against the registry.
    ///
    /// # Errors
    ///
    /// A [`TeamError`] naming the agent file and the line of the first
    /// entry that no tool has, with a suggestion when one is close.
    pub fn check(&self, team: &Team) -> Result<(), TeamError> {
        policy::check(self, team)
    }
}

/// The name a model calls a tool by: OpenAI-style function names allow
/// letters, digits, `_` and `-`, so `server.tool` becomes `server__tool`.
pub(crate) fn wire_name(name: &str) -> String {
    name.replace('.', "__")
}

/// The spec a model is shown for a tool.
pub(crate) fn spec_of(tool: &dyn Tool) -> ToolSpec {
    ToolSpec {
        name: wire_name(tool.name()),
        description: tool.description().to_string(),
        parameters: tool.parameters(),
    }
}
