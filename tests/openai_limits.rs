//! Limits shared across threads: the per-endpoint in-flight limit under 16
//! parallel members, a round whose every member is rate limited once, the
//! endpoint's one pool of kept-alive connections, and the run's token
//! budget.

mod support;

use std::collections::HashSet;
use std::time::Duration;

use boardroom::board::EntryKind;
use boardroom::testing::OpenAiProbe;
use boardroom::testing::{Sim, SimOptions};
use boardroom::{
    AgentSpec, ChatModel, ChatRequest, Message, OpenAi, Phase, RunStatus, Runtime, Team, TeamConfig,
};
use parking_lot::Mutex;
use support::team_server::{self, role};
use support::{Reply, Request, Server};

const MEMBERS: usize = 16;

fn team() -> Team {
    let mut agents = vec![AgentSpec::master("lead", "You lead the team.")];
    for i in 0..MEMBERS {
        agents.push(AgentSpec::member(
            format!("m{i:02}"),
            "Writes one part",
            format!("You are m{i:02}."),
        ));
    }
    Team::new("sixteen", TeamConfig::default(), agents).unwrap()
}

/// The protocol played straight: ASSIGN everyone, draft, DONE.
fn brain(req: &Request) -> Reply {
    team_server::brain(req, MEMBERS)
}

fn drafts(outcome: &boardroom::RunOutcome) -> HashSet<String> {
    outcome
        .board
        .iter()
        .filter(|e| e.kind == EntryKind::Draft)
        .map(|e| e.author.clone())
        .collect()
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
