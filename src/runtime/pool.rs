//! Running one phase's agents in parallel on threads sized for blocking I/O.
//!
//! Model calls block on the network, so a round needs one thread per
//! assignment (a member may have several; capped by `max_parallel`), not
//! one per core: on rayon's global pool a 2-core machine would run two
//! members at once.
//!
//! A [`Pool`] belongs to one run: it lives in a `std::thread::scope` that
//! spans the run's phases, so its threads are started once and parked
//! between phases (waiting on the job queue's condvar, no CPU), then joined
//! when the run ends, or ended earlier by [`Pool::release`] once the run
//! will run no more parallel phases (the last round's review): they end
//! during the master's call instead of after the run, where the caller
//! would wait for them (a phase after a release starts threads again). A
//! phase's driver is woken once, when its last job is done. It grows to the largest phase (never past the cap) and can be
//! started ahead of time on a helper thread ([`Pool::prestart`]) so that the
//! threads' start-up overlaps the master's plan call: a phase then only
//! hands out jobs (a queue push and a wake-up each) instead of starting a
//! thread per member (tens of microseconds of kernel time each: the stack,
//! its guard page and the signal stack are mapped, and unmapped at exit).
//! Jobs may borrow what the run owns (the scope's environment), so no
//! `unsafe` is needed.
//!
//! Not a rayon pool (the design named one): rayon's idle workers look for
//! work to steal in every other worker's queue, so N blocked-on-I/O members
//! cost O(N) spinning each, O(N²) in all (at 1024 members most of the
//! round's CPU). Here a parked thread waits on one condvar and is woken
//! once per job; nothing scans.
//!

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::thread::Scope;

use std::collections::VecDeque;

use parking_lot::{Condvar, Mutex};

/// The stack of a member's thread: half the 2 MiB default (a member's call
/// goes through the tool loop, ureq and serde, never deep recursion), and
/// only the pages it touches are resident.
const STACK: usize = 1024 * 1024;

/// The helper threads that start a pool's threads ahead of time.
const PRESTART_HELPERS: usize = 2;

/// Why a pool could not be built.
#[derive(Debug)]
pub(crate) struct PoolError(pub(crate) String);

/// The number of threads for `jobs` jobs under a cap.
pub(crate) fn threads_for(jobs: usize, max_parallel: Option<usize>) -> usize {
    jobs.min(max_parallel.unwrap_or(usize::MAX)).max(1)
}

/// One job: runs on a pool thread, files its result in its phase's slot.
type Job<'env> = Box<dyn FnOnce() + Send + 'env>;

/// A run's pool of named, parked threads (see the module docs).
pub(crate) struct Pool<'scope, 'env> {
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
    begun: std::sync::atomic::AtomicUsize,
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
    /// until the next phase (`Pool::run` resets it).
    exhausted: bool,
}

