//! The JSON of `/chat/completions`: the request we send, the response of a
//! plain call, and the chunks of a streamed one.

use serde_json::{Value, json};

use crate::model::http::body::{MAX_ANSWER_BYTES, StreamError, short};
use crate::model::{
    ChatRequest, ChatResponse, FinishReason, Message, Role, ToolCall, Usage, estimate_usage,
};

/// The request body, serialized straight from the request (the messages
/// are borrowed, never copied into a JSON tree first: a member's prompt
/// carries the board, and a round has a thousand of them).
pub(crate) fn request_json(model: &str, req: &ChatRequest, stream: bool) -> String {
    let body = Body {
        model,
        messages: req.messages.iter().map(OutMessage::of).collect(),
        stream,
        stream_options: stream.then_some(StreamOptions {
            include_usage: true,
        }),
        temperature: req.temperature,
        max_tokens: req.max_tokens,
        tools: (!req.tools.is_empty()).then(|| {
            req.tools
                .iter()
                .map(|t| {
                    json!({"type": "function", "function": {
                        "name": t.name, "description": t.description, "parameters": t.parameters}})
                })
                .collect()
        }),
        response_format: req.schema.as_ref().map(|schema| {
            json!({"type": "json_schema", "json_schema": {
                "name": schema.name, "schema": schema.schema, "strict": true}})
        }),
    };
    // Written into a buffer sized for it at the start: grown by doubling,
    // a 60 MiB prompt's body briefly took twice its size, in every member
    // calling at once (issue 28, finding 4). JSON escapes make it longer
    // than the text; a small margin covers the usual few.
    let pieces: usize = req.messages.iter().map(|m| 1 + m.tool_calls.len()).sum();
    let text = req.text_bytes() + 64 * pieces;
    let mut out = Vec::with_capacity(text + text / 64 + 4096);
    // Serializing borrowed strings and JSON values cannot fail, and what
    // serde_json writes is UTF-8.
    if serde_json::to_writer(&mut out, &body).is_err() {
        return String::new();
    }
    String::from_utf8(out).unwrap_or_default()
}

/// The request body as JSON (tests read it back).
#[cfg(test)]
pub(crate) fn request_body(model: &str, req: &ChatRequest, stream: bool) -> Value {
    serde_json::from_str(&request_json(model, req, stream)).expect("our own json")
}

#[derive(serde::Serialize)]
struct Body<'a> {
    model: &'a str,
    messages: Vec<OutMessage<'a>>,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<Vec<Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<Value>,
}

#[derive(serde::Serialize)]
struct StreamOptions {
    include_usage: bool,
}

/// One message in OpenAI's shape, borrowing its text: assistant tool
/// calls as `tool_calls` (content `null` when there is no text), tool
/// results with `tool_call_id`.
#[derive(serde::Serialize)]
struct OutMessage<'a> {
    role: &'static str,
    content: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<OutCall<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
}

#[derive(serde::Serialize)]
struct OutCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: OutFunction<'a>,
}

#[derive(serde::Serialize)]
struct OutFunction<'a> {
    name: &'a str,
    arguments: &'a str,
}

impl<'a> OutMessage<'a> {
    fn of(m: &'a Message) -> Self {
        let tool_calls: Vec<OutCall<'a>> = m
            .tool_calls
            .iter()
            .map(|c| OutCall {
                id: &c.id,
                kind: "function",
                function: OutFunction {
                    name: &c.name,
                    arguments: &c.arguments,
                },
            })
            .collect();
        OutMessage {
            role: role(m.role),
            content: (tool_calls.is_empty() || !m.content.is_empty()).then_some(&m.content),
            tool_calls,
            tool_call_id: m.tool_call_id.as_deref(),
        }
    }
}

fn role(r: Role) -> &'static str {
    match r {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    }
}

fn finish_reason(v: &Value) -> Option<FinishReason> {
    v.as_str().map(|s| match s {
        "stop" => FinishReason::Stop,
        "length" => FinishReason::Length,
        "tool_calls" | "function_call" => FinishReason::ToolCalls,
        _ => FinishReason::Other,
    })
}

fn usage(v: &Value) -> Option<Usage> {
    let prompt = v.get("prompt_tokens")?.as_u64()?;
    let completion = v.get("completion_tokens").and_then(Value::as_u64)?;
    Some(Usage {
        prompt_tokens: prompt,
        completion_tokens: completion,
        ..Usage::default()
    })
}

