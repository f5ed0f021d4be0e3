//! `Scripted`: a queue of exact replies per agent, for tests that need
//! precise model output. Every request is recorded.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::model::{ChatModel, ChatRequest, ChatResponse, ModelError, estimate_usage};

/// One scripted reply.
#[derive(Debug, Clone)]
pub enum ScriptedReply {
    /// Answer with this text.
    Text(String),
    /// Fail with this message.
    Fail(String),
    /// Answer with this full response (tool calls, finish reason, ...).
    Response(ChatResponse),
}

#[derive(Debug, Default)]
struct Inner {
    queues: HashMap<String, VecDeque<ScriptedReply>>,
    fallback: HashMap<String, String>,
    requests: Vec<ChatRequest>,
}

/// A model that answers each agent from its own queue of replies.
///
/// Cheap to clone; clones share the queues and the record of requests.
///
/// # Examples
///
/// ```
/// use boardroom::{ChatModel, ChatRequest, Phase};
/// use boardroom::testing::Scripted;
/// let model = Scripted::new().reply("master", "DONE: 42");
/// let req = ChatRequest::new("master", Phase::Plan, 0, vec![]);
/// assert_eq!(model.chat(&req, &mut |_| {}).unwrap().text, "DONE: 42");
/// ```
#[derive(Debug, Clone, Default)]
pub struct Scripted {
    inner: Arc<Mutex<Inner>>,
}

impl Scripted {
    /// A model with empty queues.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Queues a text reply for `agent`.
    #[must_use]
    pub fn reply(self, agent: &str, text: impl Into<String>) -> Self {
        self.push(agent, ScriptedReply::Text(text.into()))
    }

    /// Queues a failure for `agent`.
    #[must_use]
    pub fn fail(self, agent: &str, message: impl Into<String>) -> Self {
        self.push(agent, ScriptedReply::Fail(message.into()))
    }

    /// Queues a full response for `agent`.
    #[must_use]
    pub fn respond(self, agent: &str, response: ChatResponse) -> Self {
        self.push(agent, ScriptedReply::Response(response))
    }

    /// The reply `agent` gets once its queue is empty (otherwise an empty
    /// queue is an error).
    #[must_use]
    pub fn otherwise(self, agent: &str, text: impl Into<String>) -> Self {
        self.inner
            .lock()
            .fallback
            .insert(agent.to_string(), text.into());
        self
    }

    fn push(self, agent: &str, reply: ScriptedReply) -> Self {
        self.inner
            .lock()
            .queues
            .entry(agent.to_string())
            .or_default()
            .push_back(reply);
        self
    }

    /// Every request received so far, in arrival order.
    #[must_use]
    pub fn requests(&self) -> Vec<ChatRequest> {
        self.inner.lock().requests.clone()
    }
}

impl ChatModel for Scripted {
    fn name(&self) -> String {
        "scripted".into()
    }

    fn chat(
        &self,
        req: &ChatRequest,
        on_delta: &mut dyn FnMut(&str),
    ) -> Result<ChatResponse, ModelError> {
        let reply = {
            let mut inner = self.inner.lock();
            inner.requests.push(req.clone());
            let next = inner
                .queues
                .get_mut(&req.agent)
                .and_then(VecDeque::pop_front);
            next.or_else(|| {
                inner
                    .fallback
                    .get(&req.agent)
                    .cloned()
                    .map(ScriptedReply::Text)
            })
        };
        match reply {
            Some(ScriptedReply::Text(text)) => {
                on_delta(&text);
                let usage = estimate_usage(req, &text);
                Ok(ChatResponse::text(text, usage))
            }
            Some(ScriptedReply::Response(resp)) => {
                if !resp.text.is_empty() {
                    on_delta(&resp.text);
                }
                Ok(resp)
            }
            Some(ScriptedReply::Fail(detail)) => Err(ModelError::Simulated {
                agent: req.agent.clone(),
                detail,
            }),
            None => Err(ModelError::Simulated {
                agent: req.agent.clone(),
                detail: "no scripted reply left".into(),
            }),
        }
    }
}
