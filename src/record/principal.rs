//! What a principal run keeps between steps (saved in `run.json` under
//! `principal`): the principal's inbox, what it did so far, the modules a
//! dispatch is waiting for, and where the report stands. The work modules
//! themselves (with their deliverables and context archives) are the
//! run's plan.

use serde::{Deserialize, Serialize};

/// What an inbox item is: its priority order is tool results, then
/// briefings, then user messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[non_exhaustive]
pub enum InboxKind {
    /// A tool's result: a delivered module, a dispatch that ended.
    ToolResult,
    /// The startup briefing (`AGENT_STARTUP_BRIEFING`).
    AgentStartupBriefing,
    /// A message from the user.
    UserPrompt,
}

/// One item of the principal's inbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct InboxItem {
    /// Its number, in order of arrival.
    pub id: u64,
    /// What it is.
    pub kind: InboxKind,
    /// Who put it there (`dispatcher`, a partner, `user`).
    pub source: String,
    /// Its text (rendered escaped into the principal's prompt).
    pub text: String,
}

/// A principal run's own state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PrincipalState {
    /// Items not yet read by the principal, in order of arrival.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inbox: Vec<InboxItem>,
    /// The next inbox item's number.
    #[serde(default)]
    pub next_item: u64,
    /// What the principal did so far, one line per tool call and result
    /// (its memory from one turn to the next).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub log: Vec<String>,
    /// The modules a dispatch sent out that have not delivered yet.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dispatching: Vec<String>,
    /// Rounds of dispatch so far.
    #[serde(default)]
    pub dispatch_rounds: u32,
    /// The principal's turns so far.
    #[serde(default)]
    pub turns: u32,
    /// Whether `generate_markdown_report` was called.
    #[serde(default)]
    pub report_asked: bool,
    /// The report, once written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<String>,
    /// Whether `finish_flow` ended the run.
    #[serde(default)]
    pub finished: bool,
}

impl PrincipalState {
    /// Puts an item into the inbox.
    pub(crate) fn post(&mut self, kind: InboxKind, source: &str, text: String) {
        self.next_item += 1;
        self.inbox.push(InboxItem {
            id: self.next_item,
            kind,
            source: source.to_string(),
            text,
        });
    }
}
