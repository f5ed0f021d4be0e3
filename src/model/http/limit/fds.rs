//! How many connections the process's open-file limit leaves room for
//! (issue 28, finding 7): the soft limit is raised where the hard limit
//! allows, and an endpoint's ceiling is capped below what is left.

use std::sync::LazyLock;

use super::DEFAULT_CEILING;

/// File descriptors kept out of the connections' share: run files, pipes
/// to MCP servers, logs.
const FD_RESERVE: u64 = 128;

/// The soft open-file limit boardroom raises itself to, where the hard
/// limit allows (room for [`DEFAULT_CEILING`] connections and their
/// idle pool).
const FD_WANTED: u64 = 4096;

/// The most connections the open-file limit leaves room for, once: the
/// soft limit is first raised towards [`FD_WANTED`] where the hard limit
/// allows; half of what is left after [`FD_RESERVE`] goes to requests in
/// flight (the other half to idle pooled connections). `None` when there
/// is room for [`DEFAULT_CEILING`].
static FD_CEILING: LazyLock<Option<usize>> = LazyLock::new(fd_ceiling);

/// `ceiling`, or less where the open-file limit leaves room for fewer
/// connections (said once per endpoint, as a warning).
pub(super) fn fd_capped(name: &str, ceiling: usize) -> usize {
    match *FD_CEILING {
        Some(room) if room < ceiling => {
            log::warn!(
                "{name}: at most {room} requests at once (not {ceiling}): the open-file limit \
                 of this process leaves room for no more connections (raise it with `ulimit -n`)"
            );
            room
        }
        _ => ceiling.max(1),
    }
}

#[cfg(unix)]
fn fd_ceiling() -> Option<usize> {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    // `None` is unlimited.
    let mut soft = limit.current?;
    let hard = limit.maximum.unwrap_or(u64::MAX);
    if soft < FD_WANTED && hard > soft {
        let raised = FD_WANTED.min(hard);
        let new = Rlimit {
            current: Some(raised),
            maximum: limit.maximum,
        };
        match setrlimit(Resource::Nofile, new) {
            Ok(()) => {
                log::debug!("open-file limit raised from {soft} to {raised}");
                soft = raised;
            }
            Err(e) => log::debug!("open-file limit {soft}: not raised ({e})"),
        }
    }
    let room = usize::try_from(soft.saturating_sub(FD_RESERVE) / 2).unwrap_or(usize::MAX);
    (room < DEFAULT_CEILING).then_some(room.max(1))
}

#[cfg(not(unix))]
fn fd_ceiling() -> Option<usize> {
    None
}
