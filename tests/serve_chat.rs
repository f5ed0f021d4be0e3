//! Chats with the partner over `boardroom serve` (issue 27), against a
//! real server on 127.0.0.1 and the sim as the partner's model: a reply
//! to a message, the launch on the user's yes (the run is an ordinary
//! run of the API and finishes), the token, an unknown chat.

mod serve_support;

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use boardroom::serve::{ServeConfig, Server};
use serde_json::{Value, json};
use serve_support::*;

/// A server whose runs go to `dir/runs` and chats to `dir/chats`, that
/// takes bodies up to 64 KiB.
fn chat_server(dir: &Path) -> Server {
    Server::start(
        ServeConfig::new(dir.join("runs"), TOKEN)
            .chats_dir(dir.join("chats"))
            .memory(false)
            .max_body(64 << 10),
    )
    .unwrap()
}

fn start_chat(addr: SocketAddr, body: &Value) -> Value {
    let (status, _, chat) = call_api(addr, "/v1/chats", &body.to_string());
    assert_eq!(status, 201, "{chat}");
    chat
}

/// The events of `chat` of type `kind`.
fn of_type<'a>(chat: &'a Value, kind: &str) -> Vec<&'a Value> {
    chat["events"]
        .as_array()
        .unwrap_or_else(|| panic!("no events in {chat}"))
        .iter()
        .filter(|e| e["type"] == kind)
        .collect()
}

#[test]
fn a_message_gets_the_partners_reply() {
    let tmp = tempfile::tempdir().unwrap();
    let srv = chat_server(tmp.path());
    let addr = srv.addr();
    // Started without a message: the partner has said nothing yet.
    let chat = start_chat(addr, &json!({"model": "sim"}));
    let id = chat["id"].as_str().unwrap().to_string();
    assert_eq!(chat["state"], "idle", "{chat}");
    assert_eq!(chat["events"], json!([]), "{chat}");

    let (status, _, reply) = call_api(
        addr,
        &format!("/v1/chats/{id}/messages"),
        &json!({"text": "Plan a team offsite"}).to_string(),
    );
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["state"], "idle", "{reply}");
    assert_eq!(
        of_type(&reply, "user_message")[0]["text"],
        "Plan a team offsite"
    );
    let said = of_type(&reply, "partner_message");
    assert_eq!(said.len(), 1, "{reply}");
    assert!(
        said[0]["text"]
            .as_str()
            .unwrap()
            .starts_with("Before I draft the work, two questions:"),
        "{reply}"
    );
    assert_eq!(reply["runs"], json!([]), "nothing launched: {reply}");

    // The transcript holds both, in order.
    let (status, _, shown) = call(addr, "GET", &format!("/v1/chats/{id}"), Some(TOKEN), None);
    assert_eq!(status, 200, "{shown}");
    let kinds: Vec<&str> = shown["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["user_message", "partner_message"], "{shown}");
    let (_, _, later) = call(
        addr,
        "GET",
        &format!("/v1/chats/{id}?after=1"),
        Some(TOKEN),
        None,
    );
    assert_eq!(of_type(&later, "partner_message").len(), 1, "{later}");
    assert!(of_type(&later, "user_message").is_empty(), "{later}");
}

