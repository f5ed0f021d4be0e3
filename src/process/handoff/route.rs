//! Where control goes after a step that handed off to nobody: the
//! agent's rules (one routing call), then the roster router (one more),
//! then the team's after-work behaviour.

use super::driver::Handoff;
use super::state::HandoffHow;
use crate::core::call::{Ask, Attempt};
use crate::event::{EventKind, RunStatus};
use crate::model::{Message, Phase};
use crate::protocol::{
    RoutingRule, parse_agent_choice, parse_rule_choice, roster_routing_prompt, rule_routing_prompt,
};
use crate::record::RunPhase;
use crate::team::{AfterWork, render};

impl Handoff<'_> {
    /// After a step that handed off to nobody: the rules, then the
    /// router, then after-work.
    pub(super) fn route(&mut self) {
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
    pub(super) fn by_rules(&mut self, last: &str) -> Option<(usize, String, String)> {
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

    /// The router's pick among the other agents, by description.
    pub(super) fn by_router(&mut self, last: &str) -> Option<(String, String)> {
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
    pub(super) fn routing_call(
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
}
