//! The run's own pool: named threads sized for blocking I/O, parked
//! between phases on one condvar.
//!
//! It lives in a `std::thread::scope` that spans the run's phases, so its
//! threads are started once and parked between phases (waiting on the job
//! queue's condvar, no CPU), then joined when the run ends, or ended
//! earlier by [`Threads::release`] once the run will run no more parallel
//! phases (the last round's review): they end during the master's call
//! instead of after the run, where the caller would wait for them (a phase
//! after a release starts threads again). A phase's driver is woken once,
//! when its last job is done. It grows to the largest phase (never past the
//! cap) and can be started ahead of time on a helper thread
//! ([`Threads::prestart`]) so that the threads' start-up overlaps the
//! master's plan call: a phase then only hands out jobs (a queue push and a
//! wake-up each) instead of starting a thread per member (tens of
//! microseconds of kernel time each: the stack, its guard page and the
//! signal stack are mapped, and unmapped at exit). Jobs may borrow what the
//! run owns (the scope's environment), so no `unsafe` is needed.
//!
//! Unlike a rayon pool, nothing here searches other threads' queues: a
//! parked thread waits on one condvar and is woken once per job, so N
//! blocked members cost nothing while they wait, whatever N is (rayon's
//! idle workers each look through every other worker's queue: O(N²) in
//! all, most of a 1024-member round's CPU).

use std::sync::Arc;
use std::thread::Scope;

use std::collections::VecDeque;

use parking_lot::{Condvar, Mutex};

use super::{PoolError, STACK};

/// The helper threads that start a pool's threads ahead of time.
const PRESTART_HELPERS: usize = 2;

/// One job: runs on a pool thread, files its result in its phase's slot.
type Job<'env> = Box<dyn FnOnce() + Send + 'env>;

/// A run's pool of named, parked threads (see the module docs).
pub(crate) struct Threads<'scope, 'env> {
    queue: Arc<Queue<'env>>,
    starter: Arc<Starter<'scope, 'env>>,
}

/// The jobs waiting for a thread. A parked thread waits on the condvar:
/// one wake-up a job, no spinning and no scan of the other threads (a
/// channel's receivers spin and yield before they park, which with
/// thousands of idle threads on two cores was most of a round's CPU).
struct Queue<'env> {
    jobs: Mutex<Jobs<'env>>,
    ready: Condvar,
    /// Threads that began to run (counted by the threads themselves).
    begun: Arc<std::sync::atomic::AtomicUsize>,
}

struct Jobs<'env> {
    waiting: VecDeque<Job<'env>>,
    /// The pool is released or gone: threads end once the queue is empty.
    closed: bool,
    /// Threads started and not ended: counted when started (under this
    /// lock) and uncounted in the same critical section in which one sees
    /// the queue closed and ends, so a pool opened again counts exactly
    /// the threads that will still take jobs.
    alive: usize,
    /// A phase has queued its jobs: from then on a thread is started only
    /// for a job still waiting for one. A phase of fast calls (a model at
    /// no latency) is done by the threads there are, instead of starting
    /// a thread per job that finds nothing left to do.
    on_demand: bool,
}

impl<'env> Queue<'env> {
    /// Closes the queue: every parked thread ends once no job is left.
    fn close(&self) {
        self.jobs.lock().closed = true;
        self.wake_to_end();
    }

    /// Wakes the parked threads of a closed queue, each on its own:
    /// `notify_all` moves them all onto the queue's lock and wakes them one
    /// after another, each when the one before lets go (2048 wake-ups in a
    /// row at the end of a 2048-member run, tens of milliseconds of it).
    /// Stops if the queue is opened again meanwhile.
    fn wake_to_end(&self) {
        while self.jobs.lock().closed && self.ready.notify_one() {}
    }

    /// The next job, waiting for one; `None` once the pool is closed.
    fn next(&self) -> Option<Job<'env>> {
        let mut q = self.jobs.lock();
        loop {
            if let Some(job) = q.waiting.pop_front() {
                return Some(job);
            }
            if q.closed {
                q.alive -= 1;
                return None;
            }
            self.ready.wait(&mut q);
        }
    }
}