/// The body of a plain (non-streamed) response.
pub(crate) fn parse_response(req: &ChatRequest, body: &Value) -> Result<ChatResponse, String> {
    let choice = body
        .get("choices")
        .and_then(|c| c.get(0))
        .ok_or("no choices in the response")?;
    let msg = choice.get("message").ok_or("no message in the choice")?;
    let text = msg
        .get("content")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let tool_calls = msg
        .get("tool_calls")
        .and_then(Value::as_array)
        .map(|calls| {
            calls
                .iter()
                .map(|c| ToolCall {
                    id: str_at(c, &["id"]),
                    name: str_at(c, &["function", "name"]),
                    arguments: str_at(c, &["function", "arguments"]),
                })
                .collect()
        })
        .unwrap_or_default();
    let usage = body
        .get("usage")
        .and_then(usage)
        .unwrap_or_else(|| estimate_usage(req, &text));
    Ok(ChatResponse {
        finish: choice
            .get("finish_reason")
            .and_then(finish_reason)
            .unwrap_or_default(),
        text,
        tool_calls,
        usage,
        retries: 0,
    })
}

fn str_at(v: &Value, path: &[&str]) -> String {
    path.iter()
        .try_fold(v, |v, k| v.get(k))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// Tool calls one streamed reply may hold.
const MAX_STREAMED_TOOL_CALLS: u64 = 128;

/// A streamed answer being put together chunk by chunk.
#[derive(Debug, Default)]
pub(crate) struct StreamState {
    text: String,
    calls: Vec<ToolCall>,
    usage: Option<Usage>,
    finish: Option<FinishReason>,
    /// Bytes of text and tool-call arguments so far.
    size: u64,
    /// Whether `[DONE]` (or a final chunk) arrived.
    pub(crate) done: bool,
}

impl StreamState {
    /// Applies one event's data; returns the text delta it carried.
    pub(crate) fn apply(&mut self, data: &str) -> Result<Option<String>, StreamError> {
        if data.trim() == "[DONE]" {
            self.done = true;
            return Ok(None);
        }
        let chunk: Value =
            serde_json::from_str(data).map_err(|e| StreamError::Chunk(e.to_string()))?;
        if let Some(err) = chunk.get("error") {
            return Err(StreamError::Answer(format!(
                "error in stream: {}",
                short(err)
            )));
        }
        if let Some(u) = chunk.get("usage").and_then(usage) {
            self.usage = Some(u);
        }
        let Some(choice) = chunk.get("choices").and_then(|c| c.get(0)) else {
            return Ok(None);
        };
        if let Some(f) = choice.get("finish_reason").and_then(finish_reason) {
            self.finish = Some(f);
        }
        let Some(delta) = choice.get("delta") else {
            return Ok(None);
        };
        for c in delta
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let index = c.get("index").and_then(Value::as_u64).unwrap_or(0);
            // The index comes from the server: never let it size our memory.
            if index >= MAX_STREAMED_TOOL_CALLS {
                return Err(StreamError::Answer(format!(
                    "tool call index {index} in stream (at most {MAX_STREAMED_TOOL_CALLS} calls a reply)"
                )));
            }
            let index = index as usize;
            while self.calls.len() <= index {
                self.calls.push(ToolCall {
                    id: String::new(),
                    name: String::new(),
                    arguments: String::new(),
                });
            }
            let args = str_at(c, &["function", "arguments"]);
            self.grow(args.len())?;
            let call = &mut self.calls[index];
            call.id.push_str(&str_at(c, &["id"]));
            call.name.push_str(&str_at(c, &["function", "name"]));
            call.arguments.push_str(&args);
        }
        match delta.get("content").and_then(Value::as_str) {
            Some(text) if !text.is_empty() => {
                self.grow(text.len())?;
                self.text.push_str(text);
                Ok(Some(text.to_string()))
            }
            _ => Ok(None),
        }
    }

    /// Counts `n` more bytes of answer against [`MAX_ANSWER_BYTES`].
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

    /// The complete answer.
    pub(crate) fn finish(self, req: &ChatRequest) -> ChatResponse {
        let usage = self
            .usage
            .unwrap_or_else(|| estimate_usage(req, &self.text));
        ChatResponse {
            finish: self.finish.unwrap_or_default(),
            text: self.text,
            tool_calls: self.calls,
            usage,
            retries: 0,
        }
    }
}

impl crate::model::http::StreamRead for StreamState {
    fn apply(&mut self, data: &str) -> Result<Option<String>, StreamError> {
        StreamState::apply(self, data)
    }

