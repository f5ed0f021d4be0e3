//! A model with a hook in front: each call runs the test's hook first (to
//! panic, note who called, stream a delta or wait for a signal), then goes
//! to the model inside. And a team played phase by phase by closures.

use boardroom::{ChatModel, ChatRequest, ChatResponse, ModelError, Phase, Usage};

/// `inner`, named `name`, with `before(request, on_delta)` run ahead of
/// each of its calls.
pub struct Hooked<M, F> {
    name: &'static str,
    inner: M,
    before: F,
    tools: bool,
}

impl<M, F> Hooked<M, F>
where
    M: ChatModel,
    F: Fn(&ChatRequest, &mut dyn FnMut(&str)) + Send + Sync,
{
    pub fn new(name: &'static str, inner: M, before: F) -> Self {
        Hooked {
            name,
            inner,
            before,
            tools: true,
        }
    }

    /// A model that declares it cannot call tools.
    pub fn without_tools(mut self) -> Self {
        self.tools = false;
        self
    }
}

impl<M, F> ChatModel for Hooked<M, F>
where
    M: ChatModel,
    F: Fn(&ChatRequest, &mut dyn FnMut(&str)) + Send + Sync,
{
    fn name(&self) -> String {
        self.name.into()
    }

    fn supports_tools(&self) -> bool {
        self.tools
    }

    fn chat(
        &self,
        req: &ChatRequest,
        on_delta: &mut dyn FnMut(&str),
    ) -> Result<ChatResponse, ModelError> {
        (self.before)(req, on_delta);
        self.inner.chat(req, on_delta)
    }
}

/// A blackboard team played by one model, for tests that count what the
/// members' calls see: the master's plan is `plan(request)` (ASSIGN
/// lines), each member's draft is `draft(request)`, and every other call
/// (the master's review) says `DONE` with `answer`.
pub struct Phased<P, D> {
    name: &'static str,
    plan: P,
    draft: D,
    answer: &'static str,
}

impl<P, D> Phased<P, D>
where
    P: Fn(&ChatRequest) -> String + Send + Sync,
    D: Fn(&ChatRequest) -> String + Send + Sync,
{
    pub fn new(name: &'static str, plan: P, draft: D, answer: &'static str) -> Self {
        Phased {
            name,
            plan,
            draft,
            answer,
        }
    }
}

impl<P, D> ChatModel for Phased<P, D>
where
    P: Fn(&ChatRequest) -> String + Send + Sync,
    D: Fn(&ChatRequest) -> String + Send + Sync,
{
    fn name(&self) -> String {
        self.name.into()
    }

    fn chat(
        &self,
        req: &ChatRequest,
        _on_delta: &mut dyn FnMut(&str),
    ) -> Result<ChatResponse, ModelError> {
        let text = match req.phase {
            Phase::Plan => (self.plan)(req),
            Phase::Draft => (self.draft)(req),
            _ => format!("DONE\n{}", self.answer),
        };
        Ok(ChatResponse::text(text, Usage::default()))
    }
}
