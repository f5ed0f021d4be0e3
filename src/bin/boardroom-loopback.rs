//! A fast loopback server for benchmarks, and a raw client to compare with.
//!
//! `boardroom-loopback serve [--port P] [--latency 100ms] [--max-concurrent K]`
//! answers `POST /v1/chat/completions` (streaming or not) after the given
//! latency, playing boardroom's protocol where it recognises it (the
//! master's plan gets one `ASSIGN` line per roster member, the review says
//! `DONE`) and a short fixed answer to everything else. Above K requests
//! at once it answers 429. With `--refuse-once SECS` it answers 429 with
//! `Retry-After: SECS` to the first request of each distinct body (each
//! agent's call refused once: a rate limit's wave, as issue 28 ran it;
//! its retry, the same body, is answered). It prints its base URL on the first line of
//! stdout. `GET /stats` reports requests, refusals, the peak in flight and
//! the server's own CPU time (user + system, from `/proc/self/stat`);
//! `POST /stats/reset` zeroes the counters (not the CPU time: diff it).
//!
//! One thread of 128 KiB stack per connection (keep-alive), which sleeps
//! out the latency: nothing else is spent on a waiting answer. The listen
//! backlog is raised above std's 128, so a burst of 1024 connections is
//! accepted at once.
//!
//! `boardroom-loopback raw --url URL --threads N [--requests M] [--stream]
//! [--body-bytes B]` sends M requests (default N) from N plain threads,
//! each a `ureq` POST with no agent logic (one agent, its pool kept alive
//! across requests), and prints one JSON line: wall, requests/s, peak RSS.
//! `--stream` and `--body-bytes` make its requests the shape of
//! boardroom's (a streamed answer read whole, a body of about B bytes:
//! `/stats` reports boardroom's average), so the two compare fairly.
//!
//! `GET /stats` also counts connections accepted, streamed requests and
//! request body bytes.
//!
//! Built only with `--features loopback` (a development tool).

use std::io::{BufRead, BufReader, Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let code = match args.first().map(String::as_str) {
        Some("serve") => serve(&args[1..]),
        Some("raw") => raw(&args[1..]),
        _ => Err(
            "usage: boardroom-loopback serve [--port P] [--latency DUR] [--max-concurrent K] \
             [--refuse-once SECS] | raw --url URL --threads N [--requests M] [--stream] [--body-bytes B]"
                .to_string(),
        ),
    };
    if let Err(e) = code {
        eprintln!("boardroom-loopback: {e}");
        std::process::exit(2);
    }
}

/// The value after `--name`, if given.
fn flag<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(String::as_str)
}

fn parse<T: std::str::FromStr>(args: &[String], name: &str, default: T) -> Result<T, String> {
    match flag(args, name) {
        None => Ok(default),
        Some(v) => v
            .parse()
            .map_err(|_| format!("{name}: '{v}' is not a valid value")),
    }
}

fn duration(args: &[String], name: &str) -> Result<Duration, String> {
    let Some(v) = flag(args, name) else {
        return Ok(Duration::ZERO);
    };
    let bad = || format!("{name}: '{v}' is not a duration (100ms, 0.2s, 0)");
    let (n, scale) = if let Some(n) = v.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = v.strip_suffix('s') {
        (n, 1.0)
    } else {
        (v, 1e-3)
    };
    let x: f64 = n.parse().map_err(|_| bad())?;
    if !(0.0..=600.0).contains(&(x * scale)) {
        return Err(bad());
    }
    Ok(Duration::from_secs_f64(x * scale))
}

#[derive(Default)]
struct Stats {
    requests: AtomicU64,
    /// Bytes of request bodies (chat completions only).
    request_bytes: AtomicU64,
    /// Requests that asked for a stream.
    streamed: AtomicU64,
    /// Connections accepted.
    connections: AtomicU64,
    rejected: AtomicU64,
    now: AtomicUsize,
    peak: AtomicUsize,
}

struct Reply {
    status: u16,
    /// `Retry-After` seconds, if any.
    retry_after: Option<u64>,
    content_type: &'static str,
    body: Vec<u8>,
}

