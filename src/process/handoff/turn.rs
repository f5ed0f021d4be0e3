//! An agent's turn in a handoff run: its prompt over the history, the
//! model call with the `handoff` and `set_variable` tools intercepted, the
//! destination checked, and control passed on.

use parking_lot::Mutex;

use super::driver::Handoff;
use super::remember;
use super::state::{HandoffHow, HandoffStep};
use crate::core::call::{Ask, Attempt, Intercepted};
use crate::core::{RunError, TemplatePlace};
use crate::event::{EventKind, RoomStatus, RunStatus};
use crate::model::{ChatResponse, ModelError, Phase, ToolCall, ToolSpec};
use crate::protocol::{
    HANDOFF_TOOL, HandoffDirective, SET_VARIABLE_TOOL, TurnInput, handoff_tool_spec,
    parse_handoff_args, parse_handoff_line, parse_set_variable_args, resolve_destination,
    set_variable_tool_spec, strip_handoff_lines, turn_prompt,
};
use crate::record::Turn;
use crate::team::AgentSpec;
use crate::tools::wire_name;

/// What an agent's turn gave.
struct TurnResult {
    text: String,
    directive: Option<(HandoffDirective, HandoffHow)>,
    tool_calls: Vec<String>,
    artifacts: Vec<String>,
    /// Problems with its handoff that the retries did not fix.
    problems: Vec<String>,
}

