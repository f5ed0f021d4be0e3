//! The round and phase spans between the run and its agents' turns.
//!
//! ```text
//! invoke_workflow {team}   CHAIN  the run
//! ├─ round 0               CHAIN
//! │  └─ plan               CHAIN
//! │     └─ invoke_agent master
//! ├─ round 1               CHAIN
//! │  ├─ draft              CHAIN  every member's draft of the round
//! │  ├─ challenge          CHAIN
//! │  └─ review             CHAIN
//! └─ round 2 ...
//! ```
//!
//! A handoff run has a `step N` per step and no phase level (its phases
//! are all conversation and routing). A group spans the turns under it;
//! groups are sent when the run's span is, at the end.

use crate::model::Phase;
use crate::record::ProcessKind;

use super::openinference::{self as oi, Kind};
use super::proto::KeyValue;

/// A span id.
pub(super) type SpanId = [u8; 8];

/// A round, or a phase of one, and the time its turns cover.
#[derive(Debug)]
pub(super) struct Group {
    pub(super) id: SpanId,
    pub(super) parent: SpanId,
    pub(super) round: u32,
    pub(super) phase: Option<Phase>,
    pub(super) start_ms: u64,
    pub(super) end_ms: u64,
}

impl Group {
    /// Its name, as a user reads the tree: `round 2`, `review`, `step 3`.
    pub(super) fn name(&self, process: &ProcessKind) -> String {
        match (self.phase, process) {
            (Some(p), _) => p.as_str().to_string(),
            (None, ProcessKind::Handoff) => format!("step {}", self.round),
            (None, _) => format!("round {}", self.round),
        }
    }

    /// Its attributes (besides those every span carries).
    pub(super) fn attributes(&self) -> Vec<KeyValue> {
        let mut attrs = vec![
            oi::kind(Kind::Chain),
            KeyValue::int("boardroom.round", i64::from(self.round)),
        ];
        if let Some(p) = self.phase {
            attrs.push(KeyValue::str("boardroom.phase", p.as_str()));
        }
        attrs
    }

    fn widen(&mut self, start_ms: u64, end_ms: u64) {
        self.start_ms = self.start_ms.min(start_ms);
        self.end_ms = self.end_ms.max(end_ms);
    }
}

/// The groups of a run, in the order they opened.
#[derive(Debug, Default)]
pub(super) struct Groups {
    all: Vec<Group>,
}

impl Groups {
    /// The span an agent's turn in (round, phase) hangs under, opened now
    /// if it is new: its phase's group, or its round's for a phase that
    /// has no level of its own. `new_id` makes the id of a new group from
    /// its key.
    pub(super) fn parent_of(
        &mut self,
        process: &ProcessKind,
        round: u32,
        phase: Phase,
        time_ms: u64,
        root: SpanId,
        new_id: impl Fn(&str) -> SpanId,
    ) -> SpanId {
        let round_id = self.open(round, None, time_ms, root, &new_id);
        let own_level = !matches!(process, ProcessKind::Handoff)
            && !matches!(phase, Phase::Converse | Phase::Route);
        if own_level {
            self.open(round, Some(phase), time_ms, round_id, &new_id)
        } else {
            round_id
        }
    }

    fn open(
        &mut self,
        round: u32,
        phase: Option<Phase>,
        time_ms: u64,
        parent: SpanId,
        new_id: &impl Fn(&str) -> SpanId,
    ) -> SpanId {
        if let Some(g) = self
            .all
            .iter_mut()
            .find(|g| g.round == round && g.phase == phase)
        {
            g.widen(time_ms, time_ms);
            return g.id;
        }
        let key = match phase {
            Some(p) => format!("phase/{round}/{}", p.as_str()),
            None => format!("round/{round}"),
        };
        let id = new_id(&key);
        self.all.push(Group {
            id,
            parent,
            round,
            phase,
            start_ms: time_ms,
            end_ms: time_ms,
        });
        id
    }

    /// Widens the groups above a turn of (round, phase) to its times.
    pub(super) fn cover(&mut self, round: u32, phase: Phase, start_ms: u64, end_ms: u64) {
        for g in &mut self.all {
            if g.round == round && g.phase.is_none_or(|p| p == phase) {
                g.widen(start_ms, end_ms);
            }
        }
    }

    /// Every group, to be sent; none is left.
    pub(super) fn drain(&mut self) -> Vec<Group> {
        std::mem::take(&mut self.all)
    }
}
