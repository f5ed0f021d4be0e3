//! `run.json` from format 2 on: a small summary of the run, the team once
//! in `team.json`, and what grows in `state.jsonl`, an append-only log of
//! what each checkpoint changed (issue 25).
//!
//! A checkpoint appends one line to `state.jsonl` — the board entries,
//! work modules, assignments, per-agent usage, handoff steps, a principal
//! run's own state and the turns paused for approval that are
//! new or changed since the last one; a board entry already in
//! `journal.jsonl` is written as its place there — then replaces
//! `run.json` (status, phase, settings, totals, and `state_len`, how much
//! of `state.jsonl` it covers). Reading folds the log up to `state_len`:
//! whatever a killed checkpoint appended past it is ignored, and cut off
//! when the run is opened again to go on.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::StoreError;
use crate::board::Entry;
use crate::model::Usage;
use crate::plan::{SavedModule, WorkModule};
use crate::protocol::Assignment;
use crate::record::{
    HandoffState, PausedTurn, PrincipalState, RunPhase, RunSettings, RunState, RunStatus, UserNote,
};

/// The team of a run of format 2, written once.
pub(crate) const TEAM_FILE: &str = "team.json";
/// The log of what each checkpoint changed.
pub(crate) const STATE_FILE: &str = "state.jsonl";

/// A task up to this long is also kept in `run.json` (for readers of that
/// file alone); a longer one only in `state.jsonl`, once.
const TASK_IN_SUMMARY: usize = 4096;

/// `run.json`, format 2.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Summary {
    pub(crate) version: u32,
    pub(crate) created_ms: u64,
    pub(crate) saved_ms: u64,
    /// The team's name (the team itself is in `team.json`).
    pub(crate) team: String,
    pub(crate) settings: RunSettings,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) journal_len: Option<u64>,
    /// How many bytes of `state.jsonl` this snapshot covers.
    pub(crate) state_len: u64,
    /// The highest turn id `turns.jsonl` held (see [`RunRecord::last_turn`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) last_turn: Option<u32>,
    pub(crate) run_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) task: Option<String>,
    pub(crate) round: u32,
    pub(crate) phase: RunPhase,
    pub(crate) status: RunStatus,
    pub(crate) answer: Option<String>,
    pub(crate) error: Option<String>,
    pub(crate) usage: Usage,
    #[serde(default)]
    pub(crate) feedback: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) user_notes: Vec<UserNote>,
    #[serde(default)]
    pub(crate) round_offset: u32,
    /// How many board entries, modules, agents with usage and handoff
    /// steps the state holds (for readers of `run.json` alone).
    #[serde(default)]
    pub(crate) counts: Counts,
}

/// Sizes of what `state.jsonl` holds, as of a snapshot.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct Counts {
    pub(crate) board: usize,
    pub(crate) modules: usize,
    pub(crate) agents: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) steps: Option<usize>,
}

/// A board entry in a checkpoint line: written out, or where the journal
/// holds it.
#[derive(Debug, Serialize, Deserialize)]
#[serde(untagged)]
pub(crate) enum BoardItem<E> {
    At(At),
    Inline(E),
}

/// An entry's place in `journal.jsonl`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct At {
    pub(crate) seq: u64,
    pub(crate) at: u64,
}

/// One line of `state.jsonl` as written: borrowed from the state.
#[derive(Debug, Default, Serialize)]
struct DeltaOut<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    task: Option<&'a str>,
    /// The board is cut to this many entries before `board` is added
    /// (absent: nothing is cut).
    #[serde(skip_serializing_if = "Option::is_none")]
    board_from: Option<usize>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    board: Vec<BoardItem<&'a Entry>>,
    /// The plan is emptied before `modules` (else each replaces the module
    /// of its id, or is added).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    plan_reset: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    modules: Vec<SavedModule<'a>>,
    /// Modules that changed: their id and the fields that did.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    module_changes: Vec<Grouped<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    assignments: Option<Vec<AssignmentOut<'a>>>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    usage_reset: bool,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    usage_by_agent: BTreeMap<&'a str, Usage>,
    #[serde(skip_serializing_if = "Option::is_none")]
    handoff: Option<HandoffOut<'a>>,
    /// A principal run's own state, whole, when it changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    principal: Option<&'a PrincipalState>,
    /// The turns paused for a person's decision, whole, when they changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    approvals: Option<&'a [PausedTurn]>,
}

