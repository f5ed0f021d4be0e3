//! The plan: the run's work modules, in Roboco's `plan.json` shape.
//!
//! Every assignment becomes a module: `pending` → `ongoing` →
//! `pending_review` → `completed`, or back to `pending` when the master
//! sends it back. A module keeps the transcript of the member that worked
//! it (its context archive).

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::model::Message;

/// Where a work module stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ModuleStatus {
    /// Not started.
    Pending,
    /// A member is working on it.
    Ongoing,
    /// The draft is on the board, waiting for the master's review.
    PendingReview,
    /// Accepted.
    Completed,
}

impl ModuleStatus {
    /// The snake_case name.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            ModuleStatus::Pending => "pending",
            ModuleStatus::Ongoing => "ongoing",
            ModuleStatus::PendingReview => "pending_review",
            ModuleStatus::Completed => "completed",
        }
    }

    /// Parses a snake_case name (also `in_progress` for `ongoing`).
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "pending" => Some(ModuleStatus::Pending),
            "ongoing" | "in_progress" => Some(ModuleStatus::Ongoing),
            "pending_review" => Some(ModuleStatus::PendingReview),
            "completed" | "done" => Some(ModuleStatus::Completed),
            _ => None,
        }
    }
}

impl fmt::Display for ModuleStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One work module.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[non_exhaustive]
#[serde(from = "ModuleFile")]
pub struct WorkModule {
    /// `task_001`, `task_002`, ...
    pub task_id: String,
    /// What is to be done.
    pub description: String,
    /// Where it stands.
    pub status: ModuleStatus,
    /// The member working on it.
    #[serde(default)]
    pub assigned_agent: Option<String>,
    /// The round it is assigned for (1 for the plan's first assignments;
    /// a module sent back moves to the next round). `None` until a member
    /// is assigned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round: Option<u32>,
    /// Free-form facts: timestamps, who added it, earlier descriptions.
    #[serde(default)]
    pub metadata: serde_json::Map<String, serde_json::Value>,
    /// The full transcript of the member's work on it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub context_archive: Vec<Message>,
    /// The structured deliverable an associate handed in (a principal
    /// team's), valid per its profile's schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deliverable: Option<serde_json::Value>,
    /// Where each piece of `context_archive` came from (the run store
    /// writes the turns' ids instead of their messages).
    #[serde(skip)]
    pub(crate) archive_parts: Vec<ArchivePart>,
}

impl PartialEq for WorkModule {
    /// Modules are equal when what they say is: where their transcripts
    /// came from is not compared.
    fn eq(&self, other: &Self) -> bool {
        self.task_id == other.task_id
            && self.description == other.description
            && self.status == other.status
            && self.assigned_agent == other.assigned_agent
            && self.round == other.round
            && self.metadata == other.metadata
            && self.context_archive == other.context_archive
            && self.deliverable == other.deliverable
    }
}

impl WorkModule {
    /// Makes this module equal (`==`) to `now`, copying only what differs: a
    /// checkpoint keeps the modules it wrote, to write only what changed
    /// next time, and between two checkpoints most modules change a field
    /// or two (a status, a few metadata keys, a transcript that grew).
    /// Copied whole, with their transcripts, a thousand took milliseconds
    /// on the run's path at every checkpoint.
    pub(crate) fn update_from(&mut self, now: &WorkModule) {
        // Every field named: a new one must be copied here too.
        let WorkModule {
            task_id,
            description,
            status,
            assigned_agent,
            round,
            metadata,
            context_archive,
            deliverable,
            archive_parts,
        } = now;
        if self.task_id != *task_id {
            self.task_id.clone_from(task_id);
        }
        if self.description != *description {
            self.description.clone_from(description);
        }
        self.status = *status;
        if self.assigned_agent != *assigned_agent {
            self.assigned_agent.clone_from(assigned_agent);
        }
        self.round = *round;
        if self.metadata != *metadata {
            self.metadata.retain(|k, _| metadata.contains_key(k));
            for (k, v) in metadata {
                if self.metadata.get(k) != Some(v) {
                    self.metadata.insert(k.clone(), v.clone());
                }
            }
        }
        let kept = self.context_archive.len();
        if kept <= context_archive.len() && self.context_archive[..] == context_archive[..kept] {
            // A transcript grows at its end.
            self.context_archive
                .extend_from_slice(&context_archive[kept..]);
        } else {
            self.context_archive.clone_from(context_archive);
        }
        if self.deliverable != *deliverable {
            self.deliverable.clone_from(deliverable);
        }
        if self.archive_parts != *archive_parts {
            self.archive_parts.clone_from(archive_parts);
        }
    }
}

