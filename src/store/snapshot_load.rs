//! Reading a run of format 2 back: the summary, the team, and the
//! checkpoints of `state.jsonl` folded up to where `run.json` says (see
//! `snapshot.rs` for the format).

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use super::record::{JournalRecord, RunRecord, TeamSnapshot};
use super::snapshot::{At, BoardItem, STATE_FILE, Summary, TEAM_FILE};
use super::{JOURNAL_FILE, StoreError};
use crate::board::Entry;
use crate::model::Usage;
use crate::plan::{Plan, WorkModule};
use crate::protocol::Assignment;
use crate::record::{HandoffState, ProcessState, RunState};

/// One line of `state.jsonl` as read.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct DeltaIn {
    #[serde(default)]
    task: Option<String>,
    #[serde(default)]
    board_from: Option<usize>,
    #[serde(default)]
    board: Vec<BoardItem<Entry>>,
    #[serde(default)]
    plan_reset: bool,
    #[serde(default)]
    modules: Vec<WorkModule>,
    #[serde(default)]
    module_changes: Vec<serde_json::Map<String, serde_json::Value>>,
    #[serde(default)]
    assignments: Option<Vec<AssignmentIn>>,
    #[serde(default)]
    usage_reset: bool,
    #[serde(default)]
    usage_by_agent: BTreeMap<String, Usage>,
    #[serde(default)]
    handoff: Option<HandoffIn>,
    #[serde(default)]
    principal: Option<crate::record::PrincipalState>,
    #[serde(default)]
    approvals: Option<Vec<crate::record::PausedTurn>>,
}

/// An assignment as saved: a module's id (its member and description), or
/// written out.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum AssignmentIn {
    Module(String),
    Whole(Assignment),
}

#[derive(Debug, Deserialize)]
struct HandoffIn {
    steps_from: usize,
    #[serde(flatten)]
    state: HandoffState,
}

