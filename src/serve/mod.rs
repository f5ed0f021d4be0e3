//! `boardroom serve`: an HTTP API that starts runs and steers them from
//! outside, many at once, each on its own [`RunHandle`](crate::RunHandle).
//!
//! ```text
//! GET  /                               the page: start, follow, answer, approve (no token)
//! GET  /openapi.json                   the OpenAPI 3 document (no token)
//! GET  /page.js                        the page's script (no token)
//! GET  /v1/teams                       the teams a run may name, the default first
//! GET  /v1/runs                        every run in the runs directory
//! POST /v1/runs                        {"task", "team", "model", "vars", "max_rounds"} → 201 {"id"}
//! GET  /v1/runs/{id}                   status, rounds, tokens, answer (or question), approvals, resumable
//! GET  /v1/runs/{id}/events            server-sent events: saved, then live (Last-Event-ID)
//! GET  /v1/runs/{id}/ws                WebSocket: events out; messages, answers, cancel, decisions in
//! POST /v1/runs/{id}/messages          {"text"}: the reply to the master's question, or a follow-up
//! POST /v1/runs/{id}/cancel            stop a live run (saved where it stands, resumable)
//! POST /v1/runs/{id}/resume            go on with an interrupted or stopped run
//! POST /v1/runs/{id}/approvals/{call}  {"decision": approve|deny|edit, "reason", "arguments"}
//! POST /v1/chats                       {"team", "model", "message"} → 201 the chat (and the partner's reply)
//! GET  /v1/chats/{id}                  state, question, runs, events (?after=N: from the N+1st)
//! POST /v1/chats/{id}/messages         {"text"} → the partner's reply
//! POST /v1/chats/{id}/consent          {"granted": true|false}: the answer to the partner's question
//! POST /v1/chats/{id}/close            end the chat (its run stops, resumable)
//! ```
//!
//! Every route but the first three needs `Authorization: Bearer TOKEN`
//! (401 otherwise). The HTTP machinery is `view`'s (bounded workers,
//! timeouts on slow clients, the `Host` check against DNS rebinding on
//! loopback); past `max_runs` live runs a start is answered `429` with
//! `Retry-After`; a body past its cap `413`; what is not the route's
//! JSON `400`; every error is `{"error": …, "status": …}`.
//!
//! Runs started here are ordinary runs in the runs directory: `boardroom
//! runs`, `show` and `resume` see them, and after a restart the API lists
//! the ones that did not finish as `resumable`.

mod api;
mod chats;
mod runs;
mod stream;
mod ws;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::team::Team;
use crate::util::httpd;

/// Worker threads: each answers one request at a time, and an event
/// stream or a WebSocket holds one while it is open.
const WORKERS: usize = 128;
/// Event streams and WebSockets open at once (each holds a worker); one
/// more is answered `503`, so plain requests always find a worker.
pub(crate) const MAX_STREAMS: usize = WORKERS / 2;
/// Requests whose heads arrived, queued for a worker; past it `503`.
const QUEUED: usize = 512;
/// The default cap on a request body.
pub const DEFAULT_MAX_BODY: usize = 1 << 20;

/// Why the server could not start.
#[derive(Debug)]
#[non_exhaustive]
pub enum ServeError {
    /// The address is taken, not local, or not allowed.
    Bind {
        /// `host:port` as asked.
        addr: String,
        /// What the system said.
        source: std::io::Error,
    },
    /// A thread of the server could not be spawned.
    Thread(std::io::Error),
    /// The token is empty or shorter than 16 characters.
    WeakToken,
    /// Two allowed teams have the same name.
    TeamTwice {
        /// The name.
        name: String,
    },
}

impl std::fmt::Display for ServeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServeError::Bind { addr, source } if source.kind() == std::io::ErrorKind::AddrInUse => {
                write!(f, "cannot listen on {addr}: the port is in use")
            }
            ServeError::Bind { addr, source } => write!(f, "cannot listen on {addr}: {source}"),
            ServeError::Thread(e) => write!(f, "cannot start the server's threads: {e}"),
            ServeError::WeakToken => {
                write!(f, "the access token is shorter than 16 characters")
            }
            ServeError::TeamTwice { name } => {
                write!(f, "two of the allowed teams are named '{name}'")
            }
        }
    }
}