/// The fields of a module that changed since the last checkpoint (its
/// transcript, the largest, is written when it changes only, as the ids of
/// its turns when it was built of turns).
#[derive(Debug, Serialize)]
struct ModuleChange<'a> {
    #[serde(skip)]
    task_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<crate::plan::ModuleStatus>,
    #[serde(skip_serializing_if = "Option::is_none")]
    assigned_agent: Option<&'a Option<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    round: Option<&'a Option<u32>>,
    /// The metadata's keys that are new or changed, and those removed.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    metadata_set: BTreeMap<&'a str, &'a serde_json::Value>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    metadata_unset: Vec<String>,
    /// The module is as the journal holds it at this byte (nothing else
    /// is written then).
    #[serde(skip_serializing_if = "Option::is_none")]
    module_at: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    deliverable: Option<&'a Option<serde_json::Value>>,
    /// The changed transcript: `context_archive` or `context_turns`, as
    /// a module's.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    transcript: Option<ArchiveOut<'a>>,
}

/// The same change to one module (`task_id`) or several (`task_ids`: a
/// review that completes a thousand modules at once is one of these).
#[derive(Debug, Serialize)]
struct Grouped<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    task_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    task_ids: Vec<&'a str>,
    #[serde(flatten)]
    change: ModuleChange<'a>,
}

/// `changes` with those that change the same fields the same way as one.
fn grouped(changes: Vec<ModuleChange<'_>>) -> Result<Vec<Grouped<'_>>, serde_json::Error> {
    let mut out: Vec<Grouped<'_>> = Vec::new();
    let mut by_body: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for change in changes {
        let body = serde_json::to_string(&change)?;
        match by_body.get(&body) {
            Some(&i) => {
                let g = &mut out[i];
                g.task_ids.extend(g.task_id.take());
                g.task_ids.push(change.task_id);
            }
            None => {
                by_body.insert(body, out.len());
                out.push(Grouped {
                    task_id: Some(change.task_id),
                    task_ids: Vec::new(),
                    change,
                });
            }
        }
    }
    Ok(out)
}

/// The assignments as saved: an assignment that is a module's (its member
/// and description) is that module's id.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum AssignmentOut<'a> {
    Module(&'a str),
    Whole(&'a Assignment),
}

fn assignments_out<'a>(
    assignments: &'a [Assignment],
    plan: &'a [WorkModule],
) -> Vec<AssignmentOut<'a>> {
    let by: std::collections::HashMap<(&str, &str), &str> = plan
        .iter()
        .filter_map(|m| {
            Some((
                (m.assigned_agent.as_deref()?, m.description.as_str()),
                m.task_id.as_str(),
            ))
        })
        .collect();
    assignments
        .iter()
        .map(|a| match by.get(&(a.member.as_str(), a.task.as_str())) {
            Some(id) => AssignmentOut::Module(id),
            None => AssignmentOut::Whole(a),
        })
        .collect()
}

/// A module's transcript alone, as [`SavedModule`] writes it.
#[derive(Debug)]
struct ArchiveOut<'a>(&'a WorkModule);

impl Serialize for ArchiveOut<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(1))?;
        match self.0.saved_parts() {
            Some(parts) => map.serialize_entry("context_turns", &parts)?,
            None => map.serialize_entry("context_archive", &self.0.context_archive)?,
        }
        map.end()
    }
}

