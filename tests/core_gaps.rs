//! Issue 11, the gaps a reviewer found in the run core and the handoff
//! process: per-run event receivers, `resume --json`, flags a handoff run
//! does not use, the turn cap before a routing call, the user's message as
//! an event, and the master's memory of handoff runs.

use std::collections::BTreeSet;

use boardroom::{Event, EventKind, RunStatus, Runtime, Sim, SimOptions, Team};

fn run_ids(events: &[Event]) -> BTreeSet<String> {
    events.iter().map(|e| e.run_id.clone()).collect()
}

#[test]
fn each_handle_has_its_own_receiver_and_its_own_cancel() {
    // Issue 11: a run is a handle with its own events receiver. Two runs
    // started from clones of one runtime: each receiver sees only its own
    // run's events, and cancelling one does not stop the other.
    let sim = Sim::with_options(SimOptions {
        latency: std::time::Duration::from_millis(40),
        ..SimOptions::default()
    });
    let runtime = Runtime::new(Team::builtin().unwrap(), sim).events_per_run();
    let mut a = runtime.clone().start("Plan a picnic").unwrap();
    let mut b = runtime.clone().start("Plan a party").unwrap();
    assert!(a.events().is_some());
    a.cancel();
    let rx_a = a.take_events().expect("a receiver of its own");
    let rx_b = b.take_events().expect("a receiver of its own");
    assert!(a.events().is_none(), "taken");
    let (id_a, id_b) = (a.run_id().to_string(), b.run_id().to_string());
    assert_ne!(id_a, id_b);
    let out_a = a.wait().unwrap();
    let out_b = b.wait().unwrap();
    assert_eq!(out_a.status, RunStatus::Cancelled);
    assert_eq!(out_b.status, RunStatus::Done);
    // The receivers end when their runs end (no sender is left).
    let seen_a: Vec<Event> = rx_a.iter().collect();
    let seen_b: Vec<Event> = rx_b.iter().collect();
    assert_eq!(run_ids(&seen_a), BTreeSet::from([id_a]));
    assert_eq!(run_ids(&seen_b), BTreeSet::from([id_b]));
    assert!(matches!(
        seen_b.last().map(|e| &e.kind),
        Some(EventKind::RunFinished {
            status: RunStatus::Done,
            ..
        })
    ));
    assert!(
        seen_b
            .iter()
            .filter(|e| matches!(e.kind, EventKind::AgentDelta { .. }))
            .count()
            > 10
    );
}

#[test]
fn without_events_per_run_a_handle_has_no_receiver() {
    // Opt-in: a caller who never asked holds no channel that fills up.
    let mut h = Runtime::new(Team::builtin().unwrap(), Sim::new())
        .start("Plan a picnic")
        .unwrap();
    assert!(h.events().is_none());
    assert!(h.take_events().is_none());
    assert_eq!(h.wait().unwrap().status, RunStatus::Done);
}

#[test]
fn a_dropped_receiver_does_not_stop_the_run() {
    let runtime = Runtime::new(Team::builtin().unwrap(), Sim::new()).events_per_run();
    let mut h = runtime.start("Plan a picnic").unwrap();
    drop(h.take_events());
    assert_eq!(h.wait().unwrap().status, RunStatus::Done);
}
