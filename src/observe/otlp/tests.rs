//! The span tree a stream of events makes, without a collector.

use super::proto::{STATUS_ERROR, Span, Value};
use super::spans::SpanBuilder;
use crate::event::{Event, EventKind, RunStatus};
use crate::model::{Phase, Usage};

fn ev(agent: &str, parent: Option<&str>, time_ms: u64, kind: EventKind) -> Event {
    Event {
        run_id: "r1".into(),
        agent: agent.into(),
        parent: parent.map(str::to_string),
        time_ms,
        kind,
    }
}

fn turn(id: &str, round: u32, phase: Phase, error: Option<&str>) -> EventKind {
    EventKind::TurnCompleted {
        turn_id: id.parse().unwrap(),
        round,
        phase,
        parents: vec![],
        usage: Usage {
            prompt_tokens: 10,
            completion_tokens: 5,
            ..Usage::default()
        },
        latency_ms: 40,
        error: error.map(str::to_string),
        // As in an events.jsonl written before these fields existed.
        model: None,
        finish_reason: None,
        retries: 0,
    }
}

fn attr<'a>(s: &'a Span, key: &str) -> Option<&'a Value> {
    s.attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref())
        .and_then(|v| v.value.as_ref())
}

/// A run of owls: the master plans, the writer's tool call fails, then
/// its model call, then the writer; the run fails.
fn failing_run() -> Vec<Event> {
    vec![
        ev(
            "master",
            None,
            1000,
            EventKind::RunStarted {
                task: "t".into(),
                team: "owls".into(),
                model: "sim".into(),
                members: 1,
                max_rounds: 2,
                process: "blackboard".into(),
                executor: None,
                session: None,
            },
        ),
        ev("master", None, 1100, turn("t0001", 0, Phase::Plan, None)),
        ev(
            "master",
            None,
            1101,
            EventKind::ReviewDecision {
                round: 0,
                decision: crate::event::ReviewVerdict::Assign,
                assignments: 1,
                rejected: vec![],
            },
        ),
        ev(
            "writer",
            Some("master"),
            1200,
            EventKind::ToolCall {
                round: 1,
                phase: Phase::Draft,
                id: "c1".into(),
                tool: "workspace_read".into(),
                arguments: "{}".into(),
            },
        ),
        ev(
            "writer",
            Some("master"),
            1210,
            EventKind::ToolResult {
                round: 1,
                id: "c1".into(),
                tool: "workspace_read".into(),
                is_error: true,
                text: "no such file".into(),
            },
        ),
        ev(
            "writer",
            Some("master"),
            1300,
            turn("t0002", 1, Phase::Draft, Some("timed out")),
        ),
        ev(
            "writer",
            Some("master"),
            1301,
            EventKind::Error {
                round: 1,
                message: "writer: timed out".into(),
            },
        ),
        ev(
            "master",
            None,
            1400,
            EventKind::RunFinished {
                status: RunStatus::Failed,
                answer: String::new(),
                rounds: 1,
                usage: Usage::default(),
            },
        ),
    ]
}

