//! Holding the sim's drafts until enough are in flight: with
//! `SimOptions::hold`, the drafts wait for a file; a watcher writes it once
//! the sim counts `n` calls in flight at once, so an overlap is made, not
//! hoped for from a sleep.

use std::path::Path;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use boardroom::testing::SimStats;

/// Creates `hold` once `n` calls have been in flight at once, `linger`
/// after that (room for any call past a cap to show), or after 30 s (the
/// test's assertions on the count then say what ran together).
pub fn release_when(
    stats: &Arc<SimStats>,
    n: usize,
    linger: Duration,
    hold: &Path,
) -> JoinHandle<()> {
    let stats = Arc::clone(stats);
    let hold = hold.to_path_buf();
    std::thread::spawn(move || {
        let started = Instant::now();
        while stats.max_in_flight() < n && started.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(linger);
        // A test that failed first may have removed its directory.
        let _ = std::fs::write(&hold, "");
    })
}
