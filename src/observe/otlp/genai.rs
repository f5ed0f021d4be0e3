//! Names the OpenTelemetry GenAI semantic conventions give to what a
//! model call was: its provider and model, why it stopped, its messages.

use crate::model::{FinishReason, Message};

use super::openinference as oi;

/// `gen_ai.provider.name` and `gen_ai.request.model` from a model's name
/// as boardroom labels it: `openai:gpt-4o-mini` and an endpoint URL
/// `http://host/v1#qwen` are OpenAI chat completions of `gpt-4o-mini` and
/// `qwen`; `anthropic:claude-x` is Anthropic's `claude-x`; `sim` is the
/// simulator; any other name (a team.yaml entry, a
/// library user's model) is the model, its provider unknown.
pub(crate) fn provider_and_model(label: &str) -> (Option<&'static str>, String) {
    if let Some(model) = label.strip_prefix("openai:") {
        return (Some("openai"), model.to_string());
    }
    if let Some(model) = label.strip_prefix("anthropic:") {
        return (Some("anthropic"), model.to_string());
    }
    if label.starts_with("http://") || label.starts_with("https://") {
        let model = label.split_once('#').map_or(label, |(_, m)| m);
        return (Some("openai"), model.to_string());
    }
    if label == "sim" || label.starts_with("sim:") {
        return (Some("boardroom.sim"), label.to_string());
    }
    (None, label.to_string())
}

pub(crate) fn finish_name(reason: FinishReason) -> &'static str {
    match reason {
        FinishReason::Stop => "stop",
        FinishReason::Length => "length",
        FinishReason::ToolCalls => "tool_call",
        FinishReason::Other => "other",
    }
}

/// Messages in the GenAI conventions' JSON shape: role and text parts.
pub(crate) fn messages_json(messages: &[Message]) -> String {
    let list: Vec<serde_json::Value> = messages
        .iter()
        .map(|m| {
            serde_json::json!({
                "role": oi::role_name(m.role),
                "parts": [{"type": "text", "content": m.content}],
            })
        })
        .collect();
    serde_json::Value::Array(list).to_string()
}
