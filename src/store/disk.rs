//! Files put in place whole: a run's `run.json` and `team.json` after the
//! logs they point into are on disk (a checkpoint's disk part), and any
//! file that readers must see old or new, never half written. Known
//! secrets are masked on the way.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::snapshot::TEAM_FILE;
use super::{RUN_FILE, StoreError};

/// What the disk part of a checkpoint writes: the fsyncs of the logs the
/// snapshot needs on disk, `run.json` (and `team.json` the first time)
/// under temporary names, at once; then, when all of them are on disk,
/// `team.json` and `run.json` in place, in that order (see
/// [`DiskPart::write`]).
pub(super) struct DiskPart {
    pub(super) dir: PathBuf,
    pub(super) team: Option<Vec<u8>>,
    /// Handles of their own on the logs to sync, and their names.
    pub(super) sync: Vec<(File, &'static str)>,
    pub(super) run: Vec<u8>,
}

impl DiskPart {
    /// The flushes at once, not one after another: each log's fsync, and
    /// `team.json`'s temporary file, on a thread of its own while
    /// `run.json`'s is written and flushed here; then, only when every one
    /// of them is on disk, the renames (`team.json` first: a `run.json`
    /// never appears without the team it names) and one flush of the
    /// directory for both (the file system keeps the two renames in
    /// order). Concurrent flushes share the file system's journal
    /// commits: two waits for the disk instead of five, which a busy disk
    /// made tens of milliseconds each. A failed flush is the error
    /// reported, and nothing is renamed.
    pub(super) fn write(&self) -> Result<(), StoreError> {
        let team = self.dir.join(TEAM_FILE);
        let run = self.dir.join(RUN_FILE);
        let (synced, team_tmp, run_tmp) = std::thread::scope(|s| {
            let syncs: Vec<_> = self
                .sync
                .iter()
                .map(|(file, name)| {
                    aside(s, move || {
                        file.sync_data()
                            .map_err(|e| StoreError::io(self.dir.join(name), e))
                    })
                })
                .collect();
            let team_tmp = self.team.as_deref().map(|bytes| {
                let team = &team;
                aside(s, move || Staged::write(team, bytes, true))
            });
            let run_tmp = Staged::write(&run, &self.run, true);
            let synced = syncs.into_iter().try_for_each(Aside::join);
            (synced, team_tmp.map(Aside::join).transpose(), run_tmp)
        });
        // A failed flush first; on any error the temporary files go as
        // they are dropped, and nothing is renamed.
        synced?;
        let (team_tmp, run_tmp) = (team_tmp?, run_tmp?);
        if let Some(t) = team_tmp {
            t.rename()?;
        }
        run_tmp.rename()?;
        sync_dir(&self.dir);
        Ok(())
    }
}

/// Work on a thread of its own in a scope, or, when no thread can be
/// started, here when it is joined.
enum Aside<'scope, T, F> {
    Thread(std::thread::ScopedJoinHandle<'scope, T>),
    Here(F),
}

impl<T, F: FnOnce() -> T> Aside<'_, T, F> {
    fn join(self) -> T {
        match self {
            Aside::Thread(h) => h
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            Aside::Here(work) => work(),
        }
    }
}

/// Starts `work` on a thread of its own in `scope` (`Copy`: kept to be
/// done here if the thread cannot be started).
fn aside<'scope, T, F>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    work: F,
) -> Aside<'scope, T, F>
where
    F: FnOnce() -> T + Send + Copy + 'scope,
    T: Send + 'scope,
{
    match std::thread::Builder::new()
        .name("boardroom-sync".into())
        .spawn_scoped(scope, work)
    {
        Ok(handle) => Aside::Thread(handle),
        Err(_) => Aside::Here(work),
    }
}

/// `bytes` with every known secret masked: a JSON document stays valid
/// JSON, other UTF-8 text is masked as text, other bytes are left.
fn masked(bytes: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    if !crate::util::secrets::any() {
        return std::borrow::Cow::Borrowed(bytes);
    }
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if matches!(first, Some(b'{' | b'[')) {
        return crate::util::secrets::mask_json(bytes);
    }
    match std::str::from_utf8(bytes) {
        Ok(text) => match crate::util::secrets::mask(text) {
            std::borrow::Cow::Borrowed(_) => std::borrow::Cow::Borrowed(bytes),
            std::borrow::Cow::Owned(t) => std::borrow::Cow::Owned(t.into_bytes()),
        },
        Err(_) => std::borrow::Cow::Borrowed(bytes),
    }
}

/// Writes `bytes` to `path` so that readers see the old file or the new
/// one, never half of one, and the new one survives a power cut: a temp
/// file beside it, fsync, rename, fsync of the directory. Known secrets
/// are masked on the way (issue 28): in the strings of a JSON document,
/// else in the text.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    replace(path, bytes, true)
}

/// As [`write_atomic`] without the fsyncs: for files that can be made
/// again from `run.json` (`plan.json`, `report.md`).
pub(crate) fn write_replace(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    replace(path, bytes, false)
}

