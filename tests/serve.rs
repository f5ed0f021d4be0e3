//! `boardroom serve` against a real server on 127.0.0.1 (issue 27): the
//! library's server started by each test, or the binary where the test
//! is about the process (its log, a restart). Clients are real: ureq for
//! JSON, a raw TcpStream for server-sent events, tungstenite for the
//! WebSocket.

mod serve_support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use boardroom::serve::{ServeConfig, Server};
use serde_json::json;
use serve_support::*;

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
    // The drafts wait for `go`, written once the server is killed: the run
    // cannot end before (400 ms calls raced with the kill on a loaded
    // machine).
    let go = tmp.path().join("go");
    let body =
        json!({"task": "Plan a picnic", "model": format!("sim:hold={}", go.display())}).to_string();
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
    std::fs::write(&go, "").unwrap();
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

/// `max_rounds` caps a principal team's rounds of dispatch, so it is taken;
/// a handoff team has no rounds, so it is refused, naming the team.
#[test]
fn max_rounds_is_refused_only_for_a_handoff_team() {
    let tmp = tempfile::tempdir().unwrap();
    let mut config = boardroom::TeamConfig::default();
    config.process = boardroom::Process::Handoff;
    let relay = boardroom::Team::new(
        "relay",
        config,
        vec![
            boardroom::AgentSpec::master("lead", "You lead."),
            boardroom::AgentSpec::member("writer", "Writes", "You write."),
        ],
    )
    .unwrap();
    let principal = boardroom::Team::load(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/teams/principal"),
    )
    .unwrap();
    let srv = Server::start(
        ServeConfig::new(tmp.path(), TOKEN)
            .memory(false)
            .team(principal)
            .team(relay),
    )
    .unwrap();
    let addr = srv.addr();
    let id = start_run(
        addr,
        json!({"task": "Plan a picnic", "team": "principal", "max_rounds": 2}),
    );
    wait_run(addr, &id, |r| r["status"] != "running");
    let body = json!({"task": "Plan a picnic", "team": "relay", "max_rounds": 2}).to_string();
    let (status, _, v) = call(addr, "POST", "/v1/runs", Some(TOKEN), Some(&body));
    assert_eq!(status, 400, "{v}");
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .starts_with("max_rounds: team 'relay' runs the handoff process"),
        "{v}"
    );
}

/// Event streams and WebSockets each hold a worker while open: past the
/// cap (64) one more is answered 503 with a message naming the cap, and a
/// plain request still answers; a closed socket frees its place.
#[test]
fn open_streams_past_the_cap_get_503_and_requests_still_answer() {
    let tmp = tempfile::tempdir().unwrap();
    let srv = server(tmp.path(), 4);
    let addr = srv.addr();
    let id = start_run(addr, json!({"task": "Plan a picnic"}));
    wait_run(addr, &id, |r| r["status"] != "running");
    let mut sockets: Vec<_> = (0..64).map(|_| websocket(addr, &id)).collect();
    let events = format!("/v1/runs/{id}/events");
    let (status, retry, v) = call(addr, "GET", &events, Some(TOKEN), None);
    assert_eq!(status, 503, "{v}");
    assert!(retry.is_some());
    assert_eq!(
        v["error"],
        "64 event streams and WebSockets are open, the most this server keeps at once: retry later"
    );
    let (status, _, run) = call(addr, "GET", &format!("/v1/runs/{id}"), Some(TOKEN), None);
    assert_eq!(status, 200, "{run}");
    let mut ws = sockets.pop().unwrap();
    ws.close(None).unwrap();
    while ws.read().is_ok() {}
    let started = Instant::now();
    loop {
        let (status, _, v) = call(addr, "GET", &events, Some(TOKEN), None);
        if status == 200 {
            break;
        }
        assert_eq!(status, 503, "{v}");
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the closed socket's place was never freed"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
