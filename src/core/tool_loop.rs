//! The tool loop of one agent turn: call the model with the agent's tools;
//! while it asks for tool calls, run them (in parallel when it asks for
//! several), append its message and one result per call, and call again;
//! stop when it answers in text or after [`MAX_TOOL_STEPS`].
//!
//! A failing tool never ends the run: its error goes back to the model as
//! the result. No lock is held while a tool runs. After the loop
//! `request.messages` holds the whole exchange, so the turn record sees the
//! tool calls and their results.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::call::{Ask, Intercepted};
use super::config::RunConfig;
use super::run::Core;
use super::unwind::panic_text;
use crate::event::EventKind;
use crate::model::{ChatRequest, ChatResponse, Message, ModelError, SharedModel, ToolCall, Usage};
use crate::record::Decision;
use crate::team::AgentSpec;
use crate::tools::{Tool, ToolContext, ToolError, ToolRegistry, spec_of, wire_name};

/// Rounds of tool calls in one turn before the model must answer in text.
pub(crate) const MAX_TOOL_STEPS: usize = 8;
/// Characters of one tool result the model is shown at most.
const MAX_RESULT_CHARS: usize = 20_000;

/// Threads one reply's tool calls run on at most (issue 28: a reply with a
/// thousand calls started a thousand threads).
const TOOL_THREADS: usize = 8;

/// Tool calls of one reply that are run, as a streamed reply is held to;
/// each call past them is answered with an error, not run.
const MAX_CALLS_A_REPLY: usize = 128;

/// The tools of a run: built-ins, the program's own, and the tools of the
/// MCP servers the team's agents use (started here, ended when the run is
/// dropped). Every grant must name a tool.
pub(crate) fn registry(config: &RunConfig) -> Result<ToolRegistry, ToolError> {
    let team = &config.team;
    if team.agents().iter().all(|a| a.tools.is_empty()) {
        return Ok(ToolRegistry::default());
    }
    let mut registry = ToolRegistry::for_team(team)?;
    for tool in &config.tools {
        registry.add(Arc::clone(tool));
    }
    registry.check(team).map_err(ToolError::Policy)?;
    Ok(registry)
}

