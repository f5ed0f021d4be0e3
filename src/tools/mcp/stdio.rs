//! The stdio transport: one server process, newline-delimited JSON-RPC 2.0
//! over its stdin/stdout.
//!
//! One reader thread per process reads every line the server writes and
//! hands it to the [`Session`] (a response goes to the caller waiting for
//! its id); the answers to server requests are written back from there.
//! A writer thread owns the server's stdin: callers queue their lines and
//! never block on a server that stops reading (a full pipe), beyond their
//! own timeout. A third thread drains stderr, keeping only a short tail
//! for error messages. A line longer than [`MAX_LINE`] ends the session with an
//! error instead of growing a buffer without end.

use std::io::{BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio as Pipe};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{Receiver, SendTimeoutError, Sender, TrySendError};
use parking_lot::Mutex;
use serde_json::Value;

use super::lines::{MAX_LINE, Read, read_line, skip_line};
use super::reap;
use super::session::Session;
use super::{McpError, McpServerConfig};

/// How long the end of a session waits for the rest of its stderr.
const STDERR_GRACE: std::time::Duration = std::time::Duration::from_millis(500);
/// How long ending a session waits for its reader threads once the
/// process group is ended.
const JOIN_GRACE: std::time::Duration = std::time::Duration::from_secs(2);
/// Bytes of one stderr line read (the rest is skipped, unread into memory).
const STDERR_READ: usize = 64 * 1024;
/// Lines queued for a server that is not reading its input; past this a
/// caller waits (at most its timeout) for room.
const QUEUED_LINES: usize = 64;

/// A running server process.
pub(crate) struct Stdio {
    /// The queue of lines to the writer thread (taken at shutdown).
    stdin: Mutex<Option<Sender<Vec<u8>>>>,
    child: Mutex<Option<Child>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    pid: u32,
    /// The mark in its environment (see [`reap`]).
    mark: String,
    /// The inodes of its stdout and stderr pipes.
    pipes: Vec<u64>,
}

impl Stdio {
    /// Starts the process and its reader threads.
    pub(crate) fn start(
        name: &str,
        config: &McpServerConfig,
        base_dir: Option<&Path>,
        session: &Arc<Session>,
    ) -> Result<Stdio, McpError> {
        let mut cmd = Command::new(&config.command);
        cmd.args(&config.args)
            .envs(&config.env)
            .stdin(Pipe::piped())
            .stdout(Pipe::piped())
            .stderr(Pipe::piped());
        // Its own process group, so that ending it ends anything it started
        // (`npx` runs the server as a grandchild).
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        // A mark its descendants inherit, however they detach.
        let mark = reap::new_mark(name);
        cmd.env(reap::MARK_VAR, &mark);
        // In the team directory unless `cwd` says otherwise (relative to
        // it), not wherever boardroom was started.
        match (&config.cwd, base_dir) {
            (Some(cwd), Some(base)) => {
                cmd.current_dir(base.join(cwd));
            }
            (Some(cwd), None) => {
                cmd.current_dir(cwd);
            }
            (None, Some(base)) => {
                cmd.current_dir(base);
            }
            (None, None) => {}
        }
        let spawn_err = |detail: String| McpError::Spawn {
            command: config.command.clone(),
            detail,
            source: None,
        };
        let mut child = cmd.spawn().map_err(|e| McpError::Spawn {
            command: config.command.clone(),
            detail: e.to_string(),
            source: Some(std::sync::Arc::new(e)),
        })?;
        let pid = child.id();
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(spawn_err("no pipes to the child".into()));
        };
        #[cfg(unix)]
        let pipes = [reap::pipe_inode(&stdout), reap::pipe_inode(&stderr)]
            .into_iter()
            .flatten()
            .collect();
        #[cfg(not(unix))]
        let pipes = Vec::new();
        let (lines, queued) = crossbeam_channel::bounded::<Vec<u8>>(QUEUED_LINES);
        let answers = lines.clone();
        // Dropped when the stderr thread ends: the reader waits for it
        // (briefly) so that a dying server's last words are in the error.
        let (err_done_tx, err_done) = crossbeam_channel::bounded::<()>(0);
        let transport = Stdio {
            stdin: Mutex::new(Some(lines)),
            child: Mutex::new(Some(child)),
            threads: Mutex::new(Vec::new()),
            pid,
            mark,
            pipes,
        };
        let reader = {
            let session = Arc::clone(session);
            let server = name.to_string();
            std::thread::Builder::new()
                .name(format!("mcp-{name}-reader"))
                .spawn(move || read_loop(&server, stdout, &session, &answers, &err_done))
        };
        let writer = std::thread::Builder::new()
            .name(format!("mcp-{name}-writer"))
            .spawn(move || write_loop(stdin, &queued));
        let errlog = {
            let session = Arc::clone(session);
            let server = name.to_string();
            std::thread::Builder::new()
                .name(format!("mcp-{name}-stderr"))
                .spawn(move || {
                    stderr_loop(&server, stderr, &session);
                    drop(err_done_tx);
                })
        };
        for t in [reader, errlog, writer] {
            match t {
                Ok(handle) => transport.threads.lock().push(handle),
                Err(e) => {
                    transport.shutdown();
                    return Err(spawn_err(format!("cannot start a thread: {e}")));
                }
            }
        }
        Ok(transport)
    }

    /// The process id.
    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    /// Queues one message as a line, waiting at most `timeout` for room
    /// (`TimedOut`) when the server is not reading; `BrokenPipe` once its
    /// input is closed.
    pub(crate) fn send(&self, msg: &Value, timeout: Duration) -> std::io::Result<()> {
        // Cloned out, so that no lock is held while waiting for room.
        let queue = self.stdin.lock().clone();
        let queue = queue.ok_or_else(|| std::io::Error::from(std::io::ErrorKind::BrokenPipe))?;
        queue
            .send_timeout(line_of(msg), timeout)
            .map_err(|e| match e {
                SendTimeoutError::Timeout(_) => std::io::ErrorKind::TimedOut.into(),
                SendTimeoutError::Disconnected(_) => std::io::ErrorKind::BrokenPipe.into(),
            })
    }

    /// Ends the process (and its process group) and joins the threads.
    /// Idempotent.
    pub(crate) fn shutdown(&self) {
        // The writer closes stdin once the queue is dropped (and the reader,
        // which holds the other end, ends); the kill makes sure, and ends a
        // write blocked on a server that does not read.
        self.stdin.lock().take();
        if let Some(mut child) = self.child.lock().take() {
            // Its descendants that left the group (`setsid`) are found
            // while it lives (they are still its children); then the group,
            // while the unreaped leader keeps its id taken.
            #[cfg(target_os = "linux")]
            let escaped = reap::descendants(self.pid);
            #[cfg(unix)]
            reap::kill_group(self.pid);
            #[cfg(target_os = "linux")]
            for pid in escaped {
                reap::kill_one(pid);
            }
            let _ = child.kill();
            let _ = child.wait();
            // And those that double-forked away to init: by the mark they
            // inherited, or the server's output they hold open.
            #[cfg(target_os = "linux")]
            {
                let found = reap::end_escaped(&self.mark, &self.pipes);
                if found > 0 {
                    log::debug!(
                        "mcp: pid {}: ended {found} of its processes that had left it",
                        self.pid
                    );
                }
            }
        }
        // A process that left the group (`setsid`) may still hold stdout
        // or stderr open: its reader threads are waited for with a bound,
        // then left to end when it closes them (they hold nothing but the
        // pipe and the session).
        let threads = std::mem::take(&mut *self.threads.lock());
        let deadline = std::time::Instant::now() + JOIN_GRACE;
        for t in threads {
            while !t.is_finished() && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            if t.is_finished() {
                let _ = t.join();
            } else {
                log::debug!(
                    "mcp: pid {}: its output is still held open (by a process outside its \
                     group?); not waiting for it",
                    self.pid
                );
            }
        }
    }
}