impl std::error::Error for ServeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ServeError::Bind { source, .. } | ServeError::Thread(source) => Some(source),
            ServeError::WeakToken | ServeError::TeamTwice { .. } => None,
        }
    }
}

/// What a server serves, and how. Built with [`ServeConfig::new`] and
/// its setters, then [`Server::start`].
#[derive(Debug, Clone)]
pub struct ServeConfig {
    runs_dir: PathBuf,
    token: String,
    host: String,
    port: u16,
    max_runs: usize,
    teams: Vec<Team>,
    model: Option<String>,
    memory: bool,
    max_body: usize,
    chats_dir: Option<PathBuf>,
    max_chats: usize,
}

impl ServeConfig {
    /// Serves the runs under `runs_dir` to requests that carry `token`, on
    /// 127.0.0.1 port 0 (a free one), at most 8 runs at once, with the
    /// built-in team.
    pub fn new(runs_dir: impl Into<PathBuf>, token: impl Into<String>) -> Self {
        ServeConfig {
            runs_dir: runs_dir.into(),
            token: token.into(),
            host: "127.0.0.1".into(),
            port: 0,
            max_runs: 8,
            teams: Vec::new(),
            model: None,
            memory: true,
            max_body: DEFAULT_MAX_BODY,
            chats_dir: None,
            max_chats: 8,
        }
    }

    /// Where chats with a partner are saved (default: `chats` beside the
    /// runs directory).
    #[must_use]
    pub fn chats_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.chats_dir = Some(dir.into());
        self
    }

    /// The most chats open at once (at least 1; default 8); a start past
    /// it is answered `429`. The runs a chat launches are not counted in
    /// [`ServeConfig::max_runs`].
    #[must_use]
    pub fn max_chats(mut self, n: usize) -> Self {
        self.max_chats = n.max(1);
        self
    }

    /// The token every `/v1` request must carry.
    #[must_use]
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.token = token.into();
        self
    }

    /// The address to listen on (default 127.0.0.1).
    #[must_use]
    pub fn host(mut self, host: impl Into<String>) -> Self {
        self.host = host.into();
        self
    }

    /// The port (default 0: a free one).
    #[must_use]
    pub fn port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }

    /// The most runs live at once (at least 1; default 8); a start past
    /// it is answered `429`.
    #[must_use]
    pub fn max_runs(mut self, n: usize) -> Self {
        self.max_runs = n.max(1);
        self
    }

    /// Allows requests to run `team` (named by its name). The first team
    /// allowed is the default; the built-in team is always allowed, as
    /// `builtin`, and is the default when no other is.
    #[must_use]
    pub fn team(mut self, team: Team) -> Self {
        self.teams.push(team);
        self
    }

    /// The model spec of runs whose request names none (default: the
    /// team's `default` model, else `sim`).
    #[must_use]
    pub fn model(mut self, spec: impl Into<String>) -> Self {
        self.model = Some(spec.into());
        self
    }

    /// Whether runs use and update the master's memory (default: yes).
    #[must_use]
    pub fn memory(mut self, on: bool) -> Self {
        self.memory = on;
        self
    }

    /// The largest request body taken, in bytes (default 1 MiB).
    #[must_use]
    pub fn max_body(mut self, bytes: usize) -> Self {
        self.max_body = bytes;
        self
    }
}

/// A running server. Dropping it (or [`Server::stop`]) stops serving,
/// asks every live run to stop (each is saved where it stands, and
/// resumable) and joins its own threads; a run's thread, once the run is
/// closed and saved, may still be ending its member threads.
///
/// # Examples
///
/// ```no_run
/// use boardroom::serve::{ServeConfig, Server, generate_token};
///
/// let token = generate_token();
/// let server = Server::start(ServeConfig::new("runs", &token).port(8420))?;
/// println!("serving on {}", server.url());
/// # Ok::<(), boardroom::serve::ServeError>(())
/// ```
#[derive(Debug)]
pub struct Server {
    addr: SocketAddr,
    http: Option<httpd::Server>,
    runs: Arc<runs::Runs>,
    chats: Arc<chats::Chats>,
}

