//! A streamed answer of the Messages API, event by event:
//! `message_start` (usage of the prompt), `content_block_start` /
//! `content_block_delta` (`text_delta`, `input_json_delta`) /
//! `content_block_stop`, `message_delta` (`stop_reason`, output usage),
//! `message_stop`, `ping`, and `error`. Other events and block types
//! (thinking, signatures) are passed over, as the SDKs do.

use serde_json::Value;

use super::wire::{finish_reason, take_call, usage};
use crate::model::http::StreamRead;
use crate::model::http::body::{MAX_ANSWER_BYTES, StreamError, short};
use crate::model::{ChatRequest, ChatResponse, FinishReason, ToolCall, Usage, estimate_usage};

/// Content blocks one streamed answer may hold.
const MAX_BLOCKS: u64 = 256;

/// One content block being streamed.
#[derive(Debug)]
enum Block {
    Text,
    Tool(ToolCall),
    Other,
}

/// A streamed answer being put together.
#[derive(Debug, Default)]
pub(crate) struct StreamState {
    text: String,
    blocks: Vec<Block>,
    usage: Option<Usage>,
    stop: Option<String>,
    /// Bytes of text and tool input so far.
    size: u64,
    done: bool,
}

impl StreamState {
    /// Counts `n` more bytes against [`MAX_ANSWER_BYTES`].
    fn grow(&mut self, n: usize) -> Result<(), StreamError> {
        self.size = self.size.saturating_add(n as u64);
        if self.size > MAX_ANSWER_BYTES {
            return Err(StreamError::Answer(format!(
                "the streamed answer is larger than {} MiB",
                MAX_ANSWER_BYTES >> 20
            )));
        }
        Ok(())
    }

    /// The block at the event's `index`, created as `Other` up to it.
    fn block(&mut self, event: &Value) -> Result<&mut Block, StreamError> {
        let index = event.get("index").and_then(Value::as_u64).unwrap_or(0);
        // The index comes from the server: never let it size our memory.
        if index >= MAX_BLOCKS {
            return Err(StreamError::Answer(format!(
                "content block index {index} in stream (at most {MAX_BLOCKS} a reply)"
            )));
        }
        let index = index as usize;
        while self.blocks.len() <= index {
            self.blocks.push(Block::Other);
        }
        Ok(&mut self.blocks[index])
    }
}

