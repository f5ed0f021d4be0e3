//! Issue 25: a checkpoint whose fsyncs and `run.json` are written behind
//! the run, on a disk the test holds.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::*;
use crate::board::{Entry, EntryKind};
use crate::model::Phase;
use crate::record::{RunPhase, RunSettings, RunState};
use crate::team::{AgentRole, Team};

fn entry(seq: u64) -> Entry {
    Entry {
        seq,
        round: 1,
        author: "writer".into(),
        kind: EntryKind::Draft,
        task: Some("task_001".into()),
        text: format!("draft {seq}"),
        transport: false,
        failure: None,
    }
}

/// A checkpoint of `state`, on the run's thread or behind it.
fn try_save(dir: &RunDir, state: &RunState, behind: bool) -> Result<(), StoreError> {
    let team = Team::builtin().unwrap();
    let snapshot = || TeamSnapshot::of(&team);
    let c = Checkpoint {
        created_ms: 7,
        settings: RunSettings::default(),
        team_name: "default",
        team: &snapshot,
        journal_len: None,
        last_turn: None,
    };
    if behind {
        dir.checkpoint_behind(state, c)
    } else {
        dir.checkpoint(state, c)
    }
}

fn save(dir: &RunDir, state: &RunState, behind: bool) {
    try_save(dir, state, behind).unwrap();
}

fn turn(id: &str) -> crate::record::Turn {
    crate::record::turn::sample_turn(id, "writer", AgentRole::Member, 1, Phase::Draft)
}

/// While the disk part is held, the run goes on but the files are those
/// of the last checkpoint (what a kill would find), and a turn waits to
/// be appended; once it is written, `run.json` covers the new state.
/// Without the wait in `append_turn` the turn lands while `run.json` is
/// the old one.
#[test]
fn issue25_a_checkpoint_behind_the_run_is_on_disk_before_the_next_append() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("r");
    let dir = RunDir::create(&path).unwrap();
    let mut state = RunState::new("r".into(), "a task".into());
    save(&dir, &state, false);
    let before = load_run(&path).unwrap().state;
    let gate = dir.hold_disk_parts();
    state.phase = RunPhase::Members;
    state.round = 1;
    state.board.push(entry(1));
    save(&dir, &state, true);
    assert_eq!(
        load_run(&path).unwrap().state,
        before,
        "run.json is the last checkpoint's until its disk part is done"
    );
    let appended = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            dir.append_turn(&turn("t0001")).unwrap();
            appended.store(true, Ordering::SeqCst);
        });
        std::thread::sleep(Duration::from_millis(300));
        let early = appended.load(Ordering::SeqCst);
        gate.open();
        assert!(
            !early,
            "a turn was appended before the checkpoint's run.json was written"
        );
    });
    assert!(appended.load(Ordering::SeqCst));
    let back = load_run(&path).unwrap();
    assert_eq!(back.state, state);
    assert_eq!(read_turns(&path).unwrap().items.len(), 1);
}

/// A kill while the disk part is held leaves the line written but not
/// covered: the directory opened again goes on from the last
/// checkpoint, and its log is cut back to what that covers.
#[test]
fn issue25_a_run_killed_before_the_disk_part_goes_on_from_the_last_checkpoint() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("r");
    let dir = RunDir::create(&path).unwrap();
    let mut state = RunState::new("r".into(), "a task".into());
    save(&dir, &state, false);
    let covered = std::fs::metadata(path.join("state.jsonl")).unwrap().len();
    let gate = dir.hold_disk_parts();
    state.phase = RunPhase::Members;
    state.board.push(entry(1));
    save(&dir, &state, true);
    assert!(std::fs::metadata(path.join("state.jsonl")).unwrap().len() > covered);
    // The process "dies" here: the directory is read as it is on disk.
    let on_disk = tempfile::tempdir().unwrap();
    let copy = on_disk.path().join("r");
    std::fs::create_dir(&copy).unwrap();
    for f in [
        "run.json",
        "state.jsonl",
        "team.json",
        "journal.jsonl",
        "turns.jsonl",
    ] {
        if path.join(f).exists() {
            std::fs::copy(path.join(f), copy.join(f)).unwrap();
        }
    }
    gate.open();
    drop(dir);
    let back = load_run(&copy).unwrap();
    assert_eq!(back.state.phase, RunPhase::Plan);
    assert!(back.state.board.is_empty());
    let reopened = RunDir::open(&copy).unwrap();
    drop(reopened);
    assert_eq!(
        std::fs::metadata(copy.join("state.jsonl")).unwrap().len(),
        covered
    );
}

