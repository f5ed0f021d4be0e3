//! The threads of this test process, counted from `/proc/self/task`
//! (Linux): what a run started or ended, never timed.

/// The member pool's threads now (`boardroom-member-N`; the kernel keeps
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
                .is_ok_and(|c| c.starts_with("boardroom-membe"))
        })
        .count()
}
