//! A run's members on a rayon `ThreadPool` the run owns.
//!
//! The pool has a thread per member of the widest phase so far (never past
//! the cap): model calls block, and a pool of one thread per core would run
//! two members at once on two cores. Its threads are started through
//! rayon's `spawn_handler` as scoped threads of the run's
//! `std::thread::scope`, so they are named, and joined when the run ends
//! whatever rayon does: dropping a `ThreadPool` only tells its threads to
//! end. A phase is a rayon scope entered from the driver's thread
//! (`in_place_scope`): each job borrows what the run owns, each is caught
//! at the pool boundary, and the driver is woken once, when the last is
//! done.
//!
//! A rayon pool has a fixed size. A phase wider than the run's threads
//! (a plan that gives members several assignments) adds a pool of the
//! threads it lacks, and spreads its jobs over the pools by their threads,
//! so that every job still has a thread of its own: the threads there are
//! keep serving, none is ended and started again. A phase after
//! [`RayonPool::release`] builds a pool again once the released threads
//! have ended, so the run never has more threads than the cap. A thread
//! that cannot be started fails its build; it is built again with the
//! threads that did start (fewer threads still run every job), and a phase
//! fails only when the run has no thread at all.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::Scope;

use parking_lot::{Condvar, Mutex};

use super::{PoolError, STACK};

/// A run's rayon pool (see the module docs).
pub(crate) struct RayonPool<'scope, 'env> {
    scope: &'scope Scope<'scope, 'env>,
    /// The most threads the pool may have (`max_parallel`).
    cap: usize,
    /// The pool, once built. The lock also makes a phase wait for a build
    /// the prestart helper is doing.
    pool: Arc<Mutex<Slot>>,
    /// The threads the run has (started and not ended), and their names.
    threads: Arc<Census>,
}

/// The pool of a run, if it has one now.
#[derive(Default)]
struct Slot {
    /// Empty before the first phase and after a release; a pool more for
    /// each phase that was wider than the ones before.
    pools: Vec<Arc<rayon::ThreadPool>>,
    /// Released since the last phase: a prestart that comes late builds
    /// nothing.
    released: bool,
}

/// The run's rayon threads, counted by themselves: a build after a release
/// waits here until the released threads have ended, and a failed build
/// until the threads it did start have.
#[derive(Default)]
struct Census {
    alive: Mutex<usize>,
    ended: Condvar,
    /// Names given so far: no two threads of a run share a name.
    named: AtomicUsize,
    /// Threads that began to run.
    begun: Arc<AtomicUsize>,
    /// The next this many starts fail (a test's out-of-threads system).
    #[cfg(test)]
    refuse: AtomicUsize,
}

impl Census {
    /// Threads alive now.
    fn alive(&self) -> usize {
        *self.alive.lock()
    }

    /// Waits until no more than `n` threads are alive.
    fn wait_for(&self, n: usize) {
        let mut alive = self.alive.lock();
        while *alive > n {
            self.ended.wait(&mut alive);
        }
    }

    #[cfg(test)]
    fn refused(&self) -> bool {
        self.refuse
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
    }

    #[cfg(not(test))]
    fn refused(&self) -> bool {
        false
    }
}

impl<'scope, 'env> RayonPool<'scope, 'env> {
    /// A pool of no threads yet, capped at `cap`, whose threads are named
    /// `boardroom-rayon-{i}` and live in `scope`.
    pub(crate) fn new(scope: &'scope Scope<'scope, 'env>, cap: usize) -> Self {
        RayonPool {
            scope,
            cap: cap.clamp(1, rayon::max_num_threads()),
            pool: Arc::default(),
            threads: Arc::default(),
        }
    }

    /// The threads of the pool now (0 before the first build and after a
    /// release).
    pub(crate) fn threads(&self) -> usize {
        total(&self.pool.lock().pools)
    }

