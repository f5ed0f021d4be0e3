//! One model call as the runtime makes it: the right model for the agent,
//! deltas streamed as events, usage totalled, and the logical retry that
//! asks again (with a corrective note) when an answer cannot be used.
//!
//! An answer cut off by the length limit is retried once, differently: the
//! cut text is dropped (it is often the prompt echoed back), the agent is
//! asked for a whole answer in at most half as many words, and, when the
//! agent sets no `max_tokens` of its own, the cap is raised to twice what
//! the cut answer used (at most [`RAISED_MAX_TOKENS`]). An agent's own
//! `max_tokens` is a limit the retry never passes. A second cut ends the
//! retries: a model that ignored the request once will not follow it a
//! third time.

use std::sync::atomic::Ordering;

use std::fmt::Write as _;

use crate::event::EventKind;
use crate::model::{
    ChatRequest, ChatResponse, FinishReason, Message, ModelError, OutputSchema, Phase, ToolCall,
    ToolSpec,
};
use crate::team::AgentSpec;

use super::budget::Stop;
use super::run::Core;
use crate::record::Turn;

/// The log target of a run's model calls: the name users filter on
/// (`RUST_LOG`, the CLI's default filter, the book's examples), the same
/// since before the core had a folder of its own.
const LOG: &str = "boardroom::runtime::call";

/// The most a memory note's call may take: the answer is decided by then,
/// and the note is worth less than the wait.
pub(crate) const MEMORY_DEADLINE: std::time::Duration = std::time::Duration::from_secs(20);

/// Extra attempts after an unusable answer.
pub(crate) const LOGICAL_RETRIES: usize = 2;

/// The most completion tokens a retry after a cut-off asks for, for an
/// agent with no `max_tokens` of its own.
pub(crate) const RAISED_MAX_TOKENS: u32 = 4096;

/// The problem of an answer cut off by the length limit (the board's error
/// entries carry it, and a failed run counts it).
pub(crate) const CUT_OFF: &str = "the answer was cut off by the length limit";

/// The problem of an empty answer.
pub(crate) const EMPTY: &str = "the answer was empty";

/// The result of a call that retries until the answer is usable.
pub(crate) enum Attempt<T> {
    /// A usable answer.
    Usable(T),
    /// Still unusable after the retries; the problems with the last answer.
    Unusable(Vec<String>),
}

/// What a tool call the process handles itself (a `handoff`, a
/// `set_variable`) does to the turn. Such calls never reach the tool
/// executor.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Intercepted {
    /// Not one of the process's: run it as a tool.
    No,
    /// Handled; this text goes back to the model as the call's result and
    /// the turn goes on.
    Answer(String),
    /// Handled; the turn ends here with the model's response as it stands
    /// (its tool calls included, for the process to read).
    End,
}

/// What a call is for, beyond its messages: what the driver asks of the
/// core for one agent turn.
pub(crate) struct Ask<'t> {
    pub(crate) phase: Phase,
    pub(crate) round: u32,
    /// The assignment the call works on, if any (events show it).
    pub(crate) task: Option<&'t str>,
    /// The JSON schema the answer must follow, where the process asks.
    pub(crate) schema: Option<OutputSchema>,
    /// What a usable answer is, for the corrective note.
    pub(crate) expected: &'t str,
    /// Sees every turn record as it is filed (the blackboard keeps a
    /// member's transcript in its work module). It copies what it keeps:
    /// the messages go back to the caller, for asking again.
    pub(crate) on_turn: &'t (dyn Fn(&Turn) + Sync),
    /// Tools of the process itself, offered beside the agent's own.
    pub(crate) process_tools: &'t [ToolSpec],
    /// Decides what a tool call does before the executor sees it.
    pub(crate) intercept: &'t (dyn Fn(&ToolCall) -> Intercepted + Sync),
    /// Whether the agent's own tools are offered (not in a call that only
    /// chooses, such as a handoff routing call).
    pub(crate) agent_tools: bool,
    /// The ids of the inbox items the call's messages were made from (the
    /// turn records them as its `inputs`).
    pub(crate) inputs: &'t [String],
    /// Whether the call runs on a member pool thread, whose panics the
    /// pool catches at its boundary (a blackboard member's). Any other
    /// call is on the run's own thread, and a panic in the model is caught
    /// where the call is made.
    pub(crate) on_pool: bool,
}