/// The plan: every work module of a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// The modules, in the order they were added.
    pub tasks: Vec<WorkModule>,
}

impl Plan {
    /// Adds a pending module and returns its id.
    pub fn add(
        &mut self,
        description: impl Into<String>,
        assigned_agent: Option<String>,
    ) -> String {
        let task_id = format!("task_{:03}", self.tasks.len() + 1);
        self.tasks.push(WorkModule {
            task_id: task_id.clone(),
            description: description.into(),
            status: ModuleStatus::Pending,
            assigned_agent,
            round: None,
            metadata: serde_json::Map::new(),
            context_archive: Vec::new(),
            deliverable: None,
            archive_parts: Vec::new(),
        });
        task_id
    }

    /// The module with this id.
    #[must_use]
    pub fn get(&self, task_id: &str) -> Option<&WorkModule> {
        self.tasks.iter().find(|t| t.task_id == task_id)
    }

    /// The module with this id, to change.
    pub fn get_mut(&mut self, task_id: &str) -> Option<&mut WorkModule> {
        self.tasks.iter_mut().find(|t| t.task_id == task_id)
    }
}

/// A module as `plan.json` holds it. Runs before issue 15 kept the round
/// in `metadata.round`; it is read from there when the field is absent.
#[derive(Deserialize)]
struct ModuleFile {
    task_id: String,
    description: String,
    status: ModuleStatus,
    #[serde(default)]
    assigned_agent: Option<String>,
    #[serde(default)]
    round: Option<u32>,
    #[serde(default)]
    metadata: serde_json::Map<String, serde_json::Value>,
    #[serde(default)]
    context_archive: Vec<Message>,
    /// The transcript as references to `turns.jsonl` (see [`SavedPart`]).
    #[serde(default)]
    context_turns: Vec<SavedPart<'static>>,
    #[serde(default)]
    deliverable: Option<serde_json::Value>,
}

impl From<ModuleFile> for WorkModule {
    fn from(mut f: ModuleFile) -> Self {
        let old = f.metadata.remove("round");
        let round = f.round.or_else(|| {
            old.as_ref()
                .and_then(serde_json::Value::as_u64)
                .and_then(|r| u32::try_from(r).ok())
        });
        // A `round` in metadata that is not a round number stays as it was.
        if let (None, Some(v)) = (round, old) {
            f.metadata.insert("round".into(), v);
        }
        let mut module = WorkModule {
            task_id: f.task_id,
            description: f.description,
            status: f.status,
            assigned_agent: f.assigned_agent,
            round,
            metadata: f.metadata,
            context_archive: f.context_archive,
            deliverable: f.deliverable,
            archive_parts: Vec::new(),
        };
        if !f.context_turns.is_empty() {
            module.archive_parts = kept(module.context_archive.len());
            for part in f.context_turns {
                module.push_saved(part);
            }
        }
        module
    }
}

mod archive;

