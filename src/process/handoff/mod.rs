//! The handoff process: one agent active at a time, passing control by
//! handoff (see DESIGN.md, "The handoff process", and `driver.rs`).

mod driver;
mod remember;
pub(crate) mod resume;
mod route;
mod state;
mod turn;

pub(crate) use driver::Handoff;
