//! `boardroom serve` steering runs (issue 27): server-sent events resumed
//! with Last-Event-ID, a WebSocket client that answers the master's
//! question and approves a call, the approvals route, cancel and resume.

mod serve_support;

use boardroom::serve::{ServeConfig, Server};
use serde_json::{Value, json};
use serve_support::*;

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

/// Cancel mid-run: the run stops, saved where it stood and listed as
/// resumable; resuming it over the API finishes it.
#[test]
fn a_run_cancelled_mid_way_is_resumable() {
    let tmp = tempfile::tempdir().unwrap();
    let srv = server(tmp.path(), 4);
    let addr = srv.addr();
    // The drafts wait for `go`, written once the cancel is taken: the run
    // cannot end before it (300 ms calls raced with it on a loaded machine).
    let held = tempfile::tempdir().unwrap();
    let go = held.path().join("go");
    let id = start_run(
        addr,
        json!({"task": "Plan a picnic", "model": format!("sim:hold={}", go.display())}),
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
    std::fs::write(&go, "").unwrap();
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

/// A follow-up sent the moment the answer is saved, while the master's
/// memory notes are still being written (slow here), waits for the run to
/// close instead of being refused as running.
#[test]
fn a_follow_up_right_after_the_answer_waits_for_the_memory_notes() {
    let tmp = tempfile::tempdir().unwrap();
    let srv = Server::start(ServeConfig::new(tmp.path(), TOKEN).max_runs(4)).unwrap();
    let addr = srv.addr();
    let id = start_run(
        addr,
        json!({"task": "Plan a picnic", "model": "sim:latency=1s,latency_phases=memory"}),
    );
    let dir = tmp.path().join(&id);
    let started = std::time::Instant::now();
    while !boardroom::store::load_run(&dir)
        .is_ok_and(|r| r.state.phase() == boardroom::store::RunPhase::Finished)
    {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "no answer saved"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let (status, _, v) = call(
        addr,
        "POST",
        &format!("/v1/runs/{id}/messages"),
        Some(TOKEN),
        Some(r#"{"text": "And if it rains?"}"#),
    );
    assert_eq!(status, 202, "{v}");
    let run = wait_run(addr, &id, |r| r["status"] != "running");
    assert_eq!(run["status"], "done", "{run}");
}
