//! Events (and, for content, Turn records) → OTLP spans following the
//! OpenTelemetry GenAI semantic conventions, each also carrying the
//! OpenInference attributes Arize Phoenix renders (see `openinference`).
//!
//! ```text
//! invoke_workflow {team}                 CHAIN  the run (root)
//! ├─ round 0                             CHAIN
//! │  └─ plan                             CHAIN
//! │     └─ invoke_agent master           AGENT
//! │        └─ chat {model}               LLM    each model call of that turn
//! ├─ round 1                             CHAIN
//! │  ├─ draft                            CHAIN
//! │  │  └─ invoke_agent writer           AGENT  a member's draft
//! │  │     ├─ chat {model}               LLM
//! │  │     └─ execute_tool workspace_write  TOOL
//! │  ├─ challenge                        CHAIN
//! │  └─ review                           CHAIN
//! └─ round 2 ...
//! ```
//!
//! An agent turn is an agent's work in one (round, phase), under that
//! round's phase (see `groups`; the agent that set it to work is its
//! `boardroom.parent_agent`). Every span carries the run's session:
//! the chat that launched it, else the run itself. Span ids are derived from the run id, the
//! time of the stream's first event and the turn, so exporting a saved run
//! twice gives the same ids, and a resumed run's live trace (the same
//! trace id) never reuses the ids of the part before.

use std::collections::HashMap;

use crate::event::{Event, EventKind, RunStatus};
use crate::model::{Message, Phase};
use crate::record::{ProcessKind, Turn};

use super::genai::{finish_name, messages_json, provider_and_model};
use super::groups::{Group, Groups, SpanId};
use super::ids::{span_id, trace_id};
use super::openinference::{self as oi, Kind, to_i64};
use super::proto::{KeyValue, SPAN_KIND_CLIENT, SPAN_KIND_INTERNAL, STATUS_ERROR, Span, Status};

/// One agent's work in one (round, phase), open until it is over.
#[derive(Debug)]
struct AgentTurn {
    agent: String,
    round: u32,
    phase: Phase,
    id: SpanId,
    parent: SpanId,
    /// The agent that set it to work.
    launched_by: Option<String>,
    start_ms: u64,
    end_ms: u64,
    input_tokens: u64,
    output_tokens: u64,
    /// Why the agent failed (an `error` event naming it).
    error: Option<String>,
    /// Why its latest model call failed (`None` once one succeeds).
    call_error: Option<String>,
    /// What it was asked and what it answered (content only).
    input: Option<String>,
    output: Option<String>,
    /// The master's decision after this turn, if it took one.
    decision: Option<crate::event::ReviewVerdict>,
}

#[derive(Debug)]
struct OpenTool {
    agent: String,
    round: u32,
    phase: Phase,
    tool: String,
    arguments: String,
    start_ms: u64,
}

/// Turns a run's events into spans, as they come.
#[derive(Debug)]
pub(crate) struct SpanBuilder {
    content: bool,
    run_id: Option<String>,
    /// The run id and the time of the first event: what span ids derive from.
    id_base: String,
    trace_id: [u8; 16],
    root_id: SpanId,
    team: String,
    model: String,
    task: String,
    process: ProcessKind,
    /// What `session.id` says: the launching chat, else the run.
    session: String,
    groups: Groups,
    /// The run's answer (content only).
    answer: String,
    /// The latest failure: what a failed run's span says.
    last_error: Option<String>,
    /// Members' assignments by (member, round), until their draft opens
    /// (content only).
    assigned: HashMap<(String, u32), String>,
    start_ms: Option<u64>,
    end_ms: u64,
    finished: Option<(RunStatus, u32, u64, u64)>,
    open: Vec<AgentTurn>,
    /// The latest agent-turn span of each agent.
    latest: HashMap<String, SpanId>,
    tools: HashMap<String, OpenTool>,
    /// Turn records by id, for prompt and answer text (content only).
    turns: HashMap<crate::record::TurnId, Turn>,
    serial: u64,
    done: bool,
}

