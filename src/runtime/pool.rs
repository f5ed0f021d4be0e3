//! Running one phase's agents in parallel on a pool sized for blocking I/O.
//!
//! Model calls block on the network, so a round needs one thread per member
//! (capped by `max_parallel`), not one per core: on rayon's global pool a
//! 2-core machine would run two members at once. Each run phase builds its
//! own pool with an explicit size and named threads; the pool is joined
//! when the phase ends.

use std::panic::{AssertUnwindSafe, catch_unwind};

use parking_lot::Mutex;

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
    let label = label.to_string();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(move |i| format!("boardroom-{label}-{i}"))
        .build()
        .map_err(|e| PoolError(e.to_string()))?;
    let slots: Vec<Mutex<Option<Result<R, String>>>> =
        items.iter().map(|_| Mutex::new(None)).collect();
    pool.scope(|scope| {
        for (item, slot) in items.into_iter().zip(&slots) {
            let f = &f;
            scope.spawn(move |_| {
                let result = catch_unwind(AssertUnwindSafe(|| f(item)))
                    .map_err(|p| super::tool_loop::panic_text(p.as_ref()));
                *slot.lock() = Some(result);
            });
        }
    });
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