    /// Builds the pool with `n` threads (at most the cap) on a helper
    /// thread and returns at once: the caller goes on (the master's plan
    /// call) while they start. A phase that comes first waits for it.
    pub(crate) fn prestart(&self, n: usize) {
        let want = n.clamp(1, self.cap);
        let (pool, threads, scope) = (
            Arc::clone(&self.pool),
            Arc::clone(&self.threads),
            self.scope,
        );
        let helper = std::thread::Builder::new()
            .name("boardroom-start-rayon".into())
            .spawn_scoped(self.scope, move || {
                // Caught here: a panic would end the helper, and the run's
                // scope would panic again when it joins it. The lock does
                // not poison; a phase builds what is missing.
                let built = catch_unwind(AssertUnwindSafe(|| {
                    let mut slot = pool.lock();
                    if slot.released {
                        return;
                    }
                    if let Err(e) = ensure(&mut slot, &threads, scope, want) {
                        log::debug!("{}; threads start with the phase", e.0);
                    }
                }));
                if let Err(p) = built {
                    let text = crate::core::unwind::panic_text(p.as_ref());
                    log::warn!(
                        "rayon: the prestart panicked ({text}); threads start with the phase"
                    );
                }
            });
        if let Err(e) = helper {
            log::debug!("rayon: no helper thread ({e}); threads start with the phase");
        }
    }

    /// Runs `f` over `items` on the pool (grown to `threads`, at most the
    /// cap) and returns the results in input order once every job is done.
    /// A job that panics yields `Err` with the panic message; the other
    /// jobs and the thread are unaffected.
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
        let n = items.len();
        if n == 0 {
            return Ok(Vec::new());
        }
        let want = threads.clamp(1, n).min(self.cap);
        let pools = {
            let mut slot = self.pool.lock();
            slot.released = false;
            ensure(&mut slot, &self.threads, self.scope, want)?
        };
        let slots: Vec<Mutex<Option<Result<R, String>>>> =
            (0..n).map(|_| Mutex::new(None)).collect();
        let job = |k: usize, item: T| {
            let result = super::mark::catching(|| f(item))
                .map_err(|p| crate::core::unwind::panic_text(p.as_ref()));
            *slots[k].lock() = Some(result);
        };
        let shares = shares(n, &pools);
        spread(&pools, &shares, &mut items.into_iter().enumerate(), &job);
        // Every job ran (each scope waits for all of its jobs, and none
        // unwinds past its own catch).
        Ok(slots
            .into_iter()
            .map(|s| {
                s.into_inner()
                    .unwrap_or_else(|| Err("the job did not run".into()))
            })
            .collect())
    }

    /// Ends the pool's threads now, while the caller goes on (see
    /// [`super::Pool::release`]). A phase run after this builds the pool
    /// again.
    pub(crate) fn release(&self) {
        // Dropping the pool tells its threads to end; the run's scope
        // joins them.
        let pool = {
            let mut slot = self.pool.lock();
            slot.released = true;
            std::mem::take(&mut slot.pools)
        };
        drop(pool);
    }

    /// Ends the pool's threads and waits until they have: for a run that
    /// goes on with the own pool, which must not start while they live.
    pub(crate) fn release_and_wait(&self) {
        self.release();
        self.threads.wait_for(0);
    }

    #[cfg(test)]
    pub(super) fn begun(&self) -> Arc<AtomicUsize> {
        Arc::clone(&self.threads.begun)
    }

    #[cfg(test)]
    pub(super) fn alive(&self) -> usize {
        *self.threads.alive.lock()
    }

    #[cfg(test)]
    pub(super) fn refuse(&self, n: usize) {
        self.threads.refuse.store(n, Ordering::SeqCst);
    }
}

impl Drop for RayonPool<'_, '_> {
    /// Tells the threads to end; the run's scope joins them.
    fn drop(&mut self) {
        self.release();
    }
}

