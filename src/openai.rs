//! The OpenAI-compatible model's long tail: the retry policy, the adaptive
//! limit's watch, the default base URL and resolving a model spec
//! (`sim`, `openai:gpt-4o-mini`, ...) to a model.
//!
//! [`OpenAi`](crate::OpenAi) lives at the crate root; its builder
//! ([`OpenAiBuilder`], from `OpenAi::builder`) and the error of a bad
//! model spec ([`ModelSpecError`]) live here.

pub use crate::model::{
    LimitChange, LimitReason, LimitWatch, LimitWatcher, ModelSpecError, OPENAI_DEFAULT_BASE_URL,
    OpenAiBuilder, RetryPolicy, resolve_model,
};