impl<'scope, 'env> Pool<'scope, 'env> {
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
            begun: std::sync::atomic::AtomicUsize::new(0),
        });
        Pool {
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

    /// Threads that began to run so far, as they counted themselves.
    #[cfg(test)]
    fn begun(&self) -> Arc<Queue<'env>> {
        Arc::clone(&self.queue)
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
                    let result = catch_unwind(AssertUnwindSafe(|| f(item)))
                        .map_err(|p| super::tool_loop::panic_text(p.as_ref()));
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

impl Pool<'_, '_> {
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

impl Drop for Pool<'_, '_> {
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

/// Runs `f` over `items` on a fresh pool of `threads` named threads, joined
/// before it returns (the one-phase form, for tests), and returns the results in input order. A job that
/// panics yields `Err` with the panic message; the other jobs are
/// unaffected.
#[cfg(test)]
pub(crate) fn run_parallel<T, R, F>(
    label: &'static str,
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
        let pool = Pool::new(scope, label, threads);
        pool.run(threads, items, f)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    /// Jobs that wait for each other: each counts itself in, then waits
    /// (at most 5 s) until `want` of them are in at once or every job
    /// left is in, and counts itself out. `max` is the most that were in
    /// at once. No job finishes before the others have started, so the
    /// count does not depend on how fast the machine starts threads.
    #[derive(Default)]
    struct Meet {
        now: AtomicUsize,
        max: AtomicUsize,
        done: AtomicUsize,
        want: AtomicUsize,
        total: AtomicUsize,
        /// How long a job waits for the others, in ms (0: 5 s).
        patience_ms: AtomicUsize,
    }

    impl Meet {
        fn expect(&self, want: usize, total: usize) {
            self.want.store(want, Ordering::SeqCst);
            self.total.store(total, Ordering::SeqCst);
            self.done.store(0, Ordering::SeqCst);
            self.max.store(0, Ordering::SeqCst);
        }

        fn meet(&self) {
            let n = self.now.fetch_add(1, Ordering::SeqCst) + 1;
            self.max.fetch_max(n, Ordering::SeqCst);
            let patience = match self.patience_ms.load(Ordering::SeqCst) {
                0 => 5000,
                ms => ms,
            };
            let until = std::time::Instant::now() + Duration::from_millis(patience as u64);
            loop {
                let now = self.now.load(Ordering::SeqCst);
                let left = self.total.load(Ordering::SeqCst) - self.done.load(Ordering::SeqCst);
                if now >= self.want.load(Ordering::SeqCst)
                    || now >= left
                    || std::time::Instant::now() > until
                {
                    break;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            self.now.fetch_sub(1, Ordering::SeqCst);
            self.done.fetch_add(1, Ordering::SeqCst);
        }

        fn max(&self) -> usize {
            self.max.load(Ordering::SeqCst)
        }
    }

    #[test]
    fn results_keep_input_order_and_panics_stay_contained() {
        let out = run_parallel("t", 4, vec![1, 2, 3, 4], |x| {
            if x == 3 {
                panic!("three");
            }
            x * 10
        })
        .unwrap();
        assert_eq!(out, vec![Ok(10), Ok(20), Err("three".into()), Ok(40)]);
    }

    #[test]
    fn all_jobs_are_in_flight_at_once() {
        let meet = Meet::default();
        meet.expect(24, 24);
        run_parallel("t", 24, (0..24).collect(), |_| meet.meet()).unwrap();
        assert_eq!(meet.max(), 24);
    }

    /// The threads of a run's pool are started once and serve every phase:
    /// three phases of 8, 3 and 8 jobs run on 8 threads, each phase's jobs
    /// all in flight at once, a panic in one phase kills no thread, and the
    /// threads are joined when the scope ends.
    #[test]
    fn a_pool_serves_every_phase_on_the_threads_it_started_once() {
        let names = Mutex::new(std::collections::BTreeSet::new());
        let meet = Meet::default();
        let job = |x: usize| {
            names
                .lock()
                .insert(std::thread::current().name().unwrap_or("").to_string());
            meet.meet();
            if x == 99 {
                panic!("ninety-nine");
            }
            x + 1
        };
        let mut queue = None;
        let threads = std::thread::scope(|scope| {
            let pool = Pool::new(scope, "t", 8);
            queue = Some(pool.begun());
            pool.prestart(8);
            meet.expect(8, 8);
            let a = pool.run(8, (0..8).collect(), job).unwrap();
            assert_eq!(a, (1..=8).map(Ok).collect::<Vec<_>>());
            assert_eq!(meet.max(), 8, "the whole phase at once");
            meet.expect(3, 3);
            let b = pool.run(3, vec![1, 99, 2], job).unwrap();
            assert_eq!(b, vec![Ok(2), Err("ninety-nine".into()), Ok(3)]);
            meet.expect(8, 8);
            let c = pool.run(8, (10..18).collect(), job).unwrap();
            assert_eq!(c.len(), 8);
            assert_eq!(meet.max(), 8, "still 8 threads after a panic");
            pool.threads()
        });
        assert_eq!(threads, 8, "started once, not per phase");
        let begun = queue.map(|q| q.begun.load(Ordering::SeqCst));
        assert_eq!(begun, Some(8), "8 threads ran, all joined");
        let names = names.into_inner();
        assert_eq!(
            names.len(),
            8,
            "three phases ran on the same 8 threads: {names:?}"
        );
        assert!(
            names.iter().all(|n| n.starts_with("boardroom-t-")),
            "{names:?}"
        );
    }

    #[test]
    fn a_pool_never_passes_its_cap() {
        // Four are never in at once: each job waits 50 ms for a fourth.
        let meet = Meet::default();
        meet.expect(4, 9);
        meet.patience_ms.store(50, Ordering::SeqCst);
        let threads = std::thread::scope(|scope| {
            let pool = Pool::new(scope, "t", 3);
            pool.prestart(100);
            let out = pool
                .run(100, (0..9).collect(), |x: usize| {
                    meet.meet();
                    x
                })
                .unwrap();
            assert_eq!(out, (0..9).map(Ok).collect::<Vec<_>>());
            pool.threads()
        });
        assert_eq!(threads, 3);
        assert!(meet.max() <= 3, "{} in flight", meet.max());
    }

    /// Issue 14: a start that failed in one phase (out of threads then)
    /// is tried again in the next, not given up for the whole run.
    #[test]
    fn a_failed_start_is_retried_by_the_next_phase() {
        let meet = Meet::default();
        meet.expect(4, 4);
        let threads = std::thread::scope(|scope| {
            let pool = Pool::new(scope, "t", 4);
            pool.starter.refuse.store(1, Ordering::SeqCst);
            assert!(
                pool.run(4, vec![1, 2], |x: usize| x).is_err(),
                "no thread: the phase fails"
            );
            assert_eq!(pool.threads(), 0);
            // Four jobs that wait for each other: all four need a thread.
            let out = pool
                .run(4, (0..4).collect(), |x: usize| {
                    meet.meet();
                    x
                })
                .unwrap();
            assert_eq!(out, (0..4).map(Ok).collect::<Vec<_>>());
            pool.threads()
        });
        assert_eq!(threads, 4, "the second phase started its threads");
    }

    /// Issue 14: with no cap the pool grows to each phase's size, past
    /// whatever it was started with ahead of time.
    #[test]
    fn an_uncapped_pool_grows_past_its_prestart_to_the_phase() {
        let meet = Meet::default();
        meet.expect(8, 8);
        let threads = std::thread::scope(|scope| {
            let pool = Pool::new(scope, "t", usize::MAX);
            pool.grow(2);
            pool.run(8, (0..8).collect(), |_: usize| meet.meet())
                .unwrap();
            pool.threads()
        });
        assert_eq!(threads, 8);
        assert_eq!(meet.max(), 8);
    }

    /// A phase whose every thread start fails, the places its first grow
    /// counted on included (the prestart's helpers had taken them), ends
    /// with its jobs unrun instead of waiting for ever.
    #[test]
    fn a_phase_with_no_thread_at_all_ends_instead_of_hanging() {
        for _ in 0..20 {
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let out = std::thread::scope(|scope| {
                    let pool = Pool::new(scope, "t", 4);
                    pool.starter.refuse.store(usize::MAX, Ordering::SeqCst);
                    pool.prestart(4);
                    pool.run(4, (0..4).collect(), |x: usize| x)
                });
                let _ = tx.send(out.map(|r| r.iter().filter(|x| x.is_err()).count()));
            });
            match rx.recv_timeout(Duration::from_secs(10)) {
                Ok(Ok(failed)) => panic!("the phase ran with no thread: {failed} failed"),
                Ok(Err(e)) => assert!(e.0.contains("no thread could be started"), "{}", e.0),
                Err(_) => panic!("the phase hung with no thread to run it"),
            }
        }
    }

    /// Issue 14: threads are started outside the starter's lock, so
    /// several starters at once (the prestart's two helpers and a phase)
    /// must still start exactly up to the cap, counted once each.
    #[test]
    fn starters_side_by_side_start_exactly_the_cap() {
        for _ in 0..10 {
            let (threads, alive, begun) = std::thread::scope(|scope| {
                let pool = Pool::new(scope, "t", 50);
                pool.prestart(1000);
                std::thread::scope(|inner| {
                    for _ in 0..6 {
                        inner.spawn(|| pool.grow(1000));
                    }
                });
                let q = pool.begun();
                let until = std::time::Instant::now() + Duration::from_secs(5);
                while q.begun.load(Ordering::SeqCst) < 50 && std::time::Instant::now() < until {
                    std::thread::sleep(Duration::from_millis(1));
                }
                let alive = pool.queue.jobs.lock().alive;
                (pool.threads(), alive, q.begun.load(Ordering::SeqCst))
            });
            assert_eq!((threads, alive, begun), (50, 50, 50));
        }
    }

    /// Issue 14: once a phase has run, a thread is started only for a job
    /// that waits for one: a phase of instant jobs (a model at no latency)
    /// is done by far fewer threads than it has jobs. Before, it started
    /// one a job (1000 here) that mostly found nothing left.
    #[test]
    fn threads_are_started_only_for_jobs_that_wait() {
        let meet = Meet::default();
        meet.expect(2, 2);
        let threads = std::thread::scope(|scope| {
            let pool = Pool::new(scope, "t", usize::MAX);
            pool.run(2, vec![0, 1], |_: usize| meet.meet()).unwrap();
            assert_eq!(pool.threads(), 2);
            // Nothing waits: no thread is started, whatever is asked.
            assert_eq!(pool.grow(1000), 2);
            let out = pool.run(1000, (0..1000).collect(), |x: usize| x).unwrap();
            assert_eq!(out.len(), 1000);
            assert!(out.iter().all(Result::is_ok));
            pool.threads()
        });
        // Scheduling decides how many the instant jobs got, never one each.
        assert!(threads < 1000, "{threads} threads for 1000 instant jobs");
    }

    /// Issue 14: a released pool's threads end while its owner goes on;
    /// a phase run after that starts threads again, within the cap.
    #[test]
    fn a_released_pool_ends_its_threads_and_a_later_phase_starts_them_again() {
        let meet = Meet::default();
        std::thread::scope(|scope| {
            let pool = Pool::new(scope, "t", 4);
            meet.expect(4, 4);
            pool.run(4, (0..4).collect(), |_: usize| meet.meet())
                .unwrap();
            assert_eq!(meet.max(), 4);
            pool.release();
            let until = std::time::Instant::now() + Duration::from_secs(5);
            while pool.queue.jobs.lock().alive > 0 && std::time::Instant::now() < until {
                std::thread::sleep(Duration::from_millis(1));
            }
            assert_eq!(pool.queue.jobs.lock().alive, 0, "all ended");
            meet.expect(5, 6);
            meet.patience_ms.store(50, Ordering::SeqCst);
            let out = pool.run(8, (0..6).collect(), |x: usize| {
                meet.meet();
                x
            });
            assert_eq!(out.unwrap(), (0..6).map(Ok).collect::<Vec<_>>());
            assert!(meet.max() <= 4, "started again, within the cap");
            assert_eq!(pool.threads(), 4);
        });
    }

    /// A phase run right after a release (its threads still ending) runs
    /// every job and never passes the cap, for caps of 1 and 3: the pool
    /// counts exactly the threads that will still take jobs.
    #[test]
    fn a_phase_right_after_a_release_runs_within_the_cap() {
        for cap in [1, 3] {
            for _ in 0..20 {
                let meet = Meet::default();
                std::thread::scope(|scope| {
                    let pool = Pool::new(scope, "t", cap);
                    pool.run(cap, (0..cap).collect(), |x: usize| x).unwrap();
                    pool.release();
                    meet.expect(cap + 1, 8);
                    meet.patience_ms.store(5, Ordering::SeqCst);
                    let out = pool
                        .run(cap, (0..8).collect(), |x: usize| {
                            meet.meet();
                            x
                        })
                        .unwrap();
                    assert_eq!(out, (0..8).map(Ok).collect::<Vec<_>>());
                    assert!(meet.max() <= cap, "{} in flight, cap {cap}", meet.max());
                    let alive = pool.queue.jobs.lock().alive;
                    assert!(alive <= cap, "{alive} threads alive, cap {cap}");
                });
            }
        }
    }

    /// This thread's voluntary context switches (Linux).
    #[cfg(target_os = "linux")]
    fn switches() -> usize {
        std::fs::read_to_string("/proc/thread-self/status")
            .expect("/proc/thread-self/status")
            .lines()
            .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
            .and_then(|v| v.trim().parse().ok())
            .expect("voluntary_ctxt_switches")
    }

    /// Issue 14: the driver of a phase sleeps until the phase is done and
    /// is woken once, not once a job (a result channel woke it for each:
    /// thousands of context switches on the cores a big round needs).
    /// Jobs end one by one, 2 ms apart, so a wake-up a job would show.
    #[test]
    #[cfg(target_os = "linux")]
    fn the_driver_of_a_phase_is_woken_once_not_once_a_job() {
        let jobs = 64;
        let woken = std::thread::scope(|scope| {
            let pool = Pool::new(scope, "t", jobs);
            pool.grow(jobs);
            let before = switches();
            let out = pool
                .run(jobs, (0..jobs).collect(), |i: usize| {
                    std::thread::sleep(Duration::from_millis(2 * i as u64 + 1));
                    i
                })
                .unwrap();
            let woken = switches() - before;
            assert_eq!(out, (0..jobs).map(Ok).collect::<Vec<_>>());
            woken
        });
        // A few for locks and the wake-ups of the job threads themselves.
        assert!(
            woken < 16,
            "the driver was woken {woken} times for {jobs} jobs"
        );
    }

    #[test]
    fn thread_counts() {
        assert_eq!(threads_for(10, None), 10);
        assert_eq!(threads_for(10, Some(4)), 4);
        assert_eq!(threads_for(0, None), 1);
    }
}