impl SpanBuilder {
    pub(crate) fn new(content: bool) -> Self {
        SpanBuilder {
            content,
            run_id: None,
            id_base: String::new(),
            trace_id: [0; 16],
            root_id: [0; 8],
            team: String::new(),
            model: String::new(),
            task: String::new(),
            process: ProcessKind::Blackboard,
            session: String::new(),
            groups: Groups::default(),
            answer: String::new(),
            last_error: None,
            assigned: HashMap::new(),
            start_ms: None,
            end_ms: 0,
            finished: None,
            open: Vec::new(),
            latest: HashMap::new(),
            tools: HashMap::new(),
            turns: HashMap::new(),
            serial: 0,
            done: false,
        }
    }

    /// Whether prompt and answer text go into the spans.
    pub(crate) fn content(&self) -> bool {
        self.content
    }

    /// The run id, once the first event said it.
    pub(crate) fn run_id(&self) -> Option<&str> {
        self.run_id.as_deref()
    }

    /// Makes a Turn record's messages and answer available to its chat span.
    pub(crate) fn add_turn(&mut self, turn: Turn) {
        if self.content {
            self.turns.insert(turn.turn_id, turn);
        }
    }

    /// Takes one event; returns the spans it completed.
    pub(crate) fn push(&mut self, e: &Event) -> Vec<Span> {
        if self.done {
            return Vec::new();
        }
        if self.run_id.is_none() {
            self.run_id = Some(e.run_id.clone());
            self.trace_id = trace_id(&e.run_id);
            // Span ids also hang on when this stream began: a resumed run
            // exported live shares the run's trace, never its span ids.
            self.id_base = format!("{}@{}", e.run_id, e.time_ms);
            self.root_id = span_id(&self.id_base, "root");
            self.session.clone_from(&e.run_id);
        }
        self.start_ms = Some(self.start_ms.map_or(e.time_ms, |s| s.min(e.time_ms)));
        self.end_ms = self.end_ms.max(e.time_ms);
        let mut out = Vec::new();
        match &e.kind {
            // A resumed run starts again: the first start names the run.
            EventKind::RunStarted {
                task,
                team,
                model,
                process,
                session,
                ..
            } if self.team.is_empty() => {
                if let Some(chat) = session {
                    self.session.clone_from(chat);
                }
                self.process = process.clone();
                self.team = team.clone();
                self.model = model.clone();
                self.task = task.clone();
            }
            EventKind::TaskAssigned {
                round,
                member,
                task,
            } if self.content => {
                self.assigned.insert((member.clone(), *round), task.clone());
            }
            EventKind::AgentDelta { round, phase, .. } => {
                self.turn_of(e, *round, *phase, &mut out);
            }
            EventKind::AgentMessage { round, phase, text } => {
                let i = self.turn_of(e, *round, *phase, &mut out);
                if self.content {
                    self.open[i].output = Some(text.clone());
                }
            }
            EventKind::TurnCompleted {
                turn_id,
                round,
                phase,
                usage,
                latency_ms,
                error,
                model,
                finish_reason,
                retries,
                ..
            } => {
                let start = e.time_ms.saturating_sub(*latency_ms);
                let i = self.turn_of(e, *round, *phase, &mut out);
                let t = &mut self.open[i];
                t.start_ms = t.start_ms.min(start);
                t.input_tokens += usage.prompt_tokens;
                t.output_tokens += usage.completion_tokens;
                t.call_error.clone_from(error);
                if let Some(record) = self.turns.get(turn_id) {
                    // An agent not given an assignment was asked what its
                    // first call's last user message says.
                    if t.input.is_none() {
                        t.input = record
                            .messages
                            .iter()
                            .rev()
                            .find(|m| m.role == crate::model::Role::User)
                            .map(|m| m.content.clone());
                    }
                    if let Some(answer) = &record.answer {
                        t.output = Some(answer.clone());
                    }
                }
                let parent = t.id;
                if let Some(error) = error {
                    self.last_error = Some(error.clone());
                }
                let label = model.clone().unwrap_or_else(|| self.model.clone());
                let (provider, model) = provider_and_model(&label);
                let mut attrs = vec![
                    KeyValue::str("gen_ai.operation.name", "chat"),
                    KeyValue::str("gen_ai.request.model", model.clone()),
                    KeyValue::str("gen_ai.agent.name", e.agent.clone()),
                    KeyValue::int("gen_ai.usage.input_tokens", to_i64(usage.prompt_tokens)),
                    KeyValue::int(
                        "gen_ai.usage.output_tokens",
                        to_i64(usage.completion_tokens),
                    ),
                    KeyValue::str("boardroom.turn.id", turn_id.to_string()),
                    KeyValue::str("boardroom.phase", phase.as_str()),
                    KeyValue::int("boardroom.round", i64::from(*round)),
                    KeyValue::int("boardroom.retries", i64::from(*retries)),
                    oi::kind(Kind::Llm),
                    KeyValue::str("llm.model_name", model.clone()),
                ];
                oi::tokens(usage, &mut attrs);
                if let Some(p) = provider {
                    attrs.push(KeyValue::str("gen_ai.provider.name", p));
                    attrs.push(KeyValue::str("llm.provider", p));
                }
                if label != model {
                    attrs.push(KeyValue::str("boardroom.model", label.clone()));
                }
                if let Some(reason) = finish_reason {
                    attrs.push(KeyValue::strs(
                        "gen_ai.response.finish_reasons",
                        &[finish_name(*reason).to_string()],
                    ));
                }
                if let Some(turn) = self.turns.get(turn_id) {
                    let input = messages_json(&turn.messages);
                    oi::input(&input, &mut attrs);
                    oi::messages(false, &turn.messages, &mut attrs);
                    attrs.push(KeyValue::str("gen_ai.input.messages", input));
                    if let Some(answer) = &turn.answer {
                        let said = [Message::assistant(answer.clone())];
                        oi::output(answer, &mut attrs);
                        oi::messages(true, &said, &mut attrs);
                        attrs.push(KeyValue::str(
                            "gen_ai.output.messages",
                            messages_json(&said),
                        ));
                    }
                }
                if error.is_some() {
                    attrs.push(KeyValue::str("error.type", "model_error"));
                }
                let id = span_id(&self.id_base, &format!("chat/{turn_id}"));
                out.push(self.span(
                    id,
                    parent,
                    format!("chat {model}"),
                    SPAN_KIND_CLIENT,
                    (start, e.time_ms),
                    attrs,
                    error.clone(),
                ));
            }
            EventKind::ToolCall {
                round,
                phase,
                id,
                tool,
                arguments,
            } => {
                self.turn_of(e, *round, *phase, &mut out);
                self.tools.insert(
                    id.clone(),
                    OpenTool {
                        agent: e.agent.clone(),
                        round: *round,
                        phase: *phase,
                        tool: tool.clone(),
                        arguments: arguments.clone(),
                        start_ms: e.time_ms,
                    },
                );
            }
            EventKind::ToolResult {
                id, is_error, text, ..
            } => {
                if let Some(call) = self.tools.remove(id) {
                    // A tool's error text is its output: content, like
                    // its result.
                    let error = is_error.then(|| {
                        if self.content {
                            text.clone()
                        } else {
                            "the tool reported an error".to_string()
                        }
                    });
                    out.push(self.tool_span(id, call, e.time_ms, Some(text), error));
                }
            }
            EventKind::Error { round, message } => {
                if let Some(t) = self
                    .open
                    .iter_mut()
                    .rev()
                    .find(|t| t.agent == e.agent && t.round == *round)
                {
                    t.error = Some(message.clone());
                }
                self.last_error = Some(message.clone());
            }
            EventKind::ReviewDecision { decision, .. } => {
                // The master read the board: the round's members are done.
                let (members, mut keep): (Vec<_>, Vec<_>) =
                    self.open.drain(..).partition(|t| e.agent != t.agent);
                // The master's own turn carries what it decided.
                for t in &mut keep {
                    t.decision = Some(*decision);
                }
                self.open = keep;
                for t in members {
                    out.push(self.agent_span(t));
                }
            }
            EventKind::RunFinished {
                status,
                rounds,
                usage,
                answer,
            } => {
                if self.content {
                    self.answer.clone_from(answer);
                }
                self.finished = Some((
                    *status,
                    *rounds,
                    usage.prompt_tokens,
                    usage.completion_tokens,
                ));
            }
            _ => {}
        }
        out
    }