impl Core<'_> {
    /// Whether [`Core::tool_exchange`] shows `agent`'s replies to the
    /// process's `intercept` (tools are offered, and the model takes
    /// them): a call answered from its turn on resume shows its tool calls
    /// there as the call did (a handoff's variables, the principal's
    /// dispatch).
    pub(crate) fn intercepts(&self, agent: &AgentSpec, ask: &Ask<'_>, model: &SharedModel) -> bool {
        model.supports_tools()
            && (!ask.process_tools.is_empty()
                || (ask.agent_tools && self.tools.granted(agent).is_ok_and(|g| !g.is_empty())))
    }

    /// One agent turn with its tools (a plain model call without any).
    /// The process's own tools (`ask.process_tools`) are offered beside
    /// the agent's; `ask.intercept` handles their calls, which never
    /// reach the executor.
    ///
    /// The usage of every model call is added to the run as soon as it
    /// returns, so a step that fails later, and the budget check between
    /// steps, still count it; the response carries the turn's total for its
    /// Turn record.
    pub(crate) fn tool_exchange(
        &self,
        agent: &AgentSpec,
        ask: &Ask<'_>,
        model: &SharedModel,
        request: &mut ChatRequest,
        on_delta: &mut dyn FnMut(&str),
    ) -> Result<ChatResponse, ModelError> {
        let mut granted = if ask.agent_tools {
            self.tools.granted(agent).unwrap_or_default()
        } else {
            Vec::new()
        };
        // A model without tool calling is sent none (ChatModel::supports_tools).
        let no_tools = !model.supports_tools();
        if no_tools && !granted.is_empty() {
            let (run, n) = (&self.run_id, granted.len());
            crate::model::no_tools::warn_once(run, &agent.name, &model.name(), n);
            granted.clear();
        }
        if no_tools || (granted.is_empty() && ask.process_tools.is_empty()) {
            let response = chat(ask.on_pool, model, request, on_delta)?;
            self.add_usage(&agent.name, response.usage);
            return Ok(response);
        }
        request.tools = ask.process_tools.to_vec();
        request
            .tools
            .extend(granted.iter().map(|t| spec_of(t.as_ref())));
        let mut usage = Usage::default();
        let mut retries = 0;
        let mut step = 0;
        // A turn a resumed run paused at calls that waited for a decision
        // goes on from the reply that asked for them, not a new call.
        // The job claims the turn: another job with the same agent, round
        // and task never takes it.
        let mut resumed =
            self.approvals()
                .claim(&agent.name, request.round, request.phase, ask.task);
        let mut adopted = None;
        if let Some(turn) = &resumed {
            step = turn.step;
            request.messages = turn.messages.clone();
        }
        loop {
            let capped = step == MAX_TOOL_STEPS;
            if capped {
                request.tools.clear();
                request.messages.push(Message::user(format!(
                    "You have used all {MAX_TOOL_STEPS} tool steps of this turn: no more tool \
                     calls. Answer now, in text, with what you have."
                )));
            }
            let mut response = match resumed.take() {
                Some(turn) => {
                    let response = ChatResponse {
                        text: turn.text.clone(),
                        tool_calls: turn.calls.clone(),
                        ..ChatResponse::default()
                    };
                    adopted = Some(turn);
                    response
                }
                None => {
                    let mut response = chat(ask.on_pool, model, request, on_delta)?;
                    unique_ids(&mut response.tool_calls, &agent.name, request.round, step);
                    self.add_usage(&agent.name, response.usage);
                    usage.add(response.usage);
                    retries += response.retries;
                    response
                }
            };
            if response.tool_calls.is_empty() || capped {
                if !response.tool_calls.is_empty() {
                    log::warn!(
                        "{}: still asking for tools after {MAX_TOOL_STEPS} steps",
                        agent.name
                    );
                    response.tool_calls.clear();
                    response.text = format!(
                        "{}\n\n[the tool loop stopped after {MAX_TOOL_STEPS} steps; \
                         the agent was still asking for tools]",
                        response.text
                    )
                    .trim()
                    .to_string();
                }
                response.usage = usage;
                response.retries = retries;
                return Ok(response);
            }
            let verdicts: Vec<Intercepted> = response
                .tool_calls
                .iter()
                .map(|c| (ask.intercept)(c))
                .collect();
            if verdicts.contains(&Intercepted::End) {
                // The process takes the turn from here (a handoff).
                response.usage = usage;
                response.retries = retries;
                return Ok(response);
            }
            if self.cancelled() {
                return Err(ModelError::Cancelled);
            }
            self.budget_check()?;
            // Calls that need a person's decision: none of the reply's
            // calls runs before every one of them is decided.
            let decisions = self.approve_calls(
                agent,
                ask,
                request,
                step,
                &response,
                &verdicts,
                &granted,
                adopted.take(),
            )?;
            let calls: Vec<ToolCall> = response
                .tool_calls
                .iter()
                .map(|c| match decisions.get(&c.id) {
                    Some(Decision::Edit { arguments }) => ToolCall {
                        arguments: arguments.clone(),
                        ..c.clone()
                    },
                    _ => c.clone(),
                })
                .collect();
            let mut said = Message::assistant(response.text);
            said.tool_calls = calls.clone();
            request.messages.push(said);
            let to_run: Vec<ToolCall> = calls
                .iter()
                .zip(&verdicts)
                .filter(|(c, v)| **v == Intercepted::No && !denied(&decisions, &c.id))
                .map(|(c, _)| c.clone())
                .collect();
            let mut results = self
                .run_tools(agent, request, &granted, &to_run)
                .into_iter();
            for (call, verdict) in calls.iter().zip(verdicts) {
                let text = match verdict {
                    Intercepted::Answer(text) => text,
                    _ => match decisions.get(&call.id) {
                        Some(Decision::Deny { reason }) => denial(&call.name, reason.as_deref()),
                        _ => results.next().unwrap_or_default(),
                    },
                };
                request.messages.push(Message::tool(call.id.clone(), text));
            }
            step += 1;
        }
    }

    /// Runs the calls (on at most [`TOOL_THREADS`] scoped threads when
    /// there are several) and returns one result text per call, in order.
    fn run_tools(
        &self,
        agent: &AgentSpec,
        request: &ChatRequest,
        granted: &[Arc<dyn Tool>],
        calls: &[ToolCall],
    ) -> Vec<String> {
        if calls.len() > MAX_CALLS_A_REPLY {
            let (run, rest) = calls.split_at(MAX_CALLS_A_REPLY);
            let mut results = self.run_tools(agent, request, granted, run);
            results.extend(rest.iter().map(|call| {
                format!(
                    "error: tool '{}' not run: a reply may ask for at most \
                     {MAX_CALLS_A_REPLY} tool calls; ask for fewer at a time",
                    call.name
                )
            }));
            return results;
        }
        if calls.is_empty() {
            return Vec::new();
        }
        if calls.len() == 1 {
            // Caught here as on the threads below: a tool's panic is its
            // result, never the run's end.
            let call = &calls[0];
            let one = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                self.run_tool(agent, request, granted, call)
            }));
            return vec![one.unwrap_or_else(|panic| {
                log::warn!(
                    "tool '{}' panicked: {}",
                    call.name,
                    panic_text(panic.as_ref())
                );
                format!("error: tool '{}' panicked", call.name)
            })];
        }
        // At most TOOL_THREADS threads, whatever the reply asked for: each
        // takes the next call until none is left.
        let workers = calls.len().min(TOOL_THREADS);
        let next = AtomicUsize::new(0);
        let take = || {
            let mut done = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(call) = calls.get(i) else {
                    return done;
                };
                let one = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    self.run_tool(agent, request, granted, call)
                }));
                done.push((
                    i,
                    one.unwrap_or_else(|_| format!("error: tool '{}' panicked", call.name)),
                ));
            }
        };
        let mut results: Vec<(usize, String)> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..workers)
                .map(|_| {
                    std::thread::Builder::new()
                        .name(format!("tool-{}", agent.name))
                        .spawn_scoped(s, take)
                })
                .collect();
            // No thread to be had at all: run them here.
            let mut all = if handles.iter().all(Result::is_err) {
                take()
            } else {
                Vec::new()
            };
            for h in handles.into_iter().flatten() {
                all.extend(h.join().unwrap_or_default());
            }
            all
        });
        results.sort_by_key(|(i, _)| *i);
        let mut results = results.into_iter().peekable();
        calls
            .iter()
            .enumerate()
            .map(|(i, call)| match results.next_if(|(j, _)| *j == i) {
                Some((_, text)) => text,
                None => format!("error: tool '{}' did not run", call.name),
            })
            .collect()
    }

    /// One call: events before and after, errors turned into the result.
    fn run_tool(
        &self,
        agent: &AgentSpec,
        request: &ChatRequest,
        granted: &[Arc<dyn Tool>],
        call: &ToolCall,
    ) -> String {
        let parent = self.parent_of(agent);
        let tool = granted
            .iter()
            .find(|t| t.name() == call.name || wire_name(t.name()) == call.name);
        let shown = tool.map_or(call.name.as_str(), |t| t.name());
        self.emit(
            &agent.name,
            parent,
            EventKind::ToolCall {
                round: request.round,
                phase: request.phase,
                id: call.id.clone(),
                tool: shown.to_string(),
                arguments: call.arguments.clone(),
            },
        );
        let result = match tool {
            None => Err(ToolError::Unknown {
                name: call.name.clone(),
            }),
            Some(tool) => self.invoke(agent, tool.as_ref(), call),
        };
        let (is_error, text) = match result {
            Ok(text) => (false, text),
            Err(e) => {
                log::info!("{}: tool {shown} failed: {e}", agent.name);
                (true, format!("error: {e}"))
            }
        };
        // Known secrets (an MCP token a server echoed) never reach the
        // model, the events or the files (issue 28).
        let text = cut(crate::util::secrets::mask(&text).into_owned());
        self.emit(
            &agent.name,
            parent,
            EventKind::ToolResult {
                round: request.round,
                id: call.id.clone(),
                tool: shown.to_string(),
                is_error,
                text: text.clone(),
            },
        );
        text
    }

    fn invoke(
        &self,
        agent: &AgentSpec,
        tool: &dyn Tool,
        call: &ToolCall,
    ) -> Result<String, ToolError> {
        let args = if call.arguments.trim().is_empty() {
            serde_json::json!({})
        } else {
            serde_json::from_str(&call.arguments).map_err(|e| ToolError::BadArguments {
                tool: tool.name().to_string(),
                detail: format!("not JSON: {e}"),
            })?
        };
        let workspace = self.workspace_dir();
        let parent = self.parent_of(agent);
        let on_file = |path: &str, bytes: u64| {
            self.emit(
                &agent.name,
                parent,
                EventKind::WorkspaceFile {
                    path: path.to_string(),
                    bytes,
                },
            );
        };
        let mut ctx = ToolContext::new(&agent.name)
            .with_plan(&self.plan)
            .on_file(&on_file)
            .with_deadline(self.deadline);
        if let Some(dir) = workspace.as_deref() {
            ctx = ctx.with_workspace(dir);
        }
        tool.call(args, &ctx)
    }
}

