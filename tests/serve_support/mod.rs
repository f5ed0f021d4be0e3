//! What the serve tests share: a server, JSON calls with the token, a
//! raw server-sent-events reader, a WebSocket client, a team whose calls
//! wait for approval.

#![allow(dead_code, unreachable_pub)]

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use boardroom::serve::{ServeConfig, Server};
use serde_json::Value;

pub const TOKEN: &str = "test-token-0123456789abcdef";

pub fn server(dir: &Path, max_runs: usize) -> Server {
    Server::start(
        ServeConfig::new(dir, TOKEN)
            .max_runs(max_runs)
            .memory(false),
    )
    .unwrap()
}

pub fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .into()
}

/// A JSON request: status, Retry-After, body.
pub fn call(
    addr: SocketAddr,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<&str>,
) -> (u16, Option<String>, Value) {
    let url = format!("http://{addr}{path}");
    let agent = agent();
    let auth = token.map(|t| format!("Bearer {t}"));
    let mut resp = match (method, body) {
        ("GET", _) => {
            let mut r = agent.get(&url);
            if let Some(a) = &auth {
                r = r.header("Authorization", a);
            }
            r.call()
        }
        (_, body) => {
            let mut r = agent.post(&url).header("Content-Type", "application/json");
            if let Some(a) = &auth {
                r = r.header("Authorization", a);
            }
            r.send(body.unwrap_or(""))
        }
    }
    .unwrap();
    let status = resp.status().as_u16();
    let retry = resp
        .headers()
        .get("Retry-After")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let text = resp.body_mut().read_to_string().unwrap_or_default();
    let value = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (status, retry, value)
}

pub fn start_run(addr: SocketAddr, body: Value) -> String {
    let (status, _, v) = call(
        addr,
        "POST",
        "/v1/runs",
        Some(TOKEN),
        Some(&body.to_string()),
    );
    assert_eq!(status, 201, "{v}");
    v["id"].as_str().unwrap().to_string()
}

/// Polls the run until `until` holds of it (at most 60 s: a does-not-hang
/// bound, not a timing).
pub fn wait_run(addr: SocketAddr, id: &str, until: impl Fn(&Value) -> bool) -> Value {
    let started = Instant::now();
    loop {
        let (status, _, run) = call(addr, "GET", &format!("/v1/runs/{id}"), Some(TOKEN), None);
        assert_eq!(status, 200, "{run}");
        if until(&run) {
            return run;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "run {id} stuck: {run}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Server-sent events of a run from after `last` (none: no header): the
/// (id, data) pairs, at most `limit`, and whether the stream ended with
/// `event: end`.
pub fn sse(
    addr: SocketAddr,
    id: &str,
    last: Option<u64>,
    limit: usize,
) -> (Vec<(u64, String)>, bool) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let last = last.map_or_else(String::new, |n| format!("Last-Event-ID: {n}\r\n"));
    write!(
        s,
        "GET /v1/runs/{id}/events HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {TOKEN}\r\n{last}\r\n"
    )
    .unwrap();
    let mut r = BufReader::new(s);
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    assert!(line.starts_with("HTTP/1.1 200"), "{line}");
    let (mut events, mut cur_id, mut ended) = (Vec::new(), None, false);
    loop {
        line.clear();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            break;
        }
        let l = line.trim_end();
        if let Some(n) = l.strip_prefix("id: ") {
            cur_id = Some(n.parse::<u64>().unwrap());
        } else if let Some(data) = l.strip_prefix("data: ") {
            if let Some(n) = cur_id.take() {
                events.push((n, data.to_string()));
                if events.len() >= limit {
                    break;
                }
            }
        } else if l == "event: end" {
            ended = true;
        }
    }
    (events, ended)
}

/// The next text message of a WebSocket, as JSON.
pub fn next_json(ws: &mut tungstenite::WebSocket<TcpStream>) -> Value {
    loop {
        if let tungstenite::Message::Text(t) = ws.read().unwrap() {
            return serde_json::from_str(t.as_str()).unwrap();
        }
    }
}

/// A team whose writer's `plan_read` calls wait for a person.
pub fn approving_team(dir: &Path) -> boardroom::Team {
    let agents = dir.join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::create_dir_all(dir.join("souls")).unwrap();
    for agent in ["lead", "writer"] {
        std::fs::write(
            dir.join("souls").join(format!("{agent}.md")),
            "Careful and brief.\n",
        )
        .unwrap();
    }
    std::fs::write(
        agents.join("lead.md"),
        "---\nname: lead\nrole: master\ndescription: Leads the team\n---\nYou lead.\n",
    )
    .unwrap();
    std::fs::write(
        agents.join("writer.md"),
        "---\nname: writer\nrole: member\ndescription: Writes drafts\ntools: [plan_read]\n\
         approve: [plan_read]\n---\nYou write.\n",
    )
    .unwrap();
    boardroom::Team::load(dir).unwrap()
}

/// Opens the run's WebSocket with the token.
pub fn websocket(addr: SocketAddr, id: &str) -> tungstenite::WebSocket<TcpStream> {
    use tungstenite::client::IntoClientRequest;
    let mut request = format!("ws://{addr}/v1/runs/{id}/ws")
        .into_client_request()
        .unwrap();
    request
        .headers_mut()
        .insert("Authorization", format!("Bearer {TOKEN}").parse().unwrap());
    let stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    tungstenite::client(request, stream).unwrap().0
}

pub fn call_api(addr: SocketAddr, path: &str, body: &str) -> (u16, Option<String>, Value) {
    call(addr, "POST", path, Some(TOKEN), Some(body))
}

/// The data of the first event of `kind` in the run's stream.
pub fn sse_until(addr: SocketAddr, id: &str, kind: &str) -> (String, u64) {
    let mut after = 0;
    loop {
        let (events, _) = sse(addr, id, Some(after), 1);
        let (n, data) = events.into_iter().next().expect("the stream ended first");
        if data.contains(&format!("\"type\":\"{kind}\"")) {
            return (data, n);
        }
        after = n;
    }
}