    fn done(&self) -> bool {
        self.done
    }

    fn finish(self, req: &ChatRequest) -> ChatResponse {
        StreamState::finish(self, req)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::http::body::error_detail;
    use crate::model::{OutputSchema, Phase, ToolSpec};

    #[test]
    fn request_in_openai_shape() {
        let mut asked = Message::assistant("");
        asked.tool_calls.push(ToolCall {
            id: "c1".into(),
            name: "plan_read".into(),
            arguments: "{}".into(),
        });
        let mut req = ChatRequest::new(
            "a",
            Phase::Draft,
            1,
            vec![Message::user("hi"), asked, Message::tool("c1", "[]")],
        );
        req.tools.push(ToolSpec {
            name: "plan_read".into(),
            description: "reads".into(),
            parameters: json!({"type": "object"}),
        });
        req.schema = Some(OutputSchema {
            name: "s".into(),
            schema: json!({"type": "object"}),
        });
        req.max_tokens = Some(10);
        let body = request_body("m", &req, true);
        assert_eq!(body["stream_options"]["include_usage"], true);
        assert_eq!(body["max_tokens"], 10);
        assert_eq!(body["messages"][1]["content"], Value::Null);
        assert_eq!(
            body["messages"][1]["tool_calls"][0]["function"]["name"],
            "plan_read"
        );
        assert_eq!(body["messages"][2]["role"], "tool");
        assert_eq!(body["messages"][2]["tool_call_id"], "c1");
        assert_eq!(
            body["messages"][0],
            json!({"role": "user", "content": "hi"})
        );
        assert!(body.get("temperature").is_none());
        let plain = request_body("m", &ChatRequest::new("a", Phase::Draft, 1, vec![]), false);
        assert_eq!(
            plain,
            json!({"model": "m", "messages": [], "stream": false}),
            "nothing unasked for"
        );
        assert_eq!(body["tools"][0]["type"], "function");
        assert_eq!(body["response_format"]["type"], "json_schema");
        assert_eq!(body["response_format"]["json_schema"]["name"], "s");
    }

    #[test]
    fn streamed_tool_calls_and_usage() {
        let req = ChatRequest::new("a", Phase::Draft, 1, vec![Message::user("hi")]);
        let mut s = StreamState::default();
        let chunks = [
            r#"{"choices":[{"delta":{"role":"assistant","content":"He"}}]}"#,
            r#"{"choices":[{"delta":{"content":"llo"}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"plan_","arguments":"{\"a\""}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"read","arguments":":1}"}}]},"finish_reason":"tool_calls"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10}}"#,
            "[DONE]",
        ];
        let deltas: Vec<String> = chunks.iter().filter_map(|c| s.apply(c).unwrap()).collect();
        assert_eq!(deltas, ["He", "llo"]);
        assert!(s.done);
        let r = s.finish(&req);
        assert_eq!(r.text, "Hello");
        assert_eq!(r.finish, FinishReason::ToolCalls);
        assert_eq!(r.tool_calls[0].name, "plan_read");
        assert_eq!(r.tool_calls[0].arguments, "{\"a\":1}");
        assert_eq!(r.usage.total(), 10);
    }

    #[test]
    fn plain_response_and_errors() {
        let req = ChatRequest::new("a", Phase::Draft, 1, vec![Message::user("hi")]);
        let body = json!({"choices":[{"message":{"content":null,"tool_calls":[
            {"id":"c","type":"function","function":{"name":"t","arguments":"{}"}}]},
            "finish_reason":"length"}]});
        let r = parse_response(&req, &body).unwrap();
        assert_eq!(r.finish, FinishReason::Length);
        assert_eq!(r.tool_calls.len(), 1);
        assert!(r.usage.prompt_tokens > 0, "estimated when missing");
        assert_eq!(
            error_detail(r#"{"error":{"message":"bad key","type":"x"}}"#),
            "bad key"
        );
        assert_eq!(error_detail("plain"), "plain");
    }

    #[test]
    fn a_huge_tool_call_index_is_a_bad_response_not_an_allocation() {
        let mut s = StreamState::default();
        let chunk = r#"{"choices":[{"delta":{"tool_calls":[{"index":4000000000,"function":{"name":"x"}}]}}]}"#;
        assert_eq!(
            s.apply(chunk).unwrap_err().to_string(),
            "tool call index 4000000000 in stream (at most 128 calls a reply)"
        );
    }
}
