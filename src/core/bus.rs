//! The event bus of a run: what happens flows one way, from the run to its
//! subscribers. The run never asks a subscriber anything back.
//!
//! - The caller's channels get every event: the runtime's
//!   ([`Runtime::events`](crate::Runtime::events)) and the run's own
//!   ([`Runtime::events_per_run`](crate::Runtime::events_per_run)).
//! - The run store gets every event too, on a writer thread of its own
//!   (`events.jsonl`, buffered: a streaming delta costs a channel send, not
//!   a lock and a write), and the turn records and journal records, which
//!   it writes at once: they are what a resume is built from.
//!
//! The logs are appended without a flush, and a crash leaves at worst a
//! torn last line; the checkpoint after every phase fsyncs what its
//! snapshot points into before its `run.json` (between phases on a thread
//! of its own, while the run goes on: `RunDir::checkpoint_behind`).

use std::sync::Arc;

use crossbeam_channel::Sender;

use crate::event::Event;
use crate::record::Turn;
use crate::store::{EventLog, JournalRecord, RunDir};

/// One consumer of a run's stream. Every method has a default that
/// ignores the item, so a subscriber says only what it takes.
pub(crate) trait Subscriber: Send + Sync {
    /// An event (deltas included).
    fn event(&self, _event: &Event) {}
    /// An event the subscriber may keep (the bus's last subscriber gets
    /// the event itself, not a copy).
    fn event_owned(&self, event: Event) {
        self.event(&event);
    }
    /// The record of one finished model call.
    fn turn(&self, _turn: &Turn) {}
    /// A change made in the middle of a phase.
    fn journal(&self, _record: &JournalRecord) {}
    /// Whether it takes journal records (a run with no taker skips
    /// building them: a module record copies the member's transcript).
    fn takes_journal(&self) -> bool {
        false
    }
    /// The run is over: what the subscriber keeps open (a file, a
    /// channel) is closed, and every event it was given is delivered.
    fn close(&self) {}
}

/// The caller's channel. Its sender is dropped when the run is closed,
/// so the caller's receiver ends with the run.
struct Caller(parking_lot::RwLock<Option<Sender<Event>>>);

impl Subscriber for Caller {
    fn event(&self, event: &Event) {
        // A caller that stopped listening does not stop the run.
        if let Some(tx) = &*self.0.read() {
            let _ = tx.send(event.clone());
        }
    }

    fn event_owned(&self, event: Event) {
        if let Some(tx) = &*self.0.read() {
            let _ = tx.send(event);
        }
    }

    fn close(&self) {
        drop(self.0.write().take());
    }
}

/// The run directory: events through the buffered log, turns and journal
/// records straight to their files.
struct Store {
    dir: Arc<RunDir>,
    events: Option<EventLog>,
}

impl Subscriber for Store {
    fn event(&self, event: &Event) {
        if let Some(log) = &self.events {
            log.append(event.clone());
        }
    }

    fn event_owned(&self, event: Event) {
        if let Some(log) = &self.events {
            log.append(event);
        }
    }

    fn turn(&self, turn: &Turn) {
        if let Err(e) = self.dir.append_turn(turn) {
            log::error!("cannot save turn {}: {e}", turn.turn_id);
        }
    }

    fn journal(&self, record: &JournalRecord) {
        if let Err(e) = self.dir.append_journal(record) {
            log::error!("cannot journal: {e}");
        }
    }

    fn takes_journal(&self) -> bool {
        true
    }

    /// The event log written and closed (the directory is the run's to
    /// close, after this).
    fn close(&self) {
        if let Some(log) = &self.events {
            log.close();
        }
    }
}

/// The subscribers of one run. Dropping the bus closes the event log
/// (its writer thread writes what is queued and ends).
pub(crate) struct Bus {
    subscribers: Vec<Box<dyn Subscriber>>,
}

impl Bus {
    /// A bus for the caller's channels (none or more) and the run
    /// directory (if any).
    pub(crate) fn new(
        callers: impl IntoIterator<Item = Sender<Event>>,
        dir: Option<&Arc<RunDir>>,
    ) -> Self {
        let mut subscribers: Vec<Box<dyn Subscriber>> = Vec::new();
        if let Some(dir) = dir {
            let events = dir
                .event_log()
                .map_err(|e| log::error!("cannot save events: {e}"))
                .ok();
            subscribers.push(Box::new(Store {
                dir: Arc::clone(dir),
                events,
            }));
        }
        for tx in callers {
            subscribers.push(Box::new(Caller(parking_lot::RwLock::new(Some(tx)))));
        }
        Bus { subscribers }
    }

    /// Whether anyone listens: a run with no subscriber (a library call
    /// with no channel and no directory) builds no events at all.
    pub(crate) fn is_empty(&self) -> bool {
        self.subscribers.is_empty()
    }

    /// Whether anyone takes journal records.
    pub(crate) fn journaling(&self) -> bool {
        self.subscribers.iter().any(|s| s.takes_journal())
    }

    /// Hands `event` to every subscriber: a copy to each but the last,
    /// which takes the event itself.
    pub(crate) fn event(&self, event: Event) {
        let Some((last, others)) = self.subscribers.split_last() else {
            return;
        };
        for s in others {
            s.event(&event);
        }
        last.event_owned(event);
    }

    pub(crate) fn turn(&self, turn: &Turn) {
        for s in &self.subscribers {
            s.turn(turn);
        }
    }

    pub(crate) fn journal(&self, record: &JournalRecord) {
        for s in &self.subscribers {
            s.journal(record);
        }
    }

    /// Closes every subscriber (see [`Subscriber::close`]): the run is
    /// over, nothing is emitted after this.
    pub(crate) fn close(&self) {
        for s in &self.subscribers {
            s.close();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::EventKind;

    /// Every subscriber gets every event, in order: the last one takes the
    /// event itself, the others a copy.
    #[test]
    fn every_subscriber_gets_every_event() {
        let (a, ra) = crossbeam_channel::unbounded();
        let (b, rb) = crossbeam_channel::unbounded();
        let (c, rc) = crossbeam_channel::unbounded();
        let bus = Bus::new([a, b, c], None);
        assert!(!bus.is_empty());
        assert!(!bus.journaling(), "no run directory, no journal");
        for round in 1..=3 {
            bus.event(Event::now("r", "m", None, EventKind::Agree { round }));
        }
        for rx in [ra, rb, rc] {
            let rounds: Vec<u32> = rx
                .try_iter()
                .map(|e| match e.kind {
                    EventKind::Agree { round } => round,
                    _ => 0,
                })
                .collect();
            assert_eq!(rounds, vec![1, 2, 3]);
        }
        assert!(Bus::new([], None).is_empty());
    }
}