impl<'t> Ask<'t> {
    /// A plain call: no schema, no process tools.
    pub(crate) fn new(phase: Phase, round: u32, expected: &'t str) -> Self {
        Ask {
            phase,
            round,
            task: None,
            schema: None,
            expected,
            on_turn: &|_| {},
            process_tools: &[],
            intercept: &|_| Intercepted::No,
            agent_tools: true,
            inputs: &[],
            on_pool: false,
        }
    }
}

/// One attempt of an [`Ask`].
#[derive(Clone, Copy)]
struct CallInfo {
    attempt: u32,
    max_tokens: Option<u32>,
}

impl Core<'_> {
    /// One call to the agent's model. `messages` are sent and come back
    /// as they were (taken from the turn's record, not copied before the
    /// call: each member calling at once held its prompt twice, and a
    /// 60 MiB task with it, issue 28, finding 4).
    fn call(
        &self,
        agent: &AgentSpec,
        ask: &Ask<'_>,
        info: CallInfo,
        messages: &mut Vec<Message>,
    ) -> Result<ChatResponse, ModelError> {
        let (phase, round) = (ask.phase, ask.round);
        self.stop_check()?;
        let model = self.model_for(&agent.name);
        let sent = messages.len();
        let mut request = ChatRequest::new(&agent.name, phase, round, std::mem::take(messages));
        request.temperature = agent.temperature;
        request.max_tokens = info.max_tokens;
        request.schema = ask.schema.clone();
        request.deadline = self.call_deadline(phase);
        let parent = self.parent_of(agent);
        let call = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
        self.emit(
            &agent.name,
            parent,
            EventKind::CallStarted {
                round,
                phase,
                call,
                attempt: info.attempt,
                task: ask.task.map(str::to_string),
            },
        );
        let listened = self.listened();
        let mut on_delta = |delta: &str| {
            if !listened {
                return;
            }
            self.emit(
                &agent.name,
                parent,
                EventKind::AgentDelta {
                    round,
                    phase,
                    delta: delta.to_string(),
                    call,
                },
            );
        };
        log::debug!(
            target: LOG,
            "{} ({}) round {round}: calling {}",
            agent.name,
            phase.as_str(),
            model.name()
        );
        let (result, turn) = match self
            .unclaimed
            .take(&agent.name, phase, round, &request.messages)
        {
            // Answered before the run was cut, the turn filed: not paid
            // for again (its usage was journaled with it).
            Some(turn) => {
                log::info!(
                    target: LOG,
                    "{} ({}) round {round}: answered by turn {} from before the resume; not called again",
                    agent.name,
                    phase.as_str(),
                    turn.turn_id
                );
                // The reply's tool calls go to the process as they went
                // (a turn of the process's own tools ends at one of them).
                if self.intercepts(agent, ask, &model) {
                    for call in &turn.tool_calls {
                        let _ = (ask.intercept)(call);
                    }
                }
                (Ok(super::turns::answer_of(&turn)), turn)
            }
            None => {
                let predicted = super::turns::predict_usage(&request);
                let started = std::time::Instant::now();
                let result = self.tool_exchange(agent, ask, &model, &mut request, &mut on_delta);
                // A call the run's time limit (or a stop) cut short is the
                // run stopping, not a member failing: the process sees it
                // as such.
                let result = match result {
                    Err(e) if !matches!(e, ModelError::Cancelled) && self.cut_by_the_run(phase) => {
                        log::debug!(target: LOG, "{} ({}): {e}", agent.name, phase.as_str());
                        Err(ModelError::Cancelled)
                    }
                    other => other,
                };
                let before = super::turns::Before {
                    inputs: ask.inputs.to_vec(),
                    predicted,
                };
                let turn = self.record_turn(agent, request, &result, started.elapsed(), before);
                (result, turn)
            }
        };
        (ask.on_turn)(&turn);
        // What was sent, without what the tool exchange added after it.
        *messages = turn.messages;
        messages.truncate(sent);
        self.emit(
            &agent.name,
            parent,
            EventKind::CallEnded {
                round,
                phase,
                call,
                error: result.as_ref().err().map(ToString::to_string),
            },
        );
        match &result {
            Ok(response) if listened => {
                self.emit(
                    &agent.name,
                    parent,
                    EventKind::AgentMessage {
                        round,
                        phase,
                        text: response.text.clone(),
                    },
                );
            }
            Ok(_) => {}
            // A stop asked for is not a failure worth a warning.
            Err(ModelError::Cancelled) => {}
            Err(e) => log::warn!(
                target: LOG,
                "{} ({}) round {round}: {e}",
                agent.name,
                phase.as_str()
            ),
        }
        result
    }

    /// When a call must end: the run's time limit, and for the memory note
    /// [`MEMORY_DEADLINE`] from now (the answer is decided; a slow note
    /// must not hold it).
    fn call_deadline(&self, phase: Phase) -> Option<std::time::Instant> {
        let own = (phase == Phase::Memory).then(|| std::time::Instant::now() + MEMORY_DEADLINE);
        match (self.deadline, own) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Whether a failed call was cut by the run stopping (its time limit
    /// or a cancel) rather than failing on its own.
    fn cut_by_the_run(&self, phase: Phase) -> bool {
        // A socket timeout set to the time left may fire a moment early.
        let near = std::time::Instant::now() + std::time::Duration::from_millis(200);
        phase != Phase::Memory
            && (matches!(self.stop_reason(), Some(Stop::TimedOut | Stop::Cancelled))
                || self.deadline.is_some_and(|d| near >= d))
    }

    /// Calls until `accept` takes the answer, asking again with a note that
    /// names the problems, at most [`LOGICAL_RETRIES`] more times. An empty
    /// answer and one cut off by the length limit are never usable (but
    /// the final answer keeps a text cut off twice: a cut answer beats none
    /// at the end of a run).
    pub(crate) fn call_until<T>(
        &self,
        agent: &AgentSpec,
        ask: &Ask<'_>,
        mut messages: Vec<Message>,
        accept: impl Fn(&ChatResponse) -> Result<T, Vec<String>>,
    ) -> Result<Attempt<T>, ModelError> {
        let (phase, round, expected) = (ask.phase, ask.round, ask.expected);
        let mut problems = Vec::new();
        let mut info = CallInfo {
            attempt: 0,
            max_tokens: agent.max_tokens,
        };
        let mut cuts = 0;
        for attempt in 0..=LOGICAL_RETRIES {
            info.attempt = attempt as u32;
            if attempt > 0 {
                log::info!(
                    target: LOG,
                    "{} ({}) round {round}: unusable answer, asking again: {}",
                    agent.name,
                    phase.as_str(),
                    problems.join("; ")
                );
            }
            let response = self.call(agent, ask, info, &mut messages)?;
            let cut = response.finish == FinishReason::Length;
            cuts += usize::from(cut);
            let checked = if cut && !(phase == Phase::Final && cuts > 1) {
                Err(vec![CUT_OFF.to_string()])
            } else if response.text.trim().is_empty()
                // A process tool call (a handoff) may come with no text.
                && (ask.process_tools.is_empty() || response.tool_calls.is_empty())
            {
                Err(vec![EMPTY.to_string()])
            } else {
                accept(&response)
            };
            match checked {
                Ok(value) => return Ok(Attempt::Usable(value)),
                Err(p) if cut => {
                    problems = p;
                    if cuts > 1 {
                        problems.push(
                            "cut off again after asking for a shorter answer (not asked a third time)"
                                .into(),
                        );
                        break;
                    }
                    // Something that can help: a shorter answer, and room
                    // for it where the agent sets no limit of its own.
                    let used = match response.usage.completion_tokens {
                        0 => (response.text.chars().count() / 4) as u64,
                        n => n,
                    };
                    if agent.max_tokens.is_none() {
                        let raised = (used.saturating_mul(2)).clamp(256, RAISED_MAX_TOKENS.into());
                        info.max_tokens = Some(raised as u32);
                    }
                    // Never more words than the raised cap holds (and no
                    // overflow on a count no server could mean).
                    let most = u64::from(RAISED_MAX_TOKENS) * 3 / 8;
                    let words = (used.saturating_mul(3) / 8).clamp(40, most);
                    messages.push(shorter(used, words, expected));
                }
                Err(p) => {
                    problems = p;
                    messages.push(Message::assistant(response.text));
                    messages.push(corrective(&problems, expected));
                }
            }
        }
        Ok(Attempt::Unusable(problems))
    }
}

/// The note after a cut-off answer: the cut text is not sent back.
fn shorter(used: u64, words: u64, expected: &str) -> Message {
    Message::user(format!(
        "Your last reply was cut off by the length limit after about {used} tokens, so it \
         could not be used. Reply again with {expected}, complete and much shorter: at \
         most {words} words. Do not repeat the instructions or the question."
    ))
}

/// The note after an unusable answer: what was wrong, and what to send.
pub(crate) fn corrective(problems: &[String], expected: &str) -> Message {
    let mut s = String::from("Your last reply could not be used:\n");
    for p in problems {
        let _ = writeln!(s, "- {p}");
    }
    let _ = write!(s, "Reply again, using {expected}.");
    Message::user(s)
}