    /// Closes what is still open and the root; nothing after this.
    pub(crate) fn finish(&mut self) -> Vec<Span> {
        let mut out = Vec::new();
        if self.done || self.run_id.is_none() {
            return out;
        }
        self.done = true;
        let tools: Vec<(String, OpenTool)> = self.tools.drain().collect();
        for (id, call) in tools {
            let end = call.start_ms;
            out.push(self.tool_span(&id, call, end, None, Some("no result".into())));
        }
        let open: Vec<AgentTurn> = self.open.drain(..).collect();
        for t in open {
            out.push(self.agent_span(t));
        }
        for g in self.groups.drain() {
            out.push(self.group_span(&g));
        }
        let mut attrs = vec![
            KeyValue::str("gen_ai.operation.name", "invoke_workflow"),
            KeyValue::str("gen_ai.agent.name", self.team.clone()),
            KeyValue::str("boardroom.run.id", self.run_key().to_string()),
            KeyValue::str("boardroom.team", self.team.clone()),
            oi::kind(Kind::Chain),
        ];
        if self.content {
            attrs.push(KeyValue::str("boardroom.task", self.task.clone()));
            oi::input(&self.task, &mut attrs);
            if !self.answer.is_empty() {
                oi::output(&self.answer, &mut attrs);
            }
        }
        let failed = |what: &str| match &self.last_error {
            Some(why) => format!("{what}: {why}"),
            None => what.to_string(),
        };
        let error = match self.finished {
            Some((status, rounds, input, output)) => {
                attrs.push(KeyValue::str("boardroom.status", status.as_str()));
                attrs.push(KeyValue::int("boardroom.rounds", i64::from(rounds)));
                attrs.push(KeyValue::int("gen_ai.usage.input_tokens", to_i64(input)));
                attrs.push(KeyValue::int("gen_ai.usage.output_tokens", to_i64(output)));
                (status == RunStatus::Failed).then(|| failed("the run failed"))
            }
            None => Some(failed("the run did not finish")),
        };
        let name = format!("invoke_workflow {}", self.team);
        let times = (self.start_ms.unwrap_or(0), self.end_ms);
        out.push(self.span(
            self.root_id,
            [0; 8],
            name,
            SPAN_KIND_INTERNAL,
            times,
            attrs,
            error,
        ));
        out
    }

