//! The Turn record: one model call, as `turns.jsonl` holds it.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::model::{FinishReason, Message, Phase, ToolCall, Usage};

/// A turn's id: `t0001`, `t0002`, ... in the order a run's calls
/// finished. Written and read as that string (in `turns.jsonl`, in events).
///
/// # Examples
///
/// ```
/// let id: boardroom::store::TurnId = "t0042".parse().unwrap();
/// assert_eq!(id.number(), 42);
/// assert_eq!(id.to_string(), "t0042");
/// assert!("42".parse::<boardroom::store::TurnId>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TurnId(u32);

impl TurnId {
    /// The id of the `n`th call of a run (counted from 1).
    #[must_use]
    pub fn new(n: u32) -> Self {
        TurnId(n)
    }

    /// Its number: 42 for `t0042`.
    #[must_use]
    pub fn number(self) -> u32 {
        self.0
    }
}

impl fmt::Display for TurnId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "t{:04}", self.0)
    }
}

/// A string that is not a turn id (`t` and a number).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseTurnIdError(String);

impl fmt::Display for ParseTurnIdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "turn id '{}': expected 't' and a number, like t0001",
            self.0
        )
    }
}

impl std::error::Error for ParseTurnIdError {}

impl FromStr for TurnId {
    type Err = ParseTurnIdError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        s.strip_prefix('t')
            .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|n| n.parse().ok())
            .map(TurnId)
            .ok_or_else(|| ParseTurnIdError(s.to_string()))
    }
}

impl Serialize for TurnId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for TurnId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// One model call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Turn {
    /// `t0001`, `t0002`, ... in the order calls finished.
    pub turn_id: TurnId,
    /// The run.
    pub run_id: String,
    /// The agent that was called.
    pub agent: String,
    /// Its role.
    pub role: AgentRole,
    /// The round (0 while planning).
    pub round: u32,
    /// What the call was for.
    pub phase: Phase,
    /// The turns this one was based on.
    #[serde(default)]
    pub parents: Vec<TurnId>,
    /// When it finished, milliseconds since the Unix epoch.
    pub time_ms: u64,
    /// The messages sent.
    pub messages: Vec<Message>,
    /// The answer, when the call succeeded.
    #[serde(default)]
    pub answer: Option<String>,
    /// Tool calls the model asked for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// Tokens used.
    #[serde(default)]
    pub usage: Usage,
    /// How long the call took, in milliseconds.
    pub latency_ms: u64,
    /// Transport retries inside the call (left out when none).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub retries: u32,
    /// Why the call failed (left out when it did not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The ids of the inbox items the turn consumed (`i1`, `i2`, ... of
    /// the agent's inbox), in the order the agent read them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inputs: Vec<String>,
    /// The usage predicted before the call (its prompt estimated from the
    /// messages' length, its completion from the token cap), beside the
    /// actual `usage`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicted_usage: Option<Usage>,
    /// Why the model stopped, for an answered call (absent in turns
    /// written before it existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish: Option<FinishReason>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// A turn for tests: its place in the run, the rest empty.
#[cfg(test)]
pub(crate) fn sample_turn(
    id: &str,
    agent: &str,
    role: AgentRole,
    round: u32,
    phase: Phase,
) -> Turn {
    Turn {
        turn_id: id.parse().unwrap(),
        run_id: "r".into(),
        agent: agent.into(),
        role,
        round,
        phase,
        parents: vec![],
        time_ms: 0,
        messages: vec![],
        answer: None,
        tool_calls: vec![],
        usage: Usage::default(),
        latency_ms: 0,
        retries: 0,
        error: None,
        inputs: vec![],
        predicted_usage: None,
        finish: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::sample_turn as turn;

    /// Issue 15: turn ids are a type, written as the same strings.
    #[test]
    fn turn_ids_read_and_write_as_before() {
        let id: TurnId = "t0042".parse().unwrap();
        assert_eq!((id.number(), id.to_string()), (42, "t0042".to_string()));
        assert_eq!(TurnId::new(12345).to_string(), "t12345");
        assert_eq!("t12345".parse::<TurnId>().unwrap().number(), 12345);
        for bad in ["", "t", "42", "t-1", "t1x", "T0001", "tt01", "t+1"] {
            assert!(bad.parse::<TurnId>().is_err(), "{bad}");
        }
        assert_eq!(
            "x7".parse::<TurnId>().unwrap_err().to_string(),
            "turn id 'x7': expected 't' and a number, like t0001"
        );
        // A turns.jsonl line of an older run reads, and writes back the same.
        let mut old =
            serde_json::to_value(turn("t0003", "w", AgentRole::Member, 1, Phase::Draft)).unwrap();
        old["parents"] = serde_json::json!(["t0001", "t0002"]);
        let back: Turn = serde_json::from_value(old.clone()).unwrap();
        assert_eq!(back.turn_id.number(), 3);
        assert_eq!(back.parents, vec![TurnId::new(1), TurnId::new(2)]);
        assert_eq!(serde_json::to_value(&back).unwrap(), old);
        // Ordered by number, not text: t10000 comes after t9999.
        assert!(TurnId::new(10000) > "t9999".parse().unwrap());
    }
}

/// An agent's place in the team.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum AgentRole {
    /// Splits the task, reviews the board, gives the answer. One per team.
    Master,
    /// Works on assignments.
    Member,
    /// Talks with the user in `boardroom chat`: clarifies the request,
    /// drafts the work modules and launches the team. At most one per
    /// team; never on the roster of a run.
    Partner,
}
