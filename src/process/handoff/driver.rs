//! The handoff loop, step by step:
//!
//! ```text
//! active = entry
//! loop (at most max_turns agent turns, max_handoffs handoffs; after the
//!       last allowed turn the run ends turn_limit, with no routing call
//!       and no handoff):
//!   turn: soul + variables + task + history (+ the handoff tool)  -> a step
//!     handoff tool call / HANDOFF: line  -> checked (corrective retry) -> next agent
//!     nobody: rules of this agent (one routing call)  -> rule N
//!             else the roster router (one routing call) -> router
//!             else after_work_behavior: terminate | continue | return_to_user
//! ```
//!
//! The run is saved after every step and after every routing decision, so
//! a resume never runs a completed step again.

use parking_lot::Mutex;

use super::remember;
use super::state::{HandoffHow, HandoffState, HandoffStep, USER};
use crate::event::{EventKind, RoomStatus, RunStatus};
use crate::model::{ChatResponse, Message, ModelError, Phase, ToolCall, ToolSpec};
use crate::protocol::{
    HANDOFF_TOOL, HandoffDirective, HistoryStep, Protocol, RoutingRule, SET_VARIABLE_TOOL,
    TurnInput, handoff_tool_spec, parse_agent_choice, parse_handoff_args, parse_handoff_line,
    parse_rule_choice, parse_set_variable_args, resolve_destination, roster_routing_prompt,
    rule_routing_prompt, set_variable_tool_spec, strip_handoff_lines, turn_prompt,
};
use crate::record::{ProcessKind, ProcessState};
use crate::runtime::budget::Stop;
use crate::runtime::call::{Ask, Attempt, Intercepted};
use crate::runtime::core::Core;
use crate::runtime::persist::Opening;
use crate::runtime::{RunError, RunOutcome, RunPhase, RunState, Runtime, Turn};
use crate::store::JournalRecord;
use crate::team::{AfterWork, AgentSpec, HandoffSettings, Team, render};
use crate::tools::wire_name;

/// One handoff run in progress.
pub(crate) struct Handoff<'a> {
    pub(crate) core: Core<'a>,
    team: &'a Team,
    settings: &'a HandoffSettings,
    /// The run's state but for its handoff part, which is `hs`.
    state: RunState,
    hs: HandoffState,
}

/// What an agent's turn gave.
struct TurnResult {
    text: String,
    directive: Option<(HandoffDirective, HandoffHow)>,
    tool_calls: Vec<String>,
    artifacts: Vec<String>,
    /// Problems with its handoff that the retries did not fix.
    problems: Vec<String>,
}

impl<'a> Handoff<'a> {
    pub(crate) fn start(
        rt: &'a Runtime,
        mut state: RunState,
        opening: Opening,
    ) -> Result<Self, RunError> {
        let team = &rt.team;
        let Some(settings) = team.handoff() else {
            return Err(RunError::Process(format!(
                "team '{}' is not a handoff team",
                team.name()
            )));
        };
        let hs = match state.process.take_handoff() {
            Some(hs) => hs,
            None => {
                let variables = team
                    .variables()
                    .with_overrides(&rt.vars)
                    .map_err(|e| RunError::Process(format!("--var: {e}")))?;
                state.phase = RunPhase::Step;
                HandoffState {
                    active: settings.entry.clone(),
                    variables,
                    ..HandoffState::default()
                }
            }
        };
        // The first snapshot of a new run holds the variables of --var.
        state.process = ProcessState::Handoff(hs.clone());
        let core = Core::start(rt, &mut state, opening)?;
        state.process = ProcessState::Blackboard;
        Ok(Handoff {
            core,
            team,
            settings,
            state,
            hs,
        })
    }