    fn run_key(&self) -> &str {
        self.run_id.as_deref().unwrap_or("")
    }

    /// The open turn of this event's agent in (round, phase), opened now
    /// if it is new; an agent's earlier turn closes when it starts another.
    fn turn_of(&mut self, e: &Event, round: u32, phase: Phase, out: &mut Vec<Span>) -> usize {
        if let Some(i) = self
            .open
            .iter()
            .position(|t| t.agent == e.agent && t.round == round && t.phase == phase)
        {
            let t = &mut self.open[i];
            t.end_ms = t.end_ms.max(e.time_ms);
            return i;
        }
        while let Some(i) = self.open.iter().position(|t| t.agent == e.agent) {
            let t = self.open.remove(i);
            out.push(self.agent_span(t));
        }
        let base = &self.id_base;
        let parent = self.groups.parent_of(
            &self.process,
            round,
            phase,
            e.time_ms,
            self.root_id,
            |key| span_id(base, key),
        );
        self.serial += 1;
        let key = format!(
            "agent/{}/{round}/{}/{}",
            e.agent,
            phase.as_str(),
            self.serial
        );
        let id = span_id(&self.id_base, &key);
        self.latest.insert(e.agent.clone(), id);
        let input = if phase == Phase::Draft {
            self.assigned.remove(&(e.agent.clone(), round))
        } else {
            None
        };
        self.open.push(AgentTurn {
            agent: e.agent.clone(),
            round,
            phase,
            id,
            parent,
            launched_by: e.parent.clone(),
            start_ms: e.time_ms,
            end_ms: e.time_ms,
            input_tokens: 0,
            output_tokens: 0,
            error: None,
            call_error: None,
            input,
            output: None,
            decision: None,
        });
        self.open.len() - 1
    }

