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

mod mark;
mod rayon_pool;
mod threads;

pub use mark::panic_is_caught;

use std::sync::OnceLock;
use std::thread::Scope;

use crate::record::Executor;

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
///
/// Under [`Executor::Auto`] the executor is chosen per phase: a phase of
/// up to [`Executor::auto_limit`] threads (after the cap) runs on rayon,
/// a wider one on the own pool, which is started then, once rayon's
/// threads have ended (so the run never has more threads than the cap),
/// and runs every later phase of the run: a run goes from rayon to the
/// own pool at most once.
pub(crate) struct Pool<'scope, 'env> {
    scope: &'scope Scope<'scope, 'env>,
    label: &'static str,
    cap: usize,
    /// The widest phase rayon runs (`Some` under `Auto`).
    limit: Option<usize>,
    /// The run's rayon pool (`None` on `Threads`, or when the driver is
    /// itself a rayon worker).
    rayon: Option<rayon_pool::RayonPool<'scope, 'env>>,
    /// The run's own pool, started at the first phase it runs.
    own: OnceLock<threads::Threads<'scope, 'env>>,
}

impl<'scope, 'env> Pool<'scope, 'env> {
    /// A pool of no threads yet on `executor`, capped at `cap`, its
    /// threads living in `scope`. `Auto` keeps rayon for phases up to
    /// `auto_limit` threads (see [`Pool`]). The own pool's threads are
    /// named `boardroom-{label}-{i}`; rayon's are always
    /// `boardroom-rayon-{i}` (the label applies to the own pool only).
    ///
    /// A driver that is itself a rayon worker (a library caller running a
    /// run inside `par_iter`) gets the own pool whatever `executor` says:
    /// waiting in a rayon scope, its thread would run unrelated jobs of
    /// its caller's pool.
    pub(crate) fn new(
        scope: &'scope Scope<'scope, 'env>,
        executor: Executor,
        auto_limit: usize,
        label: &'static str,
        cap: usize,
    ) -> Self {
        let inside_rayon = rayon::current_thread_index().is_some();
        let (rayon, limit) = match executor {
            _ if inside_rayon => (None, None),
            Executor::Rayon => (Some(rayon_pool::RayonPool::new(scope, cap)), None),
            Executor::Auto => (
                Some(rayon_pool::RayonPool::new(scope, cap)),
                Some(auto_limit),
            ),
            _ => (None, None),
        };
        Pool {
            scope,
            label,
            cap,
            limit,
            rayon,
            own: OnceLock::new(),
        }
    }

    /// The own pool, started if it was not.
    fn own(&self) -> &threads::Threads<'scope, 'env> {
        self.own
            .get_or_init(|| threads::Threads::new(self.scope, self.label, self.cap))
    }

    /// The rayon pool if it runs a phase of `threads` threads, `None` when
    /// the own pool does.
    fn rayon_for(&self, threads: usize) -> Option<&rayon_pool::RayonPool<'scope, 'env>> {
        let rayon = self.rayon.as_ref()?;
        if self.own.get().is_some() {
            return None;
        }
        match self.limit {
            Some(limit) if threads.min(self.cap) > limit => None,
            _ => Some(rayon),
        }
    }

    /// The executor that runs the pool's next phase of up to the limit
    /// (the first phase of a run that starts narrow): `Rayon` or
    /// `Threads`.
    pub(crate) fn executor(&self) -> Executor {
        if self.rayon_for(1).is_some() {
            Executor::Rayon
        } else {
            Executor::Threads
        }
    }

    /// The executor a phase of `threads` threads runs on.
    #[cfg(test)]
    pub(crate) fn executor_for(&self, threads: usize) -> Executor {
        if self.rayon_for(threads).is_some() {
            Executor::Rayon
        } else {
            Executor::Threads
        }
    }

    /// Threads the pool has now.
    pub(crate) fn threads(&self) -> usize {
        self.rayon
            .as_ref()
            .map_or(0, rayon_pool::RayonPool::threads)
            + self.own.get().map_or(0, threads::Threads::threads)
    }

    /// Starts threads up to `n` (at most the cap) on a helper thread and
    /// returns at once: the caller goes on (the master's plan call) while
    /// they start.
    pub(crate) fn prestart(&self, n: usize) {
        match self.rayon_for(n) {
            Some(p) => p.prestart(n),
            None => self.own().prestart(n),
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
        let width = threads.clamp(1, items.len().max(1));
        if let Some(p) = self.rayon_for(width) {
            return p.run(threads, items, f);
        }
        if let Some(p) = &self.rayon
            && self.own.get().is_none()
        {
            // Auto, a phase wider than rayon runs well: rayon's threads
            // end before the own pool starts, so the cap holds.
            log::info!("a phase of {width} threads runs on the own pool from now on");
            p.release_and_wait();
        }
        self.own().run(threads, items, f)
    }

    /// Ends the pool's threads now, while the caller goes on: for a run
    /// that will run no more parallel phases (its last round is being
    /// reviewed), so that the threads end during the master's call rather
    /// than after it, when the run is over and its caller waits for them.
    /// A phase run after this starts threads again.
    pub(crate) fn release(&self) {
        if let Some(p) = &self.rayon {
            p.release();
        }
        if let Some(p) = self.own.get() {
            p.release();
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
        let pool = Pool::new(scope, executor, Executor::auto_limit(), "t", threads);
        pool.run(threads, items, f)
    })
}

#[cfg(test)]
mod tests;
