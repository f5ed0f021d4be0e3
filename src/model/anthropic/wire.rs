//! The JSON of `POST /v1/messages`: the request we send (the system
//! prompt at the top, roles alternating, tools as `input_schema`, a
//! schema as a forced tool) and the response of a plain call.

use serde_json::{Map, Value, json};

use crate::model::{
    ChatRequest, ChatResponse, FinishReason, Message, Role, ToolCall, Usage, estimate_usage,
};

/// What a request is sent with besides the [`ChatRequest`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Options<'a> {
    pub(crate) model: &'a str,
    pub(crate) stream: bool,
    /// `max_tokens` when the request sets none.
    pub(crate) max_tokens: u32,
    /// Mark the stable prefix (tools, system prompt) for the prompt cache.
    pub(crate) cache: bool,
}

/// The request body.
pub(crate) fn request_json(o: Options<'_>, req: &ChatRequest) -> String {
    request_body(o, req).to_string()
}

/// The request body as JSON.
pub(crate) fn request_body(o: Options<'_>, req: &ChatRequest) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(o.model));
    body.insert(
        "max_tokens".into(),
        json!(req.max_tokens.unwrap_or(o.max_tokens).max(1)),
    );
    let system: Vec<&str> = req
        .messages
        .iter()
        .filter(|m| m.role == Role::System && !m.content.trim().is_empty())
        .map(|m| m.content.as_str())
        .collect();
    if !system.is_empty() {
        let text = system.join("\n\n");
        body.insert(
            "system".into(),
            if o.cache {
                json!([{"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}])
            } else {
                json!(text)
            },
        );
    }
    body.insert("messages".into(), Value::Array(messages(&req.messages)));
    if let Some(t) = req.temperature {
        // Anthropic takes 0 to 1 (OpenAI 0 to 2).
        body.insert("temperature".into(), json!(t.clamp(0.0, 1.0)));
    }
    let mut tools: Vec<Value> = req
        .tools
        .iter()
        .map(
            |t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}),
        )
        .collect();
    if let Some(schema) = &req.schema {
        // Structured output: the answer is the input of a tool the model
        // must call. With other tools offered it must call one of them.
        tools.push(json!({
            "name": schema.name,
            "description": "Give your answer by calling this tool: its input is the answer.",
            "input_schema": schema.schema,
        }));
        let choice = if req.tools.is_empty() {
            json!({"type": "tool", "name": schema.name})
        } else {
            json!({"type": "any"})
        };
        body.insert("tool_choice".into(), choice);
    }
    if o.cache
        && let Some(last) = tools.last_mut().and_then(Value::as_object_mut)
    {
        last.insert("cache_control".into(), json!({"type": "ephemeral"}));
    }
    if !tools.is_empty() {
        body.insert("tools".into(), Value::Array(tools));
    }
    if o.stream {
        body.insert("stream".into(), json!(true));
    }
    Value::Object(body)
}

/// The conversation as Anthropic takes it: no system messages, tool
/// results as `user` turns of `tool_result` blocks, consecutive turns of
/// one role merged, and a `user` turn first.
fn messages(all: &[Message]) -> Vec<Value> {
    let mut out: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for m in all {
        let (role, blocks) = match m.role {
            Role::System => continue,
            Role::User => ("user", text_block(&m.content).into_iter().collect()),
            Role::Tool => (
                "user",
                vec![json!({
                    "type": "tool_result",
                    "tool_use_id": m.tool_call_id.as_deref().unwrap_or_default(),
                    "content": if m.content.trim().is_empty() { "(no output)" } else { &m.content },
                })],
            ),
            Role::Assistant => {
                let mut blocks: Vec<Value> = text_block(&m.content).into_iter().collect();
                blocks.extend(m.tool_calls.iter().map(|c| {
                    json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input_of(c)})
                }));
                ("assistant", blocks)
            }
        };
        match out.last_mut() {
            Some((r, b)) if *r == role => b.extend(blocks),
            _ => out.push((role, blocks)),
        }
    }
    if out.first().is_none_or(|(r, _)| *r != "user") {
        out.insert(0, ("user", Vec::new()));
    }
    out.into_iter()
        .map(|(role, mut blocks)| {
            // An empty turn (an assistant's empty answer): the API takes
            // no empty content.
            if blocks.is_empty() {
                blocks.push(json!({"type": "text", "text": "(empty)"}));
            }
            json!({"role": role, "content": blocks})
        })
        .collect()
}

