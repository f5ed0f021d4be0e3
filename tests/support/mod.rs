//! A loopback HTTP server for provider tests: std's `TcpListener` on
//! 127.0.0.1, one thread per connection (keep-alive honoured), a handler
//! that scripts each answer (status, headers, body, delay, SSE chunks, or a
//! dropped connection), and counters of requests and of requests in
//! progress at once. Every thread is joined when the server drops.
//!
//! It injects faults too (issue 8): hang after accept, hang mid-stream, a
//! stream cut inside an event or cleanly, an endless stream, a huge
//! streamed answer, a huge single SSE line, an HTML 200, and any status
//! with any headers (a 401 that echoes the key, a 429 with a huge
//! `Retry-After`). A hang lasts until the client goes or the server drops.

#![allow(dead_code)] // each test file uses a different part

pub mod chat;
pub mod cli;
pub mod events;
pub mod handoff;
pub mod hold;
pub mod models;
pub mod team_server;
pub mod teams;
pub mod threads;
pub mod tmux;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::Mutex;

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub struct Request {
    /// 0-based arrival order.
    pub index: usize,
    pub path: String,
    /// Header names lowercased.
    pub headers: Vec<(String, String)>,
    pub body: serde_json::Value,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The text of every message, joined.
    pub fn all_text(&self) -> String {
        self.body["messages"]
            .as_array()
            .map(|m| {
                m.iter()
                    .filter_map(|m| m["content"].as_str())
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_default()
    }

    pub fn streaming(&self) -> bool {
        self.body["stream"] == true
    }
}

/// How to answer one request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A status, extra headers and a body (JSON or text).
    Plain {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// `200 text/event-stream`: each piece written and flushed on its own
    /// (pieces may split lines, events or UTF-8 characters).
    Sse(Vec<String>),
    /// As `Sse`, with pieces as raw bytes (cut inside a UTF-8 character).
    SseBytes(Vec<Vec<u8>>),
    /// As `Sse`, but kept alive as real servers stream: each piece one
    /// chunk of a chunked body, then the last chunk; the connection stays
    /// open for the next request.
    SseChunked(Vec<String>),
    /// Wait, then answer.
    Delayed(Duration, Box<Reply>),
    /// Close the connection without answering.
    Drop,
    /// Read the request and never answer (until the server drops).
    Hang,
    /// Stream these pieces, then hang with the connection open.
    SseThenHang(Vec<String>),
    /// Stream text chunks without end (until the client goes).
    EndlessSse,
    /// A streamed answer of `bytes` bytes of text in 64 KiB chunks, then
    /// `[DONE]`.
    HugeSse { bytes: usize },
    /// One SSE `data:` line of `bytes` bytes of text, then `[DONE]`.
    HugeLine { bytes: usize },
}

impl Reply {
    pub fn status(status: u16, body: &str) -> Reply {
        Reply::Plain {
            status,
            headers: Vec::new(),
            body: body.to_string(),
        }
    }

    pub fn with_header(self, name: &str, value: &str) -> Reply {
        match self {
            Reply::Plain {
                status,
                mut headers,
                body,
            } => {
                headers.push((name.to_string(), value.to_string()));
                Reply::Plain {
                    status,
                    headers,
                    body,
                }
            }
            other => other,
        }
    }

    /// A whole (non-streamed) chat completion.
    pub fn completion(text: &str) -> Reply {
        Reply::status(
            200,
            &serde_json::json!({
                "id": "x", "object": "chat.completion",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                             "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
            })
            .to_string(),
        )
    }

    /// A streamed chat completion: one chunk per piece of `text`, then a
    /// usage chunk and `[DONE]`.
    pub fn stream(pieces: &[&str]) -> Reply {
        let mut out = Vec::new();
        for p in pieces {
            out.push(format!(
                "data: {}\n\n",
                serde_json::json!({"choices": [{"index": 0, "delta": {"content": p}, "finish_reason": null}]})
            ));
        }
        out.push(format!(
            "data: {}\n\n",
            serde_json::json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        ));
        out.push(format!(
            "data: {}\n\n",
            serde_json::json!({"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
        ));
        out.push("data: [DONE]\n\n".into());
        Reply::Sse(out)
    }

    /// `200 text/html`: what a web server answers at a wrong base URL.
    pub fn html() -> Reply {
        Reply::status(
            200,
            "<!DOCTYPE html>\n<html><head><title>Welcome</title></head><body>It works!</body></html>",
        )
        .with_header("Content-Type", "text/html; charset=utf-8")
    }

    /// A stream cut inside the first event, before any text.
    pub fn cut_inside_event() -> Reply {
        Reply::Sse(vec![
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"con".into(),
        ])
    }

    /// A stream that ends cleanly between events, without `[DONE]`.
    pub fn cut_cleanly(pieces: &[&str]) -> Reply {
        let Reply::Sse(mut all) = Reply::stream(pieces) else {
            unreachable!()
        };
        all.truncate(pieces.len());
        Reply::Sse(all)
    }

    /// The line protocol played in one round: the plan assigns `member`,
    /// members draft, challengers agree, the master's review says DONE with
    /// `answer` (a plan must assign: nobody has drafted yet).
    pub fn one_round(req: &Request, member: &str, answer: &str) -> Reply {
        let text = req.all_text();
        let reply = if text.contains("Split this task") {
            format!("ASSIGN:{member}:do your part")
        } else if text.contains("Round 1 of") || text.contains("The work is over") {
            format!("DONE\n{answer}")
        } else if text.contains("Reply CHALLENGE:<...> or AGREE") {
            "AGREE".into()
        } else if text.contains("worth remembering") {
            "- nothing".into()
        } else {
            "A draft.".into()
        };
        Reply::answer(req, &reply)
    }

    /// As [`Reply::stream`], kept alive (a chunked body).
    pub fn stream_kept_alive(pieces: &[&str]) -> Reply {
        match Reply::stream(pieces) {
            Reply::Sse(p) => Reply::SseChunked(p),
            _ => unreachable!("stream() is Sse"),
        }
    }

    /// A completion in whichever form the request asked for.
    pub fn answer(req: &Request, text: &str) -> Reply {
        if req.streaming() {
            Reply::stream(&[text])
        } else {
            Reply::completion(text)
        }
    }
}

/// The tool results a request sent back, in order.
pub fn tool_results(req: &boardroom::ChatRequest) -> Vec<&str> {
    req.messages
        .iter()
        .filter(|m| m.role == boardroom::Role::Tool)
        .map(|m| m.content.as_str())
        .collect()
}

/// The first entry read from `runs`: the run's folder where one run is all
/// that is saved there.
pub fn only_run_dir(runs: &std::path::Path) -> std::path::PathBuf {
    std::fs::read_dir(runs)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
}

/// A loopback port nobody listens on (bound, then closed again).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

type Handler = dyn Fn(&Request) -> Reply + Send + Sync;

struct Shared {
    handler: Box<Handler>,
    stop: AtomicBool,
    requests: AtomicUsize,
    connections: AtomicUsize,
    now: AtomicUsize,
    peak: AtomicUsize,
    seen: Mutex<Vec<Request>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

/// A running server; stops and joins its threads on drop.
pub struct Server {
    pub port: u16,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

impl Server {
    pub fn start(handler: impl Fn(&Request) -> Reply + Send + Sync + 'static) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let port = listener.local_addr().expect("local addr").port();
        let shared = Arc::new(Shared {
            handler: Box::new(handler),
            stop: AtomicBool::new(false),
            requests: AtomicUsize::new(0),
            connections: AtomicUsize::new(0),
            now: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            seen: Mutex::new(Vec::new()),
            threads: Mutex::new(Vec::new()),
        });
        let s = Arc::clone(&shared);
        let accept = std::thread::Builder::new()
            .name("test-server".into())
            .spawn(move || {
                for stream in listener.incoming() {
                    if s.stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    s.connections.fetch_add(1, Ordering::SeqCst);
                    let s2 = Arc::clone(&s);
                    let t = std::thread::spawn(move || serve(stream, &s2));
                    s.threads.lock().push(t);
                }
            })
            .expect("spawn the accept thread");
        Server {
            port,
            shared,
            accept: Some(accept),
        }
    }

    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// Requests answered (or dropped) so far.
    pub fn requests(&self) -> usize {
        self.shared.requests.load(Ordering::SeqCst)
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.shared.connections.load(Ordering::SeqCst)
    }

    /// The most requests in progress at once.
    pub fn peak_in_flight(&self) -> usize {
        self.shared.peak.load(Ordering::SeqCst)
    }

    /// Every request seen, in arrival order.
    pub fn seen(&self) -> Vec<Request> {
        self.shared.seen.lock().clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(a) = self.accept.take() {
            let _ = a.join();
        }
        let threads: Vec<_> = self.shared.threads.lock().drain(..).collect();
        for t in threads {
            let _ = t.join();
        }
    }
}

fn serve(stream: TcpStream, s: &Shared) {
    // Short read timeouts so an idle keep-alive connection notices the stop.
    let _ = stream.set_read_timeout(Some(Duration::from_millis(100)));
    let Ok(write_half) = stream.try_clone() else {
        return;
    };
    let mut out = write_half;
    let mut reader = BufReader::new(stream);
    loop {
        let Some((path, headers, body)) = read_request(&mut reader, s) else {
            return;
        };
        let index = s.requests.fetch_add(1, Ordering::SeqCst);
        let req = Request {
            index,
            path,
            headers,
            body: serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null),
        };
        s.seen.lock().push(req.clone());
        let n = s.now.fetch_add(1, Ordering::SeqCst) + 1;
        s.peak.fetch_max(n, Ordering::SeqCst);
        let reply = (s.handler)(&req);
        // Counted as in progress from arrival until the answer starts: the
        // client holds its slot over a longer span than that, so this never
        // overcounts the client's concurrency.
        let keep = write_reply(&mut out, reply, Some(&s.now), &s.stop);
        if !keep {
            let _ = out.shutdown(Shutdown::Both);
            return;
        }
    }
}

/// Path, headers and body of a request as read.
type RawRequest = (String, Vec<(String, String)>, Vec<u8>);

/// Reads one request; `None` at the end of the connection or on stop.
fn read_request(reader: &mut BufReader<TcpStream>, s: &Shared) -> Option<RawRequest> {
    let mut line = String::new();
    loop {
        match reader.read_line(&mut line) {
            Ok(0) => return None,
            Ok(_) => break,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                if s.stop.load(Ordering::SeqCst) {
                    return None;
                }
            }
            Err(_) => return None,
        }
    }
    let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if !read_line_patiently(reader, &mut h) {
            return None;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((n, v)) = h.split_once(':') {
            headers.push((n.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    let len: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; len];
    let mut got = 0;
    while got < len {
        match reader.read(&mut body[got..]) {
            Ok(0) => return None,
            Ok(n) => got += n,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return None,
        }
    }
    Some((path, headers, body))
}

fn read_line_patiently(reader: &mut BufReader<TcpStream>, buf: &mut String) -> bool {
    loop {
        match reader.read_line(buf) {
            Ok(0) => return false,
            Ok(_) => return true,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return false,
        }
    }
}

/// Writes a reply; returns whether the connection stays open.
fn write_reply(
    out: &mut TcpStream,
    reply: Reply,
    now: Option<&AtomicUsize>,
    stop: &AtomicBool,
) -> bool {
    if let Reply::Delayed(d, inner) = reply {
        std::thread::sleep(d);
        return write_reply(out, *inner, now, stop);
    }
    if let Some(now) = now {
        now.fetch_sub(1, Ordering::SeqCst);
    }
    match reply {
        Reply::Delayed(..) => unreachable!("handled above"),
        Reply::Drop => false,
        Reply::Hang => {
            hang(out, stop);
            false
        }
        Reply::Plain {
            status,
            headers,
            body,
        } => {
            let mut head = format!(
                "HTTP/1.1 {status} {}\r\nContent-Length: {}\r\n",
                reason(status),
                body.len()
            );
            if !headers
                .iter()
                .any(|(n, _)| n.eq_ignore_ascii_case("content-type"))
            {
                head.push_str("Content-Type: application/json\r\n");
            }
            for (n, v) in headers {
                head.push_str(&format!("{n}: {v}\r\n"));
            }
            head.push_str("\r\n");
            out.write_all(head.as_bytes()).is_ok()
                && out.write_all(body.as_bytes()).is_ok()
                && out.flush().is_ok()
        }
        Reply::Sse(pieces) => write_reply(
            out,
            Reply::SseBytes(pieces.into_iter().map(String::into_bytes).collect()),
            None,
            stop,
        ),
        Reply::SseBytes(pieces) => {
            if !sse_head(out) {
                return false;
            }
            for p in pieces {
                if out.write_all(&p).is_err() || out.flush().is_err() {
                    return false;
                }
                // Let the client see each piece as its own read.
                std::thread::sleep(Duration::from_millis(2));
            }
            false
        }
        Reply::SseChunked(pieces) => {
            let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";
            let mut all = head.to_string();
            for p in pieces {
                all.push_str(&format!("{:x}\r\n{p}\r\n", p.len()));
            }
            all.push_str("0\r\n\r\n");
            out.write_all(all.as_bytes()).is_ok() && out.flush().is_ok()
        }
        Reply::SseThenHang(pieces) => {
            if !sse_head(out) {
                return false;
            }
            for p in pieces {
                if out.write_all(p.as_bytes()).is_err() || out.flush().is_err() {
                    return false;
                }
            }
            hang(out, stop);
            false
        }
        Reply::EndlessSse => {
            if !sse_head(out) {
                return false;
            }
            let chunk = text_event("more ");
            while !stop.load(Ordering::SeqCst) {
                if out.write_all(chunk.as_bytes()).is_err() || out.flush().is_err() {
                    return false;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            false
        }
        Reply::HugeSse { bytes } => {
            if !sse_head(out) {
                return false;
            }
            let chunk = text_event(&"x".repeat(64 * 1024));
            let mut sent = 0;
            while sent < bytes {
                if stop.load(Ordering::SeqCst) || out.write_all(chunk.as_bytes()).is_err() {
                    return false;
                }
                sent += 64 * 1024;
            }
            let _ = out.write_all(b"data: [DONE]\n\n");
            let _ = out.flush();
            false
        }
        Reply::HugeLine { bytes } => {
            if !sse_head(out) {
                return false;
            }
            let head = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"";
            if out.write_all(head.as_bytes()).is_err() {
                return false;
            }
            let piece = vec![b'y'; 64 * 1024];
            let mut sent = 0;
            while sent < bytes {
                if stop.load(Ordering::SeqCst) || out.write_all(&piece).is_err() {
                    return false;
                }
                sent += piece.len();
            }
            let _ = out.write_all(b"\"}}]}\n\ndata: [DONE]\n\n");
            let _ = out.flush();
            false
        }
    }
}

/// The head of a `text/event-stream` answer.
fn sse_head(out: &mut TcpStream) -> bool {
    let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n";
    out.write_all(head.as_bytes()).is_ok() && out.flush().is_ok()
}

/// One streamed chunk carrying `text`.
fn text_event(text: &str) -> String {
    format!(
        "data: {}\n\n",
        serde_json::json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]})
    )
}

/// Keeps the connection open, answering nothing, until the client closes
/// it or the server stops.
fn hang(out: &mut TcpStream, stop: &AtomicBool) {
    let _ = out.set_read_timeout(Some(Duration::from_millis(20)));
    let mut buf = [0u8; 1024];
    while !stop.load(Ordering::SeqCst) {
        match out.read(&mut buf) {
            Ok(0) => return, // the client went
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return,
        }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}