/// Reads a run of format 2: `run.json` (already parsed as `value`),
/// `team.json`, and `state.jsonl` up to where `run.json` says. Returns the
/// record and the length of the log it covers.
pub(crate) fn load(dir: &Path, value: serde_json::Value) -> Result<(RunRecord, u64), StoreError> {
    let run_path = dir.join(super::RUN_FILE);
    let summary: Summary = serde_json::from_value(value)
        .map_err(|e| StoreError::json(&run_path, "not a run record", e))?;
    let team_path = dir.join(TEAM_FILE);
    let team_bytes = super::read_capped(&team_path, super::MAX_RECORD_FILE)
        .map_err(|e| StoreError::io(&team_path, e))?;
    let team = TeamSnapshot::from_saved_json(&team_bytes)
        .map_err(|e| StoreError::json(&team_path, "not a team", e))?;
    let state_path = dir.join(STATE_FILE);
    let corrupt = |path: &Path, detail: String| StoreError::Corrupt {
        path: path.to_path_buf(),
        detail,
    };
    let bytes = if summary.state_len == 0 {
        Vec::new()
    } else {
        super::read_capped(&state_path, super::MAX_LOG_FILE)
            .map_err(|e| StoreError::io(&state_path, e))?
    };
    let covered = usize::try_from(summary.state_len).unwrap_or(usize::MAX);
    if bytes.len() < covered {
        return Err(corrupt(
            &state_path,
            format!(
                "{} bytes long, run.json says {}",
                bytes.len(),
                summary.state_len
            ),
        ));
    }
    let mut deltas = Vec::new();
    for (i, line) in bytes[..covered].split(|b| *b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let d: DeltaIn = serde_json::from_slice(line).map_err(|e| StoreError::Json {
            path: state_path.clone(),
            what: if i == 0 {
                "line 1"
            } else {
                "a checkpoint line"
            },
            source: Box::new(e),
        })?;
        deltas.push(d);
    }
    let mut journal = JournalLines::new(dir, &deltas);
    let mut state = RunState::new(summary.run_id, summary.task.unwrap_or_default());
    let mut steps_seen = false;
    for d in deltas {
        if let Some(task) = d.task {
            state.task = task;
        }
        if let Some(from) = d.board_from {
            state.board.truncate(from);
        }
        for item in d.board {
            let entry = match item {
                BoardItem::Inline(e) => e,
                BoardItem::At(at) => journal.entry(at)?,
            };
            state.board.push(entry);
        }
        if d.plan_reset {
            state.plan = Plan::default();
        }
        for m in d.modules {
            match state.plan.get_mut(&m.task_id) {
                Some(old) => *old = m,
                None => state.plan.tasks.push(m),
            }
        }
        for mut change in d.module_changes {
            // One change to several modules: each in turn.
            let ids = change.remove("task_ids");
            let ids = ids.as_ref().and_then(|v| v.as_array());
            let Some(ids) = ids else {
                change_module(&mut state.plan, change, &mut journal)
                    .map_err(|detail| corrupt(&state_path, detail))?;
                continue;
            };
            for id in ids {
                let mut one = change.clone();
                one.insert("task_id".into(), id.clone());
                change_module(&mut state.plan, one, &mut journal)
                    .map_err(|detail| corrupt(&state_path, detail))?;
            }
        }
        if let Some(a) = d.assignments {
            let mut all = Vec::with_capacity(a.len());
            for a in a {
                all.push(match a {
                    AssignmentIn::Whole(a) => a,
                    AssignmentIn::Module(id) => {
                        let m = state.plan.get(&id).filter(|m| m.assigned_agent.is_some());
                        let Some(m) = m else {
                            let detail =
                                format!("an assignment of module '{id}', which has no member");
                            return Err(corrupt(&state_path, detail));
                        };
                        Assignment {
                            member: m.assigned_agent.clone().unwrap_or_default(),
                            task: m.description.clone(),
                        }
                    }
                });
            }
            state.assignments = all;
        }
        if d.usage_reset {
            state.usage_by_agent.clear();
        }
        state.usage_by_agent.extend(d.usage_by_agent);
        if let Some(h) = d.handoff {
            steps_seen = true;
            let mut steps = state
                .process
                .take_handoff()
                .map(|old| old.steps)
                .unwrap_or_default();
            steps.truncate(h.steps_from);
            let mut hs = h.state;
            steps.append(&mut hs.steps);
            hs.steps = steps;
            state.process = ProcessState::Handoff(hs);
        }
        if let Some(ps) = d.principal {
            state.process = ProcessState::Principal(ps);
        }
        if let Some(a) = d.approvals {
            state.approvals = a;
        }
    }
    let _ = steps_seen;
    // Transcripts saved as turn ids, read back whole.
    super::transcripts::read_back(dir, Some(&state.task), state.plan.tasks.iter_mut())?;
    state.round = summary.round;
    state.phase = summary.phase;
    state.status = summary.status;
    state.answer = summary.answer;
    state.error = summary.error;
    state.usage = summary.usage;
    state.feedback = summary.feedback;
    state.user_notes = summary.user_notes;
    state.round_offset = summary.round_offset;
    let record = RunRecord {
        version: summary.version,
        created_ms: summary.created_ms,
        saved_ms: summary.saved_ms,
        team,
        settings: summary.settings,
        journal_len: summary.journal_len,
        last_turn: summary.last_turn,
        state,
    };
    Ok((record, summary.state_len))
}

/// A module's changed fields put over it.
fn change_module(
    plan: &mut Plan,
    mut change: serde_json::Map<String, serde_json::Value>,
    journal: &mut JournalLines,
) -> Result<(), String> {
    if let Some(at) = change.remove("module_at").and_then(|v| v.as_u64()) {
        let id = change.get("task_id").cloned().unwrap_or_default();
        let id = id.as_str().unwrap_or_default();
        let journaled = journal.module(at, id)?;
        let Some(module) = plan.get_mut(id) else {
            return Err(format!(
                "a change to module '{id}', which is not in the plan"
            ));
        };
        *module = journaled;
        return Ok(());
    }
    let set = change.remove("metadata_set");
    let unset = change.remove("metadata_unset");
    if let Some(at) = change.remove("archive_at").and_then(|v| v.as_u64()) {
        let id = change.get("task_id").cloned().unwrap_or_default();
        let archive = journal.archive(at, id.as_str().unwrap_or_default())?;
        change.insert(
            "context_archive".into(),
            serde_json::to_value(archive).map_err(|e| e.to_string())?,
        );
    }
    let id = change
        .get("task_id")
        .and_then(serde_json::Value::as_str)
        .unwrap_or_default()
        .to_string();
    let Some(module) = plan.get_mut(&id) else {
        return Err(format!(
            "a change to module '{id}', which is not in the plan"
        ));
    };
    let new_archive =
        change.contains_key("context_archive") || change.contains_key("context_turns");
    let mut value = serde_json::to_value(&*module).map_err(|e| e.to_string())?;
    if let serde_json::Value::Object(fields) = &mut value {
        if new_archive {
            fields.remove("context_archive");
        }
        fields.extend(change);
    }
    let mut changed: WorkModule =
        serde_json::from_value(value).map_err(|e| format!("module '{id}': {e}"))?;
    if !new_archive {
        // The transcript as it was (turns still to read included).
        changed.context_archive = std::mem::take(&mut module.context_archive);
        changed.archive_parts = std::mem::take(&mut module.archive_parts);
    }
    if let Some(serde_json::Value::Object(set)) = set {
        changed.metadata.extend(set);
    }
    for key in unset
        .as_ref()
        .and_then(|u| u.as_array())
        .into_iter()
        .flatten()
    {
        if let Some(key) = key.as_str() {
            changed.metadata.remove(key);
        }
    }
    *module = changed;
    Ok(())
}

