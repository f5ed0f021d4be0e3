//! Issue 28, finding 6: a wave of 429s with `Retry-After` (each agent's
//! call refused once, the plan call too, while it was alone in flight).
//! Members were lost on the policy's attempt count, and the wave walked
//! the adaptive limit down to one, from where the round grew it back one
//! slot a window (1024 members took 219.6 s instead of 2.6 s). A refusal
//! that says when to come back is retried until the call's deadline, and
//! the pause it asks for, not the in-flight limit, answers it.

mod support;

use std::collections::HashSet;
use std::sync::Arc;

use boardroom::openai::{LimitChange, LimitReason, RetryPolicy};
use boardroom::{ChatModel, OpenAi, RunStatus, Runtime, TeamConfig};
use parking_lot::Mutex;
use support::Reply;
use support::team_server::{self, drafts, role};

const MEMBERS: usize = 48;

#[test]
fn finding6_a_wave_of_429s_loses_no_member_and_leaves_the_limit() {
    // The first request of every agent (the master's plan call included)
    // gets 429 with Retry-After: 1.
    let refused: Mutex<HashSet<String>> = Mutex::new(HashSet::new());
    let server = support::Server::start(move |req| {
        if refused.lock().insert(role(req)) {
            return Reply::status(429, r#"{"error":{"message":"rate limited"}}"#)
                .with_header("Retry-After", "1");
        }
        team_server::brain(req, MEMBERS)
    });
    // One attempt: every retry the run makes is one the policy's count
    // does not end (a refusal that says when to come back).
    let model = OpenAi::builder(server.base_url(), "test-model")
        .retry(RetryPolicy {
            max_attempts: 1,
            ..RetryPolicy::default()
        })
        .build()
        .unwrap();
    let changes: Arc<Mutex<Vec<LimitChange>>> = Arc::default();
    let seen = Arc::clone(&changes);
    let _watch = model
        .watch_limit(Arc::new(move |ch: &LimitChange| {
            seen.lock().push(ch.clone())
        }))
        .unwrap();
    let team = team_server::team("wave", MEMBERS, TeamConfig::default(), |_| None);
    let outcome = Runtime::new(team, model.clone())
        .run("Write the parts")
        .unwrap();
    assert_eq!(outcome.status, RunStatus::Done, "{}", outcome.answer);
    assert_eq!(drafts(&outcome).len(), MEMBERS, "every member drafted");
    // Refusals that said when to come back: the pause answered them, and
    // the limit stayed where it was (a latency change may still come).
    let changes = changes.lock();
    assert!(
        !changes.iter().any(|c| c.reason == LimitReason::RateLimited),
        "{changes:?}"
    );
}
