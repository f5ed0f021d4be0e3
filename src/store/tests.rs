use std::io::Write;

use super::*;
use crate::event::{Event, EventKind, RoomStatus};
use crate::record::{RunSettings, RunState};
use crate::team::Team;

fn record(id: &str) -> RunRecord {
    let team = Team::builtin().unwrap();
    RunRecord {
        version: RUN_FORMAT_VERSION,
        created_ms: 1,
        saved_ms: 2,
        team: TeamSnapshot::of(&team),
        settings: RunSettings::default(),
        journal_len: None,
        last_turn: None,
        state: RunState::new(id.into(), "a task".into()),
    }
}

fn save(dir: &std::path::Path, r: &RunRecord) {
    std::fs::create_dir_all(dir).unwrap();
    write_atomic(&dir.join(RUN_FILE), &serde_json::to_vec(r).unwrap()).unwrap();
}

#[test]
fn run_json_round_trips_and_the_team_comes_back() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("r1");
    let r = record("r1");
    save(&dir, &r);
    let back = load_run(&dir).unwrap();
    assert_eq!(back, r);
    assert_eq!(back.team.to_team().unwrap().agents().len(), 6);
    // No temp file is left beside it.
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("run.json")]);
}

#[test]
fn a_newer_run_json_is_refused_clearly() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("r2");
    let mut value = serde_json::to_value(record("r2")).unwrap();
    value["version"] = 99.into();
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(RUN_FILE), value.to_string()).unwrap();
    let err = load_run(&dir).unwrap_err();
    assert!(matches!(err, StoreError::NewerVersion { found: 99, .. }));
    assert!(
        err.to_string().ends_with(
            "run.json: written by a newer boardroom (format version 99, this build reads up to 2)"
        ),
        "{err}"
    );
    std::fs::write(dir.join(RUN_FILE), "{\"version\": 1, \"task\": 3}").unwrap();
    assert!(
        load_run(&dir)
            .unwrap_err()
            .to_string()
            .contains("run.json: not a run record")
    );
    assert_eq!(
        load_run(&tmp.path().join("nope")).unwrap_err().to_string(),
        format!(
            "run '{}': not found",
            tmp.path().join("nope/run.json").display()
        )
    );
}

#[test]
fn a_torn_last_line_is_skipped_with_a_warning() {
    let tmp = tempfile::tempdir().unwrap();
    let run = RunDir::open(tmp.path()).unwrap();
    let e = Event::now(
        "r",
        "master",
        None,
        EventKind::RoomStatus {
            status: RoomStatus::Working,
        },
    );
    run.append_event(&e).unwrap();
    run.append_event(&e).unwrap();
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(tmp.path().join(EVENTS_FILE))
        .unwrap();
    f.write_all(b"{\"run_id\":\"r\",\"agent\":\"mas").unwrap();
    drop(f);
    let lines = read_events(tmp.path()).unwrap();
    assert_eq!(lines.items.len(), 2);
    assert_eq!(
        lines.warnings,
        vec!["events.jsonl:3: truncated line skipped"]
    );
    // Reopening (a resume) starts the next line on a fresh line.
    drop(run);
    let run = RunDir::open(tmp.path()).unwrap();
    run.append_event(&e).unwrap();
    let lines = read_events(tmp.path()).unwrap();
    assert_eq!(lines.items.len(), 3);
    assert_eq!(
        lines.warnings,
        vec!["events.jsonl:3: truncated line skipped"]
    );
}

#[test]
fn listing_reports_broken_runs_and_skips_other_dirs() {
    let tmp = tempfile::tempdir().unwrap();
    save(
        &tmp.path().join("20260101-000000-000-aaaa"),
        &record("20260101-000000-000-aaaa"),
    );
    let bad = tmp.path().join("20260102-000000-000-bbbb");
    std::fs::create_dir_all(&bad).unwrap();
    std::fs::write(bad.join(RUN_FILE), "{\"version\": 1, \"tas").unwrap();
    std::fs::create_dir_all(tmp.path().join("memory")).unwrap();
    let runs = list_runs(tmp.path()).unwrap();
    assert_eq!(runs.len(), 2);
    assert!(runs[0].record.is_ok());
    assert!(
        runs[1]
            .record
            .as_ref()
            .unwrap_err()
            .to_string()
            .contains("not valid json")
    );
    assert!(list_runs(&tmp.path().join("missing")).unwrap().is_empty());
}

#[test]
fn a_new_run_never_reuses_a_folder_and_holds_its_lock() {
    // Issue 8: a second run with the same id wrote into the first's folder.
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("runs").join("20260101-000000-000-aaaa");
    let first = RunDir::create(&path).unwrap();
    assert_eq!(
        RunDir::create(&path).unwrap_err().to_string(),
        format!(
            "{}: already exists; a new run never reuses a directory",
            path.display()
        )
    );
    assert_eq!(
        RunDir::open(&path).unwrap_err().to_string(),
        format!(
            "run 20260101-000000-000-aaaa: in use by another boardroom (pid {})",
            std::process::id()
        )
    );
    drop(first);
    assert!(RunDir::open(&path).is_ok(), "the lock went with its holder");
}

#[test]
fn temp_files_are_unique_per_writer_and_never_left_behind() {
    // Issue 8: two writers shared `.run.json.tmp` and clobbered each other.
    let tmp = tempfile::tempdir().unwrap();
    let target = tmp.path().join("run.json");
    std::thread::scope(|s| {
        for i in 0..8 {
            let target = &target;
            s.spawn(move || {
                for _ in 0..50 {
                    write_atomic(target, format!("{{\"writer\": {i}}}").as_bytes()).unwrap();
                }
            });
        }
    });
    let text = std::fs::read_to_string(&target).unwrap();
    assert!(
        serde_json::from_str::<serde_json::Value>(&text).is_ok(),
        "{text}"
    );
    let left: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, vec![std::ffi::OsString::from("run.json")]);
}

#[test]
fn issue28_a_run_killed_before_its_first_save_is_cleaned_up() {
    // Finding 13: a kill in the first moment left a run directory that
    // `runs` did not list and `resume` could not find. What such a kill
    // leaves is a created (or half-made) directory whose lock nobody
    // holds and no `run.json`: dropping the `RunDir` leaves the same.
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path().join("runs");
    let killed = runs.join("20260101-000000-000-aaaa");
    drop(RunDir::create(&killed).unwrap());
    let half_made = runs.join(".20260101-000000-000-bbbb.new");
    std::fs::create_dir_all(&half_made).unwrap();
    drop(RunLock::acquire(&half_made).unwrap());
    // A run that is being made (its lock held) and a finished one stay.
    let live = runs.join("20260101-000000-000-cccc");
    let held = RunDir::create(&live).unwrap();
    let done = runs.join("20260101-000000-000-dddd");
    save(&done, &record("20260101-000000-000-dddd"));
    // Not a run directory of ours: left alone.
    std::fs::create_dir_all(runs.join("memory")).unwrap();

    let listed: Vec<String> = list_runs(&runs)
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(listed, vec!["20260101-000000-000-dddd".to_string()]);
    assert!(!killed.exists(), "the killed run's directory is removed");
    assert!(!half_made.exists());
    assert!(live.is_dir() && runs.join("memory").is_dir());
    drop(held);
}