/// A text block, unless the text is blank (the API refuses those).
fn text_block(text: &str) -> Option<Value> {
    (!text.trim().is_empty()).then(|| json!({"type": "text", "text": text}))
}

/// A tool call's arguments as the object `tool_use.input` must be.
fn input_of(call: &ToolCall) -> Value {
    match serde_json::from_str::<Value>(&call.arguments) {
        Ok(v @ Value::Object(_)) => v,
        _ => json!({}),
    }
}

/// `stop_reason` as boardroom names it.
pub(crate) fn finish_reason(reason: &str) -> FinishReason {
    match reason {
        "end_turn" | "stop_sequence" => FinishReason::Stop,
        "max_tokens" => FinishReason::Length,
        "tool_use" => FinishReason::ToolCalls,
        _ => FinishReason::Other,
    }
}

/// Anthropic's `usage`: `input_tokens` counts what the cache did not
/// hold; the prompt is all three.
pub(crate) fn usage(v: &Value) -> Usage {
    let n = |k: &str| v.get(k).and_then(Value::as_u64).unwrap_or(0);
    let (read, created) = (
        n("cache_read_input_tokens"),
        n("cache_creation_input_tokens"),
    );
    Usage {
        prompt_tokens: n("input_tokens")
            .saturating_add(read)
            .saturating_add(created),
        completion_tokens: n("output_tokens"),
        cache_read_tokens: read,
        cache_creation_tokens: created,
    }
}

/// A tool call the model made; the call of the schema's tool is the
/// answer itself (its input as JSON text), not a call.
pub(crate) fn take_call(
    req: &ChatRequest,
    call: ToolCall,
    text: &mut String,
    calls: &mut Vec<ToolCall>,
) -> bool {
    match &req.schema {
        Some(s) if s.name == call.name => {
            let args = if call.arguments.trim().is_empty() {
                "{}".to_string()
            } else {
                call.arguments
            };
            *text = args;
            true
        }
        _ => {
            calls.push(call);
            false
        }
    }
}

/// A whole answer.
pub(crate) fn parse_response(req: &ChatRequest, body: &Value) -> Result<ChatResponse, String> {
    if body.get("type").and_then(Value::as_str) == Some("error") {
        let e = body.get("error").unwrap_or(body);
        return Err(format!(
            "error in answer: {}",
            crate::model::http::body::short(e)
        ));
    }
    let content = body
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| "no 'content' in the answer".to_string())?;
    let mut text = String::new();
    let mut calls = Vec::new();
    let mut answered = false;
    for block in content {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => text.push_str(block.get("text").and_then(Value::as_str).unwrap_or("")),
            Some("tool_use") => {
                let call = ToolCall {
                    id: str_of(block, "id"),
                    name: str_of(block, "name"),
                    arguments: block
                        .get("input")
                        .map_or_else(|| "{}".into(), Value::to_string),
                };
                let mut answer = String::new();
                if take_call(req, call, &mut answer, &mut calls) {
                    text = answer;
                    answered = true;
                }
            }
            _ => {}
        }
    }
    let stop = body
        .get("stop_reason")
        .and_then(Value::as_str)
        .unwrap_or("");
    let finish = match finish_reason(stop) {
        FinishReason::ToolCalls if answered && calls.is_empty() => FinishReason::Stop,
        f => f,
    };
    let usage = body
        .get("usage")
        .map(usage)
        .filter(|u| u.total() > 0)
        .unwrap_or_else(|| estimate_usage(req, &text));
    Ok(ChatResponse {
        text,
        tool_calls: calls,
        usage,
        finish,
        retries: 0,
    })
}

