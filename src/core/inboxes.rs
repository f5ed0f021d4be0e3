//! Every agent of a run has an inbox: the process puts each turn's ask in
//! it, profiles' observers put their observations in it, and the turn
//! takes all of it at once ([`Core::deliver`]). The inboxes are split in
//! shards by the agent's name, as the usage book is, so a wide round does
//! not queue on one lock.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;

use super::inbox::{Inbox, InboxItem, Received};
use super::run::Core;

/// The shards of [`Inboxes`].
const SHARDS: usize = 64;

/// One shard: its agents' inboxes by name.
type Shard = Mutex<HashMap<String, Arc<Inbox>>>;

/// The inboxes of a run's agents, made on first use.
pub(crate) struct Inboxes {
    shards: Box<[Shard]>,
}

impl Default for Inboxes {
    fn default() -> Self {
        Inboxes {
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
        }
    }
}

impl Inboxes {
    /// The inbox of `agent`.
    pub(crate) fn of(&self, agent: &str) -> Arc<Inbox> {
        let shard = &self.shards[crate::util::shard::shard_of(agent, self.shards.len())];
        let mut shard = shard.lock();
        match shard.get(agent) {
            Some(inbox) => Arc::clone(inbox),
            None => Arc::clone(shard.entry(agent.to_string()).or_default()),
        }
    }
}

impl Core<'_> {
    /// The inbox of `agent` (observers and other agents push into it).
    pub(crate) fn inbox(&self, agent: &str) -> Arc<Inbox> {
        self.inboxes.of(agent)
    }

    /// `ask` with everything waiting in `agent`'s inbox, in priority
    /// order: what the agent's turn reads after its system prompt.
    pub(crate) fn deliver(&self, agent: &str, ask: InboxItem) -> Vec<Received> {
        self.inboxes.of(agent).deliver(ask)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_inbox_per_agent() {
        let boxes = Inboxes::default();
        boxes.of("a").push(InboxItem::user("x"));
        assert_eq!(boxes.of("a").len(), 1);
        assert!(boxes.of("b").is_empty());
    }
}
