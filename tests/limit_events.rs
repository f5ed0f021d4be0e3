//! Every change of an endpoint's in-flight limit that a run's own calls
//! make reaches the run's event stream as `limit_changed`, the change made
//! by the run's last call included, and before `run_finished` (issue 14:
//! "LimitChanged events may be dropped at run end"). Counted against a
//! watcher of the endpoint itself, never timed.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use boardroom::openai::LimitChange;
use boardroom::{
    AgentSpec, ChatModel, Event, EventKind, OpenAi, RunStatus, Runtime, Team, TeamConfig,
};
use parking_lot::Mutex;
use support::{Reply, Server};

const MEMBERS: usize = 6;

#[test]
fn every_limit_change_of_a_run_is_an_event_before_it_finishes() {
    // The first draft is refused once while the other drafts are in flight
    // (a refusal alone says nothing about concurrency and changes no
    // limit, issue 28): the limit comes down, and grows again as the
    // answers come back.
    let drafts = Arc::new(AtomicUsize::new(0));
    let d = Arc::clone(&drafts);
    let server = Server::start(move |req| {
        let text = req.all_text();
        if text.contains("Split this task") {
            let plan: String = (0..MEMBERS)
                .map(|i| format!("ASSIGN:m{i}:write part {i}\n"))
                .collect();
            Reply::answer(req, &plan)
        } else if text.contains("Round 1 of") {
            Reply::answer(req, "DONE\nThe parts, merged.")
        } else if d.fetch_add(1, Ordering::SeqCst) == 0 {
            let refused = Reply::status(429, r#"{"error":{"message":"slow down"}}"#)
                .with_header("Retry-After", "0");
            Reply::Delayed(Duration::from_millis(500), Box::new(refused))
        } else {
            Reply::Delayed(
                Duration::from_millis(1500),
                Box::new(Reply::answer(req, "A draft.")),
            )
        }
    });
    // A small ceiling: answers grow it back within the run.
    let model = OpenAi::builder(server.base_url(), "limit-events")
        .max_in_flight(4)
        .build()
        .unwrap();
    let watched: Arc<Mutex<Vec<LimitChange>>> = Arc::default();
    let w = Arc::clone(&watched);
    let _watch = model
        .watch_limit(Arc::new(move |c: &LimitChange| w.lock().push(c.clone())))
        .expect("an OpenAI model has an endpoint limit");
    let mut agents = vec![AgentSpec::master("lead", "You lead the team.")];
    agents.extend((0..MEMBERS).map(|i| AgentSpec::member(format!("m{i}"), "a part", "You work.")));
    let team = Team::new("limits", TeamConfig::default(), agents).unwrap();
    let (tx, rx) = crossbeam_channel::unbounded();
    let outcome = Runtime::new(team, model)
        .events(tx)
        .run("Write the parts")
        .unwrap();
    assert_eq!(outcome.status, RunStatus::Done);
    assert!(
        drafts.load(Ordering::SeqCst) > MEMBERS,
        "a draft was refused once and sent again"
    );
    let events: Vec<Event> = rx.try_iter().collect();
    let limit: Vec<(usize, usize, String)> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::LimitChanged {
                from, to, reason, ..
            } => Some((*from, *to, reason.to_string())),
            _ => None,
        })
        .collect();
    let watched: Vec<(usize, usize, String)> = watched
        .lock()
        .iter()
        .map(|c| (c.from, c.to, c.reason.as_str().to_string()))
        .collect();
    assert!(
        watched.iter().any(|(_, _, r)| r == "rate_limited"),
        "the 429 changed the limit: {watched:?}"
    );
    assert_eq!(limit, watched, "every change is an event, in order");
    let finished = events
        .iter()
        .position(|e| matches!(e.kind, EventKind::RunFinished { .. }))
        .expect("run_finished");
    assert_eq!(finished, events.len() - 1, "run_finished is the last event");
}
