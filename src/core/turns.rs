//! The Turn record: one model call, with what it was based on.
//!
//! Every call the runtime makes becomes a [`Turn`]: written to
//! `turns.jsonl` when the run has a directory, and announced with a
//! `turn_completed` event. Parent turn ids draw the call graph: a draft
//! is based on the master turn that assigned it, a challenge on the
//! round's drafts, a review on the round's drafts and challenges, a
//! retry on the attempt before it.

use std::time::Duration;

use crate::event::{EventKind, now_ms};
use crate::model::{ChatRequest, ChatResponse, ModelError, Phase, Usage};
use crate::record::{Turn, TurnId};
use crate::team::{AgentRole, AgentSpec};

use super::run::Core;

/// What the turns so far say about parents. Rebuilt from `turns.jsonl`
/// on resume.
#[derive(Debug, Default)]
pub(crate) struct TurnTracker {
    count: u32,
    /// The master's latest turn.
    last_master: Option<TurnId>,
    /// (round, phase, agent, turn id) of members' turns.
    member_turns: Vec<(u32, Phase, String, TurnId)>,
    /// Each member's latest turn of a round and phase: the parent of its
    /// next attempt, found without a scan of every member's turns (a
    /// round of N members was O(N²) under the tracker's lock).
    latest: std::collections::HashMap<(u32, Phase, String), TurnId>,
}

impl TurnTracker {
    pub(crate) fn from_turns(turns: &[Turn]) -> Self {
        let mut t = TurnTracker::default();
        for turn in turns {
            t.observe(turn);
        }
        t
    }

    /// Numbers the next turns above each of `named` too (the turns the
    /// saved transcripts name: one lost from `turns.jsonl` keeps its id, so
    /// that a transcript never reads another call's turn as its own).
    pub(crate) fn numbering_above(mut self, named: impl IntoIterator<Item = u32>) -> Self {
        self.count = named.into_iter().fold(self.count, u32::max);
        self
    }

    fn next_id(&mut self) -> TurnId {
        self.count += 1;
        TurnId::new(self.count)
    }

    fn parents(&self, agent: &str, phase: Phase, round: u32) -> Vec<TurnId> {
        let of = |p: Phase| {
            self.member_turns
                .iter()
                .filter(move |(r, ph, _, _)| *r == round && *ph == p)
                .map(|(_, _, _, id)| *id)
        };
        let mut parents: Vec<TurnId> = match phase {
            Phase::Draft => self.last_master.iter().cloned().collect(),
            Phase::Challenge => of(Phase::Draft).collect(),
            Phase::Review | Phase::Final => of(Phase::Draft).chain(of(Phase::Challenge)).collect(),
            _ => Vec::new(),
        };
        // A retry (or a second call of the same kind) builds on the last one.
        let previous = if matches!(phase, Phase::Draft | Phase::Challenge) {
            self.latest.get(&(round, phase, agent.to_string())).copied()
        } else {
            self.last_master
        };
        if let Some(p) = previous
            && !parents.contains(&p)
        {
            parents.push(p);
        }
        parents
    }

    fn observe(&mut self, turn: &Turn) {
        self.note(turn.role, turn.round, turn.phase, &turn.agent, turn.turn_id);
    }

    /// Takes note of turn `id` by `agent`.
    fn note(&mut self, role: AgentRole, round: u32, phase: Phase, agent: &str, id: TurnId) {
        self.count = self.count.max(id.number());
        if role == AgentRole::Master {
            self.last_master = Some(id);
        } else {
            self.member_turns
                .push((round, phase, agent.to_string(), id));
            self.latest.insert((round, phase, agent.to_string()), id);
        }
    }
}

/// What a turn record knows from before its call.
pub(crate) struct Before {
    /// The inbox items its messages were made from.
    pub(crate) inputs: Vec<String>,
    /// Its predicted usage ([`predict_usage`]).
    pub(crate) predicted: Usage,
}

/// The usage `request` is predicted to take: a token for every four bytes
/// of its messages and tool calls (the rule of thumb of English text in
/// the common tokenizers), and its token cap (0 when it has none) for the
/// completion.
pub(crate) fn predict_usage(request: &ChatRequest) -> Usage {
    let bytes = request.text_bytes();
    Usage {
        prompt_tokens: (bytes as u64).div_ceil(4),
        completion_tokens: request.max_tokens.map_or(0, u64::from),
        ..Usage::default()
    }
}

