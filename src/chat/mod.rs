//! The partner: the team's front desk in `boardroom chat`.
//!
//! A [`Chat`] holds one conversation between the user and the team's
//! partner agent (`role: partner`). The partner clarifies the request,
//! drafts work modules with the plan tools, and proposes to launch the
//! team with its `launch_team` tool; the chat intercepts that call and
//! asks the user ([`ChatIo::consent`]): consent is the user's keystroke,
//! never the model's word. A launched run works on its own thread; its
//! news (a module completed, the run finished, failed or asks the user)
//! reaches the partner's [`Inbox`] and the partner tells the user.
//!
//! Everything the partner receives goes through its inbox, drained before
//! each of its turns in priority order, each item made model-readable by
//! the ingestor for its kind ([`ingest()`]).

mod error;
mod news;
mod session;
mod store;
mod tools;

pub use crate::core::{Inbox, InboxItem, Received, TeamNews, ingest};
pub use error::ChatError;
pub use session::{Chat, ChatEvent, ChatIo, TurnEnd};
pub use store::{ChatRecord, ChatStore};
