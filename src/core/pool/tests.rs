use super::*;
use parking_lot::Mutex;
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

/// The executors every test that is not about one pool's internals runs
/// on.
const BOTH: [Executor; 2] = [Executor::Rayon, Executor::Threads];

/// A pool on `executor`, capped at `cap`.
fn pool<'scope, 'env>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    executor: Executor,
    cap: usize,
) -> Pool<'scope, 'env> {
    let pool = Pool::new(scope, executor, Executor::auto_limit(), "t", cap);
    assert_eq!(pool.executor(), executor);
    pool
}

/// The prefix of a pool's thread names.
fn prefix(executor: Executor) -> &'static str {
    match executor {
        Executor::Rayon => "boardroom-rayon-",
        _ => "boardroom-t-",
    }
}

impl Pool<'_, '_> {
    /// Threads that began to run (the count outlives the pool).
    fn begun(&self) -> std::sync::Arc<AtomicUsize> {
        match &self.rayon {
            Some(p) => p.begun(),
            None => self.own().begun(),
        }
    }

    /// Threads started and not ended.
    fn alive(&self) -> usize {
        match &self.rayon {
            Some(p) => p.alive(),
            None => self.own().alive(),
        }
    }

    /// The next `n` thread starts fail.
    fn refuse(&self, n: usize) {
        match &self.rayon {
            Some(p) => p.refuse(n),
            None => self.own().refuse(n),
        }
    }
}

#[test]
fn results_keep_input_order_and_panics_stay_contained() {
    for executor in BOTH {
        let out = run_parallel(executor, 4, vec![1, 2, 3, 4], |x| {
            if x == 3 {
                panic!("three");
            }
            x * 10
        })
        .unwrap();
        assert_eq!(
            out,
            vec![Ok(10), Ok(20), Err("three".into()), Ok(40)],
            "{executor}"
        );
    }
}

#[test]
fn all_jobs_are_in_flight_at_once() {
    for executor in BOTH {
        let meet = Meet::default();
        meet.expect(24, 24);
        run_parallel(executor, 24, (0..24).collect(), |_| meet.meet()).unwrap();
        assert_eq!(meet.max(), 24, "{executor}");
    }
}