/// The turns a resumed run found filed after its last snapshot: calls
/// that were answered, and their turns written, before a kill came
/// between the turn and what the process made of it (a handoff step, a
/// draft). The resumed run makes those calls again, with the same
/// messages; each is answered from its turn, once, instead of being paid
/// for twice.
#[derive(Debug, Default)]
pub(crate) struct Unclaimed {
    turns: parking_lot::Mutex<Vec<Turn>>,
    /// The highest turn id the snapshot covered: the run numbers its
    /// turns above it, also when `turns.jsonl` lost some to a power cut.
    pub(crate) last: u32,
}

impl Unclaimed {
    /// None to take, turns numbered above `last`.
    pub(crate) fn none_above(last: u32) -> Self {
        Unclaimed {
            last,
            ..Unclaimed::default()
        }
    }

    /// The answered turns among `turns` numbered above `last` (the
    /// highest turn id the snapshot covers), in file order, with no tool
    /// exchange: a call that went on to run tools changed what the
    /// process holds in memory on the way (a plan tool, an approval) and
    /// is made again, its tools with it. A turn without a finish reason
    /// (written before it was recorded) is left out too: whether its
    /// answer was cut off is unknown.
    pub(crate) fn after(turns: &[Turn], last: u32) -> Self {
        let kept = turns
            .iter()
            .filter(|t| {
                t.turn_id.number() > last
                    && t.error.is_none()
                    && t.answer.is_some()
                    && t.finish.is_some()
                    && t.messages.iter().all(|m| m.tool_calls.is_empty())
            })
            .cloned()
            .collect();
        Unclaimed {
            turns: parking_lot::Mutex::new(kept),
            last,
        }
    }

    /// Takes the first turn of `agent`'s call in `round` and `phase` sent
    /// with exactly `messages` (a retry, which adds the answer and a
    /// correction, is another call; a tool exchange is never taken).
    pub(crate) fn take(
        &self,
        agent: &str,
        phase: Phase,
        round: u32,
        messages: &[crate::model::Message],
    ) -> Option<Turn> {
        let mut turns = self.turns.lock();
        if turns.is_empty() {
            return None;
        }
        let at = turns.iter().position(|t| {
            t.agent == agent && t.phase == phase && t.round == round && t.messages == messages
        })?;
        Some(turns.remove(at))
    }
}

/// The answer a turn recorded, as its call returned it.
pub(crate) fn answer_of(turn: &Turn) -> ChatResponse {
    ChatResponse {
        text: turn.answer.clone().unwrap_or_default(),
        tool_calls: turn.tool_calls.clone(),
        usage: turn.usage,
        finish: turn.finish.unwrap_or_default(),
        retries: turn.retries,
    }
}

