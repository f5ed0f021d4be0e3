//! Name resolution that remembers its answer for a while.
//!
//! ureq resolves the host on every request, before it looks for a pooled
//! connection, and with a timeout set (every attempt has one: what is left
//! of the call's deadline) its default resolver spawns a thread for each
//! lookup so that it can give up on time. At a thousand calls a second
//! that is a thousand short threads a second (stack maps, unmaps and TLB
//! shootdowns: the largest kernel cost of a round over HTTP before this).
//! This resolver asks ureq's default resolver once per host and keeps the
//! addresses for [`TTL`]; a failed lookup is not kept. Clones share their
//! cache (an endpoint's agents use one).

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use ureq::config::Config;
use ureq::http::Uri;
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::NextTimeout;

/// How long an answer is reused: short enough that a DNS change is seen
/// within a run, long enough that a round resolves once.
pub(crate) const TTL: Duration = Duration::from_secs(30);

/// ureq's default resolver behind a small cache of recent answers.
#[derive(Debug, Default)]
pub(crate) struct CachingResolver {
    inner: DefaultResolver,
    /// The `scheme://authority` asked, its addresses, and when.
    cache: Arc<Mutex<Vec<Answer>>>,
}

type Answer = (String, ResolvedSocketAddrs, Instant);

impl Clone for CachingResolver {
    fn clone(&self) -> Self {
        CachingResolver {
            inner: DefaultResolver::default(),
            cache: Arc::clone(&self.cache),
        }
    }
}

/// Hosts remembered at once (an agent talks to one endpoint; redirects
/// may add a few).
const MAX_HOSTS: usize = 8;

impl Resolver for CachingResolver {
    fn resolve(
        &self,
        uri: &Uri,
        config: &Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let key = format!(
            "{}://{}",
            uri.scheme_str().unwrap_or(""),
            uri.authority().map_or("", |a| a.as_str())
        );
        let now = Instant::now();
        {
            let mut cache = self.cache.lock();
            cache.retain(|(_, _, at)| now.saturating_duration_since(*at) < TTL);
            if let Some((_, addrs, _)) = cache.iter().find(|(k, _, _)| *k == key) {
                return Ok(addrs.clone());
            }
        }
        // Not held across the lookup: two first calls may both look up.
        let addrs = self.inner.resolve(uri, config, timeout)?;
        let mut cache = self.cache.lock();
        if cache.len() >= MAX_HOSTS {
            cache.remove(0);
        }
        cache.push((key, addrs.clone(), now));
        Ok(addrs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_reused_and_a_failure_is_not_kept() {
        let r = CachingResolver::default();
        let config = Config::default();
        let timeout = NextTimeout {
            after: ureq::unversioned::transport::time::Duration::from_secs(5),
            ..NextTimeout::default()
        };
        let uri: Uri = "http://127.0.0.1:8080/v1".parse().unwrap();
        let first = r.resolve(&uri, &config, timeout).unwrap();
        assert_eq!(first[0].port(), 8080);
        assert_eq!(r.cache.lock().len(), 1);
        let again = r.resolve(&uri, &config, timeout).unwrap();
        assert_eq!(first, again);
        assert_eq!(r.cache.lock().len(), 1, "answered from the cache");
        let bad: Uri = "http://host.invalid:1/v1".parse().unwrap();
        assert!(r.resolve(&bad, &config, timeout).is_err());
        assert_eq!(r.cache.lock().len(), 1, "a failure is not kept");
    }
}
