//! One model call as the runtime makes it: the right model for the agent,
//! deltas streamed as events, usage totalled, and the logical retry that
//! asks again (with a corrective note) when an answer cannot be used.

use crate::event::EventKind;
use crate::model::{ChatRequest, ChatResponse, FinishReason, Message, ModelError, Phase};
use crate::team::AgentSpec;

use super::prompt;
use super::run::Run;

/// Extra attempts after an unusable answer.
pub(crate) const LOGICAL_RETRIES: usize = 2;

/// The result of a call that retries until the answer is usable.
pub(crate) enum Attempt<T> {
    /// A usable answer.
    Usable(T),
    /// Still unusable after the retries; the problems with the last answer.
    Unusable(Vec<String>),
}

impl Run<'_> {
    /// One call to the agent's model.
    pub(crate) fn call(
        &self,
        agent: &AgentSpec,
        phase: Phase,
        round: u32,
        messages: Vec<Message>,
    ) -> Result<ChatResponse, ModelError> {
        if self.cancelled() {
            return Err(ModelError::Cancelled);
        }
        self.check_budget()?;
        let model = self.model_for(&agent.name);
        let mut request = ChatRequest::new(&agent.name, phase, round, messages);
        request.temperature = agent.temperature;
        request.max_tokens = agent.max_tokens;
        request.schema = self.schema_for(phase);
        let parent = self.parent_of(agent);
        let mut on_delta = |delta: &str| {
            self.emit(
                &agent.name,
                parent,
                EventKind::AgentDelta {
                    round,
                    phase,
                    delta: delta.to_string(),
                },
            );
        };
        log::debug!(
            "{} ({}) round {round}: calling {}",
            agent.name,
            phase.as_str(),
            model.name()
        );
        let started = std::time::Instant::now();
        let result = self.exchange(agent, &model, &mut request, &mut on_delta);
        self.record_turn(agent, &request, &result, started.elapsed());
        match &result {
            Ok(response) => {
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
            Err(e) => log::warn!("{} ({}) round {round}: {e}", agent.name, phase.as_str()),
        }
        result
    }

    /// Calls until `accept` takes the answer, asking again with a note that
    /// names the problems, at most [`LOGICAL_RETRIES`] more times. An empty
    /// answer and one cut off by the length limit are never usable.
    pub(crate) fn call_until<T>(
        &self,
        agent: &AgentSpec,
        phase: Phase,
        round: u32,
        mut messages: Vec<Message>,
        expected: &str,
        accept: impl Fn(&ChatResponse) -> Result<T, Vec<String>>,
    ) -> Result<Attempt<T>, ModelError> {
        let mut problems = Vec::new();
        for attempt in 0..=LOGICAL_RETRIES {
            if attempt > 0 {
                log::info!(
                    "{} ({}) round {round}: unusable answer, asking again: {}",
                    agent.name,
                    phase.as_str(),
                    problems.join("; ")
                );
            }
            let response = self.call(agent, phase, round, messages.clone())?;
            let checked = if response.text.trim().is_empty() {
                Err(vec!["the answer was empty".to_string()])
            } else if response.finish == FinishReason::Length
                // The last try at the final answer keeps what was written:
                // a cut answer beats none at the end of a run.
                && !(phase == Phase::Final && attempt == LOGICAL_RETRIES)
            {
                Err(vec![
                    "the answer was cut off by the length limit; write a shorter one".to_string(),
                ])
            } else {
                accept(&response)
            };
            match checked {
                Ok(value) => return Ok(Attempt::Usable(value)),
                Err(p) => {
                    problems = p;
                    messages.push(Message::assistant(response.text));
                    messages.push(prompt::corrective(&problems, expected));
                }
            }
        }
        Ok(Attempt::Unusable(problems))
    }
}
