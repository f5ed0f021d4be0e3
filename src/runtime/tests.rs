//! The run core through `Runtime::drive`, which only the crate may call
//! (it skips resume's checks).

use super::{RunState, Runtime};
use crate::Team;
use crate::testing::Sim;

/// A run id is one name inside the runs directory: a caller's state whose
/// id is a path (or empty) is refused before anything is written.
#[test]
fn a_run_id_that_is_not_one_name_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path().join("runs");
    std::fs::create_dir_all(&runs).unwrap();
    for id in ["../escaped", "", ".", "a/b", "/abs"] {
        let state = RunState::new(id.into(), "Plan a picnic".into());
        let err = Runtime::new(Team::builtin().unwrap(), Sim::new())
            .runs_dir(&runs)
            .drive(state)
            .unwrap_err();
        assert!(err.to_string().contains("run id"), "{id:?}: {err}");
    }
    assert!(!tmp.path().join("escaped").exists());
    assert!(!runs.join("run.json").exists());
    assert!(!runs.join("a").exists());
    assert_eq!(std::fs::read_dir(&runs).unwrap().count(), 0);
}
