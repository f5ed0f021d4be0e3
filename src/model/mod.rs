//! Models: the one blocking call every provider implements, and the types
//! that travel through it.
//!
//! A [`ChatModel`] takes a [`ChatRequest`] (messages, optional tools and
//! output schema, and a little metadata about who is asking and why),
//! streams text deltas to a callback, and returns a [`ChatResponse`].
//! Providers: [`OpenAi`] (any OpenAI-compatible HTTP server) and
//! [`Anthropic`] (Anthropic's Messages API), over the
//! shared machinery of [`http`]; the offline models live in
//! the testing floor. A model's endpoint in `team.yaml` is an
//! [`EndpointConfig`]; a spec string reads to a [`spec::ModelSpec`].

mod anthropic;
pub(crate) mod endpoint;
mod error;
pub(crate) mod http;
pub(crate) mod no_tools;
mod openai;
pub(crate) mod spec;

use std::sync::Arc;

use serde::{Deserialize, Serialize};

pub use anthropic::{ANTHROPIC_DEFAULT_BASE_URL, Anthropic, AnthropicBuilder, DEFAULT_MAX_TOKENS};
pub(crate) use endpoint::from_endpoint;
pub use endpoint::{EndpointConfig, Provider};
pub use error::ModelError;
pub(crate) use http::redact_url;
pub use http::{LimitChange, LimitReason, LimitWatch, LimitWatcher, RetryPolicy};
pub use openai::{OPENAI_DEFAULT_BASE_URL, OpenAi, OpenAiBuilder};
pub use spec::ModelSpecError;

/// Who wrote a message in a conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Standing instructions: the soul, the roster, the rules.
    System,
    /// What the runtime (or the user) says to the agent.
    User,
    /// What the model answered.
    Assistant,
    /// The result of a tool call, answering `tool_call_id`.
    Tool,
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// The text.
    pub content: String,
    /// Tool calls the assistant asked for in this message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For a [`Role::Tool`] message: the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl Message {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self::new(Role::System, content)
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self::new(Role::User, content)
    }

    /// An assistant message.
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::new(Role::Assistant, content)
    }

    /// A tool result answering the call with id `call_id`.
    pub fn tool(call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Message {
            tool_call_id: Some(call_id.into()),
            ..Self::new(Role::Tool, content)
        }
    }

    fn new(role: Role, content: impl Into<String>) -> Self {
        Message {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }
}

/// A tool call the model asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The id the result must carry back.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments, as the JSON text the model wrote.
    pub arguments: String,
}

/// A tool offered to the model: name, description, JSON schema of arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The name the model calls it by.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON schema of its arguments.
    pub parameters: serde_json::Value,
}

/// A JSON schema the answer must follow (structured output).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutputSchema {
    /// A short name for the schema.
    pub name: String,
    /// The schema itself.
    pub schema: serde_json::Value,
}

/// Why the runtime is calling the model: lets offline models play the
/// protocol and lets records say what each call was for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Phase {
    /// The master's first turn: split the task into assignments.
    Plan,
    /// A member drafting its assignment.
    Draft,
    /// A challenger reading the board.
    Challenge,
    /// The master reviewing the board: DONE or new assignments.
    Review,
    /// The master asked for the final answer.
    Final,
    /// The master asked what is worth remembering.
    Memory,
    /// An agent in a handoff conversation or a partner chat.
    Converse,
    /// A routing call of a handoff run: which rule holds, or which agent
    /// acts next.
    Route,
}

impl Phase {
    /// The lowercase name used in events and records.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Plan => "plan",
            Phase::Draft => "draft",
            Phase::Challenge => "challenge",
            Phase::Review => "review",
            Phase::Final => "final",
            Phase::Memory => "memory",
            Phase::Converse => "converse",
            Phase::Route => "route",
        }
    }
}