struct Settings {
    latency: Duration,
    cap: usize,
    /// `Retry-After` for the first request of each body, if set.
    refuse_once: Option<u64>,
    /// Hashes of the bodies seen (with `--refuse-once`).
    seen: std::sync::Mutex<std::collections::HashSet<u64>>,
    stats: Stats,
}

fn serve(args: &[String]) -> Result<(), String> {
    let port: u16 = parse(args, "--port", 0)?;
    let settings = Arc::new(Settings {
        latency: duration(args, "--latency")?,
        cap: parse(args, "--max-concurrent", usize::MAX)?,
        refuse_once: flag(args, "--refuse-once")
            .map(|v| {
                v.parse::<u64>()
                    .map_err(|_| format!("--refuse-once: '{v}' is not a number of seconds"))
            })
            .transpose()?,
        seen: std::sync::Mutex::default(),
        stats: Stats::default(),
    });
    let listener = std::net::TcpListener::bind(("127.0.0.1", port))
        .map_err(|e| format!("cannot listen on 127.0.0.1:{port}: {e}"))?;
    // std listens with a backlog of 128: a round of 1024 members connecting
    // at once would see most connections dropped and retried a second
    // later. Listening again on the same socket raises it.
    {
        use std::os::fd::AsRawFd;
        // SAFETY: a valid listening socket of ours; listen() only changes
        // its backlog.
        let rc = unsafe { libc::listen(listener.as_raw_fd(), 8192) };
        if rc != 0 {
            return Err(format!(
                "cannot raise the listen backlog: {}",
                std::io::Error::last_os_error()
            ));
        }
    }
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    println!("http://{addr}/v1");
    let _ = std::io::Write::flush(&mut std::io::stdout());
    // One small thread a connection: a waiting answer costs a sleeping
    // thread and nothing else.
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        settings.stats.connections.fetch_add(1, Ordering::SeqCst);
        let s = Arc::clone(&settings);
        let _ = std::thread::Builder::new()
            .stack_size(128 * 1024)
            .spawn(move || connection(stream, &s));
    }
    Ok(())
}

/// Requests on one keep-alive connection, one after another.
fn connection(stream: std::net::TcpStream, s: &Settings) {
    let _ = stream.set_nodelay(true);
    let Ok(mut out) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    loop {
        let Some((method, path, body)) = read_request(&mut reader) else {
            return;
        };
        let arrived = Instant::now();
        let reply = if path.starts_with("/stats") {
            if method == "POST" {
                for counter in [
                    &s.stats.requests,
                    &s.stats.rejected,
                    &s.stats.request_bytes,
                    &s.stats.streamed,
                    &s.stats.connections,
                ] {
                    counter.store(0, Ordering::SeqCst);
                }
                s.stats.peak.store(0, Ordering::SeqCst);
            }
            Reply {
                status: 200,
                retry_after: None,
                content_type: "application/json",
                body: stats_json(&s.stats).into_bytes(),
            }
        } else {
            s.stats.requests.fetch_add(1, Ordering::SeqCst);
            s.stats
                .request_bytes
                .fetch_add(body.len() as u64, Ordering::SeqCst);
            let n = s.stats.now.fetch_add(1, Ordering::SeqCst) + 1;
            let first = s.refuse_once.filter(|_| {
                use std::hash::{Hash, Hasher};
                let mut h = std::collections::hash_map::DefaultHasher::new();
                body.hash(&mut h);
                s.seen
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .insert(h.finish())
            });
            let reply = if let Some(secs) = first {
                s.stats.rejected.fetch_add(1, Ordering::SeqCst);
                Reply {
                    status: 429,
                    retry_after: Some(secs),
                    content_type: "application/json",
                    body: br#"{"error":{"message":"rate limited, come back later"}}"#.to_vec(),
                }
            } else if n > s.cap {
                s.stats.rejected.fetch_add(1, Ordering::SeqCst);
                Reply {
                    status: 429,
                    retry_after: None,
                    content_type: "application/json",
                    body: br#"{"error":{"message":"too many requests at once"}}"#.to_vec(),
                }
            } else {
                s.stats.peak.fetch_max(n, Ordering::SeqCst);
                let reply = answer(&body);
                if reply.content_type == "text/event-stream" {
                    s.stats.streamed.fetch_add(1, Ordering::SeqCst);
                }
                let left = s.latency.saturating_sub(arrived.elapsed());
                if !left.is_zero() {
                    std::thread::sleep(left);
                }
                reply
            };
            s.stats.now.fetch_sub(1, Ordering::SeqCst);
            reply
        };
        let retry_after = reply
            .retry_after
            .map(|secs| format!("Retry-After: {secs}\r\n"))
            .unwrap_or_default();
        let head = format!(
            "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n{retry_after}\r\n",
            reply.status,
            if reply.status == 200 {
                "OK"
            } else {
                "Too Many Requests"
            },
            reply.content_type,
            reply.body.len()
        );
        let mut all = head.into_bytes();
        all.extend_from_slice(&reply.body);
        if out.write_all(&all).is_err() {
            return;
        }
    }
}

