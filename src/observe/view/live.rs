//! The live event streams of the view's pages: `events.jsonl` tailed as
//! server-sent events, all of them by one thread.
//!
//! A worker that takes a stream request writes the response head and hands
//! the connection over ([`Streams::open`]); it is free again at once (a
//! stream held a worker each: 16 open live pages left the next request a
//! 503, issue 28). One named thread polls every open stream in turn: reads
//! what was appended to its file, writes it without blocking (what a slow
//! client has not taken yet waits in its slot, at most [`MAX_BACKLOG`]
//! bytes, past which the stream is closed and the browser reconnects).
//! At most [`MAX_STREAMS`] are open at once; one more is answered `503`
//! with a message that says so, and nothing else is refused for it.

use std::io::{BufRead, BufReader, Seek, SeekFrom, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};

use crate::event::RunStatus;
use crate::util::httpd::{self, Request};

/// How long one event stream stays open before the browser reconnects
/// (with `Last-Event-ID`, so nothing is sent twice or lost).
pub(super) const STREAM_FOR: Duration = Duration::from_secs(30);

/// How often the streams look at their files again.
const POLL: Duration = Duration::from_millis(150);

/// Live streams open at once; one more is answered `503`.
pub(super) const MAX_STREAMS: usize = 256;

/// Bytes a stream may have waiting for a slow client.
const MAX_BACKLOG: usize = 1024 * 1024;

/// Polls of quiet after `run.json` says the run is over before a stream
/// without `run_finished` ends (about 10 s).
const QUIET_POLLS: u32 = 66;

/// Quiet polls between two looks at `run.json` (about 1.2 s).
const OVER_EVERY: u32 = 8;

/// Where workers hand their streams over.
#[derive(Debug, Clone)]
pub(super) struct Streams {
    handed: Sender<Slot>,
    open: Arc<AtomicUsize>,
}

/// One open stream.
pub(super) struct Slot {
    conn: TcpStream,
    path: PathBuf,
    dir: PathBuf,
    reader: Option<BufReader<std::fs::File>>,
    offset: u64,
    line_no: u64,
    skip: u64,
    started: Instant,
    last_write: Instant,
    finished: bool,
    quiet_over: u32,
    /// Quiet polls since the last output, and what `run.json` said at the
    /// last look (it is read every [`OVER_EVERY`] quiet polls, not each).
    quiet: u32,
    seen_over: bool,
    /// Written to the slot, not yet taken by the client.
    backlog: Vec<u8>,
    /// The `end` event is queued: close once the backlog is out.
    ending: bool,
}

impl Streams {
    /// The hand-over point, and its receiving end for [`run`].
    pub(super) fn new() -> (Streams, Receiver<Slot>, Arc<AtomicUsize>) {
        let (handed, slots) = crossbeam_channel::unbounded();
        let open = Arc::new(AtomicUsize::new(0));
        (
            Streams {
                handed,
                open: Arc::clone(&open),
            },
            slots,
            open,
        )
    }

    /// Starts streaming the events of the run in `dir` to the client of
    /// `request`, after line `skip`: writes the head and hands the
    /// connection to the streaming thread. When [`MAX_STREAMS`] are open
    /// the request is answered `503` instead.
    ///
    /// # Errors
    ///
    /// Writing to the client failed.
    pub(super) fn open(&self, request: Request, dir: &Path, skip: u64) -> std::io::Result<()> {
        if self.open.fetch_add(1, Ordering::SeqCst) >= MAX_STREAMS {
            self.open.fetch_sub(1, Ordering::SeqCst);
            return request.respond(super::routes::too_many_streams());
        }
        let mut conn = request.into_stream();
        let ok = conn
            .write_all(httpd::SSE_HEAD.as_bytes())
            .and_then(|()| conn.flush())
            .and_then(|()| conn.set_nonblocking(true))
            .is_ok();
        let slot = Slot {
            conn,
            path: dir.join("events.jsonl"),
            dir: dir.to_path_buf(),
            reader: None,
            offset: 0,
            line_no: 0,
            skip,
            started: Instant::now(),
            last_write: Instant::now(),
            finished: false,
            quiet_over: 0,
            quiet: 0,
            seen_over: false,
            backlog: Vec::new(),
            ending: false,
        };
        if !ok || self.handed.send(slot).is_err() {
            self.open.fetch_sub(1, Ordering::SeqCst);
        }
        Ok(())
    }
}