/// Everything one model call needs.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest {
    /// The agent making the call.
    pub agent: String,
    /// What the call is for.
    pub phase: Phase,
    /// The round of the run (0 for planning).
    pub round: u32,
    /// The conversation.
    pub messages: Vec<Message>,
    /// Tools the model may call.
    pub tools: Vec<ToolSpec>,
    /// A JSON schema the answer must follow, where the provider supports it.
    pub schema: Option<OutputSchema>,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// Cap on completion tokens.
    pub max_tokens: Option<u32>,
    /// When the caller stops waiting (the run's time limit, or the memory
    /// note's own short deadline): a provider ends the call by then, or
    /// at its own call deadline if that is earlier.
    pub deadline: Option<std::time::Instant>,
}

impl ChatRequest {
    /// A request with no tools, no schema and default sampling.
    pub fn new(agent: impl Into<String>, phase: Phase, round: u32, messages: Vec<Message>) -> Self {
        ChatRequest {
            agent: agent.into(),
            phase,
            round,
            messages,
            tools: Vec::new(),
            schema: None,
            temperature: None,
            max_tokens: None,
            deadline: None,
        }
    }

    /// The bytes of text the request's messages carry: their contents and
    /// their tool calls' names and arguments (what a body or a token
    /// estimate is sized from).
    pub(crate) fn text_bytes(&self) -> usize {
        self.messages
            .iter()
            .map(|m| {
                m.content.len()
                    + m.tool_calls
                        .iter()
                        .map(|c| c.name.len() + c.arguments.len())
                        .sum::<usize>()
            })
            .sum()
    }
}

/// Token counts of one call, or summed over many.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens sent.
    pub prompt_tokens: u64,
    /// Tokens generated.
    pub completion_tokens: u64,
    /// Of the prompt tokens: read from the provider's prompt cache (0
    /// where it reports none).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_read_tokens: u64,
    /// Of the prompt tokens: written to the provider's prompt cache.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_creation_tokens: u64,
}

/// Counts of zero are left out of saved usage (runs saved before the
/// cache counts existed read the same).
#[allow(clippy::trivially_copy_pass_by_ref)] // serde's signature
fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Usage {
    /// Prompt plus completion tokens.
    #[must_use]
    pub fn total(&self) -> u64 {
        self.prompt_tokens.saturating_add(self.completion_tokens)
    }

    /// Adds another usage to this one (saturating: counts read from a
    /// server or a saved run never overflow into a panic).
    pub fn add(&mut self, other: Usage) {
        self.prompt_tokens = self.prompt_tokens.saturating_add(other.prompt_tokens);
        self.completion_tokens = self
            .completion_tokens
            .saturating_add(other.completion_tokens);
        self.cache_read_tokens = self
            .cache_read_tokens
            .saturating_add(other.cache_read_tokens);
        self.cache_creation_tokens = self
            .cache_creation_tokens
            .saturating_add(other.cache_creation_tokens);
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FinishReason {
    /// A natural end.
    #[default]
    Stop,
    /// Cut off by the token limit.
    Length,
    /// The model asked for tool calls.
    ToolCalls,
    /// Anything else the provider said (and, read back, a reason this
    /// build does not know).
    #[serde(other)]
    Other,
}

/// What one model call returned.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChatResponse {
    /// The text of the answer.
    pub text: String,
    /// Tool calls the model asked for.
    pub tool_calls: Vec<ToolCall>,
    /// Tokens used.
    pub usage: Usage,
    /// Why it stopped.
    pub finish: FinishReason,
    /// How many transport retries the call needed.
    pub retries: u32,
}

impl ChatResponse {
    /// A plain text answer with the given usage.
    pub fn text(text: impl Into<String>, usage: Usage) -> Self {
        ChatResponse {
            text: text.into(),
            usage,
            ..ChatResponse::default()
        }
    }
}

/// A language model behind one blocking call.
///
/// Implementations must be shareable across the member threads of a round.
/// A call blocks until the answer is complete; text deltas go to `on_delta`
/// as they arrive (providers that do not stream call it once, or not at
/// all).
pub trait ChatModel: Send + Sync {
    /// A short name for logs and errors, e.g. `sim` or `openai:gpt-4o-mini`.
    fn name(&self) -> String;

    /// Sends the request and blocks until the answer is complete.
    ///
    /// # Errors
    ///
    /// A [`ModelError`] when the provider fails after its own retries.
    fn chat(
        &self,
        request: &ChatRequest,
        on_delta: &mut dyn FnMut(&str),
    ) -> Result<ChatResponse, ModelError>;

    /// Calls `f` on every change of the in-flight limit of the endpoint
    /// behind this model, until the watch is dropped; `None` for a model
    /// with no such limit (the default).
    fn watch_limit(&self, f: LimitWatcher) -> Option<LimitWatch> {
        let _ = f;
        None
    }

    /// Whether the model can call tools (the default). A model that says
    /// `false` is sent no tools, by every call: a process uses its text
    /// protocol instead (a handoff team's `HANDOFF:<agent>:<reason>`
    /// line); a blackboard member's or the chat partner's granted tools
    /// are dropped, with a `log::warn!` naming the agent (once per agent
    /// and model in a run; once per chat for the partner).
    fn supports_tools(&self) -> bool {
        true
    }

    /// Where the model is served (its provider, URL and key variable),
    /// for `check`; `None` for a model with no endpoint (the default).
    fn endpoint(&self) -> Option<EndpointInfo> {
        None
    }

    /// The run will make few calls from now on (its last parallel phase
    /// is over), those of the agent named `keep` (the master): the model
    /// may let go of what it keeps for the next wide round, such as idle
    /// connections (not `keep`'s), without delaying the caller. The
    /// default does nothing. Another run using the same endpoint opens
    /// new connections where it would have reused these.
    fn release_idle(&self, keep: &str) {
        let _ = keep;
    }
}

/// Where a model is served, as `check` shows it: never the key, only
/// whether it is set.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct EndpointInfo {
    /// The provider's API: `openai` or `anthropic`.
    pub provider: &'static str,
    /// The model the server knows.
    pub model: String,
    /// The URL requests go to, without credentials.
    pub url: String,
    /// The environment variable the key is read from (empty when the key
    /// was given in code).
    pub key_env: String,
    /// Whether a key is set.
    pub key_set: bool,
}