/// One model call. A panic inside the model (a provider bug) in a call
/// on the run's own thread is caught here and becomes an error of the
/// call, so the run fails cleanly (and says so in `run.json`); a panic in
/// a call on a member pool thread (`Ask::on_pool`) is caught at the pool
/// boundary, where it becomes an `error` entry.
fn chat(
    pooled: bool,
    model: &SharedModel,
    request: &ChatRequest,
    on_delta: &mut dyn FnMut(&str),
) -> Result<ChatResponse, ModelError> {
    if pooled {
        return model.chat(request, on_delta);
    }
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        model.chat(request, on_delta)
    }))
    .unwrap_or_else(|panic| {
        Err(ModelError::BadResponse {
            model: model.name(),
            detail: format!("the call panicked: {}", panic_text(panic.as_ref())),
            source: None,
        })
    })
}

/// Gives each call whose id is empty or repeated in the reply (a server
/// that omits ids) an id of its own, `{agent}-{round}-{step}-{i}`, before
/// anything pairs results or decisions with ids: the model is shown the
/// calls under these ids, each result paired with its call.
fn unique_ids(calls: &mut [ToolCall], agent: &str, round: u32, step: usize) {
    let mut seen = std::collections::HashSet::new();
    let taken: std::collections::HashSet<String> = calls.iter().map(|c| c.id.clone()).collect();
    for (i, call) in calls.iter_mut().enumerate() {
        if call.id.is_empty() || !seen.insert(call.id.clone()) {
            let mut id = format!("{agent}-{round}-{step}-{i}");
            while taken.contains(&id) {
                id.push('_');
            }
            seen.insert(id.clone());
            call.id = id;
        }
    }
}

/// Whether the call was denied.
fn denied(decisions: &std::collections::HashMap<String, Decision>, id: &str) -> bool {
    matches!(decisions.get(id), Some(Decision::Deny { .. }))
}

/// What the model is told of a denied call: it did not run.
fn denial(tool: &str, reason: Option<&str>) -> String {
    match reason.map(str::trim).filter(|r| !r.is_empty()) {
        Some(reason) => format!(
            "error: the user denied this call of '{tool}'; it did not run. Their reason: {reason}"
        ),
        None => format!("error: the user denied this call of '{tool}'; it did not run."),
    }
}

/// At most [`MAX_RESULT_CHARS`] characters, with a note when cut.
fn cut(text: String) -> String {
    match text.char_indices().nth(MAX_RESULT_CHARS) {
        None => text,
        Some((at, _)) => format!(
            "{}\n[... cut: the result has {} characters]",
            &text[..at],
            text.chars().count()
        ),
    }
}