#[test]
fn spans_follow_the_call_graph_and_carry_errors() {
    let events = failing_run();
    let mut b = SpanBuilder::new(false);
    let mut spans: Vec<Span> = events.iter().flat_map(|e| b.push(e)).collect();
    spans.extend(b.finish());
    assert!(b.finish().is_empty(), "finish twice sends nothing twice");
    let find = |name: &str| {
        spans
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("no {name}"))
    };
    let root = find("invoke_workflow owls");
    let master = find("invoke_agent master");
    let writer = find("invoke_agent writer");
    let tool = find("execute_tool workspace_read");
    assert!(root.parent_span_id.is_empty());
    // Issue 27: run → round → phase → agent.
    let (round0, plan) = (find("round 0"), find("plan"));
    let (round1, draft) = (find("round 1"), find("draft"));
    assert_eq!(round0.parent_span_id, root.span_id);
    assert_eq!(plan.parent_span_id, round0.span_id);
    assert_eq!(master.parent_span_id, plan.span_id);
    assert_eq!(round1.parent_span_id, root.span_id);
    assert_eq!(draft.parent_span_id, round1.span_id);
    assert_eq!(writer.parent_span_id, draft.span_id);
    assert_eq!(
        attr(writer, "boardroom.parent_agent"),
        Some(&Value::String("master".into()))
    );
    assert_eq!(tool.parent_span_id, writer.span_id);
    let chats: Vec<&Span> = spans.iter().filter(|s| s.name == "chat sim").collect();
    assert_eq!(chats.len(), 2, "the model's name comes from run_started");
    assert_eq!(chats[0].parent_span_id, master.span_id);
    assert_eq!(chats[0].start_time_unix_nano, 1_060_000_000);
    assert_eq!(chats[0].end_time_unix_nano, 1_100_000_000);
    assert_eq!(chats[1].status.as_ref().unwrap().code, STATUS_ERROR);
    assert_eq!(writer.status.as_ref().unwrap().message, "writer: timed out");
    // A tool's error text is its output: only with content.
    assert_eq!(
        tool.status.as_ref().unwrap().message,
        "the tool reported an error"
    );
    assert!(spans.iter().all(|s| {
        s.status
            .as_ref()
            .is_none_or(|st| !st.message.contains("no such file"))
    }));
    let mut with_content = SpanBuilder::new(true);
    let tool_status = events
        .iter()
        .flat_map(|e| with_content.push(e))
        .find(|s| s.name == "execute_tool workspace_read")
        .and_then(|s| s.status)
        .unwrap();
    assert_eq!(tool_status.message, "no such file");
    // Issue 27: the run's span says why it failed.
    assert_eq!(
        root.status.as_ref().unwrap().message,
        "the run failed: writer: timed out"
    );
    assert_eq!(
        attr(writer, "gen_ai.usage.input_tokens"),
        Some(&Value::Int(10))
    );
    // Issue 15: the master's span says what it decided, from the type.
    assert_eq!(
        attr(master, "boardroom.review.decision"),
        Some(&Value::String("assign".into()))
    );
    assert_eq!(attr(writer, "boardroom.review.decision"), None);
    assert!(
        attr(tool, "gen_ai.tool.call.arguments").is_none(),
        "no content"
    );
    assert!(spans.iter().all(|s| s.trace_id == root.trace_id));
    let mut ids: Vec<&Vec<u8>> = spans.iter().map(|s| &s.span_id).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), spans.len(), "span ids are unique");
}

#[test]
fn a_run_that_never_finished_still_closes_its_spans() {
    let mut b = SpanBuilder::new(true);
    let mut spans = b.push(&ev(
        "writer",
        Some("master"),
        5,
        EventKind::AgentDelta {
            round: 1,
            phase: Phase::Draft,
            delta: "x".into(),
            call: 1,
        },
    ));
    spans.extend(b.finish());
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        // No run_started: the team is unnamed.
        [
            "invoke_agent writer",
            "round 1",
            "draft",
            "invoke_workflow "
        ]
    );
    let root = spans.last().unwrap();
    assert_eq!(
        root.status.as_ref().unwrap().message,
        "the run did not finish"
    );
    assert_eq!(spans[1].parent_span_id, root.span_id);
    assert_eq!(spans[0].parent_span_id, spans[2].span_id);
}

#[test]
fn a_resumed_stream_shares_the_trace_never_a_span_id() {
    let start = |t| {
        ev(
            "master",
            None,
            t,
            EventKind::RunStarted {
                task: "t".into(),
                team: "owls".into(),
                model: "sim".into(),
                members: 1,
                max_rounds: 2,
                process: "blackboard".into(),
                executor: None,
                session: None,
            },
        )
    };
    let segment = |t: u64| {
        let mut b = SpanBuilder::new(false);
        let mut spans: Vec<Span> = [
            start(t),
            ev("master", None, t + 10, turn("t0001", 0, Phase::Plan, None)),
        ]
        .iter()
        .flat_map(|e| b.push(e))
        .collect();
        spans.extend(b.finish());
        spans
    };
    let (before, again, resumed) = (segment(1000), segment(1000), segment(9000));
    let ids = |spans: &[Span]| spans.iter().map(|s| s.span_id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&before), ids(&again), "the same events, the same ids");
    assert_eq!(before[0].trace_id, resumed[0].trace_id);
    for id in ids(&resumed) {
        assert!(!ids(&before).contains(&id), "a span id used twice");
    }
}