#[cfg(test)]
pub(crate) use archive::MAX_TASK_IN_ARCHIVE;
use archive::{ArchivePart, SavedPart, kept};
pub(crate) use archive::{
    SavedModule, SavedPlan, Transcript, reply, serialize_saved, without_long_tasks,
};

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 15: the round is a field; a plan.json written before, with
    /// the round in `metadata.round`, still loads with its round.
    #[test]
    fn an_old_plan_with_metadata_round_still_loads() {
        let old = r#"{"tasks": [
            {"task_id": "task_001", "description": "d", "status": "pending_review",
             "assigned_agent": "writer", "metadata": {"round": 2, "assigned_ms": 5}},
            {"task_id": "task_002", "description": "e", "status": "pending",
             "metadata": {"seeded": true}}
        ]}"#;
        let plan: Plan = serde_json::from_str(old).unwrap();
        assert_eq!(plan.tasks[0].round, Some(2));
        assert_eq!(plan.tasks[0].metadata.get("round"), None);
        assert_eq!(plan.tasks[0].metadata["assigned_ms"], 5);
        assert_eq!(plan.tasks[1].round, None);
        // Written back, the round is a field of its own, and reads again.
        let json = serde_json::to_value(&plan).unwrap();
        assert_eq!(json["tasks"][0]["round"], 2);
        assert!(json["tasks"][1].get("round").is_none());
        assert_eq!(serde_json::from_value::<Plan>(json).unwrap(), plan);
    }

    /// A checkpoint's copy of a module, brought up to date field by
    /// field, says what the module says, whatever changed.
    #[test]
    fn a_module_updated_from_another_is_a_copy_of_it() {
        use crate::model::Role;
        let msg = |role, text: &str| Message {
            role,
            content: text.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
        };
        let mut plan = Plan::default();
        plan.add("write the intro", Some("writer".into()));
        let mut was = plan.tasks[0].clone();
        was.metadata.insert("gone".into(), 1.into());
        was.metadata.insert("changed".into(), "old".into());
        was.metadata.insert("same".into(), true.into());
        was.context_archive = vec![msg(Role::System, "s"), msg(Role::User, "u")];
        was.archive_parts = vec![ArchivePart::Kept { len: 2 }];

        // Grown: a status, metadata keys added, changed and removed, the
        // transcript longer, a deliverable, where the transcript came from.
        let mut now = was.clone();
        now.status = ModuleStatus::Completed;
        now.round = Some(2);
        now.metadata.remove("gone");
        now.metadata.insert("changed".into(), "new".into());
        now.metadata.insert("added".into(), 7.into());
        now.context_archive.push(msg(Role::Assistant, "draft"));
        now.deliverable = Some(serde_json::json!({"ok": true}));
        now.archive_parts = vec![ArchivePart::Turn {
            turn: 3,
            from: 0,
            reply: true,
            len: Some(3),
        }];
        let mut copy = was.clone();
        copy.update_from(&now);
        assert_eq!(copy, now);
        assert_eq!(copy.archive_parts, now.archive_parts);

        // Replaced: another transcript, description, member and id.
        let mut other = now.clone();
        other.task_id = "task_009".into();
        other.description = "write the end".into();
        other.assigned_agent = None;
        other.context_archive = vec![msg(Role::User, "again")];
        other.deliverable = None;
        other.metadata.clear();
        copy.update_from(&other);
        assert_eq!(copy, other);
        assert_eq!(copy.archive_parts, other.archive_parts);

        // Transcripts cut and grown again (a draft redone), shortened,
        // emptied and started: the kept one is not always a prefix.
        let s = || msg(Role::System, "s");
        let u = || msg(Role::User, "u");
        let a = |t: &str| msg(Role::Assistant, t);
        let transcripts = [
            vec![s(), u(), a("draft")],
            vec![s(), u(), a("redraft")],
            vec![s(), u(), a("x"), a("y")],
            vec![s(), u()],
            vec![],
            vec![s()],
        ];
        let mut copy = was.clone();
        for t in transcripts {
            let mut next = was.clone();
            next.context_archive = t;
            copy.update_from(&next);
            assert_eq!(copy.context_archive, next.context_archive);
        }
    }

    #[test]
    fn modules_get_sequential_ids_and_roboco_shape() {
        let mut plan = Plan::default();
        assert_eq!(plan.add("one", Some("writer".into())), "task_001");
        assert_eq!(plan.add("two", None), "task_002");
        plan.get_mut("task_002").unwrap().status = ModuleStatus::Ongoing;
        let json = serde_json::to_value(&plan).unwrap();
        assert_eq!(json["tasks"][1]["status"], "ongoing");
        assert_eq!(json["tasks"][0]["assigned_agent"], "writer");
        assert_eq!(
            ModuleStatus::parse("in_progress"),
            Some(ModuleStatus::Ongoing)
        );
    }
}
