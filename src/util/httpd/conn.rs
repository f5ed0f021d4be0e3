//! One connection of the HTTP/1.1 server: the thread that gathers
//! connections and reads their request heads without blocking, the
//! request a worker gets (head, body, the socket), and the response.
//!
//! Bounded whatever clients do: at most [`PENDING`] connections wait for
//! their heads (past it the oldest is closed), a head must arrive whole
//! within [`HEAD_TIMEOUT`] and in at most [`MAX_HEAD`] bytes, reads and
//! writes on a worker time out after [`IO_TIMEOUT`], and a request that
//! finds every worker busy and the queue full is answered `503` at once.
//! Idle or slow clients hold a slot in the list, never a thread.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crossbeam_channel::{Sender, TrySendError};

/// Connections waiting for their request heads.
const PENDING: usize = 256;
/// How long a connection has to send its whole request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest request head read.
const MAX_HEAD: usize = 16 * 1024;
/// A worker's read and write timeout on its connection.
pub(crate) const IO_TIMEOUT: Duration = Duration::from_secs(10);
/// Headers kept from one request.
const MAX_HEADERS: usize = 64;
/// How long the gathering thread sleeps when nothing happened.
const IDLE_SLEEP: Duration = Duration::from_millis(5);

/// A request whose head arrived, with its connection.
pub(crate) struct Request {
    method: String,
    url: String,
    headers: Vec<(String, String)>,
    /// Bytes read past the head: the start of the body.
    rest: Vec<u8>,
    stream: TcpStream,
}

/// Why a request's body could not be read.
#[derive(Debug)]
pub(crate) enum BodyError {
    /// `Content-Length` says more than the limit allows (or the body sent
    /// more).
    TooLarge {
        /// The limit, in bytes.
        limit: usize,
    },
    /// No `Content-Length` (a chunked body), or one that is not a number.
    NoLength,
    /// The connection failed or timed out before the body arrived.
    Io(std::io::Error),
}

/// A response: status, headers, body (sent with `Content-Length` and
/// `Connection: close`).
pub(crate) struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Response {
    pub(crate) fn new(status: u16, body: Vec<u8>) -> Self {
        Response {
            status,
            headers: Vec::new(),
            body,
        }
    }

    /// Adds a header; control characters in the value are dropped.
    pub(crate) fn with_header(mut self, name: &str, value: &str) -> Self {
        let value: String = value.chars().filter(|c| !c.is_control()).collect();
        self.headers.push((name.to_string(), value));
        self
    }
}

impl Request {
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// The method, as sent.
    pub(crate) fn method(&self) -> &str {
        &self.method
    }

    /// The URL without its query and fragment.
    pub(crate) fn path(&self) -> &str {
        self.url.split(['?', '#']).next().unwrap_or("")
    }

    /// Reads the body `Content-Length` announces, at most `limit` bytes
    /// (a request with none has an empty body unless it says it is
    /// chunked).
    pub(crate) fn read_body(&mut self, limit: usize) -> Result<Vec<u8>, BodyError> {
        let length = match self.header("Content-Length") {
            Some(v) => v.trim().parse::<usize>().map_err(|_| BodyError::NoLength)?,
            None if self.header("Transfer-Encoding").is_some() => {
                return Err(BodyError::NoLength);
            }
            None => 0,
        };
        if length > limit || self.rest.len() > limit {
            return Err(BodyError::TooLarge { limit });
        }
        let mut body = std::mem::take(&mut self.rest);
        body.truncate(length);
        if body.len() < length {
            let mut more = vec![0u8; length - body.len()];
            self.stream.read_exact(&mut more).map_err(BodyError::Io)?;
            body.extend_from_slice(&more);
        }
        Ok(body)
    }

    /// The connection itself, for a protocol that takes it over (a
    /// WebSocket after its upgrade).
    pub(crate) fn into_stream(self) -> TcpStream {
        self.stream
    }

    /// Whether the method is GET or HEAD.
    pub(crate) fn is_get(&self) -> bool {
        matches!(self.method.as_str(), "GET" | "HEAD")
    }

    /// The value of a header (name compared without case).
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Sends `response` (no body to a HEAD) and closes the connection.
    pub(crate) fn respond(mut self, response: Response) -> std::io::Result<()> {
        let mut head = format!(
            "HTTP/1.1 {} {}\r\n",
            response.status,
            reason(response.status)
        );
        for (name, value) in &response.headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str(&format!(
            "Content-Length: {}\r\nConnection: close\r\n\r\n",
            response.body.len()
        ));
        self.stream.write_all(head.as_bytes())?;
        if self.method != "HEAD" {
            self.stream.write_all(&response.body)?;
        }
        self.stream.flush()
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        101 => "Switching Protocols",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        303 => "See Other",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        405 => "Method Not Allowed",
        409 => "Conflict",
        411 => "Length Required",
        413 => "Content Too Large",
        415 => "Unsupported Media Type",
        421 => "Misdirected Request",
        426 => "Upgrade Required",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        503 => "Service Unavailable",
        _ => "",
    }
}

