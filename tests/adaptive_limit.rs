//! The adaptive in-flight limit of an endpoint, against a loopback server
//! that answers 429 to any request above K in progress at once: the limit
//! settles near K and no member is lost; two model names in team.yaml that
//! point at one endpoint share one limit. Counted, never timed.

mod support;

use std::sync::Arc;
use std::time::Duration;

use boardroom::config::{EndpointConfig, ModelConfig};
use boardroom::openai::LimitChange;
use boardroom::{ChatModel, OpenAi, RunStatus, Runtime, Team, TeamConfig};
use parking_lot::Mutex;
use support::team_server::{Capped, drafts};

/// The `capped` team of `members` members, member `i` on `model_of(i)`.
fn team(members: usize, config: TeamConfig, model_of: impl Fn(usize) -> Option<String>) -> Team {
    support::team_server::team("capped", members, config, model_of)
}

#[test]
fn a_server_that_429s_above_eight_at_once_gets_a_limit_near_eight_and_no_member_is_lost() {
    const K: usize = 8;
    const MEMBERS: usize = 64;
    let c = Capped::start(K, MEMBERS, Duration::from_millis(40));
    // Defaults: no max_in_flight, the default retry policy.
    const KEY: &str = "sk-adaptive-secret-0123456789";
    let model = OpenAi::builder(c.server.base_url(), "capped")
        .api_key(KEY)
        .build()
        .unwrap();
    let changes: Arc<Mutex<Vec<LimitChange>>> = Arc::default();
    let seen = Arc::clone(&changes);
    let _watch = model
        .watch_limit(Arc::new(move |ch: &LimitChange| {
            seen.lock().push(ch.clone())
        }))
        .expect("an OpenAI model has an endpoint limit");
    let (tx, rx) = crossbeam_channel::unbounded();
    let outcome = Runtime::new(
        team(MEMBERS, TeamConfig::default(), |_| None),
        model.clone(),
    )
    .events(tx)
    .run("Write sixty-four parts")
    .unwrap();
    // The run's own events carry the changes, and never the key.
    let events: Vec<boardroom::Event> = rx.try_iter().collect();
    let limit_events: Vec<&boardroom::Event> = events
        .iter()
        .filter(|e| matches!(e.kind, boardroom::EventKind::LimitChanged { .. }))
        .collect();
    assert!(
        limit_events.iter().any(|e| matches!(&e.kind,
            boardroom::EventKind::LimitChanged { reason, to, from, .. }
                if reason == "rate_limited" && to < from)),
        "a limit_changed event for the 429s"
    );
    for e in &events {
        let json = serde_json::to_string(e).unwrap();
        assert!(!json.contains("sk-adaptive"), "{json}");
    }
    assert!(!format!("{model:?}").contains("sk-adaptive"));
    assert_eq!(outcome.status, RunStatus::Done);
    assert_eq!(drafts(&outcome).len(), MEMBERS, "every member drafted");
    // It started generous, so the server refused some: the first wave's
    // refusals bring the limit to what the server took, and a refused
    // member waits for a slot, so it is refused again only by a probe of
    // growth. One run settles it (issue 14: it sawed 4..9 before, halving).
    // How many the walk down from the generous start costs depends on how
    // the refusals interleave with the answers (56..76 seen on a loaded
    // 2-core machine), so this bound is loose; the second run's is the
    // tight one.
    let first_refusals = c.rejected();
    assert!(first_refusals > 0);
    assert!(
        first_refusals <= 2 * MEMBERS,
        "{first_refusals} refusals for {MEMBERS} members"
    );
    let settled = |changes: &[LimitChange]| -> Vec<usize> {
        // Every limit from the first within K ± 2 on.
        changes
            .iter()
            .map(|ch| ch.to)
            .skip_while(|&to| to > K + 2)
            .collect()
    };
    let after_first = settled(&changes.lock());
    assert!(
        !after_first.is_empty() && after_first.iter().all(|to| (K - 2..=K + 2).contains(to)),
        "the limit settles at {}..={} once near {K}, not sawing: {:?}",
        K - 2,
        K + 2,
        changes.lock()
    );
    // A second run on the learnt limit: only growth probes are refused.
    let before = c.rejected();
    let outcome = Runtime::new(
        team(MEMBERS, TeamConfig::default(), |_| None),
        model.clone(),
    )
    .run("Write sixty-four parts")
    .unwrap();
    assert_eq!(drafts(&outcome).len(), MEMBERS, "every member drafted");
    let second_refusals = c.rejected() - before;
    assert!(
        second_refusals <= MEMBERS / K,
        "{second_refusals} refusals in the second run"
    );
    let limit = model.in_flight_limit();
    assert!(
        (K - 2..=K + 2).contains(&limit),
        "the limit is {limit} after two runs, not near {K}; changes: {:?}",
        changes.lock()
    );
    assert!(
        settled(&changes.lock())
            .iter()
            .all(|to| (K - 2..=K + 2).contains(to)),
        "{:?}",
        changes.lock()
    );
    let changes = changes.lock();
    assert!(limit_events.len() <= changes.len());
    assert!(
        changes
            .iter()
            .any(|ch| ch.reason == boardroom::openai::LimitReason::RateLimited && ch.to < ch.from),
        "a decrease for the 429s is reported: {changes:?}"
    );
    assert!(
        changes
            .iter()
            .all(|ch| ch.endpoint.starts_with("http://127.0.0.1:"))
    );
    // The accepted requests never went above K (the server's own count).
    assert!(c.peak_accepted() <= K);
}