impl Core<'_> {
    /// Builds the Turn record of one call, files it, announces it, and
    /// returns it.
    pub(crate) fn record_turn(
        &self,
        agent: &AgentSpec,
        request: ChatRequest,
        result: &Result<ChatResponse, ModelError>,
        latency: Duration,
        before: Before,
    ) -> Turn {
        // The copies are made outside the tracker's lock: every member of
        // a round takes it once its call returns.
        let (answer, tool_calls, usage, retries, error) = match result {
            Ok(r) => (
                Some(r.text.clone()),
                r.tool_calls.clone(),
                r.usage,
                r.retries,
                None,
            ),
            Err(e) => (None, Vec::new(), Usage::default(), 0, Some(e.to_string())),
        };
        let finish = result.as_ref().ok().map(|r| r.finish);
        // The request is done with: its messages move into the record.
        let (round, phase) = (request.round, request.phase);
        let messages = request.messages;
        let (turn_id, parents) = {
            let mut tracker = self.tracker.lock();
            let parents = tracker.parents(&agent.name, phase, round);
            let id = tracker.next_id();
            tracker.note(agent.role, round, phase, &agent.name, id);
            (id, parents)
        };
        let turn = Turn {
            turn_id,
            run_id: self.run_id.clone(),
            agent: agent.name.clone(),
            role: agent.role,
            round,
            phase,
            parents,
            time_ms: now_ms(),
            messages,
            answer,
            tool_calls,
            usage,
            latency_ms: u64::try_from(latency.as_millis()).unwrap_or(u64::MAX),
            retries,
            error,
            inputs: before.inputs,
            predicted_usage: Some(before.predicted),
            finish,
        };
        self.file_turn(&turn);
        crate::store::crash_point("turn-filed");
        if !self.listened() {
            return turn;
        }
        self.emit(
            &agent.name,
            self.parent_of(agent),
            EventKind::TurnCompleted {
                turn_id: turn.turn_id,
                round: turn.round,
                phase: turn.phase,
                parents: turn.parents.clone(),
                usage: turn.usage,
                latency_ms: turn.latency_ms,
                error: turn.error.clone(),
                model: Some(self.model_for(&agent.name).name()),
                finish_reason: result.as_ref().ok().map(|r| r.finish),
                retries: turn.retries,
            },
        );
        turn
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::record::turn::sample_turn as turn;

    /// An answered turn of `agent` sent `sent`, its record holding `kept`.
    fn answered(id: &str, agent: &str, kept: Vec<crate::model::Message>) -> Turn {
        let mut t = turn(id, agent, AgentRole::Member, 1, Phase::Draft);
        t.messages = kept;
        t.answer = Some(format!("{agent}'s draft"));
        t.finish = Some(crate::model::FinishReason::Stop);
        t
    }

    #[test]
    fn a_resumed_call_takes_the_turn_filed_after_the_snapshot_once() {
        use crate::model::Message;
        let sent = vec![Message::system("You write."), Message::user("Draft it.")];
        let mut asked_tools = Message::assistant("");
        asked_tools.tool_calls = vec![crate::model::ToolCall {
            id: "c1".into(),
            name: "search".into(),
            arguments: "{}".into(),
        }];
        let with_tools = [
            sent.clone(),
            vec![asked_tools, Message::tool("c1", "found")],
        ]
        .concat();
        let retried = [
            sent.clone(),
            vec![Message::assistant("bad"), Message::user("Again, well.")],
        ]
        .concat();
        let mut failed = answered("t0006", "critic", sent.clone());
        failed.error = Some("HTTP 500".into());
        failed.answer = None;
        let mut unknown_finish = answered("t0007", "critic", sent.clone());
        unknown_finish.finish = None;
        let turns = vec![
            answered("t0002", "writer", sent.clone()),
            answered("t0003", "writer", retried),
            answered("t0004", "analyst", with_tools),
            answered("t0005", "writer", sent.clone()),
            failed,
            unknown_finish,
        ];
        let u = Unclaimed::after(&turns, 2);
        // Covered by the snapshot (t0002): not taken; t0005 is.
        let t = u.take("writer", Phase::Draft, 1, &sent).unwrap();
        assert_eq!(t.turn_id.to_string(), "t0005");
        // Each once: the retry t0003 is another call, with other messages.
        assert!(u.take("writer", Phase::Draft, 1, &sent).is_none());
        // A call that went on with tools: made again, its tools with it.
        assert!(u.take("analyst", Phase::Draft, 1, &sent).is_none());
        assert_eq!(answer_of(&t).text, "writer's draft");
        // Another round or phase, a failed call, an unknown finish: none.
        assert!(u.take("writer", Phase::Draft, 2, &sent).is_none());
        assert!(u.take("writer", Phase::Challenge, 1, &sent).is_none());
        assert!(u.take("critic", Phase::Draft, 1, &sent).is_none());
    }

    #[test]
    fn parents_follow_the_loop_and_survive_a_replay() {
        let turns = vec![
            turn("t0001", "master", AgentRole::Master, 0, Phase::Plan),
            turn("t0002", "writer", AgentRole::Member, 1, Phase::Draft),
            turn("t0003", "critic", AgentRole::Member, 1, Phase::Draft),
            turn("t0004", "critic", AgentRole::Member, 1, Phase::Challenge),
        ];
        let mut t = TurnTracker::from_turns(&turns);
        let ids = |v: Vec<TurnId>| v.iter().map(ToString::to_string).collect::<Vec<_>>();
        assert_eq!(ids(t.parents("analyst", Phase::Draft, 1)), vec!["t0001"]);
        assert_eq!(
            ids(t.parents("critic", Phase::Challenge, 1)),
            vec!["t0002", "t0003", "t0004"]
        );
        assert_eq!(
            ids(t.parents("master", Phase::Review, 1)),
            vec!["t0002", "t0003", "t0004", "t0001"]
        );
        assert_eq!(t.next_id().to_string(), "t0005");
    }

    #[test]
    fn a_resume_numbers_its_turns_above_every_id_a_transcript_names() {
        // t0004 is named by a saved transcript but never reached
        // turns.jsonl: the next turn is t0005, not a second t0004.
        let turns = vec![
            turn("t0001", "master", AgentRole::Master, 0, Phase::Plan),
            turn("t0003", "writer", AgentRole::Member, 1, Phase::Draft),
        ];
        let mut t = TurnTracker::from_turns(&turns).numbering_above([2, 4]);
        assert_eq!(t.next_id().to_string(), "t0005");
        let mut t = TurnTracker::from_turns(&turns).numbering_above([]);
        assert_eq!(t.next_id().to_string(), "t0004");
    }
}
