//! The OpenAI-compatible model's long tail: the retry policy, the adaptive
//! limit's watch, the default base URL and resolving a model spec
//! (`sim`, `openai:gpt-4o-mini`, ...) to a model.
//!
//! [`OpenAi`](crate::OpenAi) and its builder live at the crate root.

pub use crate::model::{
    LimitChange, LimitReason, LimitWatch, LimitWatcher, ModelSpecError, OPENAI_DEFAULT_BASE_URL,
    RetryPolicy, resolve_model,
};
