//! The view's routes: the run list, a run's page, its state and its
//! live event stream.

use std::io::{BufRead, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::util::httpd::{self, Request, Response, same};

use crate::event::RunStatus;
use crate::store::{RunListing, list_runs};

/// The page of a run: HTML, CSS and JS in one file, compiled in.
const PAGE: &str = include_str!("page.html");

/// How long one event stream stays open before the browser reconnects
/// (with `Last-Event-ID`, so nothing is sent twice or lost).
pub(super) const STREAM_FOR: Duration = Duration::from_secs(30);

/// How often an idle stream looks at the file again.
const POLL: Duration = Duration::from_millis(150);

/// Who may be served: the Host names on loopback, the access token.
#[derive(Debug)]
pub(super) struct Access {
    /// On loopback: the `Host` values that name this server.
    pub(super) hosts: Option<std::sync::Arc<[String]>>,
    /// The token every request must carry, when set.
    pub(super) token: Option<std::sync::Arc<str>>,
}

/// The cookie that carries the token after a `?token=` page visit.
const COOKIE: &str = "boardroom_view";

/// Whether the request carries the token in a header or the cookie.
fn has_token(request: &Request, token: &str) -> bool {
    let bearer = httpd::bearer(request).is_some_and(|t| same(t, token));
    let cookie = request.header("Cookie").is_some_and(|v| {
        v.split(';')
            .filter_map(|c| c.trim().split_once('='))
            .any(|(k, t)| k == COOKIE && same(t, token))
    });
    bearer || cookie
}

/// The `token` parameter of a URL's query.
fn query_token(url: &str) -> Option<&str> {
    let query = url.split_once('?')?.1.split('#').next()?;
    query.split('&').find_map(|kv| kv.strip_prefix("token="))
}

pub(super) fn handle(request: Request, runs_dir: &Path, stop: &AtomicBool, access: &Access) {
    if let Some(token) = access.token.as_deref()
        && !has_token(&request, token)
    {
        let url = request.url().to_string();
        let path = url.split(['?', '#']).next().unwrap_or("/").to_string();
        let result = if query_token(&url).is_some_and(|t| same(t, token)) {
            // A page opened with its token: keep the token in a cookie
            // for the page's own requests, not in the address bar.
            let location = if path.starts_with('/') && !path.starts_with("//") {
                path
            } else {
                "/".to_string()
            };
            request.respond(
                html(303, "<p>See <a href=\"/\">the runs</a>.</p>".into())
                    .with_header("Location", &location)
                    .with_header(
                        "Set-Cookie",
                        &format!("{COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict"),
                    ),
            )
        } else {
            request.respond(html(
                401,
                "<h1>401</h1><p>This view needs its access token: open the URL \
                     it printed (with <code>?token=</code>).</p>"
                    .into(),
            ))
        };
        if let Err(e) = result {
            log::debug!("view: {e}");
        }
        return;
    }
    if !httpd::host_allowed(&request, access.hosts.as_deref()) {
        let _ = request.respond(html(
            421,
            "<h1>421</h1><p>This server answers to its own address only.</p>".into(),
        ));
        return;
    }
    let url = request.url().to_string();
    let path = url.split(['?', '#']).next().unwrap_or("").to_string();
    let get = request.is_get();
    let parts: Vec<&str> = path.split('/').collect();
    let result = match parts.as_slice() {
        _ if !get => request.respond(html(
            405,
            "<h1>405</h1><p>Only GET is served here.</p>".into(),
        )),
        ["", ""] => request.respond(html(200, list_page(runs_dir))),
        ["", "runs", id] | ["", "runs", id, ""] => match find(runs_dir, id) {
            Some(_) => request.respond(page()),
            None => request.respond(not_found(Some(id))),
        },
        ["", "runs", id, "state.json"] => match find(runs_dir, id) {
            Some(dir) => request.respond(json(&state(&dir))),
            None => request.respond(not_found(Some(id))),
        },
        ["", "runs", id, "events"] => match find(runs_dir, id) {
            Some(dir) => {
                let last = request
                    .header("Last-Event-ID")
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(0);
                stream(request.into_writer(), &dir, last, stop);
                Ok(())
            }
            None => request.respond(not_found(Some(id))),
        },
        _ => request.respond(not_found(None)),
    };
    if let Err(e) = result {
        log::debug!("view: {path}: {e}");
    }
}

/// The run directory for an id that names one of the runs, else `None`.
/// Ids are compared with the listed directory names, never joined.
pub(super) fn find(runs_dir: &Path, id: &str) -> Option<PathBuf> {
    if !httpd::plain_name(id) {
        return None;
    }
    list_runs(runs_dir)
        .ok()?
        .into_iter()
        .find(|r| r.id == id)
        .map(|r| r.path)
}

fn with_common(r: Response, content_type: &str, csp: &str) -> Response {
    r.with_header("Content-Type", content_type)
        .with_header("Cache-Control", "no-store")
        .with_header("X-Content-Type-Options", "nosniff")
        .with_header("Referrer-Policy", "no-referrer")
        .with_header("Content-Security-Policy", csp)
}

/// Every worker is busy and the queue is full: come back in a moment.
pub(super) fn busy() -> Response {
    html(
        503,
        "<h1>503</h1><p>The view is busy; reload in a moment.</p>".into(),
    )
    .with_header("Retry-After", "1")
}

const CSP_STATIC: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data:";

fn html(code: u16, body: String) -> Response {
    let doc = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>boardroom</title>\
         <style>body{{font:15px system-ui,sans-serif;margin:2em;color:#222}}\
         table{{border-collapse:collapse}}td,th{{padding:.3em .8em;border-bottom:1px solid #ddd;text-align:left}}\
         a{{color:#0b5cad}}</style></head><body>{body}</body></html>"
    );
    with_common(
        Response::new(code, doc.into_bytes()),
        "text/html; charset=utf-8",
        CSP_STATIC,
    )
}

fn json(value: &serde_json::Value) -> Response {
    with_common(
        Response::new(200, value.to_string().into_bytes()),
        "application/json",
        "default-src 'none'",
    )
}

fn not_found(id: Option<&str>) -> Response {
    let what = match id {
        Some(id) => format!("No run '{}' here.", escape(id)),
        None => "No such page.".to_string(),
    };
    html(
        404,
        format!("<h1>404</h1><p>{what}</p><p><a href=\"/\">All runs</a></p>"),
    )
}

/// The run page, with a fresh nonce: only our own script may run.
fn page() -> Response {
    let nonce = nonce();
    let body = PAGE.replace("{{NONCE}}", &nonce);
    let csp = format!(
        "default-src 'none'; script-src 'nonce-{nonce}'; style-src 'unsafe-inline'; connect-src 'self'; img-src data:"
    );
    with_common(
        Response::new(200, body.into_bytes()),
        "text/html; charset=utf-8",
        &csp,
    )
}

fn nonce() -> String {
    use std::hash::{BuildHasher, Hasher};
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNT.fetch_add(1, Ordering::Relaxed));
    h.write_u64(crate::event::now_ms());
    format!("{:016x}", h.finish())
}

/// `<`, `>`, `&`, `"` and `'` as entities.
pub(super) fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn list_page(runs_dir: &Path) -> String {
    let runs: Vec<RunListing> = match list_runs(runs_dir) {
        Ok(r) => r,
        Err(e) => return format!("<h1>boardroom runs</h1><p>{}</p>", escape(&e.to_string())),
    };
    if runs.is_empty() {
        return format!(
            "<h1>boardroom runs</h1><p id=\"empty\">No runs in {} yet. Start one with <code>boardroom run --view \"TASK\"</code>.</p>",
            escape(&runs_dir.display().to_string())
        );
    }
    let mut rows = String::new();
    for run in runs.iter().rev() {
        let id = escape(&run.id);
        let (status, rounds, tokens, task) = match &run.record {
            Ok(r) => (
                match r.state.status {
                    RunStatus::Running => "running / interrupted",
                    s => s.as_str(),
                },
                r.state.round.to_string(),
                r.state.usage.total().to_string(),
                r.state
                    .task
                    .lines()
                    .next()
                    .unwrap_or("")
                    .chars()
                    .take(120)
                    .collect(),
            ),
            Err(e) => ("unreadable", String::new(), String::new(), e.to_string()),
        };
        rows.push_str(&format!(
            "<tr class=\"run\"><td><a href=\"/runs/{id}\">{id}</a></td><td>{}</td><td>{rounds}</td><td>{tokens}</td><td>{}</td></tr>",
            escape(status),
            escape(&task)
        ));
    }
    format!(
        "<h1>boardroom runs</h1><table><tr><th>run</th><th>status</th><th>rounds</th><th>tokens</th><th>task</th></tr>{rows}</table>"
    )
}

/// What the page draws a run from, besides its events: `run.json`, the
/// board entries journaled since, the turns, and the plan.
/// What one `state.json` holds from `turns.jsonl` and from the journal's
/// entries, each: the rest is counted and left out, so that a request costs
/// a bounded amount of memory however large the run's files grew (a 60 MiB
/// task copied into every turn made a 300 MB `turns.jsonl`).
pub(super) const STATE_BUDGET: usize = 8 << 20;

/// A single record longer than this is left out (counted) unread.
pub(super) const RECORD_CAP: usize = 2 << 20;

/// The records of a JSON-lines file, read a line at a time: the newest
/// that fit in [`STATE_BUDGET`] (each at most [`RECORD_CAP`]), in file
/// order, and how many were left out.
fn bounded_lines(
    path: &Path,
    keep: impl Fn(&serde_json::Value) -> Option<serde_json::Value>,
) -> (Vec<serde_json::Value>, usize) {
    let Ok(file) = std::fs::File::open(path) else {
        return (Vec::new(), 0);
    };
    let mut reader = std::io::BufReader::new(file);
    let mut kept: std::collections::VecDeque<(usize, serde_json::Value)> =
        std::collections::VecDeque::new();
    let (mut held, mut omitted) = (0usize, 0usize);
    let mut line = Vec::new();
    loop {
        line.clear();
        // At most RECORD_CAP + 1 bytes of a line are held; the rest of a
        // longer one is skipped.
        let n = match (&mut reader)
            .take(RECORD_CAP as u64 + 1)
            .read_until(b'\n', &mut line)
        {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if n > RECORD_CAP && line.last() != Some(&b'\n') {
            omitted += 1;
            // Skip to the end of this line.
            let mut sink = Vec::new();
            loop {
                sink.clear();
                match (&mut reader).take(1 << 16).read_until(b'\n', &mut sink) {
                    Ok(0) | Err(_) => break,
                    Ok(_) if sink.last() == Some(&b'\n') => break,
                    Ok(_) => {}
                }
            }
            continue;
        }
        let Some(value) = serde_json::from_slice::<serde_json::Value>(&line)
            .ok()
            .and_then(|v| keep(&v))
        else {
            continue;
        };
        held += n;
        kept.push_back((n, value));
        while held > STATE_BUDGET {
            let Some((size, _)) = kept.pop_front() else {
                break;
            };
            held -= size;
            omitted += 1;
        }
    }
    (kept.into_iter().map(|(_, v)| v).collect(), omitted)
}

fn state(dir: &Path) -> serde_json::Value {
    let read_json = |p: PathBuf| {
        // run.json holds the task (at most 64 MiB); a file past that is
        // not one a run wrote, and is left out.
        let small = std::fs::metadata(&p).is_ok_and(|m| m.len() <= 72 << 20);
        small
            .then(|| std::fs::read_to_string(&p).ok())
            .flatten()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .unwrap_or(serde_json::Value::Null)
    };
    let (entries, entries_omitted) = bounded_lines(&dir.join("journal.jsonl"), |r| {
        (r["record"] == "entry").then(|| r["entry"].clone())
    });
    let (turns, turns_omitted) = bounded_lines(&dir.join("turns.jsonl"), |r| Some(r.clone()));
    serde_json::json!({
        "run": read_json(dir.join("run.json")),
        "entries": entries,
        "entries_omitted": entries_omitted,
        "turns": turns,
        "turns_omitted": turns_omitted,
        "plan": read_json(dir.join("workspace").join("plan.json")),
    })
}

/// `events.jsonl` as server-sent events, from line `skip` on, following
/// the file while the run works; ends with an `end` event once the run
/// finished, or after [`STREAM_FOR`] (the browser reconnects).
fn stream(mut w: Box<dyn Write + Send>, dir: &Path, skip: u64, stop: &AtomicBool) {
    if !httpd::send(&mut w, httpd::SSE_HEAD) {
        return;
    }
    let path = dir.join("events.jsonl");
    let started = Instant::now();
    let mut offset = 0u64;
    let mut line_no = 0u64;
    let mut finished = false;
    let mut last_write = Instant::now();
    let mut quiet_over = 0u32;
    while !stop.load(Ordering::Relaxed) && started.elapsed() < STREAM_FOR {
        let mut out = String::new();
        if let Ok(mut f) = std::fs::File::open(&path)
            && f.seek(SeekFrom::Start(offset)).is_ok()
        {
            let mut r = std::io::BufReader::new(f);
            let mut line = String::new();
            while let Ok(n) = r.read_line(&mut line) {
                if n == 0 || !line.ends_with('\n') {
                    break;
                }
                offset += n as u64;
                line_no += 1;
                let text = line.trim_end();
                if line_no > skip && !text.is_empty() {
                    out.push_str(&format!("id: {line_no}\ndata: {text}\n\n"));
                }
                if text.contains("\"type\":\"run_finished\"") {
                    finished = true;
                }
                line.clear();
                if out.len() > 256 * 1024 {
                    break;
                }
            }
        }
        let idle = out.is_empty();
        // run.json says the run is over before its last events land (the
        // master's memory note comes first): only a long quiet after it
        // ends a stream that never saw run_finished (a run that crashed).
        quiet_over = if idle && !finished && over(dir) {
            quiet_over + 1
        } else {
            0
        };
        if idle && (finished || quiet_over > QUIET_POLLS) {
            out.push_str("event: end\ndata: {}\n\n");
        } else if idle && last_write.elapsed() > Duration::from_secs(5) {
            out.push_str(": ping\n\n");
        }
        if !out.is_empty() {
            if !httpd::send(&mut w, &out) {
                return;
            }
            last_write = Instant::now();
            if out.ends_with("event: end\ndata: {}\n\n") {
                return;
            }
        }
        if idle {
            std::thread::sleep(POLL);
        }
    }
}

/// Polls of quiet after `run.json` says the run is over before a stream
/// without `run_finished` ends (about 10 s).
const QUIET_POLLS: u32 = 66;

/// Whether `run.json` says the run ended. A run killed midway says it is
/// still running: its stream stays open until [`STREAM_FOR`] and the
/// browser reconnects.
fn over(dir: &Path) -> bool {
    crate::store::load_run(dir).is_ok_and(|r| r.state.status != RunStatus::Running)
}
