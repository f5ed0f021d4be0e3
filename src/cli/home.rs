//! One home for everything boardroom saves, whatever directory a command
//! runs from: `runs/` (with the master's `memory/`) and `chats/` under
//!
//! 1. `$BOARDROOM_HOME`, if set;
//! 2. else `$XDG_DATA_HOME/boardroom`, if set to an absolute path;
//! 3. else `%LOCALAPPDATA%\boardroom` on Windows;
//! 4. else `$HOME/.local/share/boardroom`;
//! 5. else (no home at all) `./` as before: `runs/` and `chats/` here.
//!
//! `--runs-dir` / `BOARDROOM_RUNS_DIR` and `--chats-dir` /
//! `BOARDROOM_CHATS_DIR` still name another place for one command.

use std::path::{Path, PathBuf};

/// The directory boardroom saves into, as the module docs list; `None`
/// when the environment names no home at all.
pub(crate) fn home() -> Option<PathBuf> {
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(home) = var("BOARDROOM_HOME") {
        return Some(home);
    }
    // The XDG spec ignores a relative XDG_DATA_HOME.
    if let Some(data) = var("XDG_DATA_HOME").filter(|p| p.is_absolute()) {
        return Some(data.join("boardroom"));
    }
    if cfg!(windows)
        && let Some(local) = var("LOCALAPPDATA")
    {
        return Some(local.join("boardroom"));
    }
    var("HOME").map(|h| h.join(".local").join("share").join("boardroom"))
}

/// Where runs are saved unless `--runs-dir` or `BOARDROOM_RUNS_DIR` says.
pub(crate) fn runs_dir() -> PathBuf {
    home().map_or_else(|| PathBuf::from("runs"), |h| h.join("runs"))
}

/// Where chats are saved unless `--chats-dir` or `BOARDROOM_CHATS_DIR` says.
pub(crate) fn chats_dir() -> PathBuf {
    home().map_or_else(|| PathBuf::from("chats"), |h| h.join("chats"))
}

/// Whether a command given `dir` finds the same runs without being told
/// where: `dir` is the default, or what `BOARDROOM_RUNS_DIR` says.
pub(crate) fn is_implied_runs_dir(dir: &Path) -> bool {
    dir == runs_dir()
        || std::env::var_os("BOARDROOM_RUNS_DIR")
            .filter(|v| !v.is_empty())
            .is_some_and(|env| Path::new(&env) == dir)
}