impl Handoff<'_> {
    /// The active agent's turn: one step on the history.
    pub(super) fn turn(&mut self) -> Result<(), RunError> {
        let name = self.hs.active.clone();
        let Some(agent) = self.team.agent(&name) else {
            return Err(RunError::UnknownAgent { agent: name });
        };
        self.core.emit(
            &name,
            None,
            EventKind::RoomStatus {
                status: RoomStatus::Thinking,
            },
        );
        let result = self.agent_turn(agent)?;
        let Some(result) = result else {
            // Stopped before it was sent: the loop ends the run.
            return Ok(());
        };
        let id = self.hs.next_id();
        let mut step = HandoffStep {
            step_id: id,
            agent: name.clone(),
            text: result.text,
            tool_calls: result.tool_calls,
            artifacts: result.artifacts,
            handoff_triggered: false,
            handoff_target: None,
            reason: None,
            how: None,
        };
        self.hs.feedback = result.problems;
        // The last allowed turn: its handoff is recorded as asked for,
        // but control passes to nobody and the run ends at the cap.
        let capped = self.turns_since_user() + 1 >= self.settings.max_turns;
        match result.directive {
            Some(_) if capped => {
                step.handoff_triggered = true;
                self.hs.steps.push(step);
                self.end_at_turn_cap();
            }
            Some((d, how)) => {
                step.handoff_triggered = true;
                self.hs.steps.push(step);
                self.hand_off(&name, &d.to, &d.reason, how);
            }
            None => {
                self.hs.steps.push(step);
                self.hs.routing = true;
            }
        }
        Ok(())
    }

    /// The model call of a turn, with the handoff and set_variable tools
    /// intercepted and the destination checked (a corrective retry on a
    /// bad one). `None` when the run was stopped before the call.
    fn agent_turn(&mut self, agent: &AgentSpec) -> Result<Option<TurnResult>, RunError> {
        let name = agent.name.as_str();
        let roster: Vec<&str> = self.chain().map(|a| a.name.as_str()).collect();
        let others: Vec<&str> = roster.iter().copied().filter(|n| *n != name).collect();
        let described: Vec<(&str, &str)> = self
            .chain()
            .map(|a| (a.name.as_str(), a.description.as_str()))
            .collect();
        let mut soul = self.rendered(&agent.soul, TemplatePlace::Soul(name.to_string()))?;
        // A profile's segments (those that hold) stand in place of the soul.
        if !agent.profile.prompt_segments.is_empty() {
            let last = self.hs.steps.iter().rev().find(|s| s.agent == name);
            let state = crate::team::AgentState {
                agent: name.to_string(),
                role: crate::team::role_name(agent.role).to_string(),
                round: u32::try_from(self.hs.steps.len() + 1).unwrap_or(u32::MAX),
                phase: "step".to_string(),
                tools_called: last.map(|s| s.tool_calls.clone()).unwrap_or_default(),
                soul: soul.clone(),
                vars: self.hs.variables.clone(),
                ..Default::default()
            };
            if let Some(segments) = agent.profile.system_prompt(&state) {
                soul = segments;
            }
        }
        // A task is the user's text: one that is not a valid template
        // (a stray `{{`) is used as it stands.
        let task = crate::team::render_task(&self.state.task, &self.hs.variables);
        let mut rules: Vec<(String, Option<String>)> = Vec::new();
        for r in self.settings.rules_from(name) {
            let condition = match &r.condition {
                Some(c) => Some(self.rendered(c, TemplatePlace::Condition)?),
                None => None,
            };
            rules.push((r.to_agent.clone(), condition));
        }
        let rules_ref: Vec<(&str, Option<&str>)> = rules
            .iter()
            .map(|(t, c)| (t.as_str(), c.as_deref()))
            .collect();
        let history = self.history();
        // A model without tool calling gets none: its handoff is a line.
        let model_tools = self.core.model_for(name).supports_tools();
        let tools = self.with_tools() && model_tools;
        let variables = self.hs.variables.clone();
        let mut messages = turn_prompt(&TurnInput {
            agent: name,
            soul: &soul,
            task: &task,
            variables: &variables,
            roster: &described,
            rules: &rules_ref,
            history: &history,
            tools,
        });
        // The master's memory of earlier runs, as in a blackboard team.
        if agent.role == crate::team::AgentRole::Master {
            remember::show(&mut messages, &self.core.memory);
        }
        let feedback = self.hs.feedback.clone();
        if !feedback.is_empty() {
            let mut note = String::from("Your last handoff could not be used:\n");
            for f in &feedback {
                note.push_str(&format!("- {f}\n"));
            }
            if let Some(last) = messages
                .iter_mut()
                .rev()
                .find(|m| m.role == crate::Role::User)
            {
                last.content.push_str("\n\n");
                last.content.push_str(note.trim_end());
            }
        }
        let process_tools: Vec<ToolSpec> = if tools {
            let mut specs = vec![handoff_tool_spec(&others)];
            if !variables.is_empty() {
                specs.push(set_variable_tool_spec(&variables));
            }
            specs
        } else {
            Vec::new()
        };
        // set_variable calls change the variables as they come; the
        // handoff tool ends the turn.
        let vars = Mutex::new(variables);
        let is = |call: &ToolCall, tool: &str| call.name == tool || call.name == wire_name(tool);
        let intercept = |call: &ToolCall| {
            if is(call, HANDOFF_TOOL) {
                Intercepted::End
            } else if is(call, SET_VARIABLE_TOOL) {
                let answer = match parse_set_variable_args(&call.arguments) {
                    Ok((var, value)) => match vars.lock().set(&var, &value) {
                        Ok(()) => format!("ok: {var} is now {value}"),
                        Err(e) => format!("error: {e}"),
                    },
                    Err(e) => format!("error: {e}"),
                };
                Intercepted::Answer(answer)
            } else {
                Intercepted::No
            }
        };
        let used = Mutex::new((Vec::<String>::new(), Vec::<String>::new()));
        let on_turn = |turn: &Turn| {
            let (calls, files) = &mut *used.lock();
            let asked = turn
                .messages
                .iter()
                .flat_map(|m| m.tool_calls.iter())
                .chain(turn.tool_calls.iter());
            for call in asked {
                if !calls.contains(&call.name) {
                    calls.push(call.name.clone());
                }
                if call.name.contains("workspace_write")
                    && let Some(path) = serde_json::from_str::<serde_json::Value>(&call.arguments)
                        .ok()
                        .and_then(|v| v["path"].as_str().map(str::to_string))
                    && !files.contains(&path)
                {
                    files.push(path);
                }
            }
        };
        let last_text = Mutex::new(String::new());
        let expected = if tools {
            "your part of the work, then the `handoff` tool (or nothing, if the work is finished)"
        } else {
            "your part of the work, then a `HANDOFF:<agent>:<reason>` line (or none, if the work is finished)"
        };
        let ask = Ask {
            on_turn: &on_turn,
            process_tools: &process_tools,
            intercept: &intercept,
            agent_tools: model_tools,
            ..Ask::new(Phase::Converse, self.state.round, expected)
        };
        let accept = |r: &ChatResponse| {
            let text = strip_handoff_lines(&r.text).trim().to_string();
            *last_text.lock() = text.clone();
            let found = r
                .tool_calls
                .iter()
                .find(|c| is(c, HANDOFF_TOOL))
                .map(|c| parse_handoff_args(&c.arguments).map(|d| (d, HandoffHow::Tool)))
                .or_else(|| parse_handoff_line(&r.text).map(|d| Ok((d, HandoffHow::Line))));
            match found {
                None => Ok((text, None)),
                Some(Err(e)) => Err(vec![e]),
                Some(Ok((mut d, how))) => match resolve_destination(&d.to, name, &roster) {
                    Ok(to) => {
                        d.to = to;
                        Ok((text, Some((d, how))))
                    }
                    Err(corrective) => Err(vec![corrective]),
                },
            }
        };
        let outcome = self.core.call_until(agent, &ask, messages, accept);
        self.hs.variables = vars.into_inner();
        let (tool_calls, artifacts) = used.into_inner();
        let (text, directive, problems) = match outcome {
            Ok(Attempt::Usable((text, directive))) => (text, directive, Vec::new()),
            // The handoff stayed wrong after the retries: the step keeps
            // the text, and the rules, the router or after-work decide.
            Ok(Attempt::Unusable(problems)) => (last_text.into_inner(), None, problems),
            // Stopped (the loop ends the run as the stop says); a model
            // that says so on its own, with no stop asked, failed instead.
            Err(ModelError::Cancelled | ModelError::BudgetExhausted { .. })
                if self.core.stop_reason().is_some() =>
            {
                return Ok(None);
            }
            Err(source) => {
                return Err(RunError::Master {
                    phase: crate::core::MasterPhase::HandoffStep,
                    source,
                });
            }
        };
        Ok(Some(TurnResult {
            text,
            directive,
            tool_calls,
            artifacts,
            problems,
        }))
    }

    /// Control passes from `from` to `to`, unless that would pass the
    /// handoff cap.
    pub(super) fn hand_off(&mut self, from: &str, to: &str, reason: &str, how: HandoffHow) {
        let max = self.settings.max_handoffs;
        if self.hs.handoffs >= max {
            self.end_with(
                RunStatus::HandoffLimit,
                format!("the handoff cap ({max}) was reached"),
            );
            return;
        }
        let hs = &mut self.hs;
        hs.handoffs += 1;
        hs.active = to.to_string();
        hs.routing = false;
        // The note on a bad handoff is for the agent that made it.
        hs.feedback.clear();
        if let Some(step) = hs.steps.last_mut() {
            step.handoff_target = Some(to.to_string());
            step.reason = Some(reason.to_string());
            step.how = Some(how.to_string());
        }
        self.core.emit(
            to,
            Some(from),
            EventKind::Handoff {
                from: from.to_string(),
                to: to.to_string(),
                reason: reason.to_string(),
                how,
            },
        );
    }
}
