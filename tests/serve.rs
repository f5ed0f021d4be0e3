//! `boardroom serve` against a real server on 127.0.0.1 (issue 27): the
//! library's server started by each test, or the binary where the test
//! is about the process (its log, a restart). Clients are real: ureq for
//! JSON, a raw TcpStream for server-sent events, tungstenite for the
//! WebSocket.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use boardroom::serve::{ServeConfig, Server};
use serde_json::{Value, json};

const TOKEN: &str = "test-token-0123456789abcdef";

fn server(dir: &Path, max_runs: usize) -> Server {
    Server::start(
        ServeConfig::new(dir, TOKEN)
            .max_runs(max_runs)
            .memory(false),
    )
    .unwrap()
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .into()
}

/// A JSON request: status, Retry-After, body.
fn call(
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

fn start_run(addr: SocketAddr, body: Value) -> String {
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
fn wait_run(addr: SocketAddr, id: &str, until: impl Fn(&Value) -> bool) -> Value {
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
fn sse(addr: SocketAddr, id: &str, last: Option<u64>, limit: usize) -> (Vec<(u64, String)>, bool) {
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

/// 401 without the token (or with another) on every `/v1` route; the page
/// shell and the OpenAPI document are open.
#[test]
fn every_api_route_needs_the_token() {
    let tmp = tempfile::tempdir().unwrap();
    let srv = server(tmp.path(), 4);
    let addr = srv.addr();
    let id = start_run(addr, json!({"task": "Plan a picnic", "model": "sim"}));
    for (method, path) in [
        ("GET", "/v1/runs".to_string()),
        ("POST", "/v1/runs".to_string()),
        ("GET", format!("/v1/runs/{id}")),
        ("GET", format!("/v1/runs/{id}/events")),
        ("GET", format!("/v1/runs/{id}/ws")),
        ("POST", format!("/v1/runs/{id}/messages")),
        ("POST", format!("/v1/runs/{id}/cancel")),
        ("POST", format!("/v1/runs/{id}/resume")),
        ("POST", format!("/v1/runs/{id}/approvals/c1")),
    ] {
        for token in [None, Some("not-the-token-0123456789")] {
            let body = r#"{"task":"x"}"#;
            let (status, _, v) = call(addr, method, &path, token, Some(body));
            assert_eq!(status, 401, "{method} {path} with {token:?}: {v}");
            assert!(v["error"].as_str().unwrap().contains("token"), "{v}");
        }
    }
    let (status, _, doc) = call(addr, "GET", "/openapi.json", None, None);
    assert_eq!(status, 200);
    assert!(doc["paths"]["/v1/runs"]["post"].is_object(), "{doc}");
    assert_eq!(call(addr, "GET", "/", None, None).0, 200);
}

/// 20 clients start 100 runs at once on a server that takes 8: every run
/// is started (after 429s with Retry-After and retries), every one ends
/// done, none is lost, and each is an ordinary run in the directory.
#[test]
fn twenty_clients_start_a_hundred_runs_under_the_cap() {
    let tmp = tempfile::tempdir().unwrap();
    let srv = server(tmp.path(), 8);
    let addr = srv.addr();
    let results: Vec<(Vec<String>, usize)> = std::thread::scope(|s| {
        let clients: Vec<_> = (0..20)
            .map(|c| {
                s.spawn(move || {
                    let (mut ids, mut refused) = (Vec::new(), 0usize);
                    for k in 0..5 {
                        let body = json!({
                            "task": format!("Plan picnic {c}-{k}"),
                            "model": "sim:latency=100ms",
                        })
                        .to_string();
                        loop {
                            let (status, retry, v) =
                                call(addr, "POST", "/v1/runs", Some(TOKEN), Some(&body));
                            if status == 429 {
                                assert_eq!(retry.as_deref(), Some("1"), "{v}");
                                assert!(v["error"].as_str().unwrap().contains("8 runs"), "{v}");
                                refused += 1;
                                std::thread::sleep(Duration::from_millis(50));
                                continue;
                            }
                            assert_eq!(status, 201, "{v}");
                            ids.push(v["id"].as_str().unwrap().to_string());
                            break;
                        }
                    }
                    (ids, refused)
                })
            })
            .collect();
        clients.into_iter().map(|c| c.join().unwrap()).collect()
    });
    let mut ids: Vec<String> = results.iter().flat_map(|(ids, _)| ids.clone()).collect();
    let refused: usize = results.iter().map(|(_, r)| r).sum();
    assert!(refused > 0, "20 clients at once on a cap of 8 met no 429");
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 100);
    for id in &ids {
        let run = wait_run(addr, id, |r| r["live"] == false);
        assert_eq!(run["status"], "done", "{run}");
    }
    let (_, _, list) = call(addr, "GET", "/v1/runs", Some(TOKEN), None);
    let listed = list["runs"].as_array().unwrap();
    assert_eq!(listed.len(), 100);
    assert!(listed.iter().all(|r| r["status"] == "done"), "{list}");
    assert_eq!(boardroom::store::list_runs(tmp.path()).unwrap().len(), 100);
}

/// A stream cut after 7 events and resumed with `Last-Event-ID: 7` gives
/// event 8 on, to the end: together every line of events.jsonl, once, in
/// order, each with its line number as its id.
#[test]
fn server_sent_events_resume_with_last_event_id_without_gap_or_duplicate() {
    let tmp = tempfile::tempdir().unwrap();
    let srv = server(tmp.path(), 4);
    let addr = srv.addr();
    let id = start_run(
        addr,
        json!({"task": "Plan a picnic", "model": "sim:latency=150ms"}),
    );
    let (first, ended) = sse(addr, &id, None, 7);
    assert!(!ended);
    assert_eq!(first.len(), 7);
    let (rest, ended) = sse(addr, &id, Some(first[6].0), usize::MAX);
    assert!(ended, "the stream of a finished run ends");
    let all: Vec<(u64, String)> = first.into_iter().chain(rest).collect();
    let ids: Vec<u64> = all.iter().map(|(n, _)| *n).collect();
    let expected: Vec<u64> = (1..=ids.len() as u64).collect();
    assert_eq!(ids, expected);
    let file = std::fs::read_to_string(tmp.path().join(&id).join("events.jsonl")).unwrap();
    let lines: Vec<&str> = file.lines().collect();
    assert_eq!(lines.len(), all.len());
    for ((_, data), line) in all.iter().zip(&lines) {
        assert_eq!(data, line);
    }
    assert!(lines.last().unwrap().contains("\"type\":\"run_finished\""));
}

/// A WebSocket client watches a run whose master asks its user, answers
/// the question over the socket, and sees the run go on to its answer.
#[test]
fn a_websocket_client_answers_the_masters_question() {
    let tmp = tempfile::tempdir().unwrap();
    let srv = server(tmp.path(), 4);
    let addr = srv.addr();
    let id = start_run(
        addr,
        json!({"task": "Plan a picnic", "model": "sim:ask=Which city?"}),
    );
    let mut ws = websocket(addr, &id);
    let mut seen = 0u64;
    loop {
        let m = next_json(&mut ws);
        assert_eq!(m["type"], "event", "{m}");
        let n = m["id"].as_u64().unwrap();
        assert_eq!(n, seen + 1, "events in order, none missing");
        seen = n;
        if m["event"]["type"] == "awaiting_user" {
            assert_eq!(m["event"]["question"], "Which city?");
            break;
        }
    }
    ws.send(tungstenite::Message::text(
        json!({"type": "answer", "text": "Lisbon, in May"}).to_string(),
    ))
    .unwrap();
    let mut acked = false;
    loop {
        let m = next_json(&mut ws);
        if m["type"] == "ok" {
            assert_eq!(m["action"], "message");
            acked = true;
            continue;
        }
        assert_eq!(m["type"], "event", "{m}");
        let event = &m["event"];
        if event["type"] == "run_finished" && event["status"] == "done" {
            break;
        }
    }
    assert!(acked, "the answer was acknowledged");
    let run = wait_run(addr, &id, |r| r["live"] == false);
    assert_eq!(run["status"], "done", "{run}");
    assert!(
        run["answer"].as_str().unwrap().contains("Lisbon, in May"),
        "{run}"
    );
    let _ = ws.close(None);
}

/// The next text message of a WebSocket, as JSON.
fn next_json(ws: &mut tungstenite::WebSocket<TcpStream>) -> Value {
    loop {
        if let tungstenite::Message::Text(t) = ws.read().unwrap() {
            return serde_json::from_str(t.as_str()).unwrap();
        }
    }
}

/// A team whose writer's `plan_read` calls wait for a person.
fn approving_team(dir: &Path) -> boardroom::Team {
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
fn websocket(addr: SocketAddr, id: &str) -> tungstenite::WebSocket<TcpStream> {
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

/// A tool call that `approve:` names waits while the run is live: a
/// WebSocket client approves one run's call (it runs), the approvals route
/// denies another's (it never runs: the model reads the denial); a call
/// no one waits for is 404.
#[test]
fn a_websocket_client_approves_a_call_and_the_route_denies_one() {
    let tmp = tempfile::tempdir().unwrap();
    let team = approving_team(&tmp.path().join("team"));
    let name = team.name().to_string();
    let runs = tmp.path().join("runs");
    let srv = Server::start(ServeConfig::new(&runs, TOKEN).memory(false).team(team)).unwrap();
    let addr = srv.addr();
    let body = json!({"task": "Plan a picnic", "team": name, "model": "sim:tool=writer:plan_read"});
    let approved = start_run(addr, body.clone());
    let denied = start_run(addr, body);

    let mut ws = websocket(addr, &approved);
    let call = loop {
        let m = next_json(&mut ws);
        if m["event"]["type"] == "approval_requested" {
            assert_eq!(m["event"]["tool"], "plan_read", "{m}");
            break m["event"]["id"].as_str().unwrap().to_string();
        }
        assert_ne!(
            m["event"]["type"], "run_finished",
            "finished without asking: {m}"
        );
    };
    let run = wait_run(addr, &approved, |r| {
        !r["approvals"].as_array().is_none_or(Vec::is_empty)
    });
    assert_eq!(run["approvals"][0]["call_id"], call.as_str(), "{run}");
    ws.send(tungstenite::Message::text(
        json!({"type": "approve", "call": call}).to_string(),
    ))
    .unwrap();
    let mut decided = None;
    loop {
        let m = next_json(&mut ws);
        if m["type"] == "ok" {
            assert_eq!(m["action"], "approve", "{m}");
            continue;
        }
        assert_eq!(m["type"], "event", "{m}");
        if m["event"]["type"] == "approval_decided" {
            decided = Some(m["event"]["decision"].clone());
        }
        if m["event"]["type"] == "run_finished" {
            break;
        }
    }
    assert_eq!(decided, Some(json!("approved")));

    // The other run, over the route.
    let (events, _) = sse_until(addr, &denied, "approval_requested");
    let call = serde_json::from_str::<Value>(&events).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let path = format!("/v1/runs/{denied}/approvals/{call}");
    let (status, _, v) = call_api(addr, &path, r#"{"decision": "maybe"}"#);
    assert_eq!(status, 400, "{v}");
    let (status, _, v) = call_api(
        addr,
        &format!("/v1/runs/{denied}/approvals/nope"),
        r#"{"decision": "approve"}"#,
    );
    assert_eq!(status, 404, "{v}");
    let (status, _, v) = call_api(
        addr,
        &path,
        r#"{"decision": "deny", "reason": "not today"}"#,
    );
    assert_eq!(status, 202, "{v}");
    let run = wait_run(addr, &denied, |r| r["live"] == false);
    assert_eq!(run["status"], "done", "{run}");
    let saved = std::fs::read_to_string(runs.join(&denied).join("events.jsonl")).unwrap();
    assert!(
        saved.contains("\"decision\":\"denied\""),
        "the denial is recorded"
    );
    assert!(saved.contains("not today"));
    // Only the approved run's call ran (the tool's result event).
    let ran = |id: &str| {
        std::fs::read_to_string(runs.join(id).join("events.jsonl"))
            .unwrap()
            .lines()
            .any(|l| {
                l.contains("\"type\":\"tool_result\"") || l.contains("\"type\":\"tool_finished\"")
            })
    };
    assert!(ran(&approved), "the approved call ran");
    assert!(!ran(&denied), "the denied call never ran");
}

fn call_api(addr: SocketAddr, path: &str, body: &str) -> (u16, Option<String>, Value) {
    call(addr, "POST", path, Some(TOKEN), Some(body))
}

/// The data of the first event of `kind` in the run's stream.
fn sse_until(addr: SocketAddr, id: &str, kind: &str) -> (String, u64) {
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

/// Cancel mid-run: the run stops, saved where it stood and listed as
/// resumable; resuming it over the API finishes it.
#[test]
fn a_run_cancelled_mid_way_is_resumable() {
    let tmp = tempfile::tempdir().unwrap();
    let srv = server(tmp.path(), 4);
    let addr = srv.addr();
    let id = start_run(
        addr,
        json!({"task": "Plan a picnic", "model": "sim:latency=300ms"}),
    );
    let (events, _) = sse(addr, &id, None, 3);
    assert_eq!(events.len(), 3);
    let (status, _, v) = call(
        addr,
        "POST",
        &format!("/v1/runs/{id}/cancel"),
        Some(TOKEN),
        None,
    );
    assert_eq!(status, 202, "{v}");
    let run = wait_run(addr, &id, |r| r["live"] == false);
    assert_eq!(run["status"], "stopped", "{run}");
    assert_eq!(run["resumable"], true, "{run}");
    // Not live: a second cancel is a conflict.
    let (status, _, v) = call(
        addr,
        "POST",
        &format!("/v1/runs/{id}/cancel"),
        Some(TOKEN),
        None,
    );
    assert_eq!(status, 409, "{v}");
    let (status, _, v) = call(
        addr,
        "POST",
        &format!("/v1/runs/{id}/resume"),
        Some(TOKEN),
        None,
    );
    assert_eq!(status, 202, "{v}");
    let run = wait_run(addr, &id, |r| r["live"] == false);
    assert_eq!(run["status"], "done", "{run}");
    assert_eq!(run["resumable"], false, "{run}");
}

/// Bodies past the cap get 413, what is not the route's JSON 400, each a
/// JSON error; an unknown run 404, a wrong method 405.
#[test]
fn oversized_and_malformed_bodies_get_json_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let srv = Server::start(
        ServeConfig::new(tmp.path(), TOKEN)
            .memory(false)
            .max_body(1024),
    )
    .unwrap();
    let addr = srv.addr();
    let big = json!({"task": "x".repeat(4096)}).to_string();
    let (status, _, v) = call(addr, "POST", "/v1/runs", Some(TOKEN), Some(&big));
    assert_eq!((status, v["status"].as_u64()), (413, Some(413)), "{v}");
    assert_eq!(v["error"], "the request body is larger than 1024 bytes");
    for (body, says) in [
        (r#"{"task": "#, "not valid JSON"),
        (r#"{"taks": "Plan a picnic"}"#, "unknown field `taks`"),
        (r#"{"task": 5}"#, "invalid type"),
        (r#"{"task": "  "}"#, "task: the task is empty"),
        (
            r#"{"task": "x", "team": "nope"}"#,
            "team: 'nope' is not a team this server may use (allowed: builtin)",
        ),
        (
            r#"{"task": "x", "model": "sim:bogus"}"#,
            "unknown sim option",
        ),
        (r#"{"task": "x", "vars": {"undeclared": "1"}}"#, "vars:"),
    ] {
        let (status, _, v) = call(addr, "POST", "/v1/runs", Some(TOKEN), Some(body));
        assert_eq!(status, 400, "{body}: {v}");
        assert!(v["error"].as_str().unwrap().contains(says), "{body}: {v}");
    }
    let (status, _, v) = call(addr, "GET", "/v1/runs/no-such-run", Some(TOKEN), None);
    assert_eq!(status, 404, "{v}");
    let (status, _, v) = call(
        addr,
        "POST",
        "/v1/runs/no-such-run/messages",
        Some(TOKEN),
        Some(r#"{"text":"hi"}"#),
    );
    assert_eq!(status, 404, "{v}");
    let (status, _, v) = call(addr, "POST", "/openapi.json", Some(TOKEN), Some("{}"));
    assert_eq!(status, 405, "{v}");
    assert!(
        boardroom::store::list_runs(tmp.path()).unwrap().is_empty(),
        "no bad request started a run"
    );
}

/// The binary, as a user starts it: the server's stderr (every log line
/// at RUST_LOG=trace) never holds the token, whether it came from
/// BOARDROOM_TOKEN or was generated into a 0600 file.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `boardroom serve` on a free port; its address once it says it.
fn spawn_serve(
    home: &Path,
    envs: &[(&str, &str)],
    args: &[&str],
) -> (Child, SocketAddr, std::path::PathBuf) {
    let log = home.join(format!("serve-{}.log", envs.len() + args.len()));
    let err = std::fs::File::create(&log).unwrap();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_boardroom"));
    cmd.args(["serve", "--port", "0", "--no-memory"])
        .args(args)
        .env("BOARDROOM_HOME", home)
        .env_remove("BOARDROOM_TOKEN")
        .env_remove("BOARDROOM_MODEL")
        .env_remove("BOARDROOM_RUNS_DIR")
        .env("RUST_LOG", "trace")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(err);
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let child = Child(cmd.spawn().unwrap());
    let started = Instant::now();
    loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if let Some(rest) = text.split("listening on http://").nth(1) {
            let addr = rest.split('/').next().unwrap().parse().unwrap();
            return (child, addr, log);
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "serve did not start: {text}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Requests of every kind with the token, then the log is read.
fn exercise(addr: SocketAddr, token: &str) {
    let body = json!({"task": "Plan a picnic", "model": "sim"}).to_string();
    let (status, _, v) = call(addr, "POST", "/v1/runs", Some(token), Some(&body));
    assert_eq!(status, 201, "{v}");
    let id = v["id"].as_str().unwrap().to_string();
    let (status, _, _) = call(addr, "GET", &format!("/v1/runs/{id}"), Some(token), None);
    assert_eq!(status, 200);
    let (status, _, _) = call(
        addr,
        "GET",
        "/v1/runs",
        Some("a-wrong-token-0123456789"),
        None,
    );
    assert_eq!(status, 401);
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET /v1/runs/{id}/events HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\r\n"
    )
    .unwrap();
    let mut all = String::new();
    s.read_to_string(&mut all).unwrap();
    assert!(all.contains("event: end"), "{all}");
}

#[test]
fn the_token_is_in_no_log_line_at_trace_level() {
    let tmp = tempfile::tempdir().unwrap();
    // From the environment.
    let token = "env-token-5f1c2a9b7d3e4f60";
    let (child, addr, log) = spawn_serve(tmp.path(), &[("BOARDROOM_TOKEN", token)], &[]);
    exercise(addr, token);
    drop(child);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.contains("the bearer token is from BOARDROOM_TOKEN"),
        "{text}"
    );
    assert!(
        text.contains("TRACE") || text.contains("DEBUG") || text.contains("INFO"),
        "the log is on: {text}"
    );
    assert!(!text.contains(token), "the token leaked into the log");

    // Generated into a file only its owner may read.
    let file = tmp.path().join("secret").join("serve.token");
    let (child, addr, log) =
        spawn_serve(tmp.path(), &[], &["--token-file", file.to_str().unwrap()]);
    let token = std::fs::read_to_string(&file).unwrap().trim().to_string();
    assert_eq!(token.len(), 64);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
    exercise(addr, &token);
    drop(child);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.contains(&format!("the bearer token is in {}", file.display())),
        "{text}"
    );
    assert!(!text.contains(&token), "the token leaked into the log");
}

/// A server killed mid-run leaves the run as any killed run: after a
/// restart the API lists it as resumable, and resuming it finishes it;
/// `boardroom runs` saw it all along.
#[test]
fn after_a_restart_an_unfinished_run_is_listed_resumable() {
    let tmp = tempfile::tempdir().unwrap();
    let token = "restart-token-0123456789ab";
    let runs = tmp.path().join("runs");
    let envs = [("BOARDROOM_TOKEN", token)];
    let (child, addr, _) = spawn_serve(tmp.path(), &envs, &[]);
    let body = json!({"task": "Plan a picnic", "model": "sim:latency=400ms"}).to_string();
    let (status, _, v) = call(addr, "POST", "/v1/runs", Some(token), Some(&body));
    assert_eq!(status, 201, "{v}");
    let id = v["id"].as_str().unwrap().to_string();
    // Wait until the plan is saved, then kill the server (SIGKILL).
    let started = Instant::now();
    while !std::fs::read_to_string(runs.join(&id).join("events.jsonl"))
        .unwrap_or_default()
        .contains("\"phase\":\"draft\"")
    {
        assert!(started.elapsed() < Duration::from_secs(30));
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(child);
    let (_child, addr, _) = spawn_serve(tmp.path(), &envs, &[]);
    let (status, _, list) = call(addr, "GET", "/v1/runs", Some(token), None);
    assert_eq!(status, 200);
    let run = &list["runs"][0];
    assert_eq!(run["id"], id.as_str());
    assert_eq!(run["status"], "interrupted", "{run}");
    assert_eq!(run["resumable"], true, "{run}");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_boardroom"))
        .args(["runs", "--runs-dir", runs.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains(&id));
    let (status, _, v) = call(
        addr,
        "POST",
        &format!("/v1/runs/{id}/resume"),
        Some(token),
        None,
    );
    assert_eq!(status, 202, "{v}");
    let started = Instant::now();
    loop {
        let (_, _, run) = call(addr, "GET", &format!("/v1/runs/{id}"), Some(token), None);
        if run["live"] == false && run["status"] == "done" {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "{run}");
        std::thread::sleep(Duration::from_millis(50));
    }
}