    /// Runs steps until the run ends, stops, or waits for its user.
    pub(crate) fn drive(mut self) -> Result<RunOutcome, RunError> {
        let entry = self.hs.active.clone();
        self.core.emit(
            &entry,
            None,
            EventKind::RunStarted {
                task: self.state.task.clone(),
                team: self.team.name().to_string(),
                model: self.core.rt.model.name(),
                members: self.chain().count(),
                max_rounds: self.settings.max_turns,
                process: ProcessKind::Handoff,
                executor: None,
            },
        );
        self.core.emit_user_message();
        if !matches!(self.state.phase, RunPhase::Step | RunPhase::Finished) {
            // Only a hand-edited run.json gets here.
            return Err(RunError::Process(format!(
                "run {}: a blackboard phase ({:?}) in a handoff run",
                self.core.run_id, self.state.phase
            )));
        }
        // Saved before the first call: a user's message taken on resume
        // survives a kill in the call it leads to.
        self.checkpoint();
        while self.state.phase == RunPhase::Step {
            self.state.round = self.hs.steps.len() as u32;
            self.core.at(self.state.round, RunPhase::Step);
            if let Some(stop) = self.core.stop_reason() {
                self.end_early(stop)?;
                break;
            }
            // The cap first: after the last allowed turn no routing call
            // is paid for, as the agent it picked could not take a turn.
            if self.turns_since_user() >= self.settings.max_turns {
                self.end_at_turn_cap();
            } else if self.hs.routing {
                self.route();
            } else if let Err(e) = self.turn() {
                self.checkpoint();
                return Err(e);
            }
            // The step first, in the journal (one write, no fsync): a kill
            // before the snapshot below is written does not call this
            // step's model again on resume (issue 28, finding 11).
            self.journal_step();
            crate::store::crash_point("handoff-step-journaled");
            // Filed under the next step from here on: a resume replays
            // the usage of the calls that finish after this snapshot.
            self.state.round = self.hs.steps.len() as u32;
            self.core.at(self.state.round, RunPhase::Step);
            self.checkpoint();
        }
        if remember::leaves_a_note(self.state.status) {
            self.update_memory();
            crate::store::crash_point("memory-noted");
            self.checkpoint();
        }
        Ok(self.finish())
    }

    /// Asks the master for a memory note from the last answer and keeps
    /// it (when the runtime has a [`MasterMemory`](crate::store::MasterMemory),
    /// once a run).
    fn update_memory(&self) {
        let Some(memory) = &self.core.rt.master_memory else {
            return;
        };
        let answer = self.state.answer.clone().unwrap_or_default();
        if answer.trim().is_empty() || memory.remembers(&self.core.run_id) {
            return;
        }
        let master = self.team.master();
        let soul = render(&master.soul, &self.hs.variables).unwrap_or_else(|_| master.soul.clone());
        let messages = remember::prompt(&soul, &self.state.task, &answer);
        let ask = Ask {
            agent_tools: false,
            ..Ask::new(Phase::Memory, self.state.round, "a few short bullet points")
        };
        let asked = self
            .core
            .call_until(master, &ask, messages, |r| Ok(r.text.trim().to_string()));
        crate::process::memory_note::keep(memory, &self.core.run_id, &self.state.task, asked);
    }

    /// Agent turns since the user last spoke (against `max_turns`).
    fn turns_since_user(&self) -> u32 {
        let steps = &self.hs.steps;
        steps.iter().rev().take_while(|s| s.agent != USER).count() as u32
    }

    /// Whether agents hand off with the tool (else a `HANDOFF:` line):
    /// unless the run or the team asks for the line protocol.
    fn with_tools(&self) -> bool {
        self.core
            .rt
            .protocol
            .or(self.team.config().protocol)
            .is_none_or(|p| p != Protocol::Line)
    }

    /// The JSON schema of a routing call, where the run asks for JSON.
    fn json(&self) -> bool {
        self.core.rt.protocol.or(self.team.config().protocol) == Some(Protocol::Json)
    }

    fn history(&self) -> Vec<HistoryStep> {
        self.hs
            .steps
            .iter()
            .map(|s| HistoryStep {
                agent: s.agent.clone(),
                text: s.text.clone(),
                artifacts: s.artifacts.clone(),
                handoff_to: s.handoff_target.clone(),
                reason: s.reason.clone(),
            })
            .collect()
    }

    fn rendered(&self, template: &str, what: &str) -> Result<String, RunError> {
        render(template, &self.hs.variables).map_err(|e| RunError::Process(format!("{what}: {e}")))
    }

