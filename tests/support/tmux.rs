//! A terminal for tests: a detached tmux session running a shell script,
//! killed when the test ends, and the keys and screen captures the tests
//! drive it with. Needs tmux (`scripts/setup-tmux.sh`).

use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// `tmux ARGS`.
pub fn tmux(args: &[&str]) -> Output {
    Command::new("tmux")
        .args(args)
        .output()
        .expect("tmux is not installed: run scripts/setup-tmux.sh")
}

/// A tmux session, killed on drop.
pub struct Session(pub String);

impl Drop for Session {
    fn drop(&mut self) {
        let _ = tmux(&["kill-session", "-t", &self.0]);
    }
}

impl Session {
    /// Starts session `name`, `width` columns by 50 lines, running
    /// `bash -c SCRIPT`; asserts that tmux started it.
    pub fn start(name: &str, width: &str, script: &str) -> Session {
        let started = tmux(&[
            "new-session",
            "-d",
            "-s",
            name,
            "-x",
            width,
            "-y",
            "50",
            "bash",
            "-c",
            script,
        ]);
        assert!(started.status.success(), "{started:?}");
        Session(name.to_string())
    }

    /// The screen and the 200 lines above it.
    pub fn screen(&self) -> String {
        let out = tmux(&["capture-pane", "-p", "-S", "-200", "-t", &self.0]);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Waits until the screen shows `what` (at most 60 s).
    pub fn wait_for(&self, what: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let screen = self.screen();
            if screen.contains(what) {
                return screen;
            }
            assert!(Instant::now() < deadline, "no {what:?} on:\n{screen}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Types `text` one character per `send-keys`, then Enter.
    pub fn type_line(&self, text: &str) {
        for c in text.chars() {
            tmux(&["send-keys", "-t", &self.0, "-l", &c.to_string()]);
            std::thread::sleep(Duration::from_millis(5));
        }
        tmux(&["send-keys", "-t", &self.0, "Enter"]);
    }

    /// Presses `key` (a tmux key name such as `C-c`).
    pub fn key(&self, key: &str) {
        tmux(&["send-keys", "-t", &self.0, key]);
    }
}
