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
    /// What [`Agents::new`] was given: a release builds the same again.
    idle: usize,
    resolver: CachingResolver,
    shards: parking_lot::RwLock<std::sync::Arc<[ureq::Agent]>>,
}

impl Agents {
    /// Agents that keep up to `idle` connections between them.
    pub(crate) fn new(idle: usize) -> Agents {
        let resolver = CachingResolver::default();
        Agents {
            idle,
            shards: parking_lot::RwLock::new(build(idle, &resolver).into()),
            resolver,
        }
    }

    /// The agent for the calls of the agent (team member) named `name`.
    pub(crate) fn for_caller(&self, name: &str) -> ureq::Agent {
        let shards = self.shards.read();
        shards[shard_of(name, shards.len())].clone()
    }

    /// Lets go of the idle connections but those of `keep`'s shard: the
    /// calls from now on go through fresh agents (`keep`'s own, the
    /// master's that reviews next, goes on), and the old ones (with the
    /// connections a wide round left open, a thousand of them after a
    /// 1024-member round) are dropped on a thread of their own, so that
    /// closing them (tens of microseconds of kernel time each) overlaps
    /// the call the run makes next instead of delaying the end of the
    /// process. A call in flight keeps its agent until it is done. A pool
    /// of one shard is kept.
    pub(crate) fn release_idle(&self, keep: &str) {
        let mut shards = self.shards.write();
        if shards.len() < 2 {
            return;
        }
        let kept = shard_of(keep, shards.len());
        let mut fresh = build(self.idle, &self.resolver);
        fresh[kept] = shards[kept].clone();
        let old = std::mem::replace(&mut *shards, fresh.into());
        drop(shards);
        let closer = move || drop(old);
        if let Err(e) = std::thread::Builder::new()
            .name("boardroom-close-idle".into())
            .spawn(closer)
        {
            log::debug!(
                "no thread to close idle connections on ({e}); they close with the process"
            );
        }
    }

    /// How many agents share the pool.
    #[cfg(test)]
    pub(crate) fn shards(&self) -> usize {
        self.shards.read().len()
    }
}

/// The shard the calls of `name` go through, of `count`.
fn shard_of(name: &str, count: usize) -> usize {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    name.hash(&mut h);
    (h.finish() % count as u64) as usize
}

/// The shards of a pool of `idle` idle connections.
fn build(idle: usize, resolver: &CachingResolver) -> Vec<ureq::Agent> {
    let idle = idle.max(1);
    let count = idle.div_ceil(SHARD);
    let per_shard = 2 * idle.div_ceil(count);
    (0..count)
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
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader, Write};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn a_pool_of_1024_is_64_shards_each_caller_keeping_to_one() {
        let a = Agents::new(1024);
        assert_eq!(a.shards(), 64);
        let mut used = std::collections::HashMap::new();
        for i in 0..1024 {
            *used.entry(shard_of(&format!("m{i:04}"), 64)).or_insert(0) += 1;
        }
        assert_eq!(used.len(), 64, "every shard used");
        assert!(
            used.values().all(|&n| n < 2 * SHARD),
            "no shard over its size: {used:?}"
        );
        assert_eq!(Agents::new(8).shards(), 1);
        assert_eq!(Agents::new(4096).shards(), 256);
    }

    /// A keep-alive HTTP server on 127.0.0.1 that counts the connections
    /// it accepted and those the client closed.
    fn server() -> (String, Arc<AtomicUsize>, Arc<AtomicUsize>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        let (opened, closed) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let (o, c) = (Arc::clone(&opened), Arc::clone(&closed));
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                o.fetch_add(1, Ordering::SeqCst);
                let c = Arc::clone(&c);
                std::thread::spawn(move || {
                    let mut out = conn.try_clone().unwrap();
                    let mut lines = BufReader::new(conn);
                    let mut line = String::new();
                    loop {
                        line.clear();
                        match lines.read_line(&mut line) {
                            Ok(0) | Err(_) => break,
                            Ok(_) if line == "\r\n" => {
                                let _ = out
                                    .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
                            }
                            Ok(_) => {}
                        }
                    }
                    c.fetch_add(1, Ordering::SeqCst);
                });
            }
        });
        (url, opened, closed)
    }

    #[test]
    fn releasing_the_idle_connections_closes_them_but_the_kept_callers() {
        let (url, opened, closed) = server();
        let agents = Agents::new(256);
        let call = |name: &str| {
            let mut r = agents.for_caller(name).get(&url).call().unwrap();
            assert_eq!(r.body_mut().read_to_string().unwrap(), "ok");
        };
        // Callers spread over the shards, each shard keeps its connection
        // (calls one after another: one connection a shard).
        call("master");
        for i in 0..64 {
            call(&format!("m{i:04}"));
        }
        let kept = opened.load(Ordering::SeqCst);
        assert!(kept > 2, "{kept}");
        assert_eq!(closed.load(Ordering::SeqCst), 0);
        agents.release_idle("master");
        // Closed by the closing thread, all but the master's shard's one
        // (bounded only so that a failure ends).
        let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while closed.load(Ordering::SeqCst) < kept - 1 && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(
            closed.load(Ordering::SeqCst),
            kept - 1,
            "every idle connection closed"
        );
        // The master's next call reuses its connection; another caller's
        // opens a new one.
        call("master");
        assert_eq!(opened.load(Ordering::SeqCst), kept);
        let shards = agents.shards();
        let other = (0..64)
            .map(|i| format!("m{i:04}"))
            .find(|m| shard_of(m, shards) != shard_of("master", shards))
            .unwrap();
        call(&other);
        assert_eq!(opened.load(Ordering::SeqCst), kept + 1);
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert_eq!(closed.load(Ordering::SeqCst), kept - 1, "the master's kept");
    }
}
