//! An agent's profile at work in a blackboard run: its prompt segments in
//! place of its soul, its observers' notes in its inbox, its flow decider
//! after each reply. An agent without a profile costs nothing here (a
//! round of thousands of members takes no plan lock for it).

use std::collections::BTreeMap;

use crate::model::{Message, Phase, Role};
use crate::record::Turn;
use crate::team::{AgentSpec, AgentState, FlowAction};

use super::Room;

/// Who a directive of the process itself is from.
pub(super) const RUNTIME: &str = "runtime";

/// The problem a reply is sent back with when the flow decider says to go
/// on with a tool.
pub(super) const GO_ON_WITH_A_TOOL: &str = "your profile's flow decider says to go on: \
     call one of your tools before you answer";

impl Room<'_> {
    /// The agent's state at a turn, for its profile.
    pub(super) fn agent_state(&self, agent: &AgentSpec, phase: Phase, round: u32) -> AgentState {
        let mut modules: BTreeMap<String, u32> = BTreeMap::new();
        let mut module_status = String::new();
        for m in &self.core.plan.lock().tasks {
            *modules.entry(m.status.as_str().to_string()).or_default() += 1;
            if module_status.is_empty() && m.assigned_agent.as_deref() == Some(agent.name.as_str())
            {
                module_status = m.status.as_str().to_string();
            }
        }
        AgentState {
            agent: agent.name.clone(),
            role: crate::team::role_name(agent.role).to_string(),
            round,
            phase: phase.as_str().to_string(),
            tools_called: self
                .last_tools
                .lock()
                .get(&agent.name)
                .cloned()
                .unwrap_or_default(),
            inbox: self
                .core
                .inbox(&agent.name)
                .kinds()
                .into_iter()
                .map(str::to_string)
                .collect(),
            module_status,
            modules,
            answer: String::new(),
            soul: super::prompt::soul_block(agent),
            vars: self.vars.clone(),
        }
    }

    /// Before a turn: the pre-turn observers' notes go into the inbox, and
    /// the profile's segments (those that hold) replace the soul at the
    /// head of the system prompt.
    pub(super) fn before_turn(
        &self,
        agent: &AgentSpec,
        phase: Phase,
        round: u32,
        messages: &mut [Message],
    ) {
        if agent.profile.is_empty() {
            return;
        }
        let state = self.agent_state(agent, phase, round);
        let inbox = self.core.inbox(&agent.name);
        for (observer, text) in agent.profile.before_turn(&state) {
            inbox.push(crate::core::InboxItem::Observation { observer, text });
        }
        let Some(segments) = agent
            .profile
            .system_prompt(&self.agent_state(agent, phase, round))
        else {
            return;
        };
        let soul = super::prompt::soul_block(agent);
        if let Some(system) = messages.iter_mut().find(|m| m.role == Role::System) {
            system.content = match system.content.strip_prefix(&soul) {
                Some(rest) => format!("{segments}{rest}"),
                None => format!("{segments}\n\n{}", system.content),
            };
        }
    }

    /// What the flow decider says of a reply (`end_agent_turn` without a
    /// profile).
    pub(super) fn flow(
        &self,
        agent: &AgentSpec,
        phase: Phase,
        round: u32,
        answer: &str,
        tools: &[String],
    ) -> FlowAction {
        if agent.profile.flow_decider.is_empty() {
            return FlowAction::EndAgentTurn;
        }
        let mut state = self.agent_state(agent, phase, round);
        state.answer = answer.to_string();
        state.tools_called = tools.to_vec();
        agent.profile.decide(&state)
    }

    /// After a turn: the tools it called are kept for the agent's next
    /// state, and the post-turn observers' notes go into its inbox, for
    /// its next turn.
    pub(super) fn after_turn(
        &self,
        agent: &AgentSpec,
        phase: Phase,
        round: u32,
        answer: &str,
        tools: Vec<String>,
    ) {
        if agent.profile.is_empty() {
            return;
        }
        let mut state = self.agent_state(agent, phase, round);
        state.answer = answer.to_string();
        state.tools_called = tools.clone();
        self.last_tools.lock().insert(agent.name.clone(), tools);
        let inbox = self.core.inbox(&agent.name);
        for (observer, text) in agent.profile.after_turn(&state) {
            inbox.push(crate::core::InboxItem::Observation { observer, text });
        }
    }
}

/// The tools a turn called: in the assistant messages of its tool loop
/// and in its last answer.
pub(super) fn tools_of(turn: &Turn) -> Vec<String> {
    turn.messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .flat_map(|m| m.tool_calls.iter())
        .chain(turn.tool_calls.iter())
        .map(|c| c.name.clone())
        .collect()
}
