//! `boardroom view`: a small web server that draws runs in a browser.
//!
//! ```text
//! GET /                      the runs, newest first, each linked
//! GET /runs/<id>             the run's page (one self-contained HTML file)
//! GET /runs/<id>/state.json  run.json, board entries from the journal, turns, plan
//! GET /runs/<id>/events      events.jsonl as server-sent events, tailed live
//! anything else              404
//! ```
//!
//! Run ids are looked up among the directories [`list_runs`] finds, never
//! joined onto a path as given, so no URL reaches outside the runs
//! directory. One named thread gathers connections and reads their request
//! heads, a fixed pool of named workers answers them (one response per
//! connection); all are joined by [`ViewServer::stop`]. Idle or slow
//! clients never hold a thread: at most 256 wait for their heads (the
//! oldest is closed past that), each for at most 10 s; a request that
//! finds every worker busy is answered `503` at once. Live event streams
//! hold no worker: one thread polls them all (at most 256 open; one more
//! is answered `503` saying so). It binds where it
//! is told (loopback unless the caller asks otherwise).
//!
//! On loopback a request must name the server's own address in its `Host`
//! header (a DNS name a web page rebound to 127.0.0.1 is refused). Off
//! loopback the server starts only with an access token
//! ([`ViewServer::start_with_token`]), and every request must carry it: an
//! `Authorization: Bearer` header, the `boardroom_view` cookie, or
//! `?token=` on a page's URL (answered with a redirect that sets the cookie
//! and drops the token from the address bar).
//!
//! [`list_runs`]: crate::store::list_runs

mod live;
mod routes;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use crate::util::httpd;

/// Worker threads: each serves one request at a time (a live page's
/// event stream is handed to the streaming thread, see [`live`]).
const WORKERS: usize = 16;
/// Requests whose heads arrived, queued for a worker; past it a request
/// is answered `503`.
const QUEUED: usize = 64;

/// Why the view could not start.
#[derive(Debug)]
#[non_exhaustive]
pub enum ViewError {
    /// The address is taken, not local, or not allowed.
    Bind {
        /// `host:port` as asked.
        addr: String,
        /// What the system said.
        source: std::io::Error,
    },
    /// A thread of the server could not be spawned.
    Thread(std::io::Error),
    /// The address is not loopback and no access token was given: anyone
    /// who could reach it could read the runs.
    NeedsToken {
        /// The address it would have listened on.
        addr: String,
    },
}

impl std::fmt::Display for ViewError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ViewError::Bind { addr, source } if source.kind() == std::io::ErrorKind::AddrInUse => {
                write!(
                    f,
                    "cannot listen on {addr}: the port is in use (choose another with --port, or --port 0 for a free one)"
                )
            }
            ViewError::Bind { addr, source } => write!(f, "cannot listen on {addr}: {source}"),
            ViewError::Thread(e) => write!(f, "cannot start the view's threads: {e}"),
            ViewError::NeedsToken { addr } => write!(
                f,
                "refusing to listen on {addr} without an access token: the address is not \
                 loopback, so anyone who can reach it could read these runs"
            ),
        }
    }
}

impl std::error::Error for ViewError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ViewError::Bind { source, .. } | ViewError::Thread(source) => Some(source),
            ViewError::NeedsToken { .. } => None,
        }
    }
}

/// A running view server.
///
/// # Examples
///
/// ```no_run
/// let view = boardroom::view::ViewServer::start("runs", "127.0.0.1", 0)?;
/// println!("open {}", view.url());
/// view.wait();                                      // serves until the process ends
/// # Ok::<(), boardroom::view::ViewError>(())
/// ```
#[derive(Debug)]
pub struct ViewServer {
    addr: SocketAddr,
    server: Option<httpd::Server>,
    /// Ends the streaming thread (the server's own flag is its own).
    live_stop: Arc<AtomicBool>,
    /// The streaming thread.
    live: Option<JoinHandle<()>>,
}