/// The run's last checkpoint waits for the one behind it, and dropping
/// the directory waits for a disk part under way: nothing is left
/// unwritten when the run lets go of its directory.
#[test]
fn issue25_the_directory_is_let_go_only_once_its_disk_part_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("r");
    let dir = RunDir::create(&path).unwrap();
    let mut state = RunState::new("r".into(), "a task".into());
    save(&dir, &state, false);
    let gate = dir.hold_disk_parts();
    state.board.push(entry(1));
    save(&dir, &state, true);
    let dropped = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            drop(dir);
            dropped.store(true, Ordering::SeqCst);
        });
        std::thread::sleep(Duration::from_millis(300));
        assert!(
            !dropped.load(Ordering::SeqCst),
            "let go with its run.json unwritten"
        );
        gate.open();
    });
    assert_eq!(load_run(&path).unwrap().state, state);
}

/// The state log's length that `run.json` covers.
fn covered(path: &std::path::Path) -> u64 {
    let run: serde_json::Value =
        serde_json::from_slice(&std::fs::read(path.join("run.json")).unwrap()).unwrap();
    run["state_len"].as_u64().unwrap()
}

/// Checkpoints from several threads at once (the principal's associates
/// each save as they deliver) run one at a time, start to end: while one
/// is writing its `run.json`, the next does not write its line. Written
/// after the log's lock was let go, an older `run.json` could replace a
/// newer one, and a kill then cut off delivered work.
#[test]
fn issue25_checkpoints_from_several_threads_run_one_at_a_time() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("r");
    let dir = RunDir::create(&path).unwrap();
    let mut state = RunState::new("r".into(), "a task".into());
    save(&dir, &state, false);
    let gate = dir.hold_disk_parts();
    state.board.push(entry(1));
    let first = state.clone();
    state.board.push(entry(2));
    let second = state.clone();
    std::thread::scope(|s| {
        s.spawn(|| save(&dir, &first, false));
        let until = std::time::Instant::now() + Duration::from_secs(30);
        while gate.arrived.load(Ordering::SeqCst) == 0 {
            assert!(
                std::time::Instant::now() < until,
                "the first never came to the disk"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        let len = std::fs::metadata(path.join("state.jsonl")).unwrap().len();
        s.spawn(|| save(&dir, &second, false));
        std::thread::sleep(Duration::from_millis(300));
        let now = std::fs::metadata(path.join("state.jsonl")).unwrap().len();
        // Opened before the check: a failing check must not leave the
        // savers held (the scope would wait for them for ever).
        gate.open();
        assert_eq!(
            now, len,
            "a second checkpoint wrote its line while the first wrote its run.json"
        );
    });
    drop(dir);
    let len = std::fs::metadata(path.join("state.jsonl")).unwrap().len();
    assert_eq!(
        covered(&path),
        len,
        "run.json covers an older line than the last"
    );
    assert_eq!(load_run(&path).unwrap().state, second);
}

/// A checkpoint whose disk part failed, on the run's thread or behind
/// it, is made good by the next one even when nothing changed since:
/// `team.json` and `run.json` are written again. Forgotten, the next
/// checkpoint found "nothing changed" and wrote nothing, and the run had
/// no `run.json` at all.
#[test]
fn issue25_a_failed_disk_part_is_written_again_by_the_next_checkpoint() {
    for behind in [false, true] {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("r");
        let dir = RunDir::create(&path).unwrap();
        let state = RunState::new("r".into(), "a task".into());
        dir.fail_next_disk_part();
        let first = try_save(&dir, &state, behind);
        if behind {
            // Said in the log by the thread; the run goes on.
            assert!(first.is_ok());
        } else {
            assert!(first.is_err(), "the failure is the caller's to hear");
        }
        try_save(&dir, &state, false).unwrap();
        assert!(path.join("team.json").is_file(), "behind: {behind}");
        assert_eq!(load_run(&path).unwrap().state, state, "behind: {behind}");
    }
}