impl<'a> ModuleChange<'a> {
    /// Module `now`, as the journal holds it at byte `at`.
    fn journaled(now: &'a WorkModule, at: u64) -> Self {
        ModuleChange {
            task_id: &now.task_id,
            description: None,
            status: None,
            assigned_agent: None,
            round: None,
            metadata_set: BTreeMap::new(),
            metadata_unset: Vec::new(),
            module_at: Some(at),
            deliverable: None,
            transcript: None,
        }
    }

    fn between(was: &WorkModule, now: &'a WorkModule) -> Self {
        let changed = |same: bool| !same;
        let new_archive = changed(was.context_archive == now.context_archive);
        ModuleChange {
            task_id: &now.task_id,
            description: changed(was.description == now.description).then_some(&*now.description),
            status: changed(was.status == now.status).then_some(now.status),
            assigned_agent: changed(was.assigned_agent == now.assigned_agent)
                .then_some(&now.assigned_agent),
            round: changed(was.round == now.round).then_some(&now.round),
            metadata_set: now
                .metadata
                .iter()
                .filter(|(k, v)| was.metadata.get(*k) != Some(*v))
                .map(|(k, v)| (k.as_str(), v))
                .collect(),
            metadata_unset: was
                .metadata
                .keys()
                .filter(|k| !now.metadata.contains_key(*k))
                .cloned()
                .collect(),
            module_at: None,
            deliverable: changed(was.deliverable == now.deliverable).then_some(&now.deliverable),
            transcript: new_archive.then_some(ArchiveOut(now)),
        }
    }
}

#[derive(Debug, Serialize)]
struct HandoffOut<'a> {
    /// The steps are cut to this many before `steps` is added.
    steps_from: usize,
    steps: &'a [crate::record::HandoffStep],
    active: &'a str,
    handoffs: u32,
    variables: &'a crate::team::Variables,
    routing: bool,
    feedback: &'a [String],
}

/// What a checkpoint line points into: those files must be on disk before
/// it is.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct PointsTo {
    /// Board entries in `journal.jsonl`.
    pub(crate) journal: bool,
    /// Transcripts in `turns.jsonl`.
    pub(crate) turns: bool,
}

/// What the log holds as of the last checkpoint: the writer's view, to
/// write only what changed.
#[derive(Debug, Default)]
pub(crate) struct Written {
    pub(crate) state_len: u64,
    pub(crate) team: bool,
    task: Option<String>,
    board: Vec<Entry>,
    plan: Vec<WorkModule>,
    assignments: Vec<Assignment>,
    usage_by_agent: BTreeMap<String, Usage>,
    handoff: Option<HandoffState>,
    principal: Option<PrincipalState>,
    approvals: Vec<PausedTurn>,
}

impl Written {
    /// What a loaded run of format 2 holds: its log is `state_len` long.
    pub(crate) fn of(state: &RunState, state_len: u64) -> Self {
        Written {
            state_len,
            team: true,
            task: Some(state.task.clone()),
            board: state.board.clone(),
            plan: state.plan.tasks.clone(),
            assignments: state.assignments.clone(),
            usage_by_agent: state.usage_by_agent.clone(),
            handoff: state.process.handoff().cloned(),
            principal: state.process.principal().cloned(),
            approvals: state.approvals.clone(),
        }
    }

