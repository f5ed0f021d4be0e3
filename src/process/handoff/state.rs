//! What a handoff run keeps between steps: the saved types live in
//! `crate::record` (`HandoffState`, `HandoffStep`, `HandoffHow`).

pub(crate) use crate::record::{HandoffHow, HandoffState, HandoffStep};

/// The author of a user's message in the history.
pub(crate) const USER: &str = "user";