fn str_of(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or("").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{OutputSchema, Phase, ToolSpec};

    const O: Options<'static> = Options {
        model: "claude-x",
        stream: false,
        max_tokens: 4096,
        cache: false,
    };

    #[test]
    fn request_in_anthropic_shape() {
        let mut asked = Message::assistant("");
        asked.tool_calls.push(ToolCall {
            id: "toolu_1".into(),
            name: "plan_read".into(),
            arguments: "{\"a\":1}".into(),
        });
        let mut req = ChatRequest::new(
            "a",
            Phase::Draft,
            1,
            vec![
                Message::system("You write."),
                Message::user("hi"),
                Message::user("again"),
                asked,
                Message::tool("toolu_1", "[]"),
                Message::user("go on"),
            ],
        );
        req.tools.push(ToolSpec {
            name: "plan_read".into(),
            description: "reads".into(),
            parameters: json!({"type": "object"}),
        });
        req.temperature = Some(1.5);
        let body = request_body(O, &req);
        assert_eq!(body["system"], "You write.");
        assert_eq!(body["max_tokens"], 4096);
        assert_eq!(body["temperature"], 1.0);
        let m = body["messages"].as_array().unwrap();
        assert_eq!(m.len(), 3, "user turns merged: {m:#?}");
        assert_eq!(m[0]["role"], "user");
        assert_eq!(m[0]["content"][1]["text"], "again");
        assert_eq!(m[1]["content"][0]["type"], "tool_use");
        assert_eq!(m[1]["content"][0]["input"], json!({"a": 1}));
        assert_eq!(m[2]["content"][0]["type"], "tool_result");
        assert_eq!(m[2]["content"][0]["tool_use_id"], "toolu_1");
        assert_eq!(m[2]["content"][1]["text"], "go on");
        assert_eq!(body["tools"][0]["input_schema"], json!({"type": "object"}));
        assert!(body.get("tool_choice").is_none());
        assert!(body.get("stream").is_none());

        req.schema = Some(OutputSchema {
            name: "verdict".into(),
            schema: json!({"type": "object"}),
        });
        req.max_tokens = Some(10);
        let cached = Options {
            cache: true,
            stream: true,
            ..O
        };
        let body = request_body(cached, &req);
        assert_eq!(body["tool_choice"], json!({"type": "any"}));
        assert_eq!(body["tools"][1]["name"], "verdict");
        assert_eq!(body["tools"][1]["cache_control"]["type"], "ephemeral");
        assert_eq!(body["system"][0]["cache_control"]["type"], "ephemeral");
        assert_eq!(body["max_tokens"], 10);
        assert_eq!(body["stream"], true);
        req.tools.clear();
        assert_eq!(
            request_body(O, &req)["tool_choice"],
            json!({"type": "tool", "name": "verdict"})
        );
    }

    #[test]
    fn a_whole_answer_its_tools_and_its_schema() {
        let mut req = ChatRequest::new("a", Phase::Draft, 1, vec![Message::user("hi")]);
        let body = json!({"type": "message", "content": [
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "toolu_9", "name": "plan_read", "input": {"x": 1}}],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 5, "output_tokens": 7,
                      "cache_read_input_tokens": 100, "cache_creation_input_tokens": 20}});
        let r = parse_response(&req, &body).unwrap();
        assert_eq!(r.text, "Let me look.");
        assert_eq!(r.finish, FinishReason::ToolCalls);
        assert_eq!(r.tool_calls[0].arguments, "{\"x\":1}");
        assert_eq!(r.usage.prompt_tokens, 125);
        assert_eq!(r.usage.cache_read_tokens, 100);
        assert_eq!(r.usage.cache_creation_tokens, 20);
        req.schema = Some(OutputSchema {
            name: "plan_read".into(),
            schema: json!({}),
        });
        let r = parse_response(&req, &body).unwrap();
        assert_eq!(r.text, "{\"x\":1}");
        assert!(r.tool_calls.is_empty());
        assert_eq!(r.finish, FinishReason::Stop);
        let cut =
            json!({"content": [{"type": "text", "text": "half"}], "stop_reason": "max_tokens"});
        assert_eq!(
            parse_response(&req, &cut).unwrap().finish,
            FinishReason::Length
        );
    }
}
