//! A test seam for the kill -9 tests.

/// A test seam for the kill -9 tests: the process aborts (no destructors,
/// no flush, as a kill would leave it) when `BOARDROOM_TEST_CRASH_AT`
/// names this point, after as many passes as its `:N` suffix says
/// (`handoff-step-journaled:2`, the first pass when there is none).
/// Unset, it costs one environment lookup.
pub(crate) fn crash_point(name: &str) {
    use std::sync::atomic::{AtomicU32, Ordering};
    static PASSES: AtomicU32 = AtomicU32::new(0);
    let Ok(at) = std::env::var("BOARDROOM_TEST_CRASH_AT") else {
        return;
    };
    let (point, nth) = match at.split_once(':') {
        Some((p, n)) => (p, n.parse().unwrap_or(1)),
        None => (at.as_str(), 1),
    };
    if point == name && PASSES.fetch_add(1, Ordering::SeqCst) + 1 == nth {
        log::error!("crash point {name} reached: aborting (BOARDROOM_TEST_CRASH_AT)");
        std::process::abort();
    }
}
