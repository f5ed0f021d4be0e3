//! The handoff process: one agent active at a time, passing control by
//! handoff (see DESIGN.md, "The handoff process").

mod state;

pub use state::{HandoffState, HandoffStep};
