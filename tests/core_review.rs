//! Found in review of the run core (issue 11): the run store gets every
//! event the caller gets on every way a run ends, not only on success.

use boardroom::store::{load_run, read_events};
use boardroom::testing::{Scripted, Sim};
use boardroom::{ChatModel, EventKind, RunStatus, Runtime, Team};

mod support;

use support::models::Hooked;

/// A model whose master call panics after streaming a delta.
fn panics() -> impl ChatModel {
    Hooked::new("panics", Sim::new(), |_, on_delta| {
        on_delta("about to");
        panic!("the model panicked");
    })
}

#[test]
fn a_failed_run_saves_every_event_the_caller_saw() {
    let runs = tempfile::tempdir().unwrap();
    let (tx, rx) = boardroom::channel::unbounded();
    let model = Scripted::new().fail("master", "the server is down");
    let err = Runtime::new(Team::builtin().unwrap(), model)
        .runs_dir(runs.path())
        .events(tx)
        .run("Plan a picnic")
        .unwrap_err();
    assert!(err.to_string().contains("the server is down"), "{err}");
    let caller: Vec<_> = rx.try_iter().collect();
    let dir = support::only_run_dir(runs.path());
    let saved = read_events(&dir).unwrap();
    assert!(caller.len() > 2, "{caller:?}");
    assert_eq!(saved.items, caller);
    assert_eq!(load_run(&dir).unwrap().state.status(), RunStatus::Failed);
}

#[test]
fn a_run_whose_master_model_panics_saves_every_event_and_is_marked_failed() {
    let runs = tempfile::tempdir().unwrap();
    let (tx, rx) = boardroom::channel::unbounded();
    let handle = Runtime::new(Team::builtin().unwrap(), panics())
        .runs_dir(runs.path())
        .events(tx)
        .start("Plan a picnic")
        .unwrap();
    let dir = runs.path().join(handle.run_id());
    // The panic is caught at the call: an error of the run, not a panic
    // of its thread.
    let err = handle.wait().unwrap_err();
    assert!(!matches!(err, boardroom::RunError::Pool(_)), "{err}");
    assert!(err.to_string().contains("panicked"), "{err}");
    let caller: Vec<_> = rx.try_iter().collect();
    assert!(
        caller
            .iter()
            .any(|e| matches!(&e.kind, EventKind::AgentDelta { delta, .. } if delta == "about to")),
        "{caller:?}"
    );
    let saved = read_events(&dir).unwrap();
    assert_eq!(saved.items, caller);
    let state = load_run(&dir).unwrap().state;
    assert_eq!(state.status(), RunStatus::Failed);
    assert!(
        state
            .error()
            .is_some_and(|e| e.contains("the model panicked")),
        "{:?}",
        state.error()
    );
}
