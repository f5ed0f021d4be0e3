//! A run starts its members' threads ahead of time while the master plans,
//! but a bounded number of them (issue 14, review item 4): a 2500-member
//! team whose master assigns one task does not start 2500 threads. Counted
//! from the process's own thread list (`/proc/self/task`), never timed.
#![cfg(target_os = "linux")]

use std::time::{Duration, Instant};

use boardroom::{
    AgentSpec, ChatModel, ChatRequest, ChatResponse, ModelError, Phase, RunStatus, Runtime, Team,
    TeamConfig, Usage,
};
use parking_lot::Mutex;

const MEMBERS: usize = 2500;
/// The most threads a run starts ahead of its first member phase.
const PRESTART: usize = 2048;

/// The member pool's threads now (`boardroom-member-N`; the kernel keeps
/// 15 bytes of a thread's name). The only test of this binary, so the
/// only run.
fn member_threads() -> usize {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        panic!("no /proc/self/task");
    };
    tasks
        .filter_map(Result::ok)
        .filter(|t| {
            std::fs::read_to_string(t.path().join("comm"))
                .is_ok_and(|c| c.starts_with("boardroom-membe"))
        })
        .count()
}

/// A master that assigns one task; notes the most member threads seen.
struct OneTask {
    most: Mutex<usize>,
}

impl OneTask {
    fn saw(&self, n: usize) {
        let mut most = self.most.lock();
        *most = (*most).max(n);
    }
}

impl ChatModel for &'static OneTask {
    fn name(&self) -> String {
        "one-task".into()
    }

    fn chat(
        &self,
        req: &ChatRequest,
        _on_delta: &mut dyn FnMut(&str),
    ) -> Result<ChatResponse, ModelError> {
        let text = match req.phase {
            Phase::Plan => {
                // While the master plans, the threads start: watch them
                // until they pass the bound, or stay put a moment, or 3 s.
                let until = Instant::now() + Duration::from_secs(3);
                let (mut last, mut since) = (usize::MAX, Instant::now());
                loop {
                    let n = member_threads();
                    self.saw(n);
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
            }
            Phase::Draft => {
                let n = member_threads();
                self.saw(n);
                "A draft.".to_string()
            }
            _ => "DONE\nThe part.".to_string(),
        };
        Ok(ChatResponse::text(text, Usage::default()))
    }
}

#[test]
fn a_huge_team_given_one_task_starts_a_bounded_number_of_threads() {
    let mut agents = vec![AgentSpec::master("lead", "You lead.")];
    agents.extend((0..MEMBERS).map(|i| AgentSpec::member(format!("m{i}"), "a part", "You work.")));
    let team = Team::new("huge", TeamConfig::default(), agents).unwrap();
    let model: &'static OneTask = Box::leak(Box::new(OneTask {
        most: Mutex::new(0),
    }));
    let run = Runtime::new(team, model)
        .max_rounds(1)
        .run("Write one part")
        .unwrap();
    assert_eq!(run.status, RunStatus::Done);
    let most = *model.most.lock();
    assert!(most >= 1, "the draft ran on a member thread");
    assert!(
        most <= PRESTART,
        "{most} member threads for one task of a {MEMBERS}-member team"
    );
}
