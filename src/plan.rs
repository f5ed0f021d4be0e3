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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
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
    /// Free-form facts: round, timestamps, who added it.
    #[serde(default)]
    pub metadata: serde_json::Map<String, serde_json::Value>,
    /// The full transcript of the member's work on it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub context_archive: Vec<Message>,
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
            metadata: serde_json::Map::new(),
            context_archive: Vec::new(),
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

#[cfg(test)]
mod tests {
    use super::*;

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