#[test]
fn chat_spans_name_the_model_as_sent_and_its_provider() {
    let chat = |label: &str| {
        let mut b = SpanBuilder::new(false);
        let mut kind = turn("t0001", 0, Phase::Plan, None);
        if let EventKind::TurnCompleted { model, .. } = &mut kind {
            *model = Some(label.to_string());
        }
        b.push(&ev("master", None, 100, kind))
            .into_iter()
            .find(|s| s.name.starts_with("chat "))
            .unwrap()
    };
    let s = chat("openai:gpt-4o-mini");
    assert_eq!(s.name, "chat gpt-4o-mini");
    let text = |v: Option<&Value>| match v {
        Some(Value::String(s)) => Some(s.clone()),
        _ => None,
    };
    assert_eq!(
        text(attr(&s, "gen_ai.request.model")).as_deref(),
        Some("gpt-4o-mini")
    );
    assert_eq!(
        text(attr(&s, "gen_ai.provider.name")).as_deref(),
        Some("openai")
    );
    let s = chat("http://127.0.0.1:8080/v1#qwen");
    assert_eq!(s.name, "chat qwen");
    assert_eq!(
        text(attr(&s, "gen_ai.provider.name")).as_deref(),
        Some("openai")
    );
    // Issue 26.
    let s = chat("anthropic:claude-sonnet-4-5");
    assert_eq!(s.name, "chat claude-sonnet-4-5");
    assert_eq!(
        text(attr(&s, "gen_ai.provider.name")).as_deref(),
        Some("anthropic")
    );
    let s = chat("sim");
    assert_eq!(s.name, "chat sim");
    let s = chat("fast");
    assert_eq!(s.name, "chat fast");
    assert_eq!(attr(&s, "gen_ai.provider.name"), None);
}

fn text(s: &Span, key: &str) -> Option<String> {
    match attr(s, key) {
        Some(Value::String(t)) => Some(t.clone()),
        _ => None,
    }
}

/// The run's spans, content on or off, with the task's and a turn's text.
fn spans_of(events: &[Event], content: bool) -> Vec<Span> {
    let mut b = SpanBuilder::new(content);
    let mut record: crate::record::Turn = serde_json::from_value(serde_json::json!({
        "turn_id": "t0001", "run_id": "r1", "agent": "master", "role": "master",
        "round": 0, "phase": "plan", "parents": [], "time_ms": 1100,
        "messages": [
            {"role": "system", "content": "You lead."},
            {"role": "user", "content": "<task>Plan a walk</task>"}
        ],
        "answer": "ASSIGN:writer:a route",
        "usage": {"prompt_tokens": 10, "completion_tokens": 5},
        "latency_ms": 40
    }))
    .unwrap();
    b.add_turn(record.clone());
    record.turn_id = "t0002".parse().unwrap();
    record.agent = "writer".into();
    record.answer = None;
    b.add_turn(record);
    let mut spans: Vec<Span> = events.iter().flat_map(|e| b.push(e)).collect();
    spans.extend(b.finish());
    spans
}