fn line_of(msg: &Value) -> Vec<u8> {
    let mut line = msg.to_string().into_bytes();
    line.push(b'\n');
    line
}

/// Writes the queued lines to the server's stdin until the queue is
/// dropped or the pipe breaks (then stdin is closed and later sends fail).
fn write_loop(mut stdin: ChildStdin, queued: &Receiver<Vec<u8>>) {
    for line in queued {
        if stdin.write_all(&line).and_then(|()| stdin.flush()).is_err() {
            break;
        }
    }
}

/// Reads the server's output until it closes (or writes a line past the
/// cap), routing each message.
fn read_loop(
    server: &str,
    stdout: std::process::ChildStdout,
    session: &Session,
    answers: &Sender<Vec<u8>>,
    stderr_done: &crossbeam_channel::Receiver<()>,
) {
    let mut reader = BufReader::new(stdout);
    let mut line = Vec::new();
    let mut why = None;
    loop {
        match read_line(&mut reader, &mut line, MAX_LINE) {
            Ok(Read::Line) => {}
            Ok(Read::Eof) | Err(_) => break,
            Ok(Read::TooLong) => {
                log::warn!(
                    "mcp '{server}': the server wrote a line of more than {} MiB to stdout",
                    MAX_LINE >> 20
                );
                why = Some(McpError::LineTooLong {
                    stream: "stdout",
                    limit: MAX_LINE,
                });
                break;
            }
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let msg: Value = match super::lines::parse_message(&line) {
            Ok(v) => v,
            Err(e) => {
                let shown: String = String::from_utf8_lossy(&line).chars().take(200).collect();
                log::debug!("mcp '{server}': not JSON-RPC ({e}): {shown}");
                continue;
            }
        };
        if let (Some(reply), _) = session.handle(msg) {
            // Never wait here: a server that does not read must not stop us
            // reading what it writes.
            if let Err(TrySendError::Full(_)) = answers.try_send(line_of(&reply)) {
                log::warn!(
                    "mcp '{server}': not reading its input; a request of it goes unanswered"
                );
            }
        }
    }
    // Drop the pipe first: a server blocked writing the rest of an endless
    // line gets EPIPE instead of waiting for us.
    drop(reader);
    if why.is_none() {
        let _ = stderr_done.recv_timeout(STDERR_GRACE);
    }
    session.end(why);
    log::debug!("mcp '{server}': output closed");
}

/// Drains stderr: every line is logged (cut) and the last few are kept for
/// error messages; a line past [`STDERR_READ`] is skipped, not stored.
fn stderr_loop(server: &str, stderr: std::process::ChildStderr, session: &Session) {
    let mut reader = BufReader::new(stderr);
    let mut line = Vec::new();
    loop {
        let more = match read_line(&mut reader, &mut line, STDERR_READ) {
            Ok(Read::Line) => true,
            Ok(Read::TooLong) => matches!(skip_line(&mut reader), Ok(true)),
            Ok(Read::Eof) | Err(_) => break,
        };
        let text = String::from_utf8_lossy(&line);
        let shown: String = text.chars().take(500).collect();
        log::debug!("mcp '{server}' stderr: {shown}");
        session.stderr_line(&text);
        if !more {
            break;
        }
    }
}
