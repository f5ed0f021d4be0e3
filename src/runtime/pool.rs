//! Running one phase's agents in parallel, on threads sized for blocking
//! I/O: the one seam between a process driver and the executor that runs
//! its members ([`Executor`](super::Executor)).
//!
//! Model calls block on the network, so a round needs one thread per
//! assignment (a member may have several; capped by `max_parallel`), not
//! one per core: on rayon's global pool a 2-core machine would run two
//! members at once. Both executors behind [`Pool`] keep the same promises:
//! a pool belongs to one run and lives in a `std::thread::scope` that spans
//! the run's phases (jobs borrow what the run owns; no `unsafe`); its
//! threads are named, started once (ahead of time with [`Pool::prestart`])
//! and serve every phase; it never has more threads than the cap; a job
//! that panics is caught at the pool boundary and becomes an `Err` with
//! the panic's text; a thread that cannot be started leaves the jobs to the
//! threads there are, and a phase with none fails as a whole
//! ([`PoolError`]); [`Pool::release`] ends the threads early, and every
//! thread is joined before the run returns.
//!
//! - `rayon_pool.rs`: a rayon `ThreadPool` owned by the run.
//! - `threads.rs`: the run's own pool of parked threads, which scales to
//!   thousands of blocked members where rayon's work stealing does not.

mod rayon_pool;
mod threads;

use std::thread::Scope;

use super::Executor;

/// The stack of a member's thread: half the 2 MiB default (a member's call
/// goes through the tool loop, ureq and serde, never deep recursion), and
/// only the pages it touches are resident.
const STACK: usize = 1024 * 1024;

/// Why a phase could not run: no thread at all could be started.
#[derive(Debug)]
pub(crate) struct PoolError(pub(crate) String);

/// The number of threads for `jobs` jobs under a cap.
pub(crate) fn threads_for(jobs: usize, max_parallel: Option<usize>) -> usize {
    jobs.min(max_parallel.unwrap_or(usize::MAX)).max(1)
}

/// A run's member pool, on whichever executor runs it (see the module
/// docs). The drivers only see this.
pub(crate) enum Pool<'scope, 'env> {
    /// A rayon `ThreadPool` owned by the run.
    Rayon(rayon_pool::RayonPool<'scope, 'env>),
    /// The run's own pool of parked threads.
    Threads(threads::Threads<'scope, 'env>),
}

impl<'scope, 'env> Pool<'scope, 'env> {
    /// A pool of no threads yet on `executor` (`Auto` resolved by `width`,
    /// the widest round the run expects), capped at `cap`. The own pool's
    /// threads are named `boardroom-{label}-{i}`, rayon's
    /// `boardroom-rayon-{i}`; all live in `scope`.
    pub(crate) fn new(
        scope: &'scope Scope<'scope, 'env>,
        executor: Executor,
        width: usize,
        label: &'static str,
        cap: usize,
    ) -> Self {
        match executor.resolve(width.min(cap)) {
            Executor::Rayon => Pool::Rayon(rayon_pool::RayonPool::new(scope, cap)),
            _ => Pool::Threads(threads::Threads::new(scope, label, cap)),
        }
    }

    /// The executor that runs this pool's jobs: `Rayon` or `Threads`.
    pub(crate) fn executor(&self) -> Executor {
        match self {
            Pool::Rayon(_) => Executor::Rayon,
            Pool::Threads(_) => Executor::Threads,
        }
    }

    /// Threads the pool has now.
    #[cfg(test)]
    pub(crate) fn threads(&self) -> usize {
        match self {
            Pool::Rayon(p) => p.threads(),
            Pool::Threads(p) => p.threads(),
        }
    }

    /// Starts threads up to `n` (at most the cap) on a helper thread and
    /// returns at once: the caller goes on (the master's plan call) while
    /// they start.
    pub(crate) fn prestart(&self, n: usize) {
        match self {
            Pool::Rayon(p) => p.prestart(n),
            Pool::Threads(p) => p.prestart(n),
        }
    }

    /// Runs `f` over `items` on the pool (grown to `threads`, at most the
    /// cap) and returns the results in input order once every job is done.
    /// A job that panics yields `Err` with the panic message; the other
    /// jobs and the threads are unaffected.
    ///
    /// # Errors
    ///
    /// A [`PoolError`] when no thread at all could be started for the
    /// phase (then none of its jobs ran).
    pub(crate) fn run<T, R, F>(
        &self,
        threads: usize,
        items: Vec<T>,
        f: F,
    ) -> Result<Vec<Result<R, String>>, PoolError>
    where
        T: Send + 'env,
        R: Send + 'env,
        F: Fn(T) -> R + Send + Sync + 'env,
    {
        match self {
            Pool::Rayon(p) => p.run(threads, items, f),
            Pool::Threads(p) => p.run(threads, items, f),
        }
    }

    /// Ends the pool's threads now, while the caller goes on: for a run
    /// that will run no more parallel phases (its last round is being
    /// reviewed), so that the threads end during the master's call rather
    /// than after it, when the run is over and its caller waits for them.
    /// A phase run after this starts threads again.
    pub(crate) fn release(&self) {
        match self {
            Pool::Rayon(p) => p.release(),
            Pool::Threads(p) => p.release(),
        }
    }
}

/// Runs `f` over `items` on a fresh pool of `threads` named threads on
/// `executor`, joined before it returns (the one-phase form, for tests),
/// and returns the results in input order.
#[cfg(test)]
pub(crate) fn run_parallel<T, R, F>(
    executor: Executor,
    threads: usize,
    items: Vec<T>,
    f: F,
) -> Result<Vec<Result<R, String>>, PoolError>
where
    T: Send,
    R: Send,
    F: Fn(T) -> R + Send + Sync,
{
    std::thread::scope(|scope| {
        let pool = Pool::new(scope, executor, threads, "t", threads);
        pool.run(threads, items, f)
    })
}

#[cfg(test)]
mod tests;