impl ViewServer {
    /// Serves the runs under `runs_dir` on `host:port` (port 0: a free one).
    ///
    /// # Errors
    ///
    /// [`ViewError::Bind`] when the address cannot be had (in use, not an
    /// address of this machine), [`ViewError::Thread`] when the workers
    /// cannot start.
    /// [`ViewError::NeedsToken`] when the address is not loopback (use
    /// [`ViewServer::start_with_token`] there).
    pub fn start(runs_dir: impl AsRef<Path>, host: &str, port: u16) -> Result<Self, ViewError> {
        Self::start_with_token(runs_dir, host, port, None)
    }

    /// Serves the runs under `runs_dir` on `host:port`, answering only
    /// requests that carry `token` (when given): as `Authorization: Bearer
    /// TOKEN`, as the `boardroom_view` cookie, or as `?token=TOKEN` on a
    /// page's URL. An address off loopback requires a token.
    ///
    /// # Errors
    ///
    /// As [`ViewServer::start`]; [`ViewError::NeedsToken`] off loopback
    /// without a token (or with an empty one).
    pub fn start_with_token(
        runs_dir: impl AsRef<Path>,
        host: &str,
        port: u16,
        token: Option<&str>,
    ) -> Result<Self, ViewError> {
        let token: Option<Arc<str>> = token.filter(|t| !t.is_empty()).map(Arc::from);
        let shown = httpd::shown(host, port);
        let bind = |source| ViewError::Bind {
            addr: shown.clone(),
            source,
        };
        let (listener, addr) = httpd::bind(host, port).map_err(bind)?;
        if token.is_none() && !addr.ip().is_loopback() {
            return Err(ViewError::NeedsToken { addr: shown });
        }
        // On loopback, only requests that name it (not a DNS name a web
        // page rebound to 127.0.0.1) are served.
        let hosts = httpd::loopback_hosts(addr);
        let access = Arc::new(routes::Access { hosts, token });
        let runs_dir: Arc<PathBuf> = Arc::new(runs_dir.as_ref().to_path_buf());
        let limits = httpd::Limits {
            workers: WORKERS,
            queued: QUEUED,
            name: "boardroom-view",
        };
        let (streams, slots, open) = live::Streams::new();
        let live_stop = Arc::new(AtomicBool::new(false));
        let halt = Arc::clone(&live_stop);
        let streamer = std::thread::Builder::new()
            .name("boardroom-view-live".into())
            .spawn(move || live::run(&slots, &open, &halt))
            .map_err(ViewError::Thread)?;
        let mut view = ViewServer {
            addr,
            server: None,
            live_stop,
            live: Some(streamer),
        };
        let handler: httpd::Handler = Arc::new(move |request, _halt| {
            routes::handle(request, &runs_dir, &streams, &access);
        });
        // On an error, dropping `view` stops and joins the streaming thread.
        view.server = Some(
            httpd::Server::start(listener, limits, routes::busy, handler)
                .map_err(ViewError::Thread)?,
        );
        Ok(view)
    }

    /// The address it listens on.
    #[must_use]
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://host:port/`, the list of runs.
    #[must_use]
    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// The page of one run.
    #[must_use]
    pub fn run_url(&self, run_id: &str) -> String {
        format!("http://{}/runs/{run_id}", self.addr)
    }

    /// Blocks while the server serves (until the process ends).
    pub fn wait(mut self) {
        if let Some(server) = self.server.take() {
            server.wait();
        }
    }

    /// Stops serving: open event streams end within a moment, every
    /// worker is joined. Dropping the server does the same.
    pub fn stop(self) {
        drop(self);
    }
}

impl Drop for ViewServer {
    fn drop(&mut self) {
        // The workers first (none hands a stream over after), then the
        // streaming thread, which closes what it holds.
        drop(self.server.take());
        self.live_stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.live.take() {
            let _ = t.join();
        }
    }
}