    fn agent_span(&mut self, t: AgentTurn) -> Span {
        self.groups.cover(t.round, t.phase, t.start_ms, t.end_ms);
        let mut attrs = vec![
            KeyValue::str("gen_ai.operation.name", "invoke_agent"),
            KeyValue::str("gen_ai.agent.name", t.agent.clone()),
            KeyValue::str("boardroom.phase", t.phase.as_str()),
            KeyValue::int("boardroom.round", i64::from(t.round)),
            KeyValue::int("gen_ai.usage.input_tokens", to_i64(t.input_tokens)),
            KeyValue::int("gen_ai.usage.output_tokens", to_i64(t.output_tokens)),
            oi::kind(Kind::Agent),
            KeyValue::str("agent.name", t.agent.clone()),
        ];
        if let Some(input) = &t.input {
            oi::input(input, &mut attrs);
        }
        if let Some(output) = &t.output {
            oi::output(output, &mut attrs);
        }
        if let Some(by) = &t.launched_by {
            attrs.push(KeyValue::str("boardroom.parent_agent", by.clone()));
        }
        if let Some(decision) = t.decision {
            attrs.push(KeyValue::str(
                "boardroom.review.decision",
                decision.as_str(),
            ));
        }
        self.span(
            t.id,
            t.parent,
            format!("invoke_agent {}", t.agent),
            SPAN_KIND_INTERNAL,
            (t.start_ms, t.end_ms),
            attrs,
            // An agent whose latest call failed failed too, though no
            // `error` event named it (a master's failed plan ends the run).
            t.error.or(t.call_error),
        )
    }

    fn group_span(&self, g: &Group) -> Span {
        self.span(
            g.id,
            g.parent,
            g.name(&self.process),
            SPAN_KIND_INTERNAL,
            (g.start_ms, g.end_ms),
            g.attributes(),
            None,
        )
    }

    fn tool_span(
        &mut self,
        call_id: &str,
        call: OpenTool,
        end_ms: u64,
        result: Option<&String>,
        error: Option<String>,
    ) -> Span {
        let parent = self
            .open
            .iter_mut()
            .find(|t| t.agent == call.agent && t.round == call.round && t.phase == call.phase)
            .map(|t| {
                t.end_ms = t.end_ms.max(end_ms);
                t.id
            })
            .or_else(|| self.latest.get(&call.agent).copied())
            .unwrap_or(self.root_id);
        let mut attrs = vec![
            KeyValue::str("gen_ai.operation.name", "execute_tool"),
            KeyValue::str("gen_ai.tool.name", call.tool.clone()),
            KeyValue::str("gen_ai.tool.call.id", call_id.to_string()),
            KeyValue::str("gen_ai.agent.name", call.agent.clone()),
            oi::kind(Kind::Tool),
            KeyValue::str("tool.name", call.tool.clone()),
        ];
        if self.content {
            oi::input(&call.arguments, &mut attrs);
            attrs.push(KeyValue::str("gen_ai.tool.call.arguments", call.arguments));
            if let Some(r) = result {
                oi::output(r, &mut attrs);
                attrs.push(KeyValue::str("gen_ai.tool.call.result", r.clone()));
            }
        }
        self.serial += 1;
        let id = span_id(&self.id_base, &format!("tool/{call_id}/{}", self.serial));
        self.span(
            id,
            parent,
            format!("execute_tool {}", call.tool),
            SPAN_KIND_INTERNAL,
            (call.start_ms, end_ms),
            attrs,
            error,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn span(
        &self,
        id: SpanId,
        parent: SpanId,
        name: String,
        kind: i32,
        (start_ms, end_ms): (u64, u64),
        mut attributes: Vec<KeyValue>,
        error: Option<String>,
    ) -> Span {
        attributes.push(KeyValue::str("session.id", self.session.clone()));
        attributes.push(KeyValue::str(
            "gen_ai.conversation.id",
            self.session.clone(),
        ));
        Span {
            trace_id: self.trace_id.to_vec(),
            span_id: id.to_vec(),
            parent_span_id: if parent == [0; 8] {
                Vec::new()
            } else {
                parent.to_vec()
            },
            name,
            kind,
            start_time_unix_nano: start_ms.saturating_mul(1_000_000),
            end_time_unix_nano: end_ms.max(start_ms).saturating_mul(1_000_000),
            attributes,
            status: error.map(|message| Status {
                message,
                code: STATUS_ERROR,
            }),
        }
    }
}
