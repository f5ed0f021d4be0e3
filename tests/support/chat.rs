//! A scripted `boardroom chat` through a pipe: lines written to its stdin,
//! its stdout read line by line on a thread and its stderr on another,
//! every line read kept, reads and the wait for its exit bounded by one
//! deadline for the whole session (the process is killed when a test
//! drops it, passing or failing).

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;

/// A `boardroom chat` process under a test's script.
pub struct PipedChat {
    pub child: Child,
    stdin: Option<ChildStdin>,
    rx: Receiver<String>,
    /// All of stderr, once it closes.
    err_rx: Receiver<String>,
    deadline: Instant,
    /// Every line read so far, in order.
    pub seen: Vec<String>,
}

/// How a piped chat ended.
pub struct Ended {
    pub status: ExitStatus,
    /// Every line of stdout, each followed by a newline.
    pub stdout: String,
    pub stderr: String,
}

impl PipedChat {
    /// `boardroom chat ARGS` in `dir` (no model, base URL or log filter
    /// from the caller's environment), `input` written at once; every read fails
    /// after `limit`.
    pub fn start(dir: &Path, args: &[&str], input: &str, limit: Duration) -> PipedChat {
        let mut child = Command::new(super::cli::BIN)
            .arg("chat")
            .args(args)
            .current_dir(dir)
            // Saved in `dir` as `runs/` and `chats/`, never in the real
            // home (issue 21), with the relative paths the tests read.
            .env("BOARDROOM_HOME", dir)
            .env("BOARDROOM_RUNS_DIR", "runs")
            .env("BOARDROOM_CHATS_DIR", "chats")
            .env_remove("BOARDROOM_MODEL")
            .env_remove("OPENAI_BASE_URL")
            .env_remove("RUST_LOG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (tx, rx) = crossbeam_channel::unbounded();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        // Drained on its own thread: a chat that writes much to stderr
        // never blocks on a full pipe.
        let (err_tx, err_rx) = crossbeam_channel::bounded(1);
        let mut stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = stderr.read_to_end(&mut bytes);
            let _ = err_tx.send(String::from_utf8_lossy(&bytes).into_owned());
        });
        let mut chat = PipedChat {
            stdin: child.stdin.take(),
            child,
            rx,
            err_rx,
            deadline: Instant::now() + limit,
            seen: Vec::new(),
        };
        chat.send(input);
        chat
    }

    /// Types `input` (lines ending in `\n`). A chat that has already
    /// exited is not an error here: what it printed tells.
    pub fn send(&mut self, input: &str) {
        let stdin = self.stdin.as_mut().expect("the input is still open");
        let _ = stdin.write_all(input.as_bytes());
    }

    /// Ends the input (Ctrl-D through a pipe).
    pub fn close_input(&mut self) {
        self.stdin = None;
    }

    /// The next line within `within` (and the session's deadline), kept.
    pub fn line_within(&mut self, within: Duration) -> Option<String> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        let line = self.rx.recv_timeout(within.min(left)).ok()?;
        self.seen.push(line.clone());
        Some(line)
    }

    /// The next line; fails with what was seen at the deadline.
    pub fn next_line(&mut self) -> String {
        self.line_within(Duration::MAX)
            .unwrap_or_else(|| panic!("the chat went quiet:\n{}", self.transcript()))
    }

    /// Reads until a line for which `stop` holds, and returns it; fails
    /// with "no WHAT in" and what was seen at the deadline.
    pub fn until(&mut self, what: &str, stop: impl Fn(&str) -> bool) -> String {
        loop {
            let line = self
                .line_within(Duration::MAX)
                .unwrap_or_else(|| panic!("no {what} in:\n{}", self.transcript()));
            if stop(&line) {
                return line;
            }
        }
    }

    /// Whether the session's deadline has passed.
    pub fn late(&self) -> bool {
        Instant::now() >= self.deadline
    }

    /// Every line seen so far, each followed by a newline.
    pub fn transcript(&self) -> String {
        self.seen.iter().map(|l| format!("{l}\n")).collect()
    }

    /// Ends the input, waits for the process and reads the rest, all
    /// within the session's deadline (a second of grace past it): a chat
    /// still running then is killed and the test fails with what it
    /// printed.
    pub fn finish(mut self) -> Ended {
        self.close_input();
        let deadline = self.deadline.max(Instant::now() + Duration::from_secs(1));
        let left = || deadline.saturating_duration_since(Instant::now());
        let what = format!(
            "the chat did not exit by its deadline (killed); its stdout so far:\n{}",
            self.transcript()
        );
        let status = super::cli::exit_within(&mut self.child, left(), &what);
        // The pipes close with the process (a child it left holding one
        // only costs the wait up to the deadline).
        while let Ok(line) = self.rx.recv_timeout(left()) {
            self.seen.push(line);
        }
        let stderr = self.err_rx.recv_timeout(left()).unwrap_or_default();
        Ended {
            status,
            stdout: self.transcript(),
            stderr,
        }
    }
}

impl Drop for PipedChat {
    /// A chat left running by a failing test is killed, not left behind.
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The run id in a `[team] run ID …` line.
pub fn run_id_of(launched: &str) -> String {
    launched["[team] run ".len()..]
        .split(' ')
        .next()
        .unwrap()
        .to_string()
}
