//! Ending everything an MCP stdio server started: its process group, its
//! descendants that left the group (`setsid`), and those that escaped to
//! init (a double fork: the parent exits, the grandchild is reparented to
//! pid 1 and keeps the server's stdout open, so that its reader never
//! sees the end).
//!
//! A server is started with a mark in its environment
//! ([`MARK_VAR`]`=`a token of its own), which its descendants inherit
//! however they detach; and boardroom knows the pipes of its stdout and
//! stderr. At the end, a process that carries the mark or holds one of
//! those pipes open is the server's, wherever it went: it is killed, and
//! its process group with it (never boardroom's own group). Linux only
//! (`/proc`); elsewhere the group and the bounded wait remain.

/// The environment variable that marks a server's processes.
pub(crate) const MARK_VAR: &str = "BOARDROOM_MCP_SERVER";

/// A token no other server of any boardroom process carries: this
/// process's id, a counter, the server's name.
pub(crate) fn new_mark(server: &str) -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{}-{n}-{server}", std::process::id())
}

/// The inode of a pipe, as `/proc/PID/fd` links name it (`pipe:[INODE]`).
#[cfg(unix)]
pub(crate) fn pipe_inode(fd: impl std::os::fd::AsFd) -> Option<u64> {
    rustix::fs::fstat(fd).ok().map(|s| s.st_ino)
}

/// SIGKILL to the process group `pid` leads (the server was started with
/// `process_group(0)`): `kill(-pid, SIGKILL)` through rustix's safe API,
/// not a `kill` command. An error (the group is gone) is nothing to do.
#[cfg(unix)]
pub(crate) fn kill_group(pid: u32) {
    let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return;
    };
    if let Err(e) = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL) {
        log::debug!("mcp: ending process group {pid:?}: {e}");
    }
}

/// SIGKILL to one process; an error (it is gone) is nothing to do.
#[cfg(target_os = "linux")]
pub(crate) fn kill_one(pid: u32) {
    if let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
    }
}

/// The pids in `/proc`.
#[cfg(target_os = "linux")]
fn pids() -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .collect()
}

/// The parent id and process group of `pid`, from `/proc/PID/stat`.
#[cfg(target_os = "linux")]
fn parent_and_group(pid: u32) -> Option<(u32, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid pgrp ...`; comm may hold spaces and ')'.
    let mut rest = stat.rsplit_once(')')?.1.split_whitespace();
    let ppid = rest.nth(1)?.parse().ok()?;
    let pgrp = rest.next()?.parse().ok()?;
    Some((ppid, pgrp))
}

/// Every process descended from `root`, by the parent ids in `/proc`
/// (a snapshot: one that double-forked away to init is not found here;
/// [`escaped`] finds it).
#[cfg(target_os = "linux")]
pub(crate) fn descendants(root: u32) -> Vec<u32> {
    let parents: Vec<(u32, u32)> = pids()
        .into_iter()
        .filter_map(|pid| Some((pid, parent_and_group(pid)?.0)))
        .collect();
    let mut found = vec![root];
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        found.extend(
            parents
                .iter()
                .filter(|&&(pid, ppid)| ppid == parent && !found.contains(&pid))
                .map(|&(pid, _)| pid)
                .collect::<Vec<_>>(),
        );
        i += 1;
    }
    found.remove(0);
    found
}

/// Whether `pid`'s environment holds `MARK_VAR=mark`.
#[cfg(target_os = "linux")]
fn marked(pid: u32, mark: &str) -> bool {
    let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else {
        return false;
    };
    let want = format!("{MARK_VAR}={mark}");
    env.split(|&b| b == 0).any(|entry| entry == want.as_bytes())
}

/// Whether `pid` holds one of `pipes` open.
#[cfg(target_os = "linux")]
fn holds(pid: u32, pipes: &[u64]) -> bool {
    if pipes.is_empty() {
        return false;
    }
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.filter_map(Result::ok).any(|fd| {
        std::fs::read_link(fd.path()).is_ok_and(|to| {
            to.to_str()
                .and_then(|t| t.strip_prefix("pipe:["))
                .and_then(|t| t.strip_suffix(']'))
                .and_then(|t| t.parse::<u64>().ok())
                .is_some_and(|ino| pipes.contains(&ino))
        })
    })
}

/// Kills every process other than this one and its own children that
/// carries `mark` or holds one of `pipes` open, and its process group
/// (unless that is this process's own); returns how many it found.
///
/// This process's children are never the dead server's: each of its
/// servers is ended through its own handle, and a child just forked (for
/// another server, or any command) holds every pipe this process has open
/// until it executes its program, the closed-on-exec ones too. Taken for
/// the server's, such a child was killed before it became another
/// server: a test that started a server while another test ended one saw
/// its new server gone.
#[cfg(target_os = "linux")]
pub(crate) fn end_escaped(mark: &str, pipes: &[u64]) -> usize {
    let me = std::process::id();
    let my_group = parent_and_group(me).map(|(_, g)| g);
    let mut found = 0;
    for pid in pids() {
        if pid == me
            || pid <= 1
            || parent_and_group(pid).is_some_and(|(parent, _)| parent == me)
            || !(marked(pid, mark) || holds(pid, pipes))
        {
            continue;
        }
        found += 1;
        if let Some((_, group)) = parent_and_group(pid)
            && group > 1
            && Some(group) != my_group
        {
            kill_group(group);
        }
        kill_one(pid);
    }
    found
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// A child of this process that holds a dead server's pipe (here:
    /// one that has it as its output) is not taken for the server's: a
    /// child just forked for another server holds every pipe until it
    /// executes its program, and was killed when two servers ended and
    /// started at once. A process of the server's own is still found by
    /// its mark or the pipe (`tests/hold_mcp_double_fork.rs`,
    /// `tests/hold_mcp_escape.rs`).
    #[test]
    fn a_child_of_this_process_holding_the_pipe_is_left_alone() {
        let (reader, writer) = std::io::pipe().unwrap();
        let inode = pipe_inode(&reader).unwrap();
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .stdout(writer)
            .spawn()
            .unwrap();
        assert!(holds(child.id(), &[inode]), "the child holds the pipe");
        let found = end_escaped("no-such-mark", &[inode]);
        let alive = child.try_wait().unwrap().is_none();
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(found, 0);
        assert!(alive, "this process's own child was killed");
    }
}
