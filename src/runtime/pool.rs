//! Running one phase's agents in parallel on threads sized for blocking I/O.
//!
//! Model calls block on the network, so a round needs one thread per member
//! (capped by `max_parallel`), not one per core: on rayon's global pool a
//! 2-core machine would run two members at once. Each phase starts its
//! threads in a scope and joins them when the phase ends; the threads take
//! jobs from one shared counter.
//!
//! Not a rayon pool: rayon's idle workers look for work to steal in every
//! other worker's queue, so N blocked-on-I/O members cost O(N) spinning
//! each, O(N²) in all (at 1024 members most of the round's CPU). Starting a
//! thread costs a few microseconds; a 1024-member phase starts its threads
//! in a few milliseconds.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::Mutex;

/// The stack of a member's thread: half the 2 MiB default (a member's call
/// goes through the tool loop, ureq and serde, never deep recursion), and
/// only the pages it touches are resident.
const STACK: usize = 1024 * 1024;

/// Why a pool could not be built.
#[derive(Debug)]
pub(crate) struct PoolError(pub(crate) String);

/// The number of threads for `jobs` jobs under a cap.
pub(crate) fn threads_for(jobs: usize, max_parallel: Option<usize>) -> usize {
    jobs.min(max_parallel.unwrap_or(usize::MAX)).max(1)
}

/// Runs `f` over `items` on a fresh pool of `threads` named threads and
/// returns the results in input order. A job that panics yields `Err` with
/// the panic message; the other jobs are unaffected.
pub(crate) fn run_parallel<T, R, F>(
    label: &str,
    threads: usize,
    items: Vec<T>,
    f: F,
) -> Result<Vec<Result<R, String>>, PoolError>
where
    T: Send,
    R: Send,
    F: Fn(T) -> R + Sync,
{
    let n = items.len();
    let jobs: Vec<Mutex<Option<T>>> = items.into_iter().map(|t| Mutex::new(Some(t))).collect();
    let slots: Vec<Mutex<Option<Result<R, String>>>> =
        jobs.iter().map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    let work = || {
        loop {
            let k = next.fetch_add(1, Ordering::Relaxed);
            let Some(job) = jobs.get(k) else { break };
            let Some(item) = job.lock().take() else {
                continue;
            };
            let result = catch_unwind(AssertUnwindSafe(|| f(item)))
                .map_err(|p| super::tool_loop::panic_text(p.as_ref()));
            *slots[k].lock() = Some(result);
        }
    };
    // Every job runs on a named thread of the pool (never the caller's: the
    // CLI keeps a member's panic off the terminal by its thread's name).
    let wanted = threads.clamp(1, n.max(1));
    let started = std::thread::scope(|scope| {
        let mut started = 0;
        for i in 0..wanted {
            let spawned = std::thread::Builder::new()
                .name(format!("boardroom-{label}-{i}"))
                .stack_size(STACK)
                .spawn_scoped(scope, work);
            match spawned {
                Ok(_) => started += 1,
                Err(e) => {
                    // Fewer threads still run every job, only less at once.
                    log::warn!(
                        "{label}: started {i} of {wanted} threads ({e}); the rest of the jobs wait for them"
                    );
                    break;
                }
            }
        }
        started
    });
    if started == 0 && n > 0 {
        return Err(PoolError(format!("{label}: no thread could be started")));
    }
    Ok(slots
        .into_iter()
        .map(|s| {
            s.into_inner()
                .unwrap_or_else(|| Err("the job did not run".into()))
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

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
        let now = AtomicUsize::new(0);
        let max = AtomicUsize::new(0);
        run_parallel("t", 24, (0..24).collect(), |_| {
            let n = now.fetch_add(1, Ordering::SeqCst) + 1;
            max.fetch_max(n, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(200));
            now.fetch_sub(1, Ordering::SeqCst);
        })
        .unwrap();
        assert_eq!(max.load(Ordering::SeqCst), 24);
    }

    #[test]
    fn thread_counts() {
        assert_eq!(threads_for(10, None), 10);
        assert_eq!(threads_for(10, Some(4)), 4);
        assert_eq!(threads_for(0, None), 1);
    }
}
