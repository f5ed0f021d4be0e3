//! A run whose last round is under review ends its members' threads while
//! the master reviews, not after the run (issue 14): the caller of a
//! 2048-member run waited ~100 ms at the end for them. A run that may
//! still assign another round keeps them. Counted from the process's own
//! thread list, never timed, on both executors (issue 24).
#![cfg(target_os = "linux")]

use std::time::{Duration, Instant};

use boardroom::bench::bench_team;
use boardroom::testing::Sim;
use boardroom::{
    ChatModel, ChatRequest, ChatResponse, Executor, ModelError, Phase, RunStatus, Runtime,
};
use parking_lot::Mutex;

mod support;

use support::threads::{member_threads, member_threads_left};

/// The sim, but its review first notes the member threads alive: after
/// waiting (at most 30 s: threads end slowly on a loaded machine) for
/// them to end (`wait: true`), or for all of them to be seen (`wait:
/// false`, at most 5 s: on a loaded machine a thread started for the
/// round may not have taken its name yet; threads ended by mistake are
/// never all seen).
struct Watch {
    sim: Sim,
    wait: bool,
    seen: Mutex<Option<usize>>,
}

/// The member threads of the team the tests run.
const MEMBERS: usize = 16;

impl ChatModel for Watch {
    fn name(&self) -> String {
        "watch".into()
    }

    fn chat(
        &self,
        req: &ChatRequest,
        on_delta: &mut dyn FnMut(&str),
    ) -> Result<ChatResponse, ModelError> {
        if req.phase == Phase::Review {
            let until = Instant::now() + Duration::from_secs(if self.wait { 30 } else { 5 });
            let mut n = member_threads();
            let done = |n: usize| if self.wait { n == 0 } else { n >= MEMBERS };
            while !done(n) && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(5));
                n = member_threads();
            }
            if !self.wait {
                // Still all there a moment later: threads let go at this
                // review would be ending by then.
                std::thread::sleep(Duration::from_millis(150));
                n = member_threads();
            }
            *self.seen.lock() = Some(n);
        }
        self.sim.chat(req, on_delta)
    }
}

/// How the run is made: the caller waits for it (`Runtime::run`), or it
/// is started and waited for, its process going on after it or not
/// (`Runtime::exits_after_run`).
#[derive(Clone, Copy, Debug)]
enum Caller {
    Runs,
    Starts,
    StartsThenExits,
}

fn review_saw(executor: Executor, rounds: u32, wait: bool) -> usize {
    review_saw_as(Caller::Runs, executor, rounds, wait)
}

fn review_saw_as(caller: Caller, executor: Executor, rounds: u32, wait: bool) -> usize {
    let model = std::sync::Arc::new(Watch {
        sim: Sim::new(),
        wait,
        seen: Mutex::new(None),
    });
    let runtime = Runtime::with_shared_model(bench_team(MEMBERS).unwrap(), model.clone())
        .max_rounds(rounds)
        .executor(executor);
    let run = match caller {
        Caller::Runs => runtime.run("Write the parts"),
        Caller::Starts => runtime.start("Write the parts").and_then(|h| h.wait()),
        Caller::StartsThenExits => runtime
            .exits_after_run()
            .start("Write the parts")
            .and_then(|h| h.wait()),
    }
    .unwrap();
    assert_eq!(run.status, RunStatus::Done);
    if matches!(caller, Caller::StartsThenExits) {
        // Its process would exit now: the threads are still there for
        // that exit to end (the run waits two seconds before ending them),
        // and still a moment later: threads ended with the result would be
        // gone by then.
        for wait in [0, 300] {
            std::thread::sleep(Duration::from_millis(wait));
            assert_eq!(
                member_threads(),
                MEMBERS,
                "{executor}: member threads kept {wait} ms after the result for the exit"
            );
        }
    }
    let seen = *model.seen.lock();
    let seen = seen.expect("the master reviewed");
    // The run has returned (a started run's thread joins its members
    // just after, or two seconds after when its process was to exit):
    // every thread it started is gone.
    assert_eq!(
        member_threads_left(),
        0,
        "{executor}: member threads after the run"
    );
    seen
}

/// One test (the thread count is the whole process's).
#[test]
fn the_last_rounds_review_ends_the_member_threads_an_earlier_one_keeps_them() {
    for executor in [Executor::Rayon, Executor::Threads] {
        // One round allowed: its review is the last; the 16 threads end.
        assert_eq!(
            review_saw(executor, 1, true),
            0,
            "{executor}: member threads left in the last review"
        );
        // Three allowed: the first review may assign a second round.
        assert_eq!(
            review_saw(executor, 3, false),
            MEMBERS,
            "{executor}: member threads kept for a next round"
        );
        // Issue 25: a started run ends them in its last review too, unless
        // its process exits once it has the result: then they are kept
        // through the review and the result, for the exit to end at once
        // (here, with no exit, they end two seconds after the result).
        assert_eq!(
            review_saw_as(Caller::Starts, executor, 1, true),
            0,
            "{executor}: a started run's member threads left in the last review"
        );
        assert_eq!(
            review_saw_as(Caller::StartsThenExits, executor, 1, false),
            MEMBERS,
            "{executor}: member threads kept for the process's exit"
        );
    }
}
