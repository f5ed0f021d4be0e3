//! Limits shared across threads: the per-endpoint in-flight limit under 16
//! parallel members, a round whose every member is rate limited once, the
//! endpoint's one pool of kept-alive connections (and a connection whose
//! body never ends after `[DONE]`, dropped instead of holding the call),
//! and the run's token budget.

mod support;

use std::collections::HashSet;
use std::time::Duration;

use boardroom::testing::OpenAiProbe;
use boardroom::testing::{Sim, SimOptions};
use boardroom::{
    ChatModel, ChatRequest, Message, OpenAi, Phase, RunStatus, Runtime, Team, TeamConfig,
};
use parking_lot::Mutex;
use support::team_server::{self, drafts, role};
use support::{Reply, Request, Server};

const MEMBERS: usize = 16;

/// The `sixteen` team: `lead` and members `m00` to `m15`.
fn team() -> Team {
    team_server::team("sixteen", MEMBERS, TeamConfig::default(), |_| None)
}

/// The protocol played straight: ASSIGN everyone, draft, DONE.
fn brain(req: &Request) -> Reply {
    team_server::brain(req, MEMBERS)
}

#[test]
fn max_in_flight_holds_under_sixteen_parallel_members() {
    // Each answer takes a moment so that members overlap at the server.
    let server =
        Server::start(|req| Reply::Delayed(Duration::from_millis(30), Box::new(brain(req))));
    let model = OpenAi::builder(server.base_url(), "test-model")
        .max_in_flight(4)
        .build()
        .unwrap();
    let outcome = Runtime::new(team(), model)
        .run("Write sixteen parts")
        .unwrap();
    assert_eq!(outcome.status, RunStatus::Done);
    assert_eq!(drafts(&outcome).len(), MEMBERS);
    assert!(
        server.peak_in_flight() <= 4,
        "peak {} requests at once with max_in_flight 4",
        server.peak_in_flight()
    );
    assert_eq!(server.requests(), 1 + MEMBERS + 1);
}

