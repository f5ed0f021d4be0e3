//! `events.jsonl`: every event of a run, written by a thread of its own,
//! without the repeats nothing reads back (issue 25).
//!
//! The run's subscribers (the caller's channel, the renderer, OTLP) get
//! every event as it is; the file leaves out
//!
//! - an `agent_delta` that is the whole of the `agent_message` that follows
//!   it (a call answered in one piece, streamed or not): the message holds
//!   the text;
//! - the `task` of a `call_started` that repeats the task of the agent's
//!   last `task_assigned`.
//!
//! A call's first delta is held back until the agent's next event says
//! which it is: a second delta (the answer streams: both are written, in
//! order), a message with the same text (the delta is dropped), or
//! anything else (it is written first).

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::StoreError;
use super::write::open_append;
use crate::event::{Event, EventKind};

/// `events.jsonl` written by a thread of its own (`boardroom-events`)
/// through a buffer: appending an event is a channel send, so members
/// streaming deltas at once neither wait on a lock nor make a write each.
/// The buffer is written out whenever the queue runs dry, and everything
/// queued is written before `drop` returns. Events are not fsynced: what
/// a resume needs is in `run.json` and the journal.
#[derive(Debug)]
pub(crate) struct EventLog {
    /// Taken by [`EventLog::close`]: appends after it are dropped.
    tx: parking_lot::RwLock<Option<crossbeam_channel::Sender<Event>>>,
    /// Closed by the writer thread once the log is written. The drop
    /// waits for that, not for the thread's end: at a thousand-member
    /// run's end the thread's exit (unmapping its stack) waited up to
    /// 60 ms behind the member threads ending.
    written: crossbeam_channel::Receiver<()>,
}

/// What the writer keeps to leave the repeats out, per agent.
#[derive(Debug, Default)]
struct Trim {
    /// A call's first delta, not written yet.
    held: HashMap<String, Event>,
    /// The call whose answer streams (its deltas are written as they come).
    streaming: HashMap<String, u64>,
    /// The task of the agent's last `task_assigned`.
    assigned: HashMap<String, String>,
}

impl Trim {
    /// The events to write for `event`, in order (none, it, or a held
    /// delta and it).
    fn take(&mut self, mut event: Event) -> Vec<Event> {
        let agent = event.agent.clone();
        let mut out = Vec::with_capacity(2);
        match &mut event.kind {
            EventKind::AgentDelta { call, .. } => {
                let call = *call;
                if self.streaming.get(&agent) == Some(&call) {
                    out.push(event);
                    return out;
                }
                match self.held.remove(&agent) {
                    Some(held) if delta_call(&held) == Some(call) => {
                        self.streaming.insert(agent, call);
                        out.push(held);
                        out.push(event);
                    }
                    Some(held) => {
                        out.push(held);
                        self.held.insert(agent, event);
                    }
                    None => {
                        self.held.insert(agent, event);
                    }
                }
                return out;
            }
            EventKind::AgentMessage { text, .. } => {
                self.streaming.remove(&agent);
                if let Some(held) = self.held.remove(&agent)
                    && !matches!(&held.kind, EventKind::AgentDelta { delta, .. } if delta == text)
                {
                    out.push(held);
                }
            }
            // The answer's message comes after these when the call
            // succeeded: the delta waits for it.
            EventKind::TurnCompleted { error: None, .. }
            | EventKind::CallEnded { error: None, .. } => {}
            EventKind::TaskAssigned { member, task, .. } => {
                self.assigned.insert(member.clone(), task.clone());
                out.extend(self.held.remove(&agent));
            }
            EventKind::CallStarted { task, .. } => {
                self.streaming.remove(&agent);
                out.extend(self.held.remove(&agent));
                if task.is_some() && self.assigned.get(&agent) == task.as_ref() {
                    *task = None;
                }
            }
            _ => out.extend(self.held.remove(&agent)),
        }
        out.push(event);
        out
    }

    /// The deltas still held, at the end.
    fn rest(&mut self) -> Vec<Event> {
        let mut rest: Vec<Event> = self.held.drain().map(|(_, e)| e).collect();
        rest.sort_by_key(|e| e.time_ms);
        rest
    }
}

fn delta_call(e: &Event) -> Option<u64> {
    match e.kind {
        EventKind::AgentDelta { call, .. } => Some(call),
        _ => None,
    }
}

