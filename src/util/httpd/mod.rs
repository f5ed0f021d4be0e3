//! The small synchronous HTTP/1.1 server `view` and `serve` stand on: one
//! named thread gathers connections and reads their request heads
//! without blocking, a fixed pool of named workers answers the requests
//! whose heads arrived (one response per connection, or a stream that
//! holds its worker), and [`Server`]'s drop stops and joins them all.
//!
//! What a server answers is its own handler's business; what they share
//! is here: binding, the bounds on slow clients (see `conn.rs`), the
//! `Host` check against DNS rebinding on loopback, and a comparison of
//! tokens that takes the same time wherever they differ.

mod conn;

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

pub(crate) use conn::{BodyError, IO_TIMEOUT, Request, Response};

/// What a request is answered with: the request and the server's stop
/// flag (a stream ends within a moment of it).
pub(crate) type Handler = Arc<dyn Fn(Request, &AtomicBool) + Send + Sync>;

/// How many workers and queued requests, and how the threads are named.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// Worker threads: each serves one request at a time (a stream holds
    /// its worker while it lasts).
    pub(crate) workers: usize,
    /// Requests whose heads arrived, queued for a worker; past it a
    /// request gets the busy response.
    pub(crate) queued: usize,
    /// The threads' names: `NAME-accept`, `NAME-0`, `NAME-1`, ...
    pub(crate) name: &'static str,
}

/// A running server; dropping it stops serving and joins every thread.
pub(crate) struct Server {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    /// The gathering thread first, then the workers.
    threads: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("addr", &self.addr)
            .field("threads", &self.threads.len())
            .finish_non_exhaustive()
    }
}

/// `host:port` as a user would write it (`[::1]:80` for IPv6).
pub(crate) fn shown(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// Binds `host:port` (port 0: a free one).
///
/// # Errors
///
/// What the system said.
pub(crate) fn bind(host: &str, port: u16) -> std::io::Result<(TcpListener, SocketAddr)> {
    let listener = TcpListener::bind((host, port))?;
    let addr = listener.local_addr()?;
    Ok((listener, addr))
}

/// On loopback, the `Host` values that name this server (not a DNS name a
/// web page rebound to 127.0.0.1); `None` off loopback.
pub(crate) fn loopback_hosts(addr: SocketAddr) -> Option<Arc<[String]>> {
    addr.ip().is_loopback().then(|| {
        let port = addr.port();
        vec![
            addr.to_string(),
            format!("127.0.0.1:{port}"),
            format!("localhost:{port}"),
            format!("[::1]:{port}"),
        ]
        .into()
    })
}

/// Whether the request's `Host` is one of `hosts` (always, when `None`).
pub(crate) fn host_allowed(request: &Request, hosts: Option<&[String]>) -> bool {
    let Some(hosts) = hosts else {
        return true;
    };
    let host = request.header("Host").map(str::to_ascii_lowercase);
    host.is_some_and(|h| hosts.contains(&h))
}

/// Equal, in a time independent of where they differ.
pub(crate) fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// The head of a server-sent event stream (the connection closes when it
/// ends), and the client's reconnect delay.
pub(crate) const SSE_HEAD: &str = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\
    Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n\
    retry: 1000\n\n";

/// Writes `text` and flushes it; `false` when the client is gone.
pub(crate) fn send(w: &mut impl std::io::Write, text: &str) -> bool {
    w.write_all(text.as_bytes())
        .and_then(|()| w.flush())
        .is_ok()
}

/// Whether `name` is a plain file name (letters, digits, `-`, `_`, `.`;
/// not empty, not starting with a dot): one that joined onto a directory
/// stays in it.
pub(crate) fn plain_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// The bearer token of an `Authorization` header.
pub(crate) fn bearer(request: &Request) -> Option<&str> {
    let value = request.header("Authorization")?.trim();
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then_some(token.trim())
}

impl Server {
    /// Serves `listener` (already bound) with `handler`; `busy` answers a
    /// request that finds every worker busy and the queue full.
    ///
    /// # Errors
    ///
    /// A thread that cannot be spawned (what started is stopped and
    /// joined).
    pub(crate) fn start(
        listener: TcpListener,
        limits: Limits,
        busy: fn() -> Response,
        handler: Handler,
    ) -> std::io::Result<Server> {
        let addr = listener.local_addr()?;
        listener.set_nonblocking(true)?;
        let stop = Arc::new(AtomicBool::new(false));
        let (jobs, queue) = crossbeam_channel::bounded::<Request>(limits.queued);
        let mut server = Server {
            addr,
            stop: Arc::clone(&stop),
            threads: Vec::with_capacity(limits.workers + 1),
        };
        let halt = Arc::clone(&stop);
        let gatherer = std::thread::Builder::new()
            .name(format!("{}-accept", limits.name))
            .spawn(move || conn::gather(&listener, &jobs, &halt, busy))?;
        server.threads.push(gatherer);
        for i in 0..limits.workers {
            let (queue, halt, handler) = (queue.clone(), Arc::clone(&stop), Arc::clone(&handler));
            let worker = std::thread::Builder::new()
                .name(format!("{}-{i}", limits.name))
                .spawn(move || {
                    for request in &queue {
                        handler(request, &halt);
                    }
                })?;
            // Dropping the partial server (on `?` above) stops and joins
            // what started.
            server.threads.push(worker);
        }
        Ok(server)
    }

    /// Blocks while the server serves (until the process ends).
    pub(crate) fn wait(mut self) {
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // The gathering thread sees the flag within a moment and drops
        // the queue; the workers end once it is empty.
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}
