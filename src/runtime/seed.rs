//! What a run launched by another agent starts with: the work modules it
//! drafted, and its name as the parent of every event of the run.

use super::{RunState, Runtime};
use crate::plan::{ModuleStatus, Plan};

impl Runtime {
    /// Starts new runs with these work modules: the master's first turn
    /// sees every open one as a pending module to assign (an assignment
    /// that names a module's id or repeats its description takes that
    /// module over instead of adding one). Used by `boardroom chat`, where
    /// the partner drafts the modules.
    ///
    /// # Examples
    ///
    /// ```
    /// use boardroom::{Runtime, Team};
    /// use boardroom::plan::Plan;
    /// use boardroom::testing::Sim;
    ///
    /// let mut plan = Plan::default();
    /// plan.add("Find a venue for 20 people", None);
    /// let run = Runtime::new(Team::builtin()?, Sim::new())
    ///     .modules(plan)
    ///     .parent("partner")
    ///     .run("Plan a team offsite")?;
    /// assert_eq!(run.plan.tasks[0].task_id, "task_001");
    /// assert_eq!(run.plan.tasks[0].metadata["added_by"], "partner");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn modules(mut self, plan: Plan) -> Self {
        self.set().seed = plan;
        self
    }

    /// Names the agent that launched the run (`partner`): the parent of
    /// every event that has no other (the master's), so a viewer draws the
    /// run under it.
    #[must_use]
    pub fn parent(mut self, agent: impl Into<String>) -> Self {
        self.set().parent = Some(agent.into());
        self
    }

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
