//! A member that panics, as the CLI shows it (issue 22): its `✗` line
//! once, no raw panic report, on every executor. The CLI's panic hook asks
//! the library whether the pool catches the panic
//! (`boardroom::panic_is_caught`), never a thread's name.

mod support;

use support::cli::{boardroom, repo, text};

#[test]
fn issue22_a_panicking_member_is_one_error_line_on_every_executor() {
    for executor in ["threads", "rayon", "auto"] {
        let out = boardroom(
            &[
                "run",
                "--model",
                "sim:panic=writer",
                "--executor",
                executor,
                "Plan a picnic",
            ],
            repo(),
        );
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(4), "{executor}: {stderr}");
        let failed = "✗ writer panicked: sim: simulated panic in 'writer'";
        assert_eq!(
            stderr.matches(failed).count(),
            1,
            "{executor}: the ✗ line once: {stderr}"
        );
        assert_eq!(
            stderr.matches("simulated panic").count(),
            1,
            "{executor}: the panic's text only on its ✗ line: {stderr}"
        );
        assert!(
            !stderr.contains("panicked at") && !stderr.contains("RUST_BACKTRACE"),
            "{executor}: no raw panic report: {stderr}"
        );
    }
}
