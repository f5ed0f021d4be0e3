//! Tool calls that wait for a person's decision (`approve:` in a team),
//! as a run saves them: a paused agent turn keeps the reply that asked for
//! the calls, so a resumed run goes on from that reply, not from a new
//! model call that would ask for other calls.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::model::{Message, Phase, ToolCall};

/// A tool call that waits for a person's decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PendingApproval {
    /// The call's id, as the model gave it: what a decision names.
    pub call_id: String,
    /// The agent that asked for it.
    pub agent: String,
    /// The tool, as granted (`server.tool` for an MCP tool).
    pub tool: String,
    /// The arguments as the JSON text the model wrote, known secrets
    /// masked.
    pub arguments: String,
    /// The round (a handoff run: the step) it was asked in.
    pub round: u32,
    /// Whether the arguments held a known secret (shown masked). A saved
    /// run keeps them masked: such a call of a resumed run can be edited
    /// or denied, never approved as it is (it would run with `***`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub masked: bool,
}

/// What a person decided about a [`PendingApproval`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Decision {
    /// Run the call as the model asked for it.
    Approve,
    /// Run the call with these arguments instead (a JSON object, as text);
    /// the model is shown the call as it ran.
    Edit {
        /// The arguments to run it with.
        arguments: String,
    },
    /// Do not run the call: the model gets the denial (and the reason, if
    /// any) as the tool's result.
    Deny {
        /// Why, for the model.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
}

impl Decision {
    /// `approved`, `edited` or `denied`.
    #[must_use]
    pub fn as_str(&self) -> &'static str {
        match self {
            Decision::Approve => "approved",
            Decision::Edit { .. } => "edited",
            Decision::Deny { .. } => "denied",
        }
    }
}

/// An agent turn paused at a reply some of whose tool calls wait for a
/// decision. None of the reply's calls has run yet.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct PausedTurn {
    /// The agent.
    pub(crate) agent: String,
    /// The round of the call (a handoff run: the step).
    pub(crate) round: u32,
    /// What the call was for.
    pub(crate) phase: Phase,
    /// The assignment it worked on, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) task: Option<String>,
    /// The exchange before the reply.
    pub(crate) messages: Vec<Message>,
    /// The reply's text.
    #[serde(default)]
    pub(crate) text: String,
    /// The reply's tool calls, as the model asked for them.
    pub(crate) calls: Vec<ToolCall>,
    /// Rounds of tool calls the turn had made before this reply.
    #[serde(default)]
    pub(crate) step: usize,
    /// The calls that wait for a decision.
    pub(crate) pending: Vec<PendingApproval>,
    /// Decisions made so far, by call id.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) decided: BTreeMap<String, Decision>,
    /// Which job of the run owns the turn (unique in the run; 0: restored
    /// from a saved run and not yet taken by a job). Never saved.
    #[serde(skip)]
    pub(crate) serial: u64,
    /// Decisions already sent as `approval_decided` (those a saved run
    /// had): not sent again. Never saved.
    #[serde(skip)]
    pub(crate) told: Vec<String>,
    /// Restored from a saved run, whose calls hold masked secrets.
    #[serde(skip)]
    pub(crate) from_save: bool,
}

impl PausedTurn {
    /// Whether this is the turn `agent` is taking now.
    pub(crate) fn is(&self, agent: &str, round: u32, phase: Phase, task: Option<&str>) -> bool {
        self.agent == agent
            && self.round == round
            && self.phase == phase
            && self.task.as_deref() == task
    }

    /// Whether `decision` may be taken about the call `call_id`: a
    /// restored call whose saved arguments are masked is not approved as
    /// it is.
    pub(crate) fn allows(&self, call_id: &str, decision: &Decision) -> bool {
        !(self.from_save
            && matches!(decision, Decision::Approve)
            && self
                .pending
                .iter()
                .any(|p| p.call_id == call_id && p.masked))
    }

    /// Its calls still without a decision.
    pub(crate) fn undecided(&self) -> impl Iterator<Item = &PendingApproval> {
        self.pending
            .iter()
            .filter(|p| !self.decided.contains_key(&p.call_id))
    }
}