/// A connection waiting for its request head.
struct Pending {
    stream: TcpStream,
    head: Vec<u8>,
    since: Instant,
}

/// What reading a pending connection came to.
enum Step {
    Wait,
    Ready(Request),
    Close,
}

/// Accepts connections on `listener` (non-blocking) and reads their heads
/// until `stop`; each complete request goes to `jobs`, or is answered with
/// `overloaded()` when the queue is full. Dropping `jobs` on return ends the
/// workers.
pub(crate) fn gather(
    listener: &TcpListener,
    jobs: &Sender<Request>,
    stop: &AtomicBool,
    overloaded: fn() -> Response,
) {
    let mut pending: Vec<Pending> = Vec::new();
    let mut buf = vec![0u8; 4096];
    while !stop.load(Ordering::Relaxed) {
        let mut busy = false;
        loop {
            match listener.accept() {
                Ok((stream, _)) => {
                    busy = true;
                    if stream.set_nonblocking(true).is_err() {
                        continue;
                    }
                    if pending.len() >= PENDING {
                        // The oldest has waited longest without a request.
                        pending.remove(0);
                    }
                    pending.push(Pending {
                        stream,
                        head: Vec::new(),
                        since: Instant::now(),
                    });
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => {
                    // Out of descriptors, say: wait instead of spinning.
                    log::debug!("http: accepting: {e}");
                    std::thread::sleep(IDLE_SLEEP * 10);
                    break;
                }
            }
        }
        let mut i = 0;
        while i < pending.len() {
            match read_some(&mut pending[i], &mut buf) {
                Step::Wait => i += 1,
                Step::Close => {
                    pending.swap_remove(i);
                }
                Step::Ready(request) => {
                    busy = true;
                    pending.swap_remove(i);
                    match jobs.try_send(request) {
                        Ok(()) => {}
                        Err(TrySendError::Full(request)) => {
                            let _ = request.respond(overloaded());
                        }
                        Err(TrySendError::Disconnected(_)) => return,
                    }
                }
            }
        }
        if !busy {
            std::thread::sleep(IDLE_SLEEP);
        }
    }
}

/// Reads what a pending connection has sent; a complete head becomes a
/// request (its connection blocking again, with timeouts).
fn read_some(p: &mut Pending, buf: &mut [u8]) -> Step {
    if p.since.elapsed() > HEAD_TIMEOUT {
        return Step::Close;
    }
    loop {
        match p.stream.read(buf) {
            Ok(0) => return Step::Close,
            Ok(n) => p.head.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Step::Wait,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return Step::Close,
        }
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut parsed = httparse::Request::new(&mut headers);
        let status = parsed.parse(&p.head);
        let head_len = match status {
            Ok(httparse::Status::Complete(n)) => Some(n),
            _ => None,
        };
        let complete = head_len.is_some();
        if !complete && status.is_ok() && p.head.len() <= MAX_HEAD {
            continue;
        }
        let Ok(stream) = p.stream.try_clone() else {
            return Step::Close;
        };
        let ready = stream.set_nonblocking(false).is_ok()
            && stream.set_read_timeout(Some(IO_TIMEOUT)).is_ok()
            && stream.set_write_timeout(Some(IO_TIMEOUT)).is_ok();
        if !ready {
            return Step::Close;
        }
        let mut request = Request {
            method: parsed.method.unwrap_or("GET").to_string(),
            url: parsed.path.unwrap_or("/").to_string(),
            headers: Vec::new(),
            rest: head_len.map_or_else(Vec::new, |n| p.head[n..].to_vec()),
            stream,
        };
        if !complete {
            let (code, text) = if p.head.len() > MAX_HEAD {
                (431, "the request head is too large")
            } else {
                (400, "not an HTTP request")
            };
            let _ = request.respond(Response::new(code, text.as_bytes().to_vec()));
            return Step::Close;
        }
        request.headers = parsed
            .headers
            .iter()
            .map(|h| {
                let value = String::from_utf8_lossy(h.value).into_owned();
                (h.name.to_string(), value)
            })
            .collect();
        return Step::Ready(request);
    }
}
