//! The structured-output protocol in a run: which calls carry a JSON
//! schema, what those agents are told, and which parser reads their
//! replies. See `protocol/json.rs` for the schemas.

use crate::model::{Message, OutputSchema, Phase, Role};
use crate::protocol::{
    CHALLENGE_RULES_JSON, MASTER_EXPECTED, MASTER_RULES_JSON, MasterReply, PLAN_EXPECTED, Protocol,
    ProtocolError, REPLY_JSON, VERDICT_EXPECTED, Verdict, master_schema, parse_master,
    parse_master_json, parse_verdict, parse_verdict_json, plan_schema, verdict_schema,
};

use super::Room;
use super::prompt;

/// The line-protocol asks of `prompt.rs`, as JSON-mode asks.
const ASKS_IN_JSON: &[(&str, &str)] = &[
    (
        "Reply with ASSIGN lines",
        "Reply with an \"assign\" decision",
    ),
    ("Reply with DONE and", "Reply with a \"done\" decision and"),
    (
        "reply DONE and write",
        "reply with a \"done\" decision and write",
    ),
    (
        "reply with ASSIGN lines",
        "reply with an \"assign\" decision",
    ),
    (
        "Reply CHALLENGE:<...> or AGREE.",
        "Reply with your verdict.",
    ),
];

impl Room<'_> {
    /// The protocol of this run: the runtime's, else the team's, else lines.
    pub(crate) fn protocol(&self) -> Protocol {
        self.core
            .rt
            .protocol
            .or(self.team.config().protocol)
            .unwrap_or_default()
    }

    fn json(&self) -> bool {
        self.protocol() == Protocol::Json
    }

    /// The schema a call for `phase` must follow, in JSON mode.
    pub(crate) fn schema_for(&self, phase: Phase) -> Option<OutputSchema> {
        if !self.json() {
            return None;
        }
        match phase {
            Phase::Plan | Phase::Review => {
                let members: Vec<&str> = self.team.members().map(|m| m.name.as_str()).collect();
                Some(if phase == Phase::Plan {
                    plan_schema(&members)
                } else {
                    master_schema(&members)
                })
            }
            Phase::Challenge => Some(verdict_schema()),
            _ => None,
        }
    }

    /// Rewrites the prompt of a master or challenger turn for JSON mode.
    pub(crate) fn adapt_prompt(&self, phase: Phase, messages: &mut [Message]) {
        if !self.json() {
            return;
        }
        let (lines, json) = match phase {
            Phase::Plan | Phase::Review => (prompt::MASTER_RULES, MASTER_RULES_JSON),
            Phase::Challenge => (prompt::CHALLENGE_RULES, CHALLENGE_RULES_JSON),
            _ => return,
        };
        for m in messages.iter_mut() {
            if m.role == Role::System {
                m.content = m.content.replace(lines, json);
            }
        }
        if let Some(last) = messages.iter_mut().rev().find(|m| m.role == Role::User) {
            for (from, to) in ASKS_IN_JSON {
                last.content = last.content.replace(from, to);
            }
            last.content.push_str("\n\n");
            last.content.push_str(REPLY_JSON);
        }
    }

    /// What the corrective note asks the master for: a plan must assign.
    pub(crate) fn master_expected(&self, phase: Phase) -> &'static str {
        match (self.json(), phase) {
            (true, Phase::Plan) => PLAN_EXPECTED,
            (true, _) => MASTER_EXPECTED,
            (false, Phase::Plan) => "ASSIGN:<member>:<task> lines",
            (false, _) => "ASSIGN:<member>:<task> lines or DONE",
        }
    }

    /// What the corrective note asks a challenger for.
    pub(crate) fn verdict_expected(&self) -> &'static str {
        if self.json() {
            VERDICT_EXPECTED
        } else {
            "CHALLENGE:<...> or AGREE"
        }
    }

    /// Reads a master reply with this run's protocol.
    pub(crate) fn read_master(&self, text: &str, members: &[&str], master: &str) -> MasterReply {
        if self.json() {
            parse_master_json(text, members, master)
        } else {
            parse_master(text, members, master)
        }
    }

    /// Reads a verdict with this run's protocol.
    pub(crate) fn read_verdict(&self, text: &str) -> Result<Verdict, ProtocolError> {
        if self.json() {
            parse_verdict_json(text)
        } else {
            parse_verdict(text)
        }
    }
}
