//! Issue 15: the library as an embedder uses it, through its public API
//! alone (no binary, no CLI crates): this file builds and passes both in
//! the normal suite and with `cargo test --no-default-features --test embed`.
//! A team made in code runs on a plain thread with events; a second run
//! is cancelled mid-round while a third, started beside it, finishes; the
//! cancelled run is resumed from its saved directory.

use std::time::Duration;

use boardroom::channel::{RecvTimeoutError, unbounded};
use boardroom::store::load_run;
use boardroom::testing::{Sim, SimOptions};
use boardroom::{AgentSpec, Event, EventKind, Phase, RunStatus, Runtime, Team, TeamConfig};

const MEMBERS: [&str; 2] = ["writer", "checker"];

fn team() -> Team {
    Team::new(
        "embedded",
        TeamConfig::default(),
        vec![
            AgentSpec::master("lead", "You lead the team."),
            AgentSpec::member("writer", "Writes drafts", "You write."),
            AgentSpec::member("checker", "Checks facts", "You check.").challenger(),
        ],
    )
    .unwrap()
}

/// A sim whose member drafts wait for the file `go`, so a run can be
/// caught mid-round (300 ms drafts raced with the catch on a loaded
/// machine: the run could end first).
fn held_drafts(go: &std::path::Path) -> Sim {
    Sim::with_options(SimOptions {
        hold: Some(go.to_path_buf()),
        ..SimOptions::default()
    })
}

#[test]
fn a_team_in_code_runs_on_a_plain_thread_with_events() {
    let (tx, rx) = unbounded::<Event>();
    let runtime = Runtime::new(team(), Sim::new()).max_rounds(2).events(tx);
    let worker = std::thread::spawn(move || runtime.run("Plan a picnic"));
    let events: Vec<Event> = rx.iter().collect(); // ends when the run drops its sender
    let run = worker.join().unwrap().unwrap();

    assert_eq!(run.status, RunStatus::Done);
    assert!(!run.answer.is_empty());
    for member in MEMBERS {
        assert!(
            events.iter().any(
                |e| matches!(&e.kind, EventKind::TaskAssigned { member: m, .. } if m == member)
            ),
            "{member} was given work"
        );
    }
    assert!(
        matches!(
            events.last().map(|e| &e.kind),
            Some(EventKind::RunFinished { .. })
        ),
        "the last event closes the run: {:?}",
        events.last()
    );
    assert!(events.iter().all(|e| e.run_id == run.run_id));
}

#[test]
fn a_cancelled_run_leaves_its_neighbour_alone_and_resumes_from_disk() {
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path().join("runs");
    let (tx, rx) = unbounded::<Event>();
    let go = tmp.path().join("go");
    let runtime = Runtime::new(team(), held_drafts(&go))
        .max_rounds(2)
        .runs_dir(&runs)
        .events(tx);

    let second = runtime
        .start("Write a short guide to brewing green tea")
        .unwrap();
    let third = runtime.start("Plan a picnic").unwrap();
    let second_id = second.run_id().to_string();

    // Wait until the second run is in the middle of its first round (a
    // member's draft call is in flight), then stop it alone.
    loop {
        match rx.recv_timeout(Duration::from_secs(20)) {
            Ok(e) if e.run_id == second_id => {
                if let EventKind::CallStarted {
                    phase: Phase::Draft,
                    ..
                } = e.kind
                {
                    break;
                }
            }
            Ok(_) => {}
            Err(RecvTimeoutError::Timeout) => panic!("the second run never started a draft"),
            Err(RecvTimeoutError::Disconnected) => panic!("the events ended early"),
        }
    }
    second.cancel();
    std::fs::write(&go, "").unwrap();

    let stopped = second.wait().unwrap();
    assert_eq!(stopped.status, RunStatus::Cancelled);
    assert!(stopped.answer.is_empty(), "{}", stopped.answer);
    let finished = third.wait().unwrap();
    assert_eq!(
        finished.status,
        RunStatus::Done,
        "the third run is untouched"
    );
    assert!(!finished.answer.is_empty());

    // The cancelled run, saved as it stopped, goes on through the library.
    let dir = runs.join(&second_id);
    let saved = load_run(&dir).unwrap();
    assert_eq!(saved.state.status(), RunStatus::Cancelled);
    let resumed = Runtime::for_saved(&saved, std::sync::Arc::new(Sim::new()))
        .unwrap()
        .resume(&dir)
        .unwrap();
    assert_eq!(resumed.run_id, second_id);
    assert_eq!(resumed.status, RunStatus::Done);
    assert!(!resumed.answer.is_empty());
}