/// Method, path and body of the next request; `None` at the end.
fn read_request(r: &mut BufReader<std::net::TcpStream>) -> Option<(String, String, Vec<u8>)> {
    let mut line = String::new();
    if r.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let path = parts.next()?.to_string();
    let mut length = 0usize;
    loop {
        let mut h = String::new();
        if r.read_line(&mut h).ok()? == 0 {
            return None;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':')
            && k.trim().eq_ignore_ascii_case("content-length")
        {
            length = v.trim().parse().ok()?;
        }
    }
    let mut body = vec![0; length];
    r.read_exact(&mut body).ok()?;
    Some((method, path, body))
}

fn stats_json(s: &Stats) -> String {
    serde_json::json!({
        "requests": s.requests.load(Ordering::SeqCst),
        "request_bytes": s.request_bytes.load(Ordering::SeqCst),
        "streamed": s.streamed.load(Ordering::SeqCst),
        "connections": s.connections.load(Ordering::SeqCst),
        "rejected": s.rejected.load(Ordering::SeqCst),
        "in_flight": s.now.load(Ordering::SeqCst),
        "peak_in_flight": s.peak.load(Ordering::SeqCst),
        "cpu_ms": cpu_ms(),
    })
    .to_string()
}

/// This process's CPU time (user + system), in milliseconds.
fn cpu_ms() -> u64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0;
    };
    // Fields after the command name (which may hold spaces) in parentheses.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the whole line: 11 and 12 here.
    let ticks: u64 = [11, 12]
        .iter()
        .filter_map(|&i| fields.get(i).and_then(|v| v.parse::<u64>().ok()))
        .sum();
    // USER_HZ is 100 on every Linux this runs on.
    ticks * 10
}