#[test]
fn a_yes_launches_the_team_and_its_run_finishes_as_an_api_run() {
    let tmp = tempfile::tempdir().unwrap();
    let srv = chat_server(tmp.path());
    let addr = srv.addr();
    let chat = start_chat(
        addr,
        &json!({
            "model": "sim",
            "message": "Plan a team offsite for about 20 people over two days",
        }),
    );
    let id = chat["id"].as_str().unwrap().to_string();
    assert_eq!(chat["state"], "awaiting_consent", "{chat}");
    assert_eq!(
        chat["question"], "Launch the team on these 4 modules? [y/N]",
        "{chat}"
    );
    // A message while the question waits is refused, not taken for a no.
    let (status, _, v) = call_api(
        addr,
        &format!("/v1/chats/{id}/messages"),
        &json!({"text": "hello"}).to_string(),
    );
    assert_eq!(status, 409, "{v}");
    assert!(v["error"].as_str().unwrap().contains("/consent"), "{v}");

    let (status, _, after) = call_api(
        addr,
        &format!("/v1/chats/{id}/consent"),
        &json!({"granted": true}).to_string(),
    );
    assert_eq!(status, 200, "{after}");
    assert_eq!(of_type(&after, "consent")[0]["granted"], true, "{after}");
    let launched = of_type(&after, "run_launched");
    assert_eq!(launched.len(), 1, "{after}");
    let run_id = launched[0]["run_id"].as_str().unwrap().to_string();
    assert_eq!(launched[0]["modules"], 4, "{after}");
    assert_eq!(after["runs"], json!([run_id]), "{after}");

    // An ordinary run of the API: listed (once its first phase is
    // saved), and it finishes.
    let started = Instant::now();
    loop {
        let (status, _, list) = call(addr, "GET", "/v1/runs", Some(TOKEN), None);
        assert_eq!(status, 200, "{list}");
        let runs = list["runs"].as_array().unwrap();
        if runs.iter().any(|r| r["id"] == run_id.as_str()) {
            break;
        }
        assert!(runs.is_empty(), "{list}");
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "never listed: {list}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let run = wait_run(addr, &run_id, |r| r["status"] == "done");
    assert!(run["answer"].is_string(), "{run}");

    // The chat hears of it: the report is shown, and the partner says so.
    let started = Instant::now();
    loop {
        let (_, _, shown) = call(addr, "GET", &format!("/v1/chats/{id}"), Some(TOKEN), None);
        if !of_type(&shown, "report").is_empty() && shown["state"] == "idle" {
            assert!(shown["running"].is_null(), "{shown}");
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no report: {shown}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Closed, the chat is saved and still shown.
    let (status, _, closed) = call_api(addr, &format!("/v1/chats/{id}/close"), "");
    assert_eq!(status, 200, "{closed}");
    assert_eq!(closed["state"], "closed", "{closed}");
    let (status, _, shown) = call(addr, "GET", &format!("/v1/chats/{id}"), Some(TOKEN), None);
    assert_eq!(status, 200, "{shown}");
    assert_eq!(shown["runs"], json!([run_id]), "{shown}");
}

#[test]
fn a_no_launches_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let srv = chat_server(tmp.path());
    let addr = srv.addr();
    let chat = start_chat(
        addr,
        &json!({"model": "sim", "message": "Plan a team offsite for about 20 people over two days"}),
    );
    let id = chat["id"].as_str().unwrap();
    let (status, _, after) = call_api(
        addr,
        &format!("/v1/chats/{id}/consent"),
        &json!({"granted": false}).to_string(),
    );
    assert_eq!(status, 200, "{after}");
    assert_eq!(of_type(&after, "consent")[0]["granted"], false, "{after}");
    assert!(of_type(&after, "run_launched").is_empty(), "{after}");
    assert_eq!(after["state"], "idle", "{after}");
    let (_, _, list) = call(addr, "GET", "/v1/runs", Some(TOKEN), None);
    assert_eq!(list["runs"], json!([]), "{list}");
    // No question waits now.
    let (status, _, v) = call_api(
        addr,
        &format!("/v1/chats/{id}/consent"),
        &json!({"granted": true}).to_string(),
    );
    assert_eq!(status, 409, "{v}");
}

#[test]
fn every_chat_route_needs_the_token() {
    let tmp = tempfile::tempdir().unwrap();
    let srv = chat_server(tmp.path());
    let addr = srv.addr();
    let id = start_chat(addr, &json!({"model": "sim"}))["id"]
        .as_str()
        .unwrap()
        .to_string();
    for (method, path) in [
        ("POST", "/v1/chats".to_string()),
        ("GET", format!("/v1/chats/{id}")),
        ("POST", format!("/v1/chats/{id}/messages")),
        ("POST", format!("/v1/chats/{id}/consent")),
        ("POST", format!("/v1/chats/{id}/close")),
    ] {
        for token in [None, Some("not-the-token-0123456789")] {
            let (status, _, v) = call(addr, method, &path, token, Some(r#"{"text":"hi"}"#));
            assert_eq!(status, 401, "{method} {path} with {token:?}: {v}");
            assert!(v["error"].as_str().unwrap().contains("token"), "{v}");
        }
    }
    // Nothing reached the chat.
    let (_, _, shown) = call(addr, "GET", &format!("/v1/chats/{id}"), Some(TOKEN), None);
    assert_eq!(shown["events"], json!([]), "{shown}");
}

#[test]
fn an_unknown_chat_is_404_and_bad_bodies_are_400_or_413() {
    let tmp = tempfile::tempdir().unwrap();
    let srv = chat_server(tmp.path());
    let addr = srv.addr();
    for (method, path, body) in [
        ("GET", "/v1/chats/nochat", None),
        (
            "POST",
            "/v1/chats/nochat/messages",
            Some(r#"{"text":"hi"}"#),
        ),
        (
            "POST",
            "/v1/chats/nochat/consent",
            Some(r#"{"granted":true}"#),
        ),
        ("POST", "/v1/chats/nochat/close", Some("")),
        ("GET", "/v1/chats/..", None),
    ] {
        let (status, _, v) = call(addr, method, path, Some(TOKEN), body);
        assert_eq!(status, 404, "{method} {path}: {v}");
        assert_eq!(v["status"], 404, "{v}");
    }
    let (status, _, v) = call_api(addr, "/v1/chats", r#"{"message": 3}"#);
    assert_eq!(status, 400, "{v}");
    let (status, _, v) = call_api(addr, "/v1/chats", r#"{"team": "nobody"}"#);
    assert_eq!(status, 400, "{v}");
    assert!(
        v["error"].as_str().unwrap().starts_with("team: 'nobody'"),
        "{v}"
    );
    let big = json!({"message": "x".repeat(128 << 10)}).to_string();
    let (status, _, v) = call_api(addr, "/v1/chats", &big);
    assert_eq!(status, 413, "{v}");
}

#[test]
fn past_the_cap_a_chat_gets_429_until_one_is_closed() {
    let tmp = tempfile::tempdir().unwrap();
    let srv = Server::start(
        ServeConfig::new(tmp.path().join("runs"), TOKEN)
            .chats_dir(tmp.path().join("chats"))
            .memory(false)
            .max_chats(1),
    )
    .unwrap();
    let addr = srv.addr();
    let id = start_chat(addr, &json!({"model": "sim"}))["id"]
        .as_str()
        .unwrap()
        .to_string();
    let (status, retry, v) = call_api(addr, "/v1/chats", "{}");
    assert_eq!((status, retry.as_deref()), (429, Some("1")), "{v}");
    assert_eq!(
        v["error"],
        "1 chats are open, the most this server holds at once: close one, or retry later"
    );
    let (status, _, v) = call_api(addr, &format!("/v1/chats/{id}/close"), "");
    assert_eq!(status, 200, "{v}");
    start_chat(addr, &json!({"model": "sim"}));
}