    /// The active agent's turn: one step on the history.
    fn turn(&mut self) -> Result<(), RunError> {
        let name = self.hs.active.clone();
        let Some(agent) = self.team.agent(&name) else {
            return Err(RunError::Process(format!(
                "the active agent '{name}' is not in the team"
            )));
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
        let soul = self.rendered(&agent.soul, &format!("the soul of '{name}'"))?;
        // A task is the user's text: one that is not a valid template
        // (a stray `{{`) is used as it stands.
        let task = crate::team::render_task(&self.state.task, &self.hs.variables);
        let mut rules: Vec<(String, Option<String>)> = Vec::new();
        for r in self.settings.rules_from(name) {
            let condition = match &r.condition {
                Some(c) => Some(self.rendered(c, "a handoff rule's condition")?),
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
        let on_turn = |turn: Turn| {
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
                    phase: crate::runtime::MasterPhase::HandoffStep,
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
    fn hand_off(&mut self, from: &str, to: &str, reason: &str, how: HandoffHow) {
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

    /// After a step that handed off to nobody: the rules, then the
    /// router, then after-work.
    fn route(&mut self) {
        let last = self.hs.active.clone();
        if let Some((n, to, reason)) = self.by_rules(&last) {
            self.hand_off(&last, &to, &reason, HandoffHow::Rule(n));
            return;
        }
        if self.core.stop_reason().is_some() {
            return;
        }
        if let Some((to, reason)) = self.by_router(&last) {
            self.hand_off(&last, &to, &reason, HandoffHow::Router);
            return;
        }
        if self.core.stop_reason().is_some() {
            return;
        }
        let answer = self.last_answer();
        self.hs.routing = false;
        match self.settings.after_work {
            AfterWork::Terminate => {
                self.state.status = RunStatus::Done;
                self.state.answer = Some(answer);
                self.state.phase = RunPhase::Finished;
            }
            AfterWork::Continue => {
                if let Some(step) = self.hs.steps.last_mut() {
                    step.handoff_target = Some(last.clone());
                    step.how = Some(HandoffHow::AfterWork.to_string());
                }
            }
            AfterWork::ReturnToUser => {
                if let Some(step) = self.hs.steps.last_mut() {
                    step.how = Some(HandoffHow::AfterWork.to_string());
                }
                self.state.status = RunStatus::AwaitingUser;
                self.state.answer = Some(answer.clone());
                self.state.phase = RunPhase::Finished;
                self.core
                    .emit(&last, None, EventKind::AwaitingUser { question: answer });
            }
        }
    }

    /// The first rule of `last` whose condition holds: (its number in
    /// `team.yaml`'s order of trial, 1-based; destination; reason).
    fn by_rules(&mut self, last: &str) -> Option<(usize, String, String)> {
        let mut rules: Vec<(usize, &crate::team::HandoffRule)> = self
            .settings
            .rules
            .iter()
            .enumerate()
            .filter(|(_, r)| r.applies_to(last))
            .collect();
        // A rule with no condition always holds: the rules below it are
        // never reached, and it is taken when none above it holds.
        let always = rules.iter().position(|(_, r)| r.condition.is_none());
        if let Some(n) = always {
            rules.truncate(n + 1);
        }
        let fallback = always.map(|n| {
            let (i, r) = rules[n];
            (
                i + 1,
                r.to_agent.clone(),
                "the rule always applies".to_string(),
            )
        });
        if rules.is_empty() || always == Some(0) {
            return fallback;
        }
        // Only the conditional rules above it go to the routing call.
        let rules = &rules[..always.unwrap_or(rules.len())];
        let mut conditions: Vec<Option<String>> = Vec::new();
        for (_, r) in rules {
            conditions.push(
                r.condition
                    .as_ref()
                    .map(|c| render(c, &self.hs.variables).unwrap_or_else(|_| c.clone())),
            );
        }
        let routing: Vec<RoutingRule<'_>> = rules
            .iter()
            .zip(&conditions)
            .map(|((_, r), c)| RoutingRule {
                to_agent: &r.to_agent,
                condition: c.as_deref(),
            })
            .collect();
        let history = self.history();
        let (messages, schema) = rule_routing_prompt(last, &self.state.task, &routing, &history);
        let count = rules.len();
        let answer = self.routing_call(last, messages, schema, "`RULE: <number>` or `NONE`");
        if answer.is_none() && self.core.stop_reason().is_some() {
            // Stopped mid-call: decided again on resume.
            return None;
        }
        let Some(pick) = answer.and_then(|a| parse_rule_choice(&a, count)) else {
            return fallback;
        };
        let (i, r) = rules[pick];
        let reason = conditions[pick]
            .clone()
            .unwrap_or_else(|| "the rule always applies".into());
        Some((i + 1, r.to_agent.clone(), reason))
    }

    /// The agents that take part in the chain: every agent but the
    /// partner, who talks with the user and is never on a run's roster.
    fn chain(&self) -> impl Iterator<Item = &AgentSpec> {
        self.team
            .agents()
            .iter()
            .filter(|a| a.role != crate::team::AgentRole::Partner)
    }

    /// The router's pick among the other agents, by description.
    fn by_router(&mut self, last: &str) -> Option<(String, String)> {
        let candidates: Vec<(&str, &str)> = self
            .chain()
            .filter(|a| a.name != last)
            .map(|a| (a.name.as_str(), a.description.as_str()))
            .collect();
        if candidates.is_empty() {
            return None;
        }
        let names: Vec<&str> = candidates.iter().map(|(n, _)| *n).collect();
        let history = self.history();
        let (messages, schema) =
            roster_routing_prompt(last, &self.state.task, &candidates, &history);
        let answer = self.routing_call(last, messages, schema, "`NEXT: <agent>` or `NONE`")?;
        let to = parse_agent_choice(&answer, &names)?;
        Some((to, "chosen by the router from the roster".into()))
    }

    /// One routing call, made as `last` (its model); the answer's text.
    fn routing_call(
        &self,
        last: &str,
        messages: Vec<Message>,
        schema: crate::model::OutputSchema,
        expected: &str,
    ) -> Option<String> {
        let agent = self.team.agent(last).unwrap_or_else(|| self.team.master());
        let ask = Ask {
            schema: self.json().then_some(schema),
            agent_tools: false,
            ..Ask::new(Phase::Route, self.state.round, expected)
        };
        match self
            .core
            .call_until(agent, &ask, messages, |r| Ok(r.text.clone()))
        {
            Ok(Attempt::Usable(text)) => Some(text),
            Ok(Attempt::Unusable(problems)) => {
                log::warn!(
                    "routing after {last}: no usable answer: {}",
                    problems.join("; ")
                );
                None
            }
            Err(e) => {
                log::warn!("routing after {last}: {e}");
                None
            }
        }
    }

    /// The text of the last agent step (the run's answer when it ends).
    fn last_answer(&self) -> String {
        self.hs
            .steps
            .iter()
            .rev()
            .find(|s| s.agent != USER)
            .map(|s| s.text.clone())
            .unwrap_or_default()
    }

    /// Ends the run at the turn cap with the last answer.
    fn end_at_turn_cap(&mut self) {
        self.end_with(
            RunStatus::TurnLimit,
            format!("the turn cap ({}) was reached", self.settings.max_turns),
        );
    }

    /// Ends the run at a cap with the last answer.
    fn end_with(&mut self, status: RunStatus, why: String) {
        log::info!("run {}: {why}", self.core.run_id);
        self.hs.routing = false;
        self.state.status = status;
        self.state.answer = Some(self.last_answer());
        self.state.phase = RunPhase::Finished;
    }

    /// Ends the run before its agents finished: stopped (saved where it
    /// stands, resumable), or out of time or tokens (the last answer).
    fn end_early(&mut self, stop: Stop) -> Result<(), RunError> {
        if stop == Stop::Cancelled {
            self.state.status = RunStatus::Cancelled;
            self.checkpoint();
            return Ok(());
        }
        if self.hs.steps.iter().all(|s| s.agent == USER) {
            self.checkpoint();
            return Err(RunError::NoUsableDraft {
                reason: format!("{} before any agent answered", stop.what()),
            });
        }
        let status = if stop == Stop::TimedOut {
            RunStatus::TimedOut
        } else {
            RunStatus::BudgetExhausted
        };
        self.end_with(status, stop.what().to_string());
        self.checkpoint();
        Ok(())
    }

    /// Journals where the loop stands after a step or a routing decision,
    /// under the round it was taken at.
    fn journal_step(&self) {
        if !self.core.journaling() {
            return;
        }
        self.core.journal(&JournalRecord::Handoff {
            round: self.state.round,
            status: self.state.status,
            phase: self.state.phase,
            answer: self.state.answer.clone(),
            handoff: self.hs.clone(),
        });
    }

    fn checkpoint(&self) {
        let mut state = self.state.clone();
        state.process = ProcessState::Handoff(self.hs.clone());
        self.core.save(state);
    }

    fn finish(self) -> RunOutcome {
        let answer = self.state.answer.clone().unwrap_or_default();
        let (usage, usage_by_agent) = self.core.usage();
        let agent = self.hs.active.clone();
        self.core.emit(
            &agent,
            None,
            EventKind::RoomStatus {
                status: RoomStatus::Done,
            },
        );
        let steps = self.hs.steps.clone();
        self.core.emit(
            &agent,
            None,
            EventKind::RunFinished {
                status: self.state.status,
                answer: answer.clone(),
                rounds: steps.len() as u32,
                usage,
            },
        );
        RunOutcome {
            run_id: self.core.run_id.clone(),
            answer,
            status: self.state.status,
            rounds: steps.len() as u32,
            board: Vec::new(),
            usage,
            usage_by_agent,
            plan: self.core.plan.lock().clone(),
            steps,
        }
    }
}