/// Issue 27: Phoenix draws a span by its OpenInference kind and fills its
/// panes from `input.value` / `output.value`: every span has a kind, model
/// calls their tokens and model, and text only with content on.
#[test]
fn every_span_has_an_openinference_kind_and_text_only_with_content() {
    let mut events = failing_run();
    events.insert(
        2,
        ev(
            "writer",
            Some("master"),
            1102,
            EventKind::TaskAssigned {
                round: 1,
                member: "writer".into(),
                task: "Find a route".into(),
            },
        ),
    );
    let spans = spans_of(&events, true);
    let kind = |s: &Span| text(s, "openinference.span.kind").unwrap_or_default();
    for s in &spans {
        let want = match s.name.split(' ').next().unwrap() {
            "invoke_workflow" | "round" | "plan" | "draft" => "CHAIN",
            "invoke_agent" => "AGENT",
            "chat" => "LLM",
            "execute_tool" => "TOOL",
            other => panic!("unexpected span {other}"),
        };
        assert_eq!(kind(s), want, "{}", s.name);
    }
    let find = |name: &str| spans.iter().find(|s| s.name == name).unwrap();
    let chat = find("chat sim");
    assert_eq!(attr(chat, "llm.token_count.prompt"), Some(&Value::Int(10)));
    assert_eq!(
        attr(chat, "llm.token_count.completion"),
        Some(&Value::Int(5))
    );
    assert_eq!(attr(chat, "llm.token_count.total"), Some(&Value::Int(15)));
    assert_eq!(text(chat, "llm.model_name").as_deref(), Some("sim"));
    assert_eq!(text(chat, "llm.provider").as_deref(), Some("boardroom.sim"));
    assert_eq!(
        text(chat, "llm.input_messages.1.message.content").as_deref(),
        Some("<task>Plan a walk</task>")
    );
    assert_eq!(
        text(chat, "output.value").as_deref(),
        Some("ASSIGN:writer:a route")
    );
    assert_eq!(
        text(chat, "input.mime_type").as_deref(),
        Some("application/json")
    );
    let root = find("invoke_workflow owls");
    assert_eq!(text(root, "input.value").as_deref(), Some("t"));
    let master = find("invoke_agent master");
    assert_eq!(
        text(master, "input.value").as_deref(),
        Some("<task>Plan a walk</task>"),
        "an agent without an assignment: its first call's question"
    );
    assert_eq!(text(master, "agent.name").as_deref(), Some("master"));
    let writer = find("invoke_agent writer");
    assert_eq!(text(writer, "input.value").as_deref(), Some("Find a route"));
    let tool = find("execute_tool workspace_read");
    assert_eq!(text(tool, "tool.name").as_deref(), Some("workspace_read"));
    assert_eq!(text(tool, "input.value").as_deref(), Some("{}"));
    assert_eq!(text(tool, "output.value").as_deref(), Some("no such file"));

    // Content off: no text at all, the rest the same.
    let spans = spans_of(&events, false);
    for s in &spans {
        assert!(!kind(s).is_empty(), "{}", s.name);
        for kv in &s.attributes {
            assert!(
                !kv.key.starts_with("input.")
                    && !kv.key.starts_with("output.")
                    && !kv.key.starts_with("llm.input_messages")
                    && !kv.key.starts_with("llm.output_messages"),
                "{} on {} without content",
                kv.key,
                s.name
            );
        }
    }
    let chat = spans.iter().find(|s| s.name == "chat sim").unwrap();
    assert_eq!(attr(chat, "llm.token_count.total"), Some(&Value::Int(15)));
}

/// Issue 27: an agent whose last model call failed is a failed agent, even
/// when the run ended before an `error` event could name it.
#[test]
fn an_agent_whose_last_call_failed_is_marked_failed() {
    let mut b = SpanBuilder::new(false);
    let mut spans = b.push(&ev(
        "master",
        None,
        100,
        turn("t0001", 0, Phase::Plan, Some("http status 500")),
    ));
    spans.extend(b.finish());
    let master = spans
        .iter()
        .find(|s| s.name == "invoke_agent master")
        .unwrap();
    assert_eq!(master.status.as_ref().unwrap().message, "http status 500");
    let root = spans.last().unwrap();
    assert_eq!(
        root.status.as_ref().unwrap().message,
        "the run did not finish: http status 500"
    );
}

/// Issue 27: every span names the run's session: the chat that launched
/// the run, else the run itself.
#[test]
fn every_span_carries_the_session_the_chat_or_else_the_run() {
    let session_of = |events: &[Event]| -> Vec<(String, Option<String>, Option<String>)> {
        spans_of(events, false)
            .iter()
            .map(|s| {
                (
                    s.name.clone(),
                    text(s, "session.id"),
                    text(s, "gen_ai.conversation.id"),
                )
            })
            .collect()
    };
    let alone = session_of(&failing_run());
    assert!(alone.len() > 5);
    for (name, session, conversation) in alone {
        assert_eq!(session.as_deref(), Some("r1"), "{name}");
        assert_eq!(conversation.as_deref(), Some("r1"), "{name}");
    }
    let mut events = failing_run();
    if let EventKind::RunStarted { session, .. } = &mut events[0].kind {
        *session = Some("chat-7".into());
    }
    for (name, session, _) in session_of(&events) {
        assert_eq!(session.as_deref(), Some("chat-7"), "{name}");
    }
}
