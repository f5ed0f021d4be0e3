//! The protocol of a run (ASSIGN/DONE lines or structured JSON): which
//! calls carry a JSON schema, the words the master's and challengers'
//! prompts use to ask for a reply, and which parser reads the replies. See
//! `protocol/json.rs` for the schemas.

use crate::model::{OutputSchema, Phase};
use crate::protocol::{
    CHALLENGE_RULES_JSON, MASTER_EXPECTED, MASTER_RULES_JSON, MasterReply, PLAN_EXPECTED, Protocol,
    ProtocolError, REPLY_JSON, VERDICT_EXPECTED, Verdict, master_schema, parse_master,
    parse_master_json, parse_verdict, parse_verdict_json, plan_schema, verdict_schema,
};

use super::Room;
use super::prompt;

/// The parts of the master's and challengers' prompts that depend on the
/// protocol; `prompt.rs` builds every prompt from them.
#[derive(Debug)]
pub(crate) struct Wording {
    /// How the master directs the team (its system prompt's last part).
    pub(crate) master_rules: &'static str,
    /// How a challenger answers (its system prompt's last part).
    pub(crate) challenge_rules: &'static str,
    /// The plan's ask: `Reply with ASSIGN lines`.
    pub(crate) plan_ask: &'static str,
    /// How a task names a seeded module.
    pub(crate) seeded_example: &'static str,
    /// The last review's ask, before "the complete final answer".
    pub(crate) last_round_ask: &'static str,
    /// A review's ask to finish, before "write the complete final answer".
    pub(crate) done_ask: &'static str,
    /// A review's ask for another round.
    pub(crate) assign_ask: &'static str,
    /// A challenger's ask.
    pub(crate) challenge_ask: &'static str,
    /// Said last in every ask, if anything.
    pub(crate) reply_format: Option<&'static str>,
}

/// ASSIGN/DONE/ASK lines, CHALLENGE/AGREE.
pub(crate) const LINES: Wording = Wording {
    master_rules: prompt::MASTER_RULES,
    challenge_rules: prompt::CHALLENGE_RULES,
    plan_ask: "Reply with ASSIGN lines",
    seeded_example: "ASSIGN:<member>:task_001: ...",
    last_round_ask: "Reply with DONE and",
    done_ask: "reply DONE and",
    assign_ask: "reply with ASSIGN lines",
    challenge_ask: "Reply CHALLENGE:<...> or AGREE.",
    reply_format: None,
};

/// A JSON object that follows the call's schema.
pub(crate) const JSON: Wording = Wording {
    master_rules: MASTER_RULES_JSON,
    challenge_rules: CHALLENGE_RULES_JSON,
    plan_ask: "Reply with an \"assign\" decision",
    seeded_example: "\"task\": \"task_001: ...\"",
    last_round_ask: "Reply with a \"done\" decision and",
    done_ask: "reply with a \"done\" decision and",
    assign_ask: "reply with an \"assign\" decision",
    challenge_ask: "Reply with your verdict.",
    reply_format: Some(REPLY_JSON),
};

impl Room<'_> {
    /// The protocol of this run: the runtime's, else the team's, else lines.
    pub(crate) fn protocol(&self) -> Protocol {
        self.core.config.protocol_setting().unwrap_or_default()
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

    /// The words of this run's protocol, for its prompts.
    pub(crate) fn wording(&self) -> &'static Wording {
        if self.json() { &JSON } else { &LINES }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::board::{Entry, EntryKind};
    use crate::model::{Message, Role};
    use crate::team::Team;

    /// How JSON mode was made before issue 15: the line-mode prompt with
    /// its rules and asks replaced as text. The reference the prompts built
    /// from parts are held to.
    fn by_replacing(phase: Phase, mut messages: Vec<Message>) -> Vec<Message> {
        const ASKS: &[(&str, &str)] = &[
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
            // The one ask replacing missed: a seeded module's example.
            (
                "(ASSIGN:<member>:task_001: ...)",
                "(\"task\": \"task_001: ...\")",
            ),
        ];
        let (lines, json) = match phase {
            Phase::Challenge => (prompt::CHALLENGE_RULES, CHALLENGE_RULES_JSON),
            _ => (prompt::MASTER_RULES, MASTER_RULES_JSON),
        };
        for m in messages.iter_mut().filter(|m| m.role == Role::System) {
            m.content = m.content.replace(lines, json);
        }
        if let Some(last) = messages.iter_mut().rev().find(|m| m.role == Role::User) {
            for (from, to) in ASKS {
                last.content = last.content.replace(from, to);
            }
            last.content.push_str("\n\n");
            last.content.push_str(REPLY_JSON);
        }
        messages
    }

    type Build<'a> = Box<dyn Fn(&Wording) -> Vec<Message> + 'a>;

    /// Issue 15: JSON mode is built from parts, not by replacing sentences
    /// of the line-mode prompts, and the model loses nothing: for the
    /// default team, every master and challenger prompt in JSON mode is
    /// the line-mode prompt with its protocol's words, and nothing else.
    #[test]
    fn json_prompts_are_the_line_prompts_in_other_words() {
        let team = Team::builtin().unwrap();
        let board = vec![Entry {
            seq: 1,
            round: 1,
            author: "writer".into(),
            kind: EntryKind::Draft,
            task: Some("part one".into()),
            text: "A draft with ASSIGN:writer:x in it & <tags>.".into(),
            transport: false,
            failure: None,
        }];
        let shared = prompt::SharedBoardText::new(&board);
        let mut seeded = crate::plan::Plan::default();
        seeded.add("Survey the options", None);
        let none = crate::plan::Plan::default();
        let critic = team.agent("critic").unwrap();
        let feedback = vec!["unknown member 'writr'".to_string()];
        let cases: Vec<(Phase, Build<'_>)> = vec![
            (
                Phase::Plan,
                Box::new(|w| prompt::plan(&team, "remembered", "Plan a trip", &none, w)),
            ),
            (
                Phase::Plan,
                Box::new(|w| prompt::plan(&team, "", "Plan a trip", &seeded, w)),
            ),
            (
                Phase::Review,
                Box::new(|w| {
                    prompt::review(&team, "", "Plan a trip", &board, (1, 3), &feedback, w)
                }),
            ),
            (
                Phase::Review,
                Box::new(|w| prompt::review(&team, "", "Plan a trip", &board, (3, 3), &[], w)),
            ),
            (
                Phase::Challenge,
                Box::new(|w| prompt::challenge(critic, "Plan a trip", &shared, 1, w)),
            ),
        ];
        for (phase, build) in cases {
            let lines = build(&LINES);
            let json = build(&JSON);
            assert_eq!(json, by_replacing(phase, lines.clone()), "{phase:?}");
            // Line mode asks for lines and says nothing of JSON.
            let ask = &lines.last().unwrap().content;
            assert!(!ask.contains("JSON"), "{phase:?}: {ask}");
            // JSON mode never asks for a line directive.
            let ask = &json.last().unwrap().content;
            for word in [
                "ASSIGN lines",
                "ASSIGN:<member>",
                "reply DONE",
                "CHALLENGE:<",
            ] {
                assert!(!ask.contains(word), "{phase:?}: {word} in {ask}");
            }
            assert!(ask.ends_with(REPLY_JSON), "{phase:?}");
            assert!(json[0].content.ends_with(match phase {
                Phase::Challenge => CHALLENGE_RULES_JSON,
                _ => MASTER_RULES_JSON,
            }));
        }
    }
}