#[test]
fn two_model_names_on_one_endpoint_share_one_limit() {
    const K: usize = 4;
    const MEMBERS: usize = 24;
    let c = Capped::start(K, MEMBERS, Duration::from_millis(30));
    let endpoint = |model: &str| {
        ModelConfig::Endpoint(EndpointConfig {
            base_url: Some(c.server.base_url()),
            model: Some(model.into()),
            ..EndpointConfig::default()
        })
    };
    let mut config = TeamConfig::default();
    config.models.insert("fast".into(), endpoint("small"));
    config.models.insert("smart".into(), endpoint("large"));
    let team = team(MEMBERS, config, |i| {
        Some(if i % 2 == 0 { "fast" } else { "smart" }.to_string())
    });
    // Watch through each name: the run builds its own instances, and one
    // shared limit tells both watchers of every change, whichever name's
    // agent caused it (separate limits would each see their own half).
    let watch = |name: &str| {
        let seen: Arc<Mutex<Vec<LimitChange>>> = Arc::default();
        let s = Arc::clone(&seen);
        let w = team
            .model(name)
            .unwrap()
            .watch_limit(Arc::new(move |ch: &LimitChange| s.lock().push(ch.clone())))
            .unwrap();
        (seen, w)
    };
    let (by_fast, _w1) = watch("fast");
    let (by_smart, _w2) = watch("smart");
    let default = OpenAi::builder(c.server.base_url(), "lead")
        .build()
        .unwrap();
    let outcome = Runtime::new(team, default).run("Write the parts").unwrap();
    assert_eq!(outcome.status, RunStatus::Done);
    assert_eq!(drafts(&outcome).len(), MEMBERS);
    let (fast, smart) = (by_fast.lock(), by_smart.lock());
    assert!(
        fast.iter()
            .any(|ch| ch.reason == boardroom::openai::LimitReason::RateLimited),
        "the 429s brought the limit down: {fast:?}"
    );
    assert_eq!(*fast, *smart, "one limit: both names saw the same changes");
    assert!(c.rejected() > 0);
    assert!(c.peak_accepted() <= K);
    assert!(
        c.rejected() < 2 * MEMBERS,
        "{} refusals for {MEMBERS} members",
        c.rejected()
    );
}
