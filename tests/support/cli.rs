//! The `boardroom` binary as the CLI tests run it: hermetic (no model, log
//! filter or base URL taken from the caller's environment), each run saved
//! where the test says or in a fresh place of its own.

use std::path::Path;
use std::process::{Child, Command, ExitStatus, Output};
use std::time::{Duration, Instant};

/// The binary cargo built for these tests.
pub const BIN: &str = env!("CARGO_BIN_EXE_boardroom");

/// The binary to test: `BOARDROOM_TEST_BIN` when set (a copy of a build
/// that the shared target directory cannot overwrite mid-test), else
/// [`BIN`].
pub fn bin() -> String {
    std::env::var("BOARDROOM_TEST_BIN")
        .ok()
        .filter(|b| !b.is_empty())
        .unwrap_or_else(|| BIN.to_string())
}

/// `boardroom ARGS` in `dir` with nothing taken from the caller's
/// environment that changes what it does (model, base URLs, keys, log
/// filter, where it saves): everything it saves goes under `home`
/// (`BOARDROOM_HOME`), never the real home.
pub fn hermetic(args: &[&str], dir: &Path, home: &Path) -> Command {
    let mut cmd = Command::new(bin());
    cmd.args(args)
        .current_dir(dir)
        .env("BOARDROOM_HOME", home)
        .env("HOME", home)
        .env_remove("XDG_DATA_HOME")
        .env_remove("BOARDROOM_RUNS_DIR")
        .env_remove("BOARDROOM_CHATS_DIR")
        .env_remove("BOARDROOM_MODEL")
        .env_remove("RUST_LOG")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_MODEL")
        .env_remove("OLLAMA_HOST")
        .env_remove("OLLAMA_API_KEY");
    cmd
}

/// `boardroom ARGS` in `dir`. Each call saves its run (and the master's
/// memory) in a fresh place, so tests never see each other's runs.
pub fn boardroom(args: &[&str], dir: &Path) -> Output {
    let runs = tempfile::tempdir().unwrap();
    Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .env("BOARDROOM_RUNS_DIR", runs.path())
        // Chats too, never in the real home (issue 21).
        .env("BOARDROOM_HOME", runs.path())
        .env_remove("BOARDROOM_MODEL")
        .env_remove("RUST_LOG")
        .env_remove("OPENAI_BASE_URL")
        .output()
        .expect("the binary runs")
}

/// `boardroom ARGS --runs-dir RUNS`, with no model or base URL taken from
/// the environment.
pub fn with_runs_dir(args: &[&str], runs: &Path) -> Output {
    let home = tempfile::tempdir().unwrap();
    Command::new(BIN)
        .args(args)
        .arg("--runs-dir")
        .arg(runs)
        .env("BOARDROOM_HOME", home.path())
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
