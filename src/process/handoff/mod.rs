//! The handoff process: one agent active at a time, passing control by
//! handoff (see DESIGN.md, "The handoff process", and `driver.rs`).

mod driver;
mod remember;
pub(crate) mod resume;
mod state;

pub(crate) use driver::Handoff;
pub(crate) use state::HandoffStep;