/// The journal, read once and only when a checkpoint points into it.
struct JournalLines {
    path: std::path::PathBuf,
    from: u64,
    bytes: Option<Vec<u8>>,
}

impl JournalLines {
    fn new(dir: &Path, deltas: &[DeltaIn]) -> Self {
        let from = deltas
            .iter()
            .flat_map(|d| &d.board)
            .filter_map(|b| match b {
                BoardItem::At(at) => Some(at.at),
                BoardItem::Inline(_) => None,
            })
            .chain(
                deltas
                    .iter()
                    .flat_map(|d| &d.module_changes)
                    .filter_map(|c| c.get("archive_at").or(c.get("module_at"))?.as_u64()),
            )
            .min()
            .unwrap_or(0);
        JournalLines {
            path: dir.join(JOURNAL_FILE),
            from,
            bytes: None,
        }
    }

    /// The transcript of module `id` as journaled at byte `at`.
    fn archive(&mut self, at: u64, id: &str) -> Result<Vec<crate::model::Message>, String> {
        self.module(at, id).map(|m| m.context_archive)
    }

    /// Module `id` as journaled at byte `at` (its transcript's turns still
    /// to read).
    fn module(&mut self, at: u64, id: &str) -> Result<WorkModule, String> {
        match self.record(at) {
            Ok(JournalRecord::Module { module, .. }) if module.task_id == id => Ok(module),
            _ => Err(format!(
                "journal.jsonl byte {at}: not module '{id}' as state.jsonl says"
            )),
        }
    }

    /// The journal record at byte `at`.
    fn record(&mut self, at: u64) -> Result<JournalRecord, StoreError> {
        if self.bytes.is_none() {
            let b = super::read_capped_from(&self.path, self.from, super::MAX_LOG_FILE)
                .map_err(|e| StoreError::io(&self.path, e))?;
            self.bytes = Some(b);
        }
        let bytes = self.bytes.as_deref().unwrap_or_default();
        let start = usize::try_from(at.saturating_sub(self.from)).unwrap_or(usize::MAX);
        let line = bytes
            .get(start..)
            .and_then(|rest| rest.split(|b| *b == b'\n').next())
            .filter(|l| !l.is_empty())
            .unwrap_or_default();
        serde_json::from_slice(line)
            .map_err(|e| StoreError::json(&self.path, "not a journal record", e))
    }

    /// The board entry journaled at `at.at`.
    fn entry(&mut self, at: At) -> Result<Entry, StoreError> {
        let corrupt = |detail: String| StoreError::Corrupt {
            path: self.path.clone(),
            detail,
        };
        if self.bytes.is_none() {
            let b = super::read_capped_from(&self.path, self.from, super::MAX_LOG_FILE)
                .map_err(|e| StoreError::io(&self.path, e))?;
            self.bytes = Some(b);
        }
        let bytes = self.bytes.as_deref().unwrap_or_default();
        let start = usize::try_from(at.at.saturating_sub(self.from)).unwrap_or(usize::MAX);
        let line = bytes
            .get(start..)
            .and_then(|rest| rest.split(|b| *b == b'\n').next())
            .filter(|l| !l.is_empty())
            .ok_or_else(|| corrupt(format!("no line at byte {} (entry #{})", at.at, at.seq)))?;
        match serde_json::from_slice::<JournalRecord>(line) {
            Ok(JournalRecord::Entry { entry, .. }) if entry.seq == at.seq => Ok(entry),
            _ => Err(corrupt(format!(
                "byte {}: not board entry #{} as state.jsonl says",
                at.at, at.seq
            ))),
        }
    }
}