/// What starts a pool's threads (shared with the helper that starts them
/// ahead of time).
struct Starter<'scope, 'env> {
    scope: &'scope Scope<'scope, 'env>,
    label: &'static str,
    /// The most threads the pool may have (`max_parallel`).
    cap: usize,
    queue: Arc<Queue<'env>>,
    /// Threads started; the lock also keeps two starters from racing.
    started: Mutex<Started>,
    /// The next this many starts fail (a test's out-of-threads system).
    #[cfg(test)]
    refuse: std::sync::atomic::AtomicUsize,
}

#[derive(Default)]
struct Started {
    /// Threads started or being started (a place is taken before the
    /// start and given back if it fails).
    threads: usize,
    /// Names given so far: a failed start gives back its place, not its
    /// number, so no two threads share a name.
    named: usize,
    /// A start failed (the system is out of threads): no more attempts
    /// until the next phase (`Threads::run` resets it).
    exhausted: bool,
}

impl<'scope, 'env> Threads<'scope, 'env> {
    /// A pool of no threads yet, capped at `cap`, whose threads are named
    /// `boardroom-{label}-{i}` and live in `scope`.
    pub(crate) fn new(scope: &'scope Scope<'scope, 'env>, label: &'static str, cap: usize) -> Self {
        let queue = Arc::new(Queue {
            jobs: Mutex::new(Jobs {
                waiting: VecDeque::new(),
                closed: false,
                alive: 0,
                on_demand: false,
            }),
            ready: Condvar::new(),
            begun: Arc::default(),
        });
        Threads {
            queue: Arc::clone(&queue),
            starter: Arc::new(Starter {
                scope,
                label,
                cap: cap.max(1),
                queue,
                started: Mutex::new(Started::default()),
                #[cfg(test)]
                refuse: std::sync::atomic::AtomicUsize::new(0),
            }),
        }
    }

    /// Threads started so far.
    pub(crate) fn threads(&self) -> usize {
        self.starter.started.lock().threads
    }

    /// Threads that began to run so far, as they counted themselves (the
    /// count outlives the pool).
    #[cfg(test)]
    pub(super) fn begun(&self) -> Arc<std::sync::atomic::AtomicUsize> {
        Arc::clone(&self.queue.begun)
    }

    /// Threads started and not ended.
    #[cfg(test)]
    pub(super) fn alive(&self) -> usize {
        self.queue.jobs.lock().alive
    }

    /// Makes the next `n` thread starts fail, as on a system out of threads.
    #[cfg(test)]
    pub(super) fn refuse(&self, n: usize) {
        self.starter
            .refuse
            .store(n, std::sync::atomic::Ordering::SeqCst);
    }

    /// Starts threads up to `n` (at most the cap) on a helper thread and
    /// returns at once: the caller goes on (the master's plan call) while
    /// they start.
    pub(crate) fn prestart(&self, n: usize) {
        let s = &self.starter;
        if self.threads() >= n.min(s.cap) {
            return;
        }
        // Two helpers: a thread's start is mostly the kernel's work (its
        // stack mapped, its signal stack, the clone), and two start about
        // twice as many in the master's plan call as one on two cores.
        for k in 0..PRESTART_HELPERS {
            let starter = Arc::clone(s);
            let helper = std::thread::Builder::new()
                .name(format!("boardroom-start-{}s-{k}", s.label))
                .spawn_scoped(s.scope, move || {
                    starter.grow(n);
                });
            if let Err(e) = helper {
                log::debug!(
                    "{}: no helper thread ({e}); threads start with the phase",
                    s.label
                );
                break;
            }
        }
    }

