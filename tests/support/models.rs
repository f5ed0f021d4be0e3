//! A model with a hook in front: each call runs the test's hook first (to
//! panic, note who called, stream a delta or wait for a signal), then goes
//! to the model inside.

use boardroom::{ChatModel, ChatRequest, ChatResponse, ModelError};

/// `inner`, named `name`, with `before(request, on_delta)` run ahead of
/// each of its calls.
pub struct Hooked<M, F> {
    name: &'static str,
    inner: M,
    before: F,
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
        }
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

    fn chat(
        &self,
        req: &ChatRequest,
        on_delta: &mut dyn FnMut(&str),
    ) -> Result<ChatResponse, ModelError> {
        (self.before)(req, on_delta);
        self.inner.chat(req, on_delta)
    }
}
