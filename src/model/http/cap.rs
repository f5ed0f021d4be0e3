//! A plain counting semaphore: the hard cap an explicit `max_in_flight`
//! sets on one model (the endpoint's adaptive limit is [`super::limit`]).

use std::time::Instant;

use parking_lot::{Condvar, Mutex};

/// At most `max` holders at once.
#[derive(Debug)]
pub(crate) struct Limit {
    max: usize,
    in_use: Mutex<usize>,
    freed: Condvar,
}

/// A held slot; dropping it frees the slot.
#[derive(Debug)]
pub(crate) struct Permit<'a> {
    limit: &'a Limit,
}

impl Limit {
    /// A limit of `max` (at least 1).
    pub(crate) fn new(max: usize) -> Self {
        Limit {
            max: max.max(1),
            in_use: Mutex::new(0),
            freed: Condvar::new(),
        }
    }

    /// The limit.
    pub(crate) fn max(&self) -> usize {
        self.max
    }

    /// Blocks until a slot is free and takes it.
    #[cfg(test)]
    pub(crate) fn acquire(&self) -> Permit<'_> {
        let mut in_use = self.in_use.lock();
        while *in_use >= self.max {
            self.freed.wait(&mut in_use);
        }
        *in_use += 1;
        Permit { limit: self }
    }

    /// As [`Limit::acquire`], but gives up at `deadline` (`None`); no
    /// deadline waits as long as it takes.
    pub(crate) fn acquire_until(&self, deadline: Option<Instant>) -> Option<Permit<'_>> {
        let mut in_use = self.in_use.lock();
        while *in_use >= self.max {
            match deadline {
                None => self.freed.wait(&mut in_use),
                Some(d) => {
                    if self.freed.wait_until(&mut in_use, d).timed_out() && *in_use >= self.max {
                        return None;
                    }
                }
            }
        }
        *in_use += 1;
        Some(Permit { limit: self })
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        *self.limit.in_use.lock() -= 1;
        self.limit.freed.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    #[test]
    fn never_more_than_max_holders() {
        let limit = Limit::new(3);
        let now = AtomicUsize::new(0);
        let peak = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..12 {
                s.spawn(|| {
                    for _ in 0..50 {
                        let _p = limit.acquire();
                        let n = now.fetch_add(1, Ordering::SeqCst) + 1;
                        peak.fetch_max(n, Ordering::SeqCst);
                        std::thread::yield_now();
                        now.fetch_sub(1, Ordering::SeqCst);
                    }
                });
            }
        });
        assert!(peak.load(Ordering::SeqCst) <= 3);
        assert_eq!(*limit.in_use.lock(), 0);
    }

    #[test]
    fn acquire_until_gives_up_at_the_deadline() {
        let limit = Limit::new(1);
        let held = limit.acquire();
        let soon = Instant::now() + Duration::from_millis(20);
        assert!(limit.acquire_until(Some(soon)).is_none());
        drop(held);
        assert!(limit.acquire_until(Some(soon)).is_some());
    }
}