    /// Starts threads here until the pool has `n` (at most the cap).
    /// Returns how many it has.
    pub(crate) fn grow(&self, n: usize) -> usize {
        self.starter.grow(n)
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
        // A start that failed in an earlier phase (the system was out of
        // threads then) is tried again: threads may have ended since.
        self.starter.started.lock().exhausted = false;
        self.reopen();
        // One thread first (a phase needs one to run at all), the jobs
        // queued for the threads there are, and only then the rest of the
        // threads: the jobs start while the threads a prestart has not
        // started yet are started (each takes the next job as it begins).
        if self.grow(1) == 0 {
            return Err(PoolError(format!(
                "{}: no thread could be started",
                self.starter.label
            )));
        }
        let f = Arc::new(f);
        let done = Arc::new(Phase::new(n));
        {
            let mut q = self.queue.jobs.lock();
            q.on_demand = true;
            for (k, item) in items.into_iter().enumerate() {
                let f = Arc::clone(&f);
                // Counts the job done when it drops: after it ran, or
                // unrun (then its slot stays empty).
                let finished = Finished {
                    phase: Arc::clone(&done),
                    k,
                };
                q.waiting.push_back(Box::new(move || {
                    let result = super::mark::catching(|| f(item))
                        .map_err(|p| crate::core::unwind::panic_text(p.as_ref()));
                    *finished.phase.slots[finished.k].lock() = Some(result);
                }));
            }
        }
        // One wake-up a job (a thread that finds the queue empty parks
        // again).
        for _ in 0..n {
            self.queue.ready.notify_one();
        }
        // A failed start here leaves the jobs to the threads there are;
        // with none at all (every start failed, the places the first grow
        // counted on included), the jobs are dropped unrun, not waited for.
        self.grow(threads.clamp(1, n));
        let orphans = {
            let s = self.starter.started.lock();
            let mut jobs = self.queue.jobs.lock();
            (s.threads == 0).then(|| std::mem::take(&mut jobs.waiting))
        };
        drop(orphans);
        done.wait();
        let results: Vec<Option<Result<R, String>>> =
            done.slots.iter().map(|s| s.lock().take()).collect();
        // A job is left unrun only when no thread at all could be started
        // for the phase: the phase fails as a whole, not as a job each
        // (which would read as members that panicked).
        let unrun = results.iter().filter(|r| r.is_none()).count();
        if unrun > 0 {
            return Err(PoolError(format!(
                "{}: no thread could be started; {unrun} of {n} jobs did not run",
                self.starter.label
            )));
        }
        Ok(results.into_iter().flatten().collect())
    }
}

/// One phase's results, and how many of its jobs are still to finish.
/// The driver sleeps until the last job is done and is woken once, not
/// once a job: with a result channel it woke for each of a round's
/// members (2048 context switches at 2048 members, on the cores the
/// members need).
struct Phase<R> {
    slots: Vec<Mutex<Option<Result<R, String>>>>,
    left: std::sync::atomic::AtomicUsize,
    lock: Mutex<()>,
    all_done: Condvar,
}

impl<R> Phase<R> {
    fn new(n: usize) -> Self {
        Phase {
            slots: (0..n).map(|_| Mutex::new(None)).collect(),
            left: std::sync::atomic::AtomicUsize::new(n),
            lock: Mutex::new(()),
            all_done: Condvar::new(),
        }
    }

    /// Waits until every job has finished (run or dropped).
    fn wait(&self) {
        let mut guard = self.lock.lock();
        while self.left.load(std::sync::atomic::Ordering::Acquire) > 0 {
            self.all_done.wait(&mut guard);
        }
    }
}

/// A job's share of its phase: counts the job finished when dropped.
struct Finished<R> {
    phase: Arc<Phase<R>>,
    k: usize,
}

impl<R> Drop for Finished<R> {
    fn drop(&mut self) {
        let p = &self.phase;
        if p.left.fetch_sub(1, std::sync::atomic::Ordering::AcqRel) == 1 {
            // Under the lock: the driver is either before its check (and
            // sees zero) or already waiting (and is woken).
            let _guard = p.lock.lock();
            p.all_done.notify_all();
        }
    }
}

