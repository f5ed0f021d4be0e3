//! An endpoint's HTTP clients: its pool of kept-alive connections, split
//! in shards.
//!
//! One idle connection is kept for every slot of the endpoint's limit, so
//! that the next round reuses them. ureq keeps an agent's idle connections
//! in one list that every request scans for a connection to its host (and
//! prunes on every return): with a thousand idle connections that is a
//! thousand comparisons a request, a million a round (14% of a 1024-member
//! round's CPU, measured; with agents of 64 it was still 7% of the
//! client's CPU at 1024 members, and their locks were contended). The
//! pool is split into agents of at most [`SHARD`] connections each, and a
//! request goes through the agent its caller's name hashes to: a member
//! finds the connection it used last round in its own shard, one agent's
//! calls one after another keep to one connection, a round of a thousand
//! spreads over sixty-four agents, and a request scans one shard. (Taking agents in turn, or by place in flight,
//! was tried: a connection then went back to a shard the member's next
//! call did not look in, and a 1024-member run opened 1700 connections
//! instead of 650.)
//!
//! Each connection's buffers are small (ureq's default is 128 KiB each
//! way, a quarter MiB a connection): requests are small and answers are
//! read in pieces (the input buffer grows for a larger header). Timeouts
//! are set per attempt, from the time left before the call's deadline; the
//! resolver keeps its answers (see [`super::resolve`]); every connection
//! is wrapped so that the drain after `[DONE]` is bounded in time (see
//! [`super::drain`]).

use super::resolve::CachingResolver;

/// The size of each of a connection's two buffers.
const CONNECTION_BUFFER: usize = 16 * 1024;

/// Idle connections a shard is sized for; it keeps up to twice as many,
/// since names do not hash evenly. ureq scans a shard's idle list (and
/// prunes it) on every checkout and return, under the shard's lock: small
/// shards keep both short.
pub(crate) const SHARD: usize = 16;

/// The agents of one endpoint.
#[derive(Debug)]
pub(crate) struct Agents {
    shards: Vec<ureq::Agent>,
}

impl Agents {
    /// Agents that keep up to `idle` connections between them.
    pub(crate) fn new(idle: usize) -> Agents {
        let idle = idle.max(1);
        let count = idle.div_ceil(SHARD);
        let per_shard = 2 * idle.div_ceil(count);
        let resolver = CachingResolver::default();
        let shards = (0..count)
            .map(|_| {
                let config = ureq::Agent::config_builder()
                    .http_status_as_error(false)
                    // A redirect is reported, not followed: a 301/302
                    // would turn the POST into a GET (and carry the key
                    // to wherever it points).
                    .max_redirects(0)
                    .max_idle_connections(per_shard.max(10))
                    .max_idle_connections_per_host(per_shard.max(3))
                    .input_buffer_size(CONNECTION_BUFFER)
                    .output_buffer_size(CONNECTION_BUFFER)
                    .build();
                ureq::Agent::with_parts(
                    config,
                    ureq::unversioned::transport::Connector::chain(
                        ureq::unversioned::transport::DefaultConnector::default(),
                        super::drain::DrainBound,
                    ),
                    resolver.clone(),
                )
            })
            .collect();
        Agents { shards }
    }

    /// The agent for the calls of the agent (team member) named `name`.
    pub(crate) fn for_caller(&self, name: &str) -> &ureq::Agent {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        name.hash(&mut h);
        &self.shards[(h.finish() % self.shards.len() as u64) as usize]
    }

    /// How many agents share the pool.
    #[cfg(test)]
    pub(crate) fn shards(&self) -> usize {
        self.shards.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pool_of_1024_is_64_shards_each_caller_keeping_to_one() {
        let a = Agents::new(1024);
        assert_eq!(a.shards(), 64);
        assert!(std::ptr::eq(a.for_caller("m0001"), a.for_caller("m0001")));
        let mut used = std::collections::HashMap::new();
        for i in 0..1024 {
            let agent: *const ureq::Agent = a.for_caller(&format!("m{i:04}"));
            *used.entry(agent).or_insert(0) += 1;
        }
        assert_eq!(used.len(), 64, "every shard used");
        assert!(
            used.values().all(|&n| n < 2 * SHARD),
            "no shard over its size: {used:?}"
        );
        assert_eq!(Agents::new(8).shards(), 1);
        assert_eq!(Agents::new(4096).shards(), 256);
    }
}
