//! The principal process (Common Ground, seeds 000 and 001): a principal
//! manages work modules by tools and dispatches them to associates that
//! work in parallel, each handing in a JSON deliverable the principal
//! reviews (see `driver.rs` for the loop, and docs/teams.md).
//!
//! - `driver.rs`: the process as the runtime starts it, its steps, how
//!   it saves and ends;
//! - `turn.rs`: the principal's turn and its tools' effects;
//! - `dispatch.rs`: associates on the member pool, deliveries;
//! - `tools.rs`: the tools' specs and `manage_work_modules`;
//! - `deliverable.rs`: a deliverable read and checked against its schema;
//! - `prompt.rs`: what the principal and the associates read (briefings by
//!   the team's handover protocols);
//! - `report.rs`: the answer of a run that ended before its report;
//! - `resume.rs`: going on from a saved run.

mod deliverable;
mod dispatch;
mod driver;
mod prompt;
mod report;
pub(crate) mod resume;
mod tools;
mod turn;

pub(crate) use driver::PrincipalRun;