/// The streaming thread: polls every open stream until `stop`.
pub(super) fn run(slots: &Receiver<Slot>, open: &AtomicUsize, stop: &AtomicBool) {
    let mut live: Vec<Slot> = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        live.extend(slots.try_iter());
        let before = live.len();
        live.retain_mut(Slot::poll);
        open.fetch_sub(before - live.len(), Ordering::SeqCst);
        // Wait for a new stream or the next poll, whichever comes first.
        match slots.recv_timeout(POLL) {
            Ok(slot) => live.push(slot),
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => {}
            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => {
                if live.is_empty() {
                    return;
                }
                std::thread::sleep(POLL);
            }
        }
    }
    open.fetch_sub(live.len(), Ordering::SeqCst);
}

impl Slot {
    /// Sends what is new; whether the stream stays open.
    fn poll(&mut self) -> bool {
        if !self.flush() {
            return false;
        }
        if self.ending {
            return !self.backlog.is_empty();
        }
        if self.started.elapsed() >= STREAM_FOR {
            return false;
        }
        if self.backlog.len() > MAX_BACKLOG {
            return false;
        }
        let out = self.read_new();
        let idle = out.is_empty();
        let mut out = out;
        // run.json says the run is over before its last events land (the
        // master's memory note comes first): only a long quiet after it
        // ends a stream that never saw run_finished (a run that crashed).
        if idle && !self.finished {
            if self.quiet.is_multiple_of(OVER_EVERY) {
                self.seen_over = over(&self.dir);
            }
            self.quiet += 1;
        } else {
            self.quiet = 0;
            self.seen_over = false;
        }
        self.quiet_over = if idle && !self.finished && self.seen_over {
            self.quiet_over + 1
        } else {
            0
        };
        if idle && (self.finished || self.quiet_over > QUIET_POLLS) {
            out.push_str("event: end\ndata: {}\n\n");
            self.ending = true;
        } else if idle && self.last_write.elapsed() > Duration::from_secs(5) {
            out.push_str(": ping\n\n");
        }
        if !out.is_empty() {
            self.backlog.extend_from_slice(out.as_bytes());
            self.last_write = Instant::now();
            if !self.flush() {
                return false;
            }
        }
        !(self.ending && self.backlog.is_empty())
    }

    /// The complete lines appended since the last poll, as events (at
    /// most about 256 KiB a poll).
    fn read_new(&mut self) -> String {
        let mut out = String::new();
        if self.reader.is_none() {
            self.reader = std::fs::File::open(&self.path).ok().map(BufReader::new);
        }
        let Some(r) = self.reader.as_mut() else {
            return out;
        };
        if r.seek(SeekFrom::Start(self.offset)).is_err() {
            return out;
        }
        let mut line = String::new();
        while let Ok(n) = r.read_line(&mut line) {
            if n == 0 || !line.ends_with('\n') {
                break;
            }
            self.offset += n as u64;
            self.line_no += 1;
            let text = line.trim_end();
            if self.line_no > self.skip && !text.is_empty() {
                out.push_str(&format!("id: {}\ndata: {text}\n\n", self.line_no));
            }
            if text.contains("\"type\":\"run_finished\"") {
                self.finished = true;
            }
            line.clear();
            if out.len() > 256 * 1024 {
                break;
            }
        }
        out
    }

    /// Writes as much of the backlog as the client takes now; `false`
    /// when the connection is gone.
    fn flush(&mut self) -> bool {
        while !self.backlog.is_empty() {
            match self.conn.write(&self.backlog) {
                Ok(0) => return false,
                Ok(n) => {
                    self.backlog.drain(..n);
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return true,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return false,
            }
        }
        true
    }
}

/// Whether `run.json` says the run ended. A run killed midway says it is
/// still running: its stream stays open until [`STREAM_FOR`] and the
/// browser reconnects. Only its `status` is read, not the whole run.
fn over(dir: &Path) -> bool {
    #[derive(serde::Deserialize)]
    struct Status {
        status: RunStatus,
    }
    let path = dir.join("run.json");
    crate::util::fs::read_capped(&path, 64 << 20)
        .ok()
        .and_then(|b| serde_json::from_slice::<Status>(&b).ok())
        .is_some_and(|s| s.status != RunStatus::Running)
}

#[cfg(test)]
mod tests {
    use super::over;

    #[test]
    fn over_reads_the_status_of_run_json_alone() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!over(dir.path()), "no run.json: not over");
        let run = dir.path().join("run.json");
        for (status, ended) in [("running", false), ("done", true), ("cancelled", true)] {
            // Only `status` is read: the rest need not be a whole run.
            let text = format!(r#"{{"version": 2, "status": "{status}", "phase": "x"}}"#);
            std::fs::write(&run, text).unwrap();
            assert_eq!(over(dir.path()), ended, "{status}");
        }
    }
}