/// The threads of a run's pool are started once and serve every phase:
/// three phases of 8, 3 and 8 jobs run on 8 threads, each phase's jobs
/// all in flight at once, a panic in one phase kills no thread, and the
/// threads are joined when the scope ends.
#[test]
fn a_pool_serves_every_phase_on_the_threads_it_started_once() {
    for executor in BOTH {
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
        let mut begun = None;
        let threads = std::thread::scope(|scope| {
            let pool = pool(scope, executor, 8);
            begun = Some(pool.begun());
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
        assert_eq!(threads, 8, "{executor}: started once, not per phase");
        let begun = begun.map(|b| b.load(Ordering::SeqCst));
        assert_eq!(begun, Some(8), "{executor}: 8 threads ran, all joined");
        let names = names.into_inner();
        assert_eq!(
            names.len(),
            8,
            "{executor}: three phases ran on the same 8 threads: {names:?}"
        );
        assert!(
            names.iter().all(|n| n.starts_with(prefix(executor))),
            "{names:?}"
        );
    }
}

#[test]
fn a_pool_never_passes_its_cap() {
    for executor in BOTH {
        // Four are never in at once: each job waits 50 ms for a fourth.
        let meet = Meet::default();
        meet.expect(4, 9);
        meet.patience_ms.store(50, Ordering::SeqCst);
        let (threads, begun) = std::thread::scope(|scope| {
            let pool = pool(scope, executor, 3);
            pool.prestart(100);
            let out = pool
                .run(100, (0..9).collect(), |x: usize| {
                    meet.meet();
                    x
                })
                .unwrap();
            assert_eq!(out, (0..9).map(Ok).collect::<Vec<_>>());
            (pool.threads(), pool.begun())
        });
        assert_eq!(threads, 3, "{executor}");
        assert_eq!(begun.load(Ordering::SeqCst), 3, "{executor}");
        assert!(meet.max() <= 3, "{executor}: {} in flight", meet.max());
    }
}

/// Issue 14: a start that failed in one phase (out of threads then)
/// is tried again in the next, not given up for the whole run.
#[test]
fn a_failed_start_is_retried_by_the_next_phase() {
    for executor in BOTH {
        let meet = Meet::default();
        meet.expect(4, 4);
        let threads = std::thread::scope(|scope| {
            let pool = pool(scope, executor, 4);
            pool.refuse(1);
            assert!(
                pool.run(4, vec![1, 2], |x: usize| x).is_err(),
                "{executor}: no thread: the phase fails"
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
        assert_eq!(
            threads, 4,
            "{executor}: the second phase started its threads"
        );
    }
}

/// A start that fails in the middle of a phase's leaves the phase to the
/// threads that did start: every job runs, on fewer threads.
#[test]
fn a_phase_runs_on_the_threads_that_could_start() {
    for executor in BOTH {
        let out = std::thread::scope(|scope| {
            let pool = pool(scope, executor, 8);
            // Two starts work, the rest fail.
            pool.run(2, vec![0, 1], |x: usize| x).unwrap();
            pool.refuse(usize::MAX);
            let out = pool.run(8, (0..8).collect(), |x: usize| x);
            let alive = pool.alive();
            assert!((1..=2).contains(&alive), "{executor}: {alive} alive");
            out
        });
        assert_eq!(
            out.unwrap(),
            (0..8).map(Ok).collect::<Vec<_>>(),
            "{executor}"
        );
    }
}

/// Issue 14: with no cap the pool grows to each phase's size, past
/// whatever it was started with ahead of time.
#[test]
fn an_uncapped_pool_grows_past_its_prestart_to_the_phase() {
    for executor in BOTH {
        let meet = Meet::default();
        meet.expect(8, 8);
        let threads = std::thread::scope(|scope| {
            let pool = pool(scope, executor, usize::MAX);
            pool.prestart(2);
            pool.run(8, (0..8).collect(), |_: usize| meet.meet())
                .unwrap();
            pool.threads()
        });
        assert_eq!(threads, 8, "{executor}");
        assert_eq!(meet.max(), 8, "{executor}");
    }
}

/// A phase wider than the ones before gets a thread for each of its jobs,
/// and the threads there are keep serving: 2 then 8 jobs at once take 8
/// threads in all, none started twice.
#[test]
fn a_wider_phase_adds_threads_and_keeps_the_ones_there_are() {
    for executor in BOTH {
        let meet = Meet::default();
        let (threads, begun) = std::thread::scope(|scope| {
            let pool = pool(scope, executor, usize::MAX);
            meet.expect(2, 2);
            pool.run(2, vec![0, 1], |_: usize| meet.meet()).unwrap();
            assert_eq!(pool.threads(), 2);
            meet.expect(8, 8);
            pool.run(8, (0..8).collect(), |_: usize| meet.meet())
                .unwrap();
            assert_eq!(meet.max(), 8, "{executor}: the wider phase at once");
            (pool.threads(), pool.begun())
        });
        assert_eq!(threads, 8, "{executor}");
        assert_eq!(begun.load(Ordering::SeqCst), 8, "{executor}: none twice");
    }
}

/// A phase whose every thread start fails, the places its first grow
/// counted on included (the prestart's helpers had taken them), ends
/// with its jobs unrun instead of waiting for ever.
#[test]
fn a_phase_with_no_thread_at_all_ends_instead_of_hanging() {
    for executor in BOTH {
        for _ in 0..20 {
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let out = std::thread::scope(|scope| {
                    let pool = pool(scope, executor, 4);
                    pool.refuse(usize::MAX);
                    pool.prestart(4);
                    pool.run(4, (0..4).collect(), |x: usize| x)
                });
                let _ = tx.send(out.map(|r| r.iter().filter(|x| x.is_err()).count()));
            });
            match rx.recv_timeout(Duration::from_secs(10)) {
                Ok(Ok(failed)) => {
                    panic!("{executor}: the phase ran with no thread: {failed} failed")
                }
                Ok(Err(e)) => assert!(e.0.contains("no thread could be started"), "{}", e.0),
                Err(_) => panic!("{executor}: the phase hung with no thread to run it"),
            }
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
            let pool = pool(scope, Executor::Threads, 50);
            pool.prestart(1000);
            std::thread::scope(|inner| {
                for _ in 0..6 {
                    inner.spawn(|| pool.own().grow(1000));
                }
            });
            let q = pool.begun();
            let until = std::time::Instant::now() + Duration::from_secs(5);
            while q.load(Ordering::SeqCst) < 50 && std::time::Instant::now() < until {
                std::thread::sleep(Duration::from_millis(1));
            }
            (pool.threads(), pool.alive(), q.load(Ordering::SeqCst))
        });
        assert_eq!((threads, alive, begun), (50, 50, 50));
    }
}

/// Issue 14: once a phase has run, a thread is started only for a job
/// that waits for one: a phase of instant jobs (a model at no latency)
/// is done by far fewer threads than it has jobs. Before, it started
/// one a job (1000 here) that mostly found nothing left. (The own pool:
/// a rayon pool is built at the phase's width before its jobs start.)
#[test]
fn threads_are_started_only_for_jobs_that_wait() {
    let meet = Meet::default();
    meet.expect(2, 2);
    let threads = std::thread::scope(|scope| {
        let pool = pool(scope, Executor::Threads, usize::MAX);
        pool.run(2, vec![0, 1], |_: usize| meet.meet()).unwrap();
        assert_eq!(pool.threads(), 2);
        // Nothing waits: no thread is started, whatever is asked.
        assert_eq!(pool.own().grow(1000), 2);
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
    for executor in BOTH {
        let meet = Meet::default();
        std::thread::scope(|scope| {
            let pool = pool(scope, executor, 4);
            meet.expect(4, 4);
            pool.run(4, (0..4).collect(), |_: usize| meet.meet())
                .unwrap();
            assert_eq!(meet.max(), 4);
            pool.release();
            let until = std::time::Instant::now() + Duration::from_secs(5);
            while pool.alive() > 0 && std::time::Instant::now() < until {
                std::thread::sleep(Duration::from_millis(1));
            }
            assert_eq!(pool.alive(), 0, "{executor}: all ended");
            meet.expect(5, 6);
            meet.patience_ms.store(50, Ordering::SeqCst);
            let out = pool.run(8, (0..6).collect(), |x: usize| {
                meet.meet();
                x
            });
            assert_eq!(out.unwrap(), (0..6).map(Ok).collect::<Vec<_>>());
            assert!(meet.max() <= 4, "{executor}: started again, within the cap");
            assert_eq!(pool.threads(), 4, "{executor}");
        });
    }
}

/// A phase run right after a release (its threads still ending) runs
/// every job and never passes the cap, for caps of 1 and 3: the pool
/// counts exactly the threads that will still take jobs.
#[test]
fn a_phase_right_after_a_release_runs_within_the_cap() {
    for executor in BOTH {
        for cap in [1, 3] {
            for _ in 0..20 {
                let meet = Meet::default();
                std::thread::scope(|scope| {
                    let pool = pool(scope, executor, cap);
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
                    assert!(
                        meet.max() <= cap,
                        "{executor}: {} in flight, cap {cap}",
                        meet.max()
                    );
                    let alive = pool.alive();
                    assert!(alive <= cap, "{executor}: {alive} threads alive, cap {cap}");
                });
            }
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
    for executor in BOTH {
        let jobs = 64;
        let woken = std::thread::scope(|scope| {
            let pool = pool(scope, executor, jobs);
            // Every thread started before the phase that is counted.
            if pool.rayon.is_none() {
                pool.own().grow(jobs);
            } else {
                pool.run(jobs, (0..jobs).collect(), |i: usize| i).unwrap();
            }
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
            "{executor}: the driver was woken {woken} times for {jobs} jobs"
        );
    }
}

#[test]
fn thread_counts() {
    assert_eq!(threads_for(10, None), 10);
    assert_eq!(threads_for(10, Some(4)), 4);
    assert_eq!(threads_for(0, None), 1);
}

/// `auto` is chosen per phase: rayon for a phase up to its limit (judged
/// by the phase's threads under the cap), the own pool for a wider one
/// and for every phase after it; rayon's threads end before the own
/// pool's start.
#[test]
fn auto_runs_narrow_phases_on_rayon_and_a_wide_one_on_the_own_pool() {
    let name = || std::thread::current().name().unwrap_or("").to_string();
    std::thread::scope(|scope| {
        let capped = Pool::new(scope, Executor::Auto, 2, "t", 2);
        assert_eq!(capped.executor_for(3), Executor::Rayon);
        let pool = Pool::new(scope, Executor::Auto, 2, "t", usize::MAX);
        assert_eq!(pool.executor(), Executor::Rayon);
        assert_eq!(pool.executor_for(2), Executor::Rayon);
        assert_eq!(pool.executor_for(3), Executor::Threads);
        let narrow = pool.run(2, vec![0, 1], |_: i32| name()).unwrap();
        assert!(
            narrow
                .iter()
                .flatten()
                .all(|n| n.starts_with("boardroom-rayon-")),
            "{narrow:?}"
        );
        let wide = pool.run(3, vec![0, 1, 2], |_: i32| name()).unwrap();
        assert!(
            wide.iter().flatten().all(|n| n.starts_with("boardroom-t-")),
            "{wide:?}"
        );
        assert_eq!(
            pool.rayon.as_ref().map(rayon_pool::RayonPool::alive),
            Some(0)
        );
        assert_eq!(pool.executor(), Executor::Threads);
        let after = pool.run(1, vec![0], |_: i32| name()).unwrap();
        assert!(
            after
                .iter()
                .flatten()
                .all(|n| n.starts_with("boardroom-t-")),
            "{after:?}"
        );
    });
}
