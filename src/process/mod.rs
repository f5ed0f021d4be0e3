//! The processes: one driver per way a team works, each over the run core
//! (`crate::core`). A driver implements [`Driver`](crate::core::Driver)
//! (start, resume, run) and [`Phases`](crate::core::Phases) (its steps
//! through the shared loop); it owns its state and its prompts, and knows
//! nothing of the other drivers. The runtime picks one by the team's
//! process (`runtime/start.rs`).

pub(crate) mod blackboard;
pub(crate) mod handoff;
pub(crate) mod memory_note;
pub(crate) mod principal;