    /// The line of what changed since, and the journal must be on disk
    /// before it (some entries point into it). `None` when nothing did.
    pub(crate) fn delta(
        &self,
        state: &RunState,
        journaled: &dyn Fn(u64) -> Option<u64>,
        journaled_module: &dyn Fn(&WorkModule) -> Option<u64>,
    ) -> Result<Option<(Vec<u8>, PointsTo)>, serde_json::Error> {
        let mut d = DeltaOut::default();
        if self.task.as_deref() != Some(state.task.as_str()) {
            d.task = Some(&state.task);
        }
        let (from, new) = appended(&self.board, &state.board);
        d.board_from = from;
        let mut refs = PointsTo::default();
        d.board = new
            .iter()
            .map(|e| match journaled(e.seq) {
                Some(at) => {
                    refs.journal = true;
                    BoardItem::At(At { seq: e.seq, at })
                }
                None => BoardItem::Inline(e),
            })
            .collect();
        let tasks = &state.plan.tasks;
        let mut changes = Vec::new();
        if same_order(&self.plan, tasks) {
            for (i, m) in tasks.iter().enumerate() {
                match self.plan.get(i) {
                    Some(was) if was == m => {}
                    Some(_) if let Some(at) = journaled_module(m) => {
                        // The journal's record names the transcript's
                        // turns: they are on disk before the line too.
                        refs.journal = true;
                        refs.turns |= m.saved_parts().is_some();
                        changes.push(ModuleChange::journaled(m, at));
                    }
                    Some(was) => {
                        let change = ModuleChange::between(was, m);
                        refs.turns |= change.transcript.is_some() && m.saved_parts().is_some();
                        changes.push(change);
                    }
                    None => {
                        refs.turns |= m.saved_parts().is_some();
                        d.modules.push(SavedModule(m));
                    }
                }
            }
        } else {
            d.plan_reset = true;
            refs.turns |= tasks.iter().any(|m| m.saved_parts().is_some());
            d.modules = tasks.iter().map(SavedModule).collect();
        }
        d.module_changes = grouped(changes)?;
        if self.assignments != state.assignments {
            d.assignments = Some(assignments_out(&state.assignments, &state.plan.tasks));
        }
        let by_agent = &state.usage_by_agent;
        d.usage_reset = self
            .usage_by_agent
            .keys()
            .any(|k| !by_agent.contains_key(k));
        d.usage_by_agent = by_agent
            .iter()
            .filter(|(k, u)| d.usage_reset || self.usage_by_agent.get(*k) != Some(*u))
            .map(|(k, u)| (k.as_str(), *u))
            .collect();
        d.handoff = match (state.process.handoff(), &self.handoff) {
            (None, _) => None,
            (Some(now), Some(was)) if now == was => None,
            (Some(now), was) => {
                let before = was.as_ref().map_or(&[][..], |w| &w.steps[..]);
                let (from, steps) = appended(before, &now.steps);
                Some(HandoffOut {
                    steps_from: from.unwrap_or(before.len()),
                    steps,
                    active: &now.active,
                    handoffs: now.handoffs,
                    variables: &now.variables,
                    routing: now.routing,
                    feedback: &now.feedback,
                })
            }
        };
        if let Some(now) = state.process.principal()
            && self.principal.as_ref() != Some(now)
        {
            d.principal = Some(now);
        }
        if self.approvals != state.approvals {
            d.approvals = Some(&state.approvals);
        }
        let nothing = d.task.is_none()
            && d.board_from.is_none()
            && d.board.is_empty()
            && !d.plan_reset
            && d.modules.is_empty()
            && d.module_changes.is_empty()
            && d.assignments.is_none()
            && !d.usage_reset
            && d.usage_by_agent.is_empty()
            && d.handoff.is_none()
            && d.principal.is_none()
            && d.approvals.is_none();
        if nothing {
            return Ok(None);
        }
        let mut line = serde_json::to_vec(&d)?;
        line = crate::util::secrets::mask_json(&line).into_owned();
        line.push(b'\n');
        Ok(Some((line, refs)))
    }