#[test]
fn sixteen_members_each_rate_limited_once_all_draft() {
    // The first request of each member gets 429 with Retry-After: 1.
    let limited: Mutex<HashSet<String>> = Mutex::new(HashSet::new());
    let server = Server::start(move |req| {
        let who = role(req);
        if who.starts_with('m') && limited.lock().insert(who) {
            return Reply::status(429, r#"{"error":{"message":"rate limited"}}"#)
                .with_header("Retry-After", "1");
        }
        brain(req)
    });
    let model = OpenAi::builder(server.base_url(), "test-model")
        .max_in_flight(MEMBERS)
        .build()
        .unwrap();
    let outcome = Runtime::new(team(), model.clone())
        .run("Write sixteen parts")
        .unwrap();
    assert_eq!(outcome.status, RunStatus::Done);
    assert_eq!(
        drafts(&outcome).len(),
        MEMBERS,
        "all 16 drafts on the board"
    );
    assert_eq!(model.retry_waits(), vec![Duration::from_secs(1); MEMBERS]);
    assert_eq!(server.requests(), 1 + 2 * MEMBERS + 1);
}

#[test]
fn calls_reuse_the_endpoints_kept_alive_connections_streamed_or_not() {
    // Issue 14: a streamed answer read to `[DONE]` and no further left its
    // connection unfinished, so ureq closed it: every call opened a new
    // one (a TCP, and for real servers a TLS, handshake per call).
    let server = Server::start(|req| {
        let text = format!("Draft of {}.", role(req));
        if req.streaming() {
            Reply::stream_kept_alive(&[&text])
        } else {
            Reply::completion(&text)
        }
    });
    let streamed = OpenAi::builder(server.base_url(), "small").build().unwrap();
    // Another model name on the same endpoint shares its pool.
    let whole = OpenAi::builder(server.base_url(), "large")
        .stream(false)
        .build()
        .unwrap();
    let req = ChatRequest::new(
        "m00",
        Phase::Draft,
        1,
        vec![Message::system("You are m00."), Message::user("Write.")],
    );
    for i in 0..6 {
        let model = if i % 2 == 0 { &streamed } else { &whole };
        let answer = model.chat(&req, &mut |_| {}).unwrap();
        assert_eq!(answer.text, "Draft of m00.");
    }
    assert_eq!(server.requests(), 6);
    assert_eq!(
        server.connections(),
        1,
        "six calls, one after another, one connection"
    );
    // Three rounds of 16 at once: never more connections than calls at
    // once (the first is reused too), not one a call.
    for _ in 0..3 {
        std::thread::scope(|s| {
            for _ in 0..MEMBERS {
                s.spawn(|| streamed.chat(&req, &mut |_| {}).unwrap());
            }
        });
    }
    assert_eq!(server.requests(), 6 + 3 * MEMBERS);
    assert!(
        server.connections() <= MEMBERS,
        "{} connections for {} calls, at most {MEMBERS} at once",
        server.connections(),
        server.requests()
    );
}

#[test]
fn a_spent_budget_ends_the_run_with_the_drafts_so_far() {
    let sim = Sim::with_options(SimOptions {
        never_done: true,
        ..SimOptions::default()
    });
    let outcome = Runtime::new(Team::builtin().unwrap(), sim)
        .token_budget(3000)
        .max_rounds(20)
        .run("Write a short guide to brewing green tea")
        .unwrap();
    assert_eq!(outcome.status, RunStatus::BudgetExhausted);
    assert!(outcome.usage.total() >= 3000);
    assert!(outcome.rounds < 20);
    assert!(
        outcome.answer.starts_with("The token budget ran out"),
        "{}",
        outcome.answer
    );
    assert!(
        outcome.answer.contains("## "),
        "the drafts so far: {}",
        outcome.answer
    );
    let by_agent: u64 = outcome.usage_by_agent.values().map(|u| u.total()).sum();
    assert_eq!(by_agent, outcome.usage.total());
    assert!(outcome.usage_by_agent.contains_key("master"));
}

#[test]
fn token_budget_from_team_yaml() {
    let dir = tempfile::tempdir().unwrap();
    let team_dir = dir.path();
    std::fs::create_dir_all(team_dir.join("agents")).unwrap();
    std::fs::create_dir_all(team_dir.join("souls")).unwrap();
    for (name, role) in [("lead", "master"), ("writer", "member")] {
        std::fs::write(
            team_dir.join(format!("agents/{name}.md")),
            format!("---\nname: {name}\nrole: {role}\n---\n"),
        )
        .unwrap();
        std::fs::write(team_dir.join(format!("souls/{name}.md")), "You work.").unwrap();
    }
    std::fs::write(
        team_dir.join("team.yaml"),
        "token_budget: 1\nprotocol: json\n",
    )
    .unwrap();
    let team = Team::load(team_dir).unwrap();
    assert_eq!(team.config().token_budget, Some(1));
    // The plan used the budget: no member ran, so there is no answer to
    // give (issue 9: not an empty answer with exit 0).
    let err = Runtime::new(team, Sim::new()).run("Say hi").unwrap_err();
    assert_eq!(
        err.to_string(),
        "the token budget ran out before any member produced a usable draft"
    );
}

/// A server that streams a kept-alive (chunked) answer up to `[DONE]` and
/// then never ends the body: the connection stays open, silent, until the
/// client closes it. Counts the connections it accepted and those the
/// client closed.
struct NeverEnds {
    port: u16,
    accepted: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    closed_by_client: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl NeverEnds {
    fn start() -> NeverEnds {
        use std::io::{BufRead, BufReader, Read, Write};
        use std::sync::atomic::Ordering;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let closed_by_client = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (a, c) = (accepted.clone(), closed_by_client.clone());
        // The accept loop and connection threads end with the test process
        // (a held connection is closed by the client; nothing here waits).
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                a.fetch_add(1, Ordering::SeqCst);
                let c = c.clone();
                std::thread::spawn(move || {
                    let mut out = stream.try_clone().unwrap();
                    let mut r = BufReader::new(stream);
                    let mut length = 0;
                    loop {
                        let mut line = String::new();
                        if r.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        let line = line.trim_end().to_ascii_lowercase();
                        if line.is_empty() {
                            break;
                        }
                        if let Some(v) = line.strip_prefix("content-length:") {
                            length = v.trim().parse().unwrap();
                        }
                    }
                    let mut body = vec![0; length];
                    r.read_exact(&mut body).unwrap();
                    let chunk = serde_json::json!({"choices": [{"index": 0,
                        "delta": {"content": "All of it."}, "finish_reason": "stop"}]});
                    let events = format!("data: {chunk}\n\ndata: [DONE]\n\n");
                    // The chunked body's last chunk (`0\r\n\r\n`) never comes.
                    let reply = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\
                         Transfer-Encoding: chunked\r\n\r\n{:x}\r\n{events}\r\n",
                        events.len()
                    );
                    out.write_all(reply.as_bytes()).unwrap();
                    out.flush().unwrap();
                    // Silent until the client goes.
                    let mut buf = [0u8; 256];
                    loop {
                        match r.read(&mut buf) {
                            Ok(0) | Err(_) => {
                                c.fetch_add(1, Ordering::SeqCst);
                                return;
                            }
                            Ok(_) => {}
                        }
                    }
                });
            }
        });
        NeverEnds {
            port,
            accepted,
            closed_by_client,
        }
    }
}

/// Issue 14: after `[DONE]` the rest of a kept-alive body is read so that
/// its connection is reused, but a server that never ends the body held
/// the call until its deadline (a minute here). The drain is bounded in
/// time: the call returns its answer, the connection is dropped (the
/// server sees the client close it) and the next call opens a new one.
#[test]
fn a_body_never_ended_after_done_costs_its_connection_not_the_call() {
    use std::sync::atomic::Ordering;
    let server = NeverEnds::start();
    let model = OpenAi::builder(format!("http://127.0.0.1:{}/v1", server.port), "m")
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap();
    let req = ChatRequest::new(
        "m00",
        Phase::Draft,
        1,
        vec![Message::system("You are m00."), Message::user("Write.")],
    );
    for call in 1..=2 {
        let (tx, rx) = crossbeam_channel::bounded(1);
        let (m, r) = (model.clone(), req.clone());
        std::thread::spawn(move || {
            let _ = tx.send(m.chat(&r, &mut |_| {}).map(|a| a.text));
        });
        // A sanity bound far above the drain's 100 ms, far below the
        // call's one-minute deadline.
        let answer = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("the call returns without waiting for the body's end");
        assert_eq!(answer.unwrap(), "All of it.");
        assert_eq!(
            server.accepted.load(Ordering::SeqCst),
            call,
            "call {call} opened a connection of its own"
        );
    }
    // Both held connections were closed by the client, not kept idle
    // (waited for up to 30 s: 2 s raced on a loaded machine).
    for _ in 0..3000 {
        if server.closed_by_client.load(Ordering::SeqCst) == 2 {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(server.closed_by_client.load(Ordering::SeqCst), 2);
}
