//! Which panics the pool catches: a job runs inside [`catching`], which
//! marks its thread for as long as the job runs, so a panic hook can ask
//! [`panic_is_caught`] instead of guessing from a thread's name.

use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};

thread_local! {
    /// Jobs of a pool running on this thread now (a job may run another
    /// pool's job inside it: a run started from a member).
    static JOBS: Cell<u32> = const { Cell::new(0) };
}

/// Runs a pool's job, catching its panic; [`panic_is_caught`] is true on
/// this thread while it runs (and while its panic unwinds).
pub(crate) fn catching<R>(job: impl FnOnce() -> R) -> std::thread::Result<R> {
    /// Unmarks the thread when the job returns or unwinds.
    struct Mark;
    impl Drop for Mark {
        fn drop(&mut self) {
            JOBS.with(|j| j.set(j.get().saturating_sub(1)));
        }
    }
    JOBS.with(|j| j.set(j.get() + 1));
    let _mark = Mark;
    catch_unwind(AssertUnwindSafe(job))
}

/// Whether a panic on the current thread now will be caught by boardroom:
/// the thread runs a member's job in a run's pool, where a panic becomes
/// an `error` entry on the board (`✗ NAME panicked: ...`) and the run goes
/// on. A binary's panic hook can use it to keep such a panic's report out
/// of the terminal.
///
/// # Examples
///
/// ```
/// let default = std::panic::take_hook();
/// std::panic::set_hook(Box::new(move |info| {
///     if boardroom::panic_is_caught() {
///         log::debug!("{info}");
///     } else {
///         default(info);
///     }
/// }));
/// ```
#[must_use]
pub fn panic_is_caught() -> bool {
    JOBS.with(|j| j.get() > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_is_marked_while_it_runs_and_unwinds_and_not_after() {
        assert!(!panic_is_caught());
        assert_eq!(catching(panic_is_caught).ok(), Some(true));
        /// Records whether the thread is marked as the panic unwinds it.
        struct Unwinding<'a>(&'a Cell<Option<bool>>);
        impl Drop for Unwinding<'_> {
            fn drop(&mut self) {
                self.0.set(Some(panic_is_caught()));
            }
        }
        let seen = Cell::new(None);
        let caught = catching(|| {
            let _unwinding = Unwinding(&seen);
            std::panic::resume_unwind(Box::new("a member's panic"))
        });
        assert_eq!(seen.get(), Some(true), "marked while the panic unwinds");
        assert!(caught.is_err());
        assert!(!panic_is_caught(), "unmarked once the job has unwound");
    }
}
