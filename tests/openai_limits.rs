//! Limits shared across threads: the per-endpoint in-flight limit under 16
//! parallel members, a round whose every member is rate limited once, and
//! the run's token budget.

mod support;

use std::collections::HashSet;
use std::time::Duration;

use boardroom::testing::OpenAiProbe;
use boardroom::testing::{Sim, SimOptions};
use boardroom::{AgentSpec, EntryKind, OpenAi, RunStatus, Runtime, Team, TeamConfig};
use parking_lot::Mutex;
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

/// Who is asking, from the prompt: the master's plan, review or final
/// answer, or a member (by its soul).
fn role(req: &Request) -> String {
    let text = req.all_text();
    if text.contains("Split this task") {
        "plan".into()
    } else if text.contains("is over. This is the board") {
        "review".into()
    } else if text.contains("The work is over") {
        "final".into()
    } else {
        text.split("You are ")
            .nth(1)
            .and_then(|r| r.get(..3))
            .unwrap_or("unknown")
            .to_string()
    }
}

/// The protocol played straight: ASSIGN everyone, draft, DONE.
fn brain(req: &Request) -> Reply {
    let text = match role(req).as_str() {
        "plan" => (0..MEMBERS)
            .map(|i| format!("ASSIGN:m{i:02}:write part {i}\n"))
            .collect(),
        "review" => "DONE\nThe parts, merged.".to_string(),
        "final" => "The parts, merged.".to_string(),
        member => format!("Draft of {member}."),
    };
    Reply::answer(req, &text)
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