fn replace(path: &Path, bytes: &[u8], durable: bool) -> Result<(), StoreError> {
    Staged::write(path, bytes, durable)?.rename()?;
    if durable {
        sync_dir(path.parent().unwrap_or_else(|| Path::new(".")));
    }
    Ok(())
}

/// Makes the renames in `dir` durable. Not every platform can open a
/// directory; a rename is still atomic there.
fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

/// A file's new contents written beside it under a temporary name (and
/// flushed, when durable), not yet renamed over it. Dropped before it is
/// renamed (an error, a panic), its temporary file is removed.
struct Staged<'a> {
    tmp: Option<PathBuf>,
    path: &'a Path,
}

impl<'a> Staged<'a> {
    fn write(path: &'a Path, bytes: &[u8], durable: bool) -> Result<Self, StoreError> {
        let bytes = masked(bytes);
        let bytes: &[u8] = &bytes;
        let dir = path.parent().unwrap_or_else(|| Path::new("."));
        let name = path
            .file_name()
            .map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned());
        // Unique per writer: two writers never share (and clobber) a temp
        // file.
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let tmp = dir.join(format!(
            ".{name}.{}-{}.tmp",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let mut f = File::create(&tmp).map_err(|e| StoreError::io(&tmp, e))?;
        let staged = Staged {
            tmp: Some(tmp),
            path,
        };
        f.write_all(bytes)
            .and_then(|()| if durable { f.sync_all() } else { Ok(()) })
            .map_err(|e| StoreError::io(path, e))?;
        Ok(staged)
    }

    /// Puts the new contents in place (atomically).
    fn rename(mut self) -> Result<(), StoreError> {
        let Some(tmp) = self.tmp.take() else {
            return Ok(());
        };
        std::fs::rename(&tmp, self.path).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            StoreError::io(self.path, e)
        })
    }
}

impl Drop for Staged<'_> {
    /// Not renamed: the old contents stay.
    fn drop(&mut self) {
        if let Some(tmp) = self.tmp.take() {
            let _ = std::fs::remove_file(tmp);
        }
    }
}

#[cfg(test)]
mod disk_part_tests {
    use super::super::snapshot::STATE_FILE;
    use super::*;

    /// The names of the temporary files left in `dir`.
    fn temporary(dir: &Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".tmp"))
            .collect()
    }

    /// Issue 25: the flushes run at once, but nothing is put in place
    /// unless every one of them is on disk. A log whose flush fails (here
    /// `/dev/null`'s, which Linux refuses) is the error, with the log's
    /// name; neither `team.json` nor `run.json` appears, and the temporary
    /// files they were written to are gone.
    #[cfg(target_os = "linux")]
    #[test]
    fn issue25_a_failed_flush_puts_nothing_in_place() {
        let tmp = tempfile::tempdir().unwrap();
        let part = DiskPart {
            dir: tmp.path().to_path_buf(),
            team: Some(b"{\"name\":\"t\"}".to_vec()),
            sync: vec![(File::open("/dev/null").unwrap(), STATE_FILE)],
            run: b"{}".to_vec(),
        };
        let err = part.write().unwrap_err().to_string();
        assert!(err.contains(STATE_FILE), "{err}");
        assert!(
            !tmp.path().join(TEAM_FILE).exists(),
            "team.json put in place"
        );
        assert!(!tmp.path().join(RUN_FILE).exists(), "run.json put in place");
        assert_eq!(temporary(tmp.path()), Vec::<String>::new());
    }

    /// A disk part whose `run.json` cannot be put in place (here a
    /// directory stands there) says so with that file's path, and leaves
    /// no temporary file behind. `team.json` goes in first, so a
    /// `run.json` never names a team that is not there.
    #[test]
    fn issue25_a_disk_part_that_cannot_put_run_json_in_place_leaves_nothing_half_done() {
        let tmp = tempfile::tempdir().unwrap();
        let log = tmp.path().join(STATE_FILE);
        std::fs::write(&log, b"{}\n").unwrap();
        std::fs::create_dir(tmp.path().join(RUN_FILE)).unwrap();
        let part = DiskPart {
            dir: tmp.path().to_path_buf(),
            team: Some(b"{\"name\":\"t\"}".to_vec()),
            sync: vec![(File::open(&log).unwrap(), STATE_FILE)],
            run: b"{}".to_vec(),
        };
        let err = part.write().unwrap_err().to_string();
        let run = tmp.path().join(RUN_FILE).display().to_string();
        assert!(err.contains(&run) && !err.contains(".run.json."), "{err}");
        assert_eq!(temporary(tmp.path()), Vec::<String>::new());
        assert_eq!(
            std::fs::read(tmp.path().join(TEAM_FILE)).unwrap(),
            b"{\"name\":\"t\"}"
        );
        // And with room for it, the same part puts both in place.
        std::fs::remove_dir(tmp.path().join(RUN_FILE)).unwrap();
        part.write().unwrap();
        assert_eq!(std::fs::read(tmp.path().join(RUN_FILE)).unwrap(), b"{}");
    }
}