/// The run's pools, grown to at least `want` threads in all if it can be
/// (see the module docs).
fn ensure<'scope, 'env>(
    slot: &mut Slot,
    census: &Arc<Census>,
    scope: &'scope Scope<'scope, 'env>,
    want: usize,
) -> Result<Vec<Arc<rayon::ThreadPool>>, PoolError> {
    let have = total(&slot.pools);
    if have < want {
        if slot.pools.is_empty() {
            // Released threads end first: never more than the cap.
            census.wait_for(0);
        }
        match build(census, scope, want - have) {
            Ok(pool) => slot.pools.push(Arc::new(pool)),
            Err(e) if slot.pools.is_empty() => return Err(e),
            // The threads there are run the phase.
            Err(e) => log::warn!("{}; the phase runs on the {have} threads there are", e.0),
        }
    }
    Ok(slot.pools.clone())
}

/// The threads of `pools`.
fn total(pools: &[Arc<rayon::ThreadPool>]) -> usize {
    pools.iter().map(|p| p.current_num_threads()).sum()
}

/// How many of `n` jobs each pool runs: in proportion to its threads, so a
/// phase no wider than the threads gives every job a thread of its own.
fn shares(n: usize, pools: &[Arc<rayon::ThreadPool>]) -> Vec<usize> {
    let all = total(pools).max(1);
    let mut left = n;
    let mut out = Vec::with_capacity(pools.len());
    for (i, p) in pools.iter().enumerate() {
        let share = if i + 1 == pools.len() {
            left
        } else {
            (n * p.current_num_threads()).div_ceil(all).min(left)
        };
        left -= share;
        out.push(share);
    }
    out
}

/// Runs the jobs, `shares[i]` of them on `pools[i]`, each pool's in a
/// scope entered from this thread; returns when every job is done.
fn spread<T: Send>(
    pools: &[Arc<rayon::ThreadPool>],
    shares: &[usize],
    jobs: &mut dyn Iterator<Item = (usize, T)>,
    job: &(dyn Fn(usize, T) + Sync),
) {
    let (Some((pool, pools)), Some((&share, shares))) = (pools.split_first(), shares.split_first())
    else {
        return;
    };
    pool.in_place_scope(|s| {
        for (k, item) in jobs.take(share) {
            s.spawn(move |_| job(k, item));
        }
        spread(pools, shares, jobs, job);
    });
}

/// A pool of `want` threads, or of as many as could be started.
fn build<'scope, 'env>(
    census: &Arc<Census>,
    scope: &'scope Scope<'scope, 'env>,
    want: usize,
) -> Result<rayon::ThreadPool, PoolError> {
    let mut want = want;
    // The threads of the run's other pools, which go on.
    let others = census.alive();
    loop {
        let started = AtomicUsize::new(0);
        let built = rayon::ThreadPoolBuilder::new()
            .num_threads(want)
            .stack_size(STACK)
            .spawn_handler(|thread| {
                let i = census.named.fetch_add(1, Ordering::Relaxed);
                if census.refused() {
                    return Err(std::io::Error::other("refused by the test"));
                }
                *census.alive.lock() += 1;
                let mine = Arc::clone(census);
                let spawned = std::thread::Builder::new()
                    .name(format!("boardroom-rayon-{i}"))
                    .stack_size(thread.stack_size().unwrap_or(STACK))
                    .spawn_scoped(scope, move || {
                        mine.begun.fetch_add(1, Ordering::Relaxed);
                        // Until the pool is dropped.
                        thread.run();
                        *mine.alive.lock() -= 1;
                        mine.ended.notify_all();
                    });
                match spawned {
                    Ok(_) => {
                        started.fetch_add(1, Ordering::Relaxed);
                        Ok(())
                    }
                    Err(e) => {
                        *census.alive.lock() -= 1;
                        Err(e)
                    }
                }
            })
            .build();
        match built {
            Ok(pool) => return Ok(pool),
            Err(e) => {
                // rayon has told the threads that did start to end.
                census.wait_for(others);
                let got = started.into_inner();
                log::warn!("rayon: {got} threads started of {want} ({e}); trying with {got}");
                if got == 0 {
                    return Err(PoolError(format!(
                        "rayon: no thread could be started ({e})"
                    )));
                }
                want = got;
            }
        }
    }
}
