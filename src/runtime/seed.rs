//! What a run launched by another agent starts with: the work modules it
//! drafted, and its name as the parent of every event of the run.

use super::{RunState, Runtime};
use crate::plan::ModuleStatus;

impl Runtime {
    /// A new run's state with the seeded modules, marked as added by the
    /// parent.
    pub(crate) fn seeded(&self, mut state: RunState) -> RunState {
        let by = self
            .config
            .parent
            .clone()
            .unwrap_or_else(|| "caller".into());
        state.plan = self.config.seed.clone();
        for m in &mut state.plan.tasks {
            m.status = match m.status {
                ModuleStatus::Completed => ModuleStatus::Completed,
                _ => ModuleStatus::Pending,
            };
            m.metadata
                .entry("added_by")
                .or_insert_with(|| serde_json::Value::from(by.clone()));
            m.metadata
                .insert("seeded".into(), serde_json::Value::Bool(true));
        }
        state
    }
}