/// The text of every message, joined.
fn prompt(body: &serde_json::Value) -> String {
    body["messages"]
        .as_array()
        .map(|ms| {
            ms.iter()
                .filter_map(|m| m["content"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// The value of the first `"key":"..."` in a JSON body (no escapes in it),
/// found without parsing the body.
fn raw_str<'a>(body: &'a str, key: &str) -> Option<&'a str> {
    let at = body.find(&format!("\"{key}\""))? + key.len() + 2;
    let rest = body[at..].trim_start().strip_prefix(':')?.trim_start();
    let rest = rest.strip_prefix('"')?;
    let end = rest.find('"')?;
    let value = &rest[..end];
    (!value.contains('\\')).then_some(value)
}

/// The answer: boardroom's protocol where the prompt is one of its turns.
///
/// Only the master's plan is parsed as JSON (its roster is read); every
/// other turn is recognised by searching the body's bytes, and its answer
/// is made from a few fixed pieces: at a thousand requests a round the
/// server must stay cheap next to the client it measures (parsing every
/// member's body into a JSON tree was most of its CPU).
fn answer(body: &[u8]) -> Reply {
    let raw = std::str::from_utf8(body).unwrap_or("");
    let content = if raw.contains("Split this task") {
        let json: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
        let text = prompt(&json);
        let roster = text
            .split_once("<roster>")
            .and_then(|(_, r)| r.split_once("</roster>"))
            .map_or("", |(r, _)| r);
        let mut out = String::new();
        for line in roster.lines() {
            if let Some((name, _)) = line
                .trim()
                .strip_prefix("- ")
                .and_then(|l| l.split_once(':'))
            {
                out.push_str(&format!("ASSIGN:{name}:write your part\n"));
            }
        }
        out
    } else if raw.contains("is over. This is the board") {
        "DONE\nThe parts, merged.".to_string()
    } else if raw.contains("The work is over") {
        "The parts, merged.".to_string()
    } else {
        "A part, written.".to_string()
    };
    let model = raw_str(raw, "model").unwrap_or("loopback");
    let stream = raw
        .find("\"stream\"")
        .and_then(|at| raw[at + 8..].trim_start().strip_prefix(':'))
        .is_some_and(|v| v.trim_start().starts_with("true"));
    // Token counts are estimates (a quarter of the bytes), as the prompt's.
    let usage = format!(
        r#"{{"prompt_tokens":{},"completion_tokens":{},"total_tokens":{}}}"#,
        raw.len() / 4,
        content.len() / 4,
        (raw.len() + content.len()) / 4
    );
    let content = serde_json::Value::from(content).to_string();
    let model = serde_json::Value::from(model).to_string();
    if stream {
        let body = format!(
            "data: {{\"id\":\"lb\",\"object\":\"chat.completion.chunk\",\"model\":{model},\
             \"choices\":[{{\"index\":0,\"delta\":{{\"role\":\"assistant\",\"content\":{content}}},\
             \"finish_reason\":null}}]}}\n\n\
             data: {{\"id\":\"lb\",\"object\":\"chat.completion.chunk\",\"model\":{model},\
             \"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"stop\"}}],\"usage\":{usage}}}\n\n\
             data: [DONE]\n\n"
        );
        Reply {
            status: 200,
            retry_after: None,
            content_type: "text/event-stream",
            body: body.into_bytes(),
        }
    } else {
        let body = format!(
            "{{\"id\":\"lb\",\"object\":\"chat.completion\",\"model\":{model},\
             \"choices\":[{{\"index\":0,\"message\":{{\"role\":\"assistant\",\"content\":{content}}},\
             \"finish_reason\":\"stop\"}}],\"usage\":{usage}}}"
        );
        Reply {
            status: 200,
            retry_after: None,
            content_type: "application/json",
            body: body.into_bytes(),
        }
    }
}

/// N threads, each sending its share of M requests with plain ureq.
fn raw(args: &[String]) -> Result<(), String> {
    let url = flag(args, "--url").ok_or("--url is required")?;
    let threads: usize = parse(args, "--threads", 8)?;
    let requests: usize = parse(args, "--requests", threads)?;
    let stream = args.iter().any(|a| a == "--stream");
    let url = format!("{}/chat/completions", url.trim_end_matches('/'));
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .max_idle_connections(threads.max(10))
        .max_idle_connections_per_host(threads.max(3))
        .build()
        .into();
    // The same shape as boardroom's requests where asked: a streamed
    // answer, a body of about `--body-bytes` (a member's prompt).
    let body_bytes: usize = parse(args, "--body-bytes", 0)?;
    let body = |content: &str| {
        serde_json::json!({"model": "raw", "stream": stream,
            "messages": [{"role": "user", "content": content}]})
        .to_string()
    };
    let short = body("Write your part.");
    let body = if body_bytes > short.len() {
        body(&format!(
            "Write your part.{}",
            " ".repeat(body_bytes - short.len())
        ))
    } else {
        short
    };
    let next = AtomicUsize::new(0);
    let failed = AtomicUsize::new(0);
    let started = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| {
                while next.fetch_add(1, Ordering::Relaxed) < requests {
                    let ok = agent
                        .post(&url)
                        .header("Content-Type", "application/json")
                        .send(&body)
                        .ok()
                        .and_then(|mut r| r.body_mut().read_to_string().ok())
                        .is_some();
                    if !ok {
                        failed.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    let wall = started.elapsed().as_secs_f64();
    let rss = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        })
        .unwrap_or(0);
    println!(
        "{}",
        serde_json::json!({"threads": threads, "requests": requests, "body_bytes": body.len(),
            "stream": stream, "failed": failed.load(Ordering::Relaxed),
            "wall_ms": wall * 1e3, "requests_per_s": requests as f64 / wall, "peak_rss_kib": rss})
    );
    Ok(())
}
