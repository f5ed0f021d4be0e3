//! The `boardroom` binary as the CLI tests run it: hermetic (no model, log
//! filter or base URL taken from the caller's environment), each run saved
//! where the test says or in a fresh place of its own.

use std::path::Path;
use std::process::{Child, Command, ExitStatus, Output};
use std::time::{Duration, Instant};

/// The binary cargo built for these tests.
pub const BIN: &str = env!("CARGO_BIN_EXE_boardroom");

/// `boardroom ARGS` in `dir`. Each call saves its run (and the master's
/// memory) in a fresh place, so tests never see each other's runs.
pub fn boardroom(args: &[&str], dir: &Path) -> Output {
    let runs = tempfile::tempdir().unwrap();
    Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .env("BOARDROOM_RUNS_DIR", runs.path())
        .env_remove("BOARDROOM_MODEL")
        .env_remove("RUST_LOG")
        .env_remove("OPENAI_BASE_URL")
        .output()
        .expect("the binary runs")
}

/// `boardroom ARGS --runs-dir RUNS`, with no model or base URL taken from
/// the environment.
pub fn with_runs_dir(args: &[&str], runs: &Path) -> Output {
    Command::new(BIN)
        .args(args)
        .arg("--runs-dir")
        .arg(runs)
        .env_remove("BOARDROOM_MODEL")
        .env_remove("OPENAI_BASE_URL")
        .output()
        .unwrap()
}

/// The checkout (where `examples/` is).
pub fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Bytes of stdout or stderr as text.
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Ctrl-C for `child`: SIGINT through `kill -INT PID`, which must succeed.
pub fn ctrl_c(child: &Child) {
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
}

/// How `child` exited, within `limit`; past it, the child is killed and
/// the test fails with `what`.
pub fn exit_within(child: &mut Child, limit: Duration, what: &str) -> ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{what}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