impl EventLog {
    pub(super) fn start(path: PathBuf) -> Result<Self, StoreError> {
        let file = open_append(&path)?;
        let (tx, rx) = crossbeam_channel::unbounded::<Event>();
        let (done_tx, done) = crossbeam_channel::bounded::<()>(0);
        std::thread::Builder::new()
            .name("boardroom-events".into())
            .spawn(move || {
                // Dropped when the log is written (or the thread unwinds):
                // what the log's drop waits for.
                let _written = done_tx;
                let mut out = std::io::BufWriter::with_capacity(64 * 1024, file);
                let mut failed = false;
                let mut trim = Trim::default();
                let mut write = |out: &mut std::io::BufWriter<std::fs::File>, event: &Event| {
                    let written = write_one(out, event);
                    if let Err(e) = written {
                        if !failed {
                            log::error!("cannot save events to {}: {e}", path.display());
                        }
                        failed = true;
                    }
                };
                for event in rx.iter() {
                    for e in trim.take(event) {
                        write(&mut out, &e);
                    }
                    if rx.is_empty() {
                        let _ = out.flush();
                    }
                }
                for e in trim.rest() {
                    write(&mut out, &e);
                }
                if let Err(e) = out.flush() {
                    log::error!("cannot save events to {}: {e}", path.display());
                }
                // The file closed, then the log's drop told.
                drop(out);
                drop(_written);
            })
            .map_err(|e| StoreError::io(Path::new("events writer thread"), e))?;
        Ok(EventLog {
            tx: parking_lot::RwLock::new(Some(tx)),
            written: done,
        })
    }

    /// Queues one event.
    pub(crate) fn append(&self, event: Event) {
        if let Some(tx) = &*self.tx.read() {
            let _ = tx.send(event);
        }
    }

    /// Closes the log: returns once every event queued is written and the
    /// file closed. Later appends are dropped.
    pub(crate) fn close(&self) {
        drop(self.tx.write().take());
        // Nothing is ever sent: this returns when the writer is done.
        let _ = self.written.recv();
    }
}

/// Writes one event as a line, known secrets masked (issue 28); a process
/// that knows none writes straight through.
fn write_one(out: &mut impl Write, event: &Event) -> std::io::Result<()> {
    if crate::util::secrets::any() {
        let line = serde_json::to_vec(event).map_err(std::io::Error::other)?;
        out.write_all(&crate::util::secrets::mask_json(&line))?;
    } else {
        serde_json::to_writer(&mut *out, event).map_err(std::io::Error::other)?;
    }
    out.write_all(b"\n")
}

impl Drop for EventLog {
    fn drop(&mut self) {
        self.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Phase;

    fn event(agent: &str, kind: EventKind) -> Event {
        Event {
            run_id: "r".into(),
            agent: agent.into(),
            parent: None,
            time_ms: 0,
            kind,
        }
    }

    fn delta(agent: &str, call: u64, text: &str) -> Event {
        event(
            agent,
            EventKind::AgentDelta {
                round: 1,
                phase: Phase::Draft,
                delta: text.into(),
                call,
            },
        )
    }

    fn message(agent: &str, text: &str) -> Event {
        event(
            agent,
            EventKind::AgentMessage {
                round: 1,
                phase: Phase::Draft,
                text: text.into(),
            },
        )
    }

    fn ended(agent: &str, call: u64, error: Option<&str>) -> Event {
        event(
            agent,
            EventKind::CallEnded {
                round: 1,
                phase: Phase::Draft,
                call,
                error: error.map(str::to_string),
            },
        )
    }

    fn written(events: Vec<Event>) -> Vec<Event> {
        let mut trim = Trim::default();
        let mut out: Vec<Event> = events.into_iter().flat_map(|e| trim.take(e)).collect();
        out.extend(trim.rest());
        out
    }

    /// Issue 25: an answer in one piece is saved once, in its message; a
    /// streamed one keeps every delta, in order; a failed call keeps its
    /// delta; the task of a call repeats its assignment's and is left out.
    #[test]
    fn the_events_file_leaves_out_what_repeats() {
        let one = vec![
            delta("w", 1, "All of it."),
            ended("w", 1, None),
            message("w", "All of it."),
        ];
        assert_eq!(written(one.clone()), one[1..].to_vec());
        let streamed = vec![
            delta("w", 2, "All "),
            delta("c", 3, "Other."),
            delta("w", 2, "of it."),
            ended("w", 2, None),
            message("w", "All of it."),
            message("c", "Other."),
        ];
        let out = written(streamed.clone());
        let w: Vec<&Event> = out.iter().filter(|e| e.agent == "w").collect();
        let w_in: Vec<&Event> = streamed.iter().filter(|e| e.agent == "w").collect();
        assert_eq!(w, w_in, "every delta of a streamed answer, in order");
        assert!(out.iter().all(|e| delta_call(e) != Some(3)), "{out:?}");
        let failed = vec![delta("w", 4, "Half"), ended("w", 4, Some("cut"))];
        assert_eq!(written(failed.clone()), failed);
        let assigned = event(
            "w",
            EventKind::TaskAssigned {
                round: 1,
                member: "w".into(),
                task: "write".into(),
            },
        );
        let started = |task: &str| {
            event(
                "w",
                EventKind::CallStarted {
                    round: 1,
                    phase: Phase::Draft,
                    call: 5,
                    attempt: 0,
                    task: Some(task.into()),
                },
            )
        };
        let out = written(vec![assigned.clone(), started("write"), started("other")]);
        let tasks: Vec<Option<String>> = out
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::CallStarted { task, .. } => Some(task.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(tasks, vec![None, Some("other".to_string())]);
    }
}