impl Server {
    /// Starts serving.
    ///
    /// # Errors
    ///
    /// [`ServeError::Bind`] when the address cannot be had,
    /// [`ServeError::Thread`] when the workers cannot start,
    /// [`ServeError::WeakToken`] for a token under 16 characters,
    /// [`ServeError::TeamTwice`] for two allowed teams of one name.
    pub fn start(config: ServeConfig) -> Result<Server, ServeError> {
        if config.token.trim().len() < 16 {
            return Err(ServeError::WeakToken);
        }
        crate::util::secrets::remember(&config.token);
        let mut teams: Vec<(String, Team)> = Vec::new();
        for team in config.teams {
            let name = team.name().to_string();
            if teams.iter().any(|(n, _)| *n == name) || name == runs::BUILTIN {
                return Err(ServeError::TeamTwice { name });
            }
            teams.push((name, team));
        }
        if let Ok(builtin) = Team::builtin() {
            teams.push((runs::BUILTIN.to_string(), builtin));
        }
        let shown = httpd::shown(&config.host, config.port);
        let (listener, addr) =
            httpd::bind(&config.host, config.port).map_err(|source| ServeError::Bind {
                addr: shown,
                source,
            })?;
        let chats_dir = config
            .chats_dir
            .unwrap_or_else(|| config.runs_dir.with_file_name("chats"));
        let chats = Arc::new(chats::Chats::new(chats_dir, config.max_chats));
        let runs = Arc::new(runs::Runs::new(
            config.runs_dir,
            config.max_runs,
            teams,
            config.model,
            config.memory,
        ));
        let access = Arc::new(api::Access {
            hosts: httpd::loopback_hosts(addr),
            token: config.token.trim().to_string(),
            max_body: config.max_body,
        });
        let limits = httpd::Limits {
            workers: WORKERS,
            queued: QUEUED,
            name: "boardroom-serve",
        };
        let for_requests = Arc::clone(&runs);
        let chats_for_requests = Arc::clone(&chats);
        let handler: httpd::Handler = Arc::new(move |request, stop| {
            api::handle(request, &for_requests, &chats_for_requests, &access, stop);
        });
        let http = httpd::Server::start(listener, limits, api::busy, handler)
            .map_err(ServeError::Thread)?;
        Ok(Server {
            addr,
            http: Some(http),
            runs,
            chats,
        })
    }

    /// The address it listens on.
    #[must_use]
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://host:port/`.
    #[must_use]
    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// The runs directory.
    #[must_use]
    pub fn runs_dir(&self) -> &Path {
        self.runs.dir()
    }

    /// The names a request may give as `team`, the default first.
    #[must_use]
    pub fn teams(&self) -> Vec<String> {
        self.runs
            .team_names()
            .into_iter()
            .map(str::to_string)
            .collect()
    }

    /// Blocks while the server serves (until the process ends).
    pub fn wait(mut self) {
        if let Some(http) = self.http.take() {
            http.wait();
        }
    }

    /// Stops serving, stops the live runs (saved, resumable) and joins
    /// every thread. Dropping the server does the same.
    pub fn stop(self) {
        drop(self);
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // Streams end within a moment of the flag; then the runs.
        drop(self.http.take());
        self.chats.stop();
        self.runs.stop();
    }
}

/// A fresh access token: 64 hex digits from the system's random source.
#[must_use]
pub fn generate_token() -> String {
    format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

/// Writes `token` to `path`, readable and writable by its owner only
/// (0600 on Unix), creating the parent directory.
///
/// # Errors
///
/// What the file system said.
pub fn write_token_file(path: &Path, token: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
        options.mode(0o600);
        // A file that was already there keeps its mode on open: narrow it
        // first, before the token is written.
        if path.exists() {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
        }
    }
    let mut file = options.open(path)?;
    file.write_all(token.as_bytes())?;
    file.write_all(b"\n")?;
    file.sync_all()
}
