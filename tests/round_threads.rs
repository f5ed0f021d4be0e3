//! A blackboard run starts its members' threads once and reuses them for
//! every phase and round (issue 14: "member threads are started per phase,
//! not once per run"). Counted by the identity of the threads that made
//! the members' calls, never timed.

use std::collections::HashSet;
use std::sync::Arc;
use std::thread::ThreadId;

use boardroom::board::EntryKind;
use boardroom::testing::{Sim, SimOptions};
use boardroom::{
    AgentSpec, ChatModel, ChatRequest, ChatResponse, ModelError, Phase, RunStatus, Runtime, Team,
    TeamConfig,
};
use parking_lot::Mutex;

/// The sim, noting which thread made each member call.
struct Noting {
    sim: Sim,
    threads: Arc<Mutex<Vec<(Phase, ThreadId, String)>>>,
}

impl ChatModel for Noting {
    fn name(&self) -> String {
        "noting".into()
    }

    fn chat(
        &self,
        req: &ChatRequest,
        on_delta: &mut dyn FnMut(&str),
    ) -> Result<ChatResponse, ModelError> {
        if matches!(req.phase, Phase::Draft | Phase::Challenge) {
            let t = std::thread::current();
            self.threads
                .lock()
                .push((req.phase, t.id(), t.name().unwrap_or("").to_string()));
        }
        self.sim.chat(req, on_delta)
    }
}

#[test]
fn two_rounds_of_drafts_and_challenges_run_on_the_threads_the_run_started_once() {
    const MEMBERS: usize = 4;
    let mut agents = vec![AgentSpec::master("lead", "You lead.")];
    agents.extend(
        (0..MEMBERS)
            .map(|i| AgentSpec::member(format!("m{i}"), "a part", "You work.").challenger()),
    );
    let team = Team::new("threads", TeamConfig::default(), agents).unwrap();
    let threads = Arc::new(Mutex::new(Vec::new()));
    let model = Noting {
        // Challenged in round 1: the master sends everyone back for round 2.
        sim: Sim::with_options(SimOptions {
            challenge_round: Some(1),
            ..SimOptions::default()
        }),
        threads: Arc::clone(&threads),
    };
    let run = Runtime::new(team, model).run("Write a guide").unwrap();
    assert_eq!(run.status, RunStatus::Done);
    assert_eq!(run.rounds, 2);
    let drafts = run
        .board
        .iter()
        .filter(|e| e.kind == EntryKind::Draft)
        .count();
    assert_eq!(drafts, 2 * MEMBERS);
    let calls = threads.lock().clone();
    let phases = |p: Phase| calls.iter().filter(|c| c.0 == p).count();
    // Four parallel phases: two rounds of drafts and of challenges.
    assert_eq!(phases(Phase::Draft), 2 * MEMBERS);
    assert_eq!(phases(Phase::Challenge), 2 * MEMBERS);
    let ids: HashSet<ThreadId> = calls.iter().map(|c| c.1).collect();
    assert_eq!(
        ids.len(),
        MEMBERS,
        "16 member calls in 4 phases ran on the run's {MEMBERS} threads: {calls:?}"
    );
    assert!(
        calls.iter().all(|c| c.2.starts_with("boardroom-member-")),
        "named pool threads: {calls:?}"
    );
}
