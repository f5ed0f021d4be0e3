//! A run's events as they are saved (`events.jsonl`, one event a line),
//! read from a line on and followed while the run works: the server-sent
//! events route and the WebSocket both read them here. An event's id is
//! its line number, so a client that reconnects with `Last-Event-ID: N`
//! gets line N+1 on, with no gap and nothing twice, across restarts of the
//! server too.

use std::io::{BufRead, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::runs::Runs;
use crate::store::run_holder;
use crate::util::httpd::{SSE_HEAD, send};

/// At most this much is read from the file at a time.
const CHUNK: usize = 256 * 1024;
/// How long a stream of a run driven by another process sleeps between
/// looks at the file.
const POLL: Duration = Duration::from_millis(150);
/// How often an idle stream says it is alive.
const KEEPALIVE: Duration = Duration::from_secs(15);

/// The lines of `events.jsonl` after a given one.
#[derive(Debug)]
pub(super) struct Tail {
    path: PathBuf,
    offset: u64,
    line_no: u64,
    after: u64,
}

impl Tail {
    /// The lines of `dir`'s events after line `after`.
    pub(super) fn new(dir: &Path, after: u64) -> Self {
        Tail {
            path: dir.join("events.jsonl"),
            offset: 0,
            line_no: 0,
            after,
        }
    }

    /// The whole lines written since the last call (id, text), at most
    /// about [`CHUNK`] bytes of them; a torn last line waits.
    pub(super) fn next(&mut self) -> Vec<(u64, String)> {
        let mut out = Vec::new();
        let Ok(mut f) = std::fs::File::open(&self.path) else {
            return out;
        };
        if f.seek(SeekFrom::Start(self.offset)).is_err() {
            return out;
        }
        let mut r = std::io::BufReader::new(f);
        let mut line = String::new();
        let mut read = 0usize;
        while let Ok(n) = r.read_line(&mut line) {
            if n == 0 || !line.ends_with('\n') {
                break;
            }
            self.offset += n as u64;
            self.line_no += 1;
            let text = line.trim_end();
            if self.line_no > self.after && !text.is_empty() {
                read += n;
                out.push((self.line_no, text.to_string()));
            }
            line.clear();
            if read > CHUNK {
                break;
            }
        }
        out
    }

    /// Waits for more: on the run's signal while this server drives it,
    /// a short poll while another process does; `false` when nothing more
    /// can come (the run is not running anywhere).
    pub(super) fn wait(&self, runs: &Runs, id: &str, dir: &Path, seen: Option<u64>) -> bool {
        match (runs.live(id), seen) {
            (Some(live), Some(seen)) => {
                // The file is written a moment after the event is sent (an
                // event counted before `seen` may not be in it yet): wake
                // at least every 50 ms to look again.
                live.signal.wait_past(seen, Duration::from_millis(50));
                true
            }
            (Some(_), None) => true,
            (None, _) if run_holder(dir).is_some() => {
                std::thread::sleep(POLL);
                true
            }
            (None, _) => false,
        }
    }
}

/// The value of `Last-Event-ID` (or `?after=N`): the last event the
/// client has.
pub(super) fn last_event_id(header: Option<&str>, url: &str) -> u64 {
    let query = url
        .split_once('?')
        .and_then(|(_, q)| q.split('&').find_map(|kv| kv.strip_prefix("after=")));
    header
        .or(query)
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// The run's events as server-sent events, from after line `after`,
/// followed until the run is not running anywhere (then an `end` event),
/// the client goes, or the server stops.
pub(super) fn sse(
    mut w: impl Write,
    runs: &Runs,
    id: &str,
    dir: &Path,
    after: u64,
    stop: &AtomicBool,
) {
    if !send(&mut w, SSE_HEAD) {
        return;
    }
    let mut tail = Tail::new(dir, after);
    let mut last_write = Instant::now();
    // Woken by an event whose line is not in the file yet: look again
    // a few times before waiting.
    let mut retries = 0u32;
    while !stop.load(Ordering::Relaxed) {
        let seen = runs.live(id).map(|l| l.signal.seq());
        let lines = tail.next();
        let mut out = String::new();
        for (n, text) in &lines {
            out.push_str(&format!("id: {n}\ndata: {text}\n\n"));
        }
        if lines.is_empty() && retries > 0 {
            retries -= 1;
            std::thread::sleep(Duration::from_millis(2));
            continue;
        }
        if lines.is_empty() {
            if !tail.wait(runs, id, dir, seen) {
                // Nothing runs it: what the file holds was sent.
                let rest = tail.next();
                for (n, text) in &rest {
                    out.push_str(&format!("id: {n}\ndata: {text}\n\n"));
                }
                out.push_str("event: end\ndata: {}\n\n");
                send(&mut w, &out);
                return;
            }
            retries = 10;
            if last_write.elapsed() > KEEPALIVE {
                out.push_str(": ping\n\n");
            }
        }
        if !out.is_empty() {
            if !send(&mut w, &out) {
                return;
            }
            last_write = Instant::now();
        }
    }
}