impl StreamRead for StreamState {
    fn apply(&mut self, data: &str) -> Result<Option<String>, StreamError> {
        let event: Value =
            serde_json::from_str(data).map_err(|e| StreamError::Chunk(e.to_string()))?;
        let kind = event.get("type").and_then(Value::as_str).unwrap_or("");
        match kind {
            "message_start" => {
                if let Some(u) = event.pointer("/message/usage") {
                    self.usage = Some(usage(u));
                }
            }
            "content_block_start" => {
                let b = event.get("content_block").cloned().unwrap_or_default();
                let block = match b.get("type").and_then(Value::as_str) {
                    Some("text") => Block::Text,
                    Some("tool_use") => Block::Tool(ToolCall {
                        id: str_of(&b, "id"),
                        name: str_of(&b, "name"),
                        arguments: String::new(),
                    }),
                    _ => Block::Other,
                };
                *self.block(&event)? = block;
                // A text block may start with text of its own.
                if let Some(t) = b
                    .get("text")
                    .and_then(Value::as_str)
                    .filter(|t| !t.is_empty())
                {
                    self.grow(t.len())?;
                    self.text.push_str(t);
                    return Ok(Some(t.to_string()));
                }
            }
            "content_block_delta" => {
                let delta = event.get("delta").cloned().unwrap_or_default();
                match delta.get("type").and_then(Value::as_str) {
                    Some("text_delta") => {
                        let t = delta.get("text").and_then(Value::as_str).unwrap_or("");
                        if t.is_empty() {
                            return Ok(None);
                        }
                        self.grow(t.len())?;
                        self.text.push_str(t);
                        return Ok(Some(t.to_string()));
                    }
                    Some("input_json_delta") => {
                        let part = delta
                            .get("partial_json")
                            .and_then(Value::as_str)
                            .unwrap_or("");
                        self.grow(part.len())?;
                        if let Block::Tool(call) = self.block(&event)? {
                            call.arguments.push_str(part);
                        }
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(r) = event.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop = Some(r.to_string());
                }
                // The output count is cumulative; the prompt's came first.
                if let Some(u) = event.get("usage") {
                    let later = usage(u);
                    let mut now = self.usage.unwrap_or_default();
                    now.completion_tokens = later.completion_tokens;
                    if later.prompt_tokens > 0 {
                        now.prompt_tokens = later.prompt_tokens;
                        now.cache_read_tokens = later.cache_read_tokens;
                        now.cache_creation_tokens = later.cache_creation_tokens;
                    }
                    self.usage = Some(now);
                }
            }
            "message_stop" => self.done = true,
            "error" => {
                let e = event.get("error").unwrap_or(&event);
                let detail = format!("error in stream: {}", short(e));
                // Overloaded or rate limited mid-stream: another attempt
                // may do (where no text was shown yet).
                let kind = e.get("type").and_then(Value::as_str).unwrap_or("");
                return Err(
                    if matches!(kind, "overloaded_error" | "rate_limit_error" | "api_error") {
                        StreamError::Retry(detail)
                    } else {
                        StreamError::Answer(detail)
                    },
                );
            }
            _ => {} // ping, content_block_stop, anything new
        }
        Ok(None)
    }

    fn done(&self) -> bool {
        self.done
    }

    fn finish(self, req: &ChatRequest) -> ChatResponse {
        let mut text = self.text;
        let mut calls = Vec::new();
        let mut answered = false;
        for block in self.blocks {
            if let Block::Tool(mut call) = block {
                if call.arguments.trim().is_empty() {
                    call.arguments = "{}".into();
                }
                answered |= take_call(req, call, &mut text, &mut calls);
            }
        }
        let finish = match finish_reason(self.stop.as_deref().unwrap_or("end_turn")) {
            FinishReason::ToolCalls if answered && calls.is_empty() => FinishReason::Stop,
            f => f,
        };
        let usage = self
            .usage
            .filter(|u| u.total() > 0)
            .unwrap_or_else(|| estimate_usage(req, &text));
        ChatResponse {
            text,
            tool_calls: calls,
            usage,
            finish,
            retries: 0,
        }
    }
}

fn str_of(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or("").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Message, Phase};

    #[test]
    fn events_into_deltas_calls_and_usage() {
        let req = ChatRequest::new("a", Phase::Draft, 1, vec![Message::user("hi")]);
        let mut s = StreamState::default();
        let events = [
            r#"{"type":"message_start","message":{"usage":{"input_tokens":10,"cache_read_input_tokens":90,"output_tokens":1}}}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            r#"{"type":"ping"}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"He"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"llo"}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"plan_read","input":{}}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\""}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":":1}"}}"#,
            r#"{"type":"content_block_stop","index":1}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":15}}"#,
            r#"{"type":"message_stop"}"#,
        ];
        let deltas: Vec<String> = events.iter().filter_map(|e| s.apply(e).unwrap()).collect();
        assert_eq!(deltas, ["He", "llo"]);
        assert!(s.done());
        let r = s.finish(&req);
        assert_eq!(r.text, "Hello");
        assert_eq!(r.finish, FinishReason::ToolCalls);
        assert_eq!(r.tool_calls[0].id, "toolu_1");
        assert_eq!(r.tool_calls[0].arguments, "{\"a\":1}");
        assert_eq!(r.usage.prompt_tokens, 100);
        assert_eq!(r.usage.cache_read_tokens, 90);
        assert_eq!(r.usage.completion_tokens, 15);
    }

    #[test]
    fn errors_and_huge_indexes() {
        let mut s = StreamState::default();
        let e = s
            .apply(r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#)
            .unwrap_err();
        assert_eq!(e, StreamError::Retry("error in stream: Overloaded".into()));
        let e = s
            .apply(r#"{"type":"content_block_start","index":4000000000,"content_block":{"type":"text"}}"#)
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "content block index 4000000000 in stream (at most 256 a reply)"
        );
        assert!(matches!(s.apply("{\"type\":"), Err(StreamError::Chunk(_))));
    }
}
