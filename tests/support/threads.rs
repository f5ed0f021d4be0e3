//! The threads of this test process, counted from `/proc/self/task`
//! (Linux): what a run started or ended, never timed.

/// The member pool's threads now, on either executor: the own pool's
/// `boardroom-member-N` and rayon's `boardroom-rayon-N` (the kernel keeps
/// 15 bytes of a thread's name). Only meaningful in a test binary with one
/// test, so one run at a time.
pub fn member_threads() -> usize {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        panic!("no /proc/self/task");
    };
    tasks
        .filter_map(Result::ok)
        .filter(|t| {
            std::fs::read_to_string(t.path().join("comm"))
                .is_ok_and(|c| c.starts_with("boardroom-membe") || c.starts_with("boardroom-rayon"))
        })
        .count()
}

/// The member threads left once a run has returned: its member threads
/// are all joined by then, but the kernel lists an ended thread in
/// `/proc/self/task` a little longer (a joined thread is reaped after its
/// joiner is woken), so this waits at most 10 s for the count to reach 0.
pub fn member_threads_left() -> usize {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let n = member_threads();
        if n == 0 || std::time::Instant::now() > until {
            return n;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}