impl Threads<'_, '_> {
    /// Ends the pool's threads now, while the caller goes on: for a run
    /// that will run no more parallel phases (its last round is being
    /// reviewed), so that the threads end during the master's call rather
    /// than after it, when the run is over and its caller waits for them.
    /// A phase run after this starts threads again.
    pub(crate) fn release(&self) {
        {
            // Closed here, at once: a phase run after this opens the queue
            // again and sees every thread still counted.
            let mut jobs = self.queue.jobs.lock();
            if jobs.closed {
                return;
            }
            jobs.closed = true;
        }
        // Woken by a helper: the caller goes on to its call at once
        // instead of making a wake-up call per thread first.
        let queue = Arc::clone(&self.queue);
        let helper = std::thread::Builder::new()
            .name(format!("boardroom-end-{}s", self.starter.label))
            .spawn_scoped(self.starter.scope, move || queue.wake_to_end());
        if helper.is_err() {
            self.queue.wake_to_end();
        }
    }

    /// Opens a released pool again; its threads are the ones that have not
    /// ended (see [`Jobs::alive`]).
    fn reopen(&self) {
        let mut started = self.starter.started.lock();
        let mut jobs = self.queue.jobs.lock();
        if jobs.closed {
            jobs.closed = false;
            started.threads = jobs.alive;
        }
    }
}

impl Drop for Threads<'_, '_> {
    /// Closes the queue: the threads end, and the scope joins them.
    fn drop(&mut self) {
        self.queue.close();
    }
}

impl Starter<'_, '_> {
    /// Whether a test made this start fail (as if the system were out of
    /// threads).
    #[cfg(test)]
    fn refused(&self) -> bool {
        self.refuse
            .fetch_update(
                std::sync::atomic::Ordering::SeqCst,
                std::sync::atomic::Ordering::SeqCst,
                |n| n.checked_sub(1),
            )
            .is_ok()
    }

    #[cfg(not(test))]
    fn refused(&self) -> bool {
        false
    }

    fn grow(&self, n: usize) -> usize {
        let want = n.min(self.cap);
        loop {
            // A thread's place is taken under the lock and the thread is
            // started outside it: two starters (the prestart's helpers, a
            // phase that needs threads now) start threads side by side.
            let i = {
                let mut s = self.started.lock();
                if s.threads >= want || s.exhausted {
                    return s.threads;
                }
                // A pool released or dropped while its helper was still
                // starting threads needs no more of them; a thread is
                // counted alive before it starts (see `Jobs::alive`).
                let mut jobs = self.queue.jobs.lock();
                if jobs.closed {
                    return s.threads;
                }
                // Once a phase has run, every job already has a thread:
                // none is started to find the queue empty (a phase still
                // gets its first).
                if jobs.on_demand && jobs.waiting.is_empty() && s.threads > 0 {
                    return s.threads;
                }
                jobs.alive += 1;
                s.threads += 1;
                s.named += 1;
                s.named - 1
            };
            let queue = Arc::clone(&self.queue);
            let spawned = if self.refused() {
                Err(std::io::Error::other("refused by the test"))
            } else {
                std::thread::Builder::new()
                    .name(format!("boardroom-{}-{i}", self.label))
                    .stack_size(STACK)
                    .spawn_scoped(self.scope, move || {
                        queue
                            .begun
                            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        // Ends when the pool is released or dropped.
                        while let Some(job) = queue.next() {
                            job();
                        }
                    })
            };
            if let Err(e) = spawned {
                let orphans = {
                    let mut s = self.started.lock();
                    let mut jobs = self.queue.jobs.lock();
                    jobs.alive -= 1;
                    s.threads -= 1;
                    // Fewer threads still run every job, only less at once.
                    if !s.exhausted {
                        log::warn!(
                            "{}: {} threads started or starting of {want} ({e}); the rest of the jobs wait for them",
                            self.label,
                            s.threads
                        );
                    }
                    s.exhausted = true;
                    // No thread at all (the places a phase counted on were
                    // all given back): its jobs would wait for ever.
                    (s.threads == 0).then(|| std::mem::take(&mut jobs.waiting))
                };
                // Dropped outside the locks: each fills its slot with "the
                // job did not run" and the phase ends.
                drop(orphans);
                return self.started.lock().threads;
            }
        }
    }
}
