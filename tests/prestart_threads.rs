//! A run starts its members' threads ahead of time while the master plans,
//! but a bounded number of them (issue 14, review item 4): a 2500-member
//! team whose master assigns one task does not start 2500 threads. Counted
//! from the process's own thread list (`/proc/self/task`), never timed.
//!
//! On the own pool, which runs a team this wide under `auto` (issue 24):
//! an explicit `rayon` executor's 2048 threads spin for work while they
//! start, over a minute of this test on two cores (the width where rayon
//! stops scaling, which `auto` stays below). Its prestart is bounded by the
//! same caller (the blackboard driver's `PRESTART`).
#![cfg(target_os = "linux")]

use std::sync::Arc;
use std::time::{Duration, Instant};

use boardroom::{AgentSpec, RunStatus, Runtime, Team, TeamConfig};
use parking_lot::Mutex;

mod support;

use support::models::Phased;
use support::threads::{member_threads, member_threads_left};

const MEMBERS: usize = 2500;
/// The most threads a run starts ahead of its first member phase.
const PRESTART: usize = 2048;

/// Notes `n` in `most` where it is the most member threads seen yet.
fn saw(most: &Mutex<usize>, n: usize) {
    let mut most = most.lock();
    *most = (*most).max(n);
}

#[test]
fn a_huge_team_given_one_task_starts_a_bounded_number_of_threads() {
    let mut agents = vec![AgentSpec::master("lead", "You lead.")];
    agents.extend((0..MEMBERS).map(|i| AgentSpec::member(format!("m{i}"), "a part", "You work.")));
    let team = Team::new("huge", TeamConfig::default(), agents).unwrap();
    let most = Arc::new(Mutex::new(0));
    let (at_plan, at_draft) = (Arc::clone(&most), Arc::clone(&most));
    // A master that assigns one task; the most member threads seen noted.
    let model = Phased::new(
        "one-task",
        move |_| {
            // While the master plans, the threads start: watch them
            // until they pass the bound, or stay put a moment, or 3 s.
            let until = Instant::now() + Duration::from_secs(3);
            let (mut last, mut since) = (usize::MAX, Instant::now());
            loop {
                let n = member_threads();
                saw(&at_plan, n);
                if n != last {
                    (last, since) = (n, Instant::now());
                }
                let settled = n > 0 && since.elapsed() > Duration::from_millis(300);
                if n > PRESTART || settled || Instant::now() > until {
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            "ASSIGN:m0:the one part".to_string()
        },
        move |_| {
            saw(&at_draft, member_threads());
            "A draft.".to_string()
        },
        "The part.",
    );
    let run = Runtime::new(team, model)
        .max_rounds(1)
        .run("Write one part")
        .unwrap();
    assert_eq!(run.status, RunStatus::Done);
    let most = *most.lock();
    assert!(most >= 1, "the draft ran on a member thread");
    assert!(
        most <= PRESTART,
        "{most} member threads for one task of a {MEMBERS}-member team"
    );
    assert_eq!(member_threads_left(), 0, "member threads after the run");
}