impl<M: ChatModel + ?Sized> ChatModel for Arc<M> {
    fn name(&self) -> String {
        (**self).name()
    }

    fn watch_limit(&self, f: LimitWatcher) -> Option<LimitWatch> {
        (**self).watch_limit(f)
    }

    fn supports_tools(&self) -> bool {
        (**self).supports_tools()
    }

    fn endpoint(&self) -> Option<EndpointInfo> {
        (**self).endpoint()
    }

    fn release_idle(&self, keep: &str) {
        (**self).release_idle(keep);
    }

    fn chat(
        &self,
        request: &ChatRequest,
        on_delta: &mut dyn FnMut(&str),
    ) -> Result<ChatResponse, ModelError> {
        (**self).chat(request, on_delta)
    }
}

impl<M: ChatModel + ?Sized> ChatModel for Box<M> {
    fn name(&self) -> String {
        (**self).name()
    }

    fn watch_limit(&self, f: LimitWatcher) -> Option<LimitWatch> {
        (**self).watch_limit(f)
    }

    fn supports_tools(&self) -> bool {
        (**self).supports_tools()
    }

    fn endpoint(&self) -> Option<EndpointInfo> {
        (**self).endpoint()
    }

    fn release_idle(&self, keep: &str) {
        (**self).release_idle(keep);
    }

    fn chat(
        &self,
        request: &ChatRequest,
        on_delta: &mut dyn FnMut(&str),
    ) -> Result<ChatResponse, ModelError> {
        (**self).chat(request, on_delta)
    }
}

impl std::fmt::Debug for dyn ChatModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ChatModel({})", self.name())
    }
}

/// A shared, dynamically typed model.
pub type SharedModel = Arc<dyn ChatModel>;

/// A rough token count for text, for models that do not report usage:
/// about four characters a token.
pub(crate) fn estimate_tokens(text: &str) -> u64 {
    (text.chars().count() as u64).div_ceil(4)
}

/// Estimated usage of answering `request` with `answer`, for models that
/// do not count tokens.
pub(crate) fn estimate_usage(request: &ChatRequest, answer: &str) -> Usage {
    Usage {
        prompt_tokens: request
            .messages
            .iter()
            .map(|m| estimate_tokens(&m.content))
            .sum(),
        completion_tokens: estimate_tokens(answer),
        ..Usage::default()
    }
}
