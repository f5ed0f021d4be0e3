//! Issue 28, findings 10 and 3: files that are not files. A FIFO where a
//! team file or a run file should be made `check`, `run`, `show` and
//! `resume` wait forever, and a symlink to `/dev/zero` read until memory
//! ran out; `--task-file` on a pipe or a device skipped the 64 MiB cap.
//! Each is refused now, with the path in the message, before reading (or,
//! for a task from a pipe, once the cap is read).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

mod support;

use support::cli::{exit_within, text};

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// A copy of the example `parallel` team in `dir`.
fn team(dir: &Path) -> PathBuf {
    let team = dir.join("team");
    copy_dir(&support::cli::repo().join("examples/teams/parallel"), &team);
    team
}

fn mkfifo(path: &Path) {
    let _ = std::fs::remove_file(path);
    let made = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(made.success());
}

/// `boardroom ARGS` saving under `runs`, which must exit within 30 s
/// (a FIFO blocked forever before); its exit code and stderr.
fn within(args: &[&str], runs: &Path, home: &Path) -> (Option<i32>, String) {
    let mut child = support::cli::hermetic(args, home, home)
        .env("BOARDROOM_RUNS_DIR", runs)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status = exit_within(
        &mut child,
        Duration::from_secs(30),
        &format!("boardroom {args:?} hangs"),
    );
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    (status.code(), err)
}

#[test]
fn issue28_fifo_and_dev_zero_team_files_are_refused_by_check_and_run() {
    let tmp = tempfile::tempdir().unwrap();
    let team = team(tmp.path());
    let runs = tmp.path().join("runs");
    let agent = std::fs::read_dir(team.join("agents"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let t = team.to_str().unwrap();
    for (file, kind) in [
        (team.join("team.yaml"), "a named pipe (FIFO)"),
        (agent.clone(), "a named pipe (FIFO)"),
    ] {
        let saved = std::fs::read(&file).unwrap();
        mkfifo(&file);
        for args in [
            vec!["check", "--team", t],
            vec!["run", "a task", "--team", t, "--model", "sim"],
        ] {
            let (code, err) = within(&args, &runs, tmp.path());
            assert_eq!(code, Some(2), "{args:?}: {err}");
            assert!(
                err.contains(&file.display().to_string())
                    && err.contains(&format!("is {kind}, not a regular file")),
                "{args:?}: {err}"
            );
        }
        std::fs::remove_file(&file).unwrap();
        std::fs::write(&file, saved).unwrap();
    }
    // A symlink to /dev/zero: refused, not read until memory runs out.
    std::fs::remove_file(&agent).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &agent).unwrap();
    let (code, err) = within(&["check", "--team", t], &runs, tmp.path());
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("is a character device, not a regular file"),
        "{err}"
    );
}

/// A finished sim run in `runs`; its directory.
fn finished_run(runs: &Path, home: &Path) -> PathBuf {
    let out = support::cli::hermetic(
        &["run", "Plan a picnic", "--model", "sim", "--no-memory"],
        home,
        home,
    )
    .arg("--runs-dir")
    .arg(runs)
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    boardroom::store::list_runs(runs)
        .unwrap()
        .pop()
        .unwrap()
        .path
}

#[test]
fn issue28_fifo_run_files_are_refused_by_show_and_resume() {
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path().join("runs");
    let dir = finished_run(&runs, tmp.path());
    let id = dir.file_name().unwrap().to_str().unwrap().to_string();
    for name in ["run.json", "turns.jsonl", "journal.jsonl", "events.jsonl"] {
        let file = dir.join(name);
        let saved = std::fs::read(&file).unwrap();
        mkfifo(&file);
        for args in [
            vec!["show", &id, "--turns"],
            vec!["resume", &id, "--model", "sim"],
        ] {
            let (code, err) = within(&args, &runs, tmp.path());
            // `show` needs only some files: what it does not read it may
            // leave alone, but nothing may hang, and whatever is refused
            // is named.
            if code != Some(0) {
                assert!(
                    err.contains(name)
                        && err.contains("is a named pipe (FIFO), not a regular file"),
                    "{args:?} with {name} a FIFO: {err}"
                );
            }
        }
        std::fs::remove_file(&file).unwrap();
        std::fs::write(&file, saved).unwrap();
    }
    let file = dir.join("run.json");
    mkfifo(&file);
    let (code, err) = within(&["show", &id], &runs, tmp.path());
    assert_ne!(code, Some(0), "{err}");
    assert!(err.contains("run.json: is a named pipe (FIFO)"), "{err}");
}

/// `boardroom run --task-file PATH`: its exit code, and its stderr with
/// its peak RSS in kB (`peak-rss-kb=N`, from GNU time).
fn task_file_run(task_file: &str, home: &Path) -> (Option<i32>, String) {
    let out = Command::new("/usr/bin/time")
        .args(["-f", "peak-rss-kb=%M", "--"])
        // Past the cap the old code read until memory ran out: a ceiling
        // on the address space makes that a failed test, not a swapping
        // machine.
        .args(["prlimit", "--as=2147483648", "--"])
        .arg(support::cli::bin())
        .args([
            "run",
            "--task-file",
            task_file,
            "--model",
            "sim",
            "--no-memory",
        ])
        .arg("--runs-dir")
        .arg(home.join("runs"))
        .env("BOARDROOM_HOME", home)
        .env("HOME", home)
        .env_remove("BOARDROOM_MODEL")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (out.status.code(), text(&out.stderr))
}

#[test]
fn issue28_a_task_file_on_a_device_or_pipe_stops_at_the_64_mib_cap() {
    let tmp = tempfile::tempdir().unwrap();
    for source in ["/dev/zero", "pipe"] {
        let path = if source == "pipe" {
            // A FIFO with a writer that never stops.
            let fifo = tmp.path().join("task.fifo");
            mkfifo(&fifo);
            let fifo2 = fifo.clone();
            std::thread::spawn(move || {
                use std::io::Write as _;
                if let Ok(mut w) = std::fs::OpenOptions::new().write(true).open(&fifo2) {
                    let block = vec![b'x'; 1 << 20];
                    while w.write_all(&block).is_ok() {}
                }
            });
            fifo.display().to_string()
        } else {
            source.to_string()
        };
        let (code, err) = task_file_run(&path, tmp.path());
        assert_eq!(code, Some(2), "{source}: {err}");
        assert!(
            err.contains(&format!("--task-file {path}: larger than 64 MiB")),
            "{source}: {err}"
        );
        let peak: u64 = err
            .lines()
            .find_map(|l| l.strip_prefix("peak-rss-kb="))
            .and_then(|n| n.trim().parse().ok())
            .unwrap();
        // 64 MiB read (a Vec may double once): never the whole source.
        assert!(peak < 320 * 1024, "{source}: peak RSS {peak} kB");
    }
}
