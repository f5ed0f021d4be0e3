//! One process at a time in a run directory: `run.lock` holds an OS
//! advisory lock (`flock` on Unix, `LockFileEx` on Windows) for as long as
//! a run or resume works in the directory, and the holder's pid for the
//! message a second one gets. The OS drops the lock when its holder dies,
//! even by `kill -9`, so a stale lock cannot outlive a crash; the file
//! itself stays, and only the lock on it counts.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use super::StoreError;

/// The lock file's name inside a run directory.
pub(crate) const LOCK_FILE: &str = "run.lock";

/// Attempts after the first before a held lock is reported (20 ms apart).
const PROBE_RETRIES: u32 = 4;

/// The lock on a run directory, held until dropped.
#[derive(Debug)]
pub(crate) struct RunLock {
    file: File,
}

fn run_id(dir: &Path) -> String {
    dir.file_name().map_or_else(
        || dir.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

fn open(dir: &Path, name: &str) -> Result<File, StoreError> {
    let path = dir.join(name);
    super::open_regular(
        &path,
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false),
    )
    .map_err(|e| StoreError::io(&path, e))
}

/// The pid its holder wrote into the lock file.
fn holder(file: &mut File) -> Option<u32> {
    let mut text = String::new();
    file.seek(SeekFrom::Start(0)).ok()?;
    file.take(64).read_to_string(&mut text).ok()?;
    text.trim().parse().ok()
}

/// The lock file `name` in `dir`, locked, or who holds it.
fn try_take(dir: &Path, name: &str) -> Result<File, StoreError> {
    let mut file = open(dir, name)?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(TryLockError::WouldBlock) => Err(StoreError::InUse {
            run: run_id(dir),
            pid: holder(&mut file),
        }),
        Err(TryLockError::Error(e)) => Err(StoreError::io(dir.join(name), e)),
    }
}

impl RunLock {
    /// Takes the lock of the run directory `dir` without waiting.
    ///
    /// # Errors
    ///
    /// [`StoreError::InUse`] when another holder has it (with its pid),
    /// [`StoreError::Io`] when the lock file cannot be opened or locked.
    pub(crate) fn acquire(dir: &Path) -> Result<RunLock, StoreError> {
        RunLock::acquire_file(dir, LOCK_FILE)
    }

    /// Takes the lock of `dir` if nobody holds it, without retries.
    pub(crate) fn try_acquire(dir: &Path) -> Result<RunLock, StoreError> {
        try_take(dir, LOCK_FILE).map(|file| RunLock { file })
    }

    /// As [`RunLock::acquire`], with the lock file `name` in `dir` (a
    /// chat's directory locks the same way as a run's).
    pub(crate) fn acquire_file(dir: &Path, name: &str) -> Result<RunLock, StoreError> {
        // `runs` and `show` probe the lock by taking it for an instant: a
        // few short retries keep a probe from refusing a real run.
        let mut tries = 0;
        let mut file = loop {
            match try_take(dir, name) {
                Err(StoreError::InUse { .. }) if tries < PROBE_RETRIES => {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                other => break other?,
            }
        };
        // Ours now: say who holds it. A failure here only loses the pid
        // from a second process's message.
        let pid = std::process::id().to_string();
        let _ = file
            .set_len(0)
            .and_then(|()| file.seek(SeekFrom::Start(0)))
            .and_then(|_| file.write_all(pid.as_bytes()))
            .and_then(|()| file.flush());
        Ok(RunLock { file })
    }

    /// Gives the lock back before the holder is dropped: a run that is
    /// over (saved, its events written) is free for another process at
    /// once, while its own thread still frees what it held. Nothing may
    /// be written to the directory after this.
    pub(crate) fn release(&self) {
        if let Err(e) = self.file.unlock() {
            log::warn!("cannot unlock the run directory: {e}");
        }
    }
}

/// Whether a process works on the run in directory `dir` right now:
/// `Some(pid)` while one holds the directory's lock (`pid` is `None` when
/// the lock file does not say), `None` for a run nobody works on (finished
/// or interrupted). This is how `boardroom runs` tells `running` from
/// `interrupted`, with no guessing from pids. Probing takes the lock for
/// an instant and gives it back.
///
/// # Examples
///
/// ```
/// use boardroom::{Runtime, Team};
/// use boardroom::testing::Sim;
/// use boardroom::store::run_holder;
/// let runs = std::env::temp_dir().join(format!("boardroom-doc-lock-{}", std::process::id()));
/// let run = Runtime::new(Team::builtin()?, Sim::new()).runs_dir(&runs).run("Plan a picnic")?;
/// assert_eq!(run_holder(&runs.join(&run.run_id)), None, "finished: nobody holds it");
/// # std::fs::remove_dir_all(&runs).ok();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use]
pub fn run_holder(dir: &Path) -> Option<Option<u32>> {
    if !dir.join(LOCK_FILE).is_file() {
        return None;
    }
    match try_take(dir, LOCK_FILE) {
        Err(StoreError::InUse { pid, .. }) => Some(pid),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_with_the_first_ones_pid_until_it_lets_go() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("20261122-000000-000-abc");
        std::fs::create_dir(&dir).unwrap();
        assert_eq!(run_holder(&dir), None);
        let first = RunLock::acquire(&dir).unwrap();
        let err = RunLock::acquire(&dir).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "run 20261122-000000-000-abc: in use by another boardroom (pid {})",
                std::process::id()
            )
        );
        assert_eq!(run_holder(&dir), Some(Some(std::process::id())));
        drop(first);
        assert_eq!(run_holder(&dir), None);
        let _again = RunLock::acquire(&dir).unwrap();
    }
}