    /// Takes in what a written line held: the log now matches `state`.
    pub(crate) fn wrote(&mut self, state: &RunState, line_len: u64) {
        self.state_len += line_len;
        if self.task.as_deref() != Some(state.task.as_str()) {
            self.task = Some(state.task.clone());
        }
        match appended(&self.board, &state.board) {
            (None, new) => self.board.extend_from_slice(new),
            (Some(_), _) => self.board = state.board.clone(),
        }
        // What changed is copied, not the whole plan and usage again.
        let tasks = &state.plan.tasks;
        if same_order(&self.plan, tasks) {
            for (was, now) in self.plan.iter_mut().zip(tasks) {
                was.update_from(now);
            }
            let kept = self.plan.len();
            self.plan.extend_from_slice(&tasks[kept..]);
        } else {
            self.plan.clone_from(tasks);
        }
        if self.assignments != state.assignments {
            self.assignments = state.assignments.clone();
        }
        let by_agent = &state.usage_by_agent;
        if self.usage_by_agent != *by_agent {
            self.usage_by_agent.retain(|k, _| by_agent.contains_key(k));
        }
        for (agent, usage) in by_agent {
            match self.usage_by_agent.get_mut(agent) {
                Some(was) => *was = *usage,
                None => {
                    self.usage_by_agent.insert(agent.clone(), *usage);
                }
            }
        }
        if self.handoff.as_ref() != state.process.handoff() {
            self.handoff = state.process.handoff().cloned();
        }
        if let Some(now) = state.process.principal()
            && self.principal.as_ref() != Some(now)
        {
            self.principal = Some(now.clone());
        }
        if self.approvals != state.approvals {
            self.approvals = state.approvals.clone();
        }
    }
}

/// Whether the modules `now` are those `was` wrote, in the same order,
/// and maybe more after them: what changed is then written (and kept)
/// module by module, else the plan again whole.
fn same_order(was: &[WorkModule], now: &[WorkModule]) -> bool {
    was.len() <= now.len() && was.iter().zip(now).all(|(a, b)| a.task_id == b.task_id)
}

/// `now` as `before` plus what was added: `(None, added)` when `before`
/// is a prefix of `now`, else `(Some(0), now)`.
fn appended<'a, T: PartialEq>(before: &[T], now: &'a [T]) -> (Option<usize>, &'a [T]) {
    if before.len() <= now.len() && now[..before.len()] == *before {
        (None, &now[before.len()..])
    } else {
        (Some(0), now)
    }
}

impl Summary {
    /// The summary of `state` as of a checkpoint.
    pub(crate) fn of(
        state: &RunState,
        created_ms: u64,
        team: String,
        settings: RunSettings,
        journal_len: u64,
        state_len: u64,
        last_turn: u32,
    ) -> Self {
        Summary {
            version: super::RUN_FORMAT_VERSION,
            created_ms,
            saved_ms: crate::event::now_ms(),
            team,
            settings,
            journal_len: Some(journal_len),
            state_len,
            last_turn: Some(last_turn),
            run_id: state.run_id.clone(),
            task: (state.task.len() <= TASK_IN_SUMMARY).then(|| state.task.clone()),
            round: state.round,
            phase: state.phase,
            status: state.status,
            answer: state.answer.clone(),
            error: state.error.clone(),
            usage: state.usage,
            feedback: state.feedback.clone(),
            user_notes: state.user_notes.clone(),
            round_offset: state.round_offset,
            counts: Counts {
                board: state.board.len(),
                modules: state.plan.tasks.len(),
                agents: state.usage_by_agent.len(),
                steps: state.process.handoff().map(|h| h.steps.len()),
            },
        }
    }
}

/// Marks a saved run as failed where it stands: status and error in
/// `run.json` (of either format), nothing else rewritten.
pub(crate) fn mark_failed(dir: &Path, error: String) -> Result<(), StoreError> {
    let path = dir.join(super::RUN_FILE);
    let (_, state_len) = super::read::load_raw(dir)?;
    let json = if state_len.is_some() {
        let bytes = super::read_capped(&path, super::MAX_RECORD_FILE)
            .map_err(|e| StoreError::io(&path, e))?;
        let mut summary: Summary = serde_json::from_slice(&bytes)
            .map_err(|e| StoreError::json(&path, "not a run record", e))?;
        summary.status = RunStatus::Failed;
        summary.error = Some(error);
        summary.saved_ms = crate::event::now_ms();
        serde_json::to_vec_pretty(&summary)
    } else {
        let mut record = super::load_run(dir)?;
        record.state.status = RunStatus::Failed;
        record.state.error = Some(error);
        record.saved_ms = crate::event::now_ms();
        serde_json::to_vec_pretty(&record)
    }
    .map_err(|e| StoreError::json(&path, "cannot serialise", e))?;
    super::write_atomic(&path, &json)
}
