//! The run core through `Runtime::drive`, which only the crate may call
//! (it skips resume's checks).

use super::{RunState, Runtime};
use crate::Team;
use crate::testing::Sim;

/// A run id is one name inside the runs directory: a caller's state whose
/// id is a path (or empty) is refused before anything is written.
#[test]
fn a_run_id_that_is_not_one_name_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path().join("runs");
    std::fs::create_dir_all(&runs).unwrap();
    for id in ["../escaped", "", ".", "a/b", "/abs"] {
        let state = RunState::new(id.into(), "Plan a picnic".into());
        let err = Runtime::new(Team::builtin().unwrap(), Sim::new())
            .runs_dir(&runs)
            .drive(state)
            .unwrap_err();
        assert!(err.to_string().contains("run id"), "{id:?}: {err}");
    }
    assert!(!tmp.path().join("escaped").exists());
    assert!(!runs.join("run.json").exists());
    assert!(!runs.join("a").exists());
    assert_eq!(std::fs::read_dir(&runs).unwrap().count(), 0);
}

/// Issue 25: a started run hands its result over as soon as it is
/// closed, before it is freed and its threads end: `wait` returns while
/// the run's thread is still held after its end, and by then the run's
/// directory is unlocked, its event log holds `run_finished` last, and
/// its own event channel has ended.
#[test]
fn a_started_run_is_closed_and_handed_over_before_it_is_freed() {
    use crate::event::EventKind;
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path().join("runs");
    let mut runtime = Runtime::new(Team::builtin().unwrap(), Sim::new())
        .runs_dir(&runs)
        .events_per_run();
    let gate = held_after_end(&mut runtime);
    let mut handle = runtime.start("Plan a picnic").unwrap();
    let events = handle.take_events().expect("the run's own channel");
    let dir = runs.join(handle.run_id());
    let outcome = wait_while_held(handle);
    assert_eq!(outcome.status, crate::RunStatus::Done);
    // Handed over whole, not as what the run's thread keeps of it.
    assert!(
        outcome
            .board
            .iter()
            .any(|e| e.kind == crate::board::EntryKind::Draft),
        "the board came with the result: {:?}",
        outcome.board
    );
    assert!(
        !outcome.plan.tasks.is_empty(),
        "the plan came with the result"
    );
    assert!(
        !outcome.usage_by_agent.is_empty(),
        "the usage by agent came"
    );
    assert_eq!(
        gate.0.arrived.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "the run's thread is held after the end"
    );
    assert_eq!(
        crate::store::run_holder(&dir),
        None,
        "the lock is given back"
    );
    let log = std::fs::read_to_string(dir.join("events.jsonl")).unwrap();
    let last = log.lines().last().unwrap();
    assert!(last.contains("\"type\":\"run_finished\""), "{last}");
    // The channel ends: every event came, the last one `run_finished`.
    let mut last = None;
    loop {
        match events.recv_timeout(std::time::Duration::from_secs(30)) {
            Ok(e) => last = Some(e.kind),
            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => break,
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => {
                panic!("the run's channel did not end with the run")
            }
        }
    }
    assert!(matches!(last, Some(EventKind::RunFinished { .. })));
}

/// Issue 25 (review): a started run's MCP servers are ended before its
/// result is handed over, not when the run is freed later: a caller that
/// exits as soon as it has the result (the CLI) leaves none running. The
/// server here ignores SIGTERM and the close of its input, and leaves a
/// child in its group.
#[test]
fn a_started_runs_mcp_servers_are_ended_before_its_result_comes() {
    const STUBBORN: &str = r#"
trap '' TERM HUP INT
sleep 300 </dev/null >/dev/null 2>&1 &
echo "$$ $!" > "$1.tmp" && mv "$1.tmp" "$1"
read -r l
echo '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"stubborn"}}}'
read -r l
read -r l
echo '{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"t","inputSchema":{"type":"object"}}]}}'
while read -r l; do :; done
sleep 300
"#;
    let alive = |pid: &str| {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            !state.starts_with('Z') && !state.starts_with('X')
        })
    };
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("pids");
    let mut config = crate::TeamConfig::default();
    config.mcp_servers.insert(
        "stubborn".into(),
        crate::mcp::McpServerConfig::new("sh", ["-c", STUBBORN, "sh", file.to_str().unwrap()]),
    );
    let team = Team::new(
        "stubborn",
        config,
        vec![
            crate::AgentSpec::master("lead", "You lead."),
            crate::AgentSpec::member("writer", "Writes", "You write.").with_tools(["stubborn.*"]),
        ],
    )
    .unwrap();
    let mut runtime = Runtime::new(team, Sim::new());
    let _gate = held_after_end(&mut runtime);
    let outcome = wait_while_held(runtime.start("Write a note").unwrap());
    assert_eq!(outcome.status, crate::RunStatus::Done, "{}", outcome.answer);
    let pids = std::fs::read_to_string(&file).unwrap();
    // The server itself is ended and reaped before the result goes; the
    // child it left in its group is killed with it (gone a moment later).
    let server = pids.split_whitespace().next().unwrap();
    assert!(
        !alive(server),
        "the run's MCP server {server} still ran when its result came"
    );
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    for pid in pids.split_whitespace() {
        while alive(pid) {
            if std::time::Instant::now() > until {
                let _ = std::process::Command::new("kill")
                    .args(["-KILL", pid])
                    .status();
                panic!("process {pid} of the run's MCP server outlived the run's end");
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

/// A test gate that holds `runtime`'s started runs right after their end
/// (see `Core::end`); it opens when dropped, whatever the test did.
fn held_after_end(runtime: &mut Runtime) -> OpenOnDrop {
    let gate = std::sync::Arc::new(crate::core::TestGate::default());
    runtime.set().after_end = Some(std::sync::Arc::clone(&gate));
    OpenOnDrop(gate)
}

struct OpenOnDrop(std::sync::Arc<crate::core::TestGate>);

impl Drop for OpenOnDrop {
    fn drop(&mut self) {
        self.0.open();
    }
}

/// What `handle.wait()` returns, waited for on another thread: it must
/// come while the run's thread is held after its end (30 s at most).
fn wait_while_held(handle: super::RunHandle) -> crate::RunOutcome {
    let (tx, waited) = crossbeam_channel::bounded(1);
    std::thread::spawn(move || {
        let _ = tx.send(handle.wait());
    });
    waited
        .recv_timeout(std::time::Duration::from_secs(30))
        .expect("wait returned while the run's thread is held after its end")
        .unwrap()
}

/// Issue 25: the checkpoint after a round's drafts is written beside the
/// master's review call, not before it, and nothing of the review lands
/// before it: held on its thread, the review's call still goes out, but
/// its turn and records wait, and so does the run's end. A copy of the
/// directory taken then (what a kill would leave) resumes to the same
/// totals as its turns, with no module twice; once the checkpoint is
/// written, the run ends and reads back whole.
#[test]
fn the_rounds_checkpoint_is_written_beside_the_review_call() {
    use crate::event::EventKind;
    use crate::model::Phase;
    use std::sync::atomic::Ordering;
    use std::time::{Duration, Instant};
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path().join("runs");
    // A master without a profile: its review reads nothing of the plan
    // before its call (a profile's state counts the modules, and waits).
    let team = || {
        Team::new(
            "aside",
            crate::TeamConfig::default(),
            vec![
                crate::AgentSpec::master("lead", "You lead."),
                crate::AgentSpec::member("writer", "Writes", "You write."),
                crate::AgentSpec::member("editor", "Edits", "You edit."),
            ],
        )
        .unwrap()
    };
    let mut runtime = Runtime::new(team(), Sim::new())
        .runs_dir(&runs)
        .max_rounds(1)
        .events_per_run();
    let gate = std::sync::Arc::new(crate::core::TestGate::default());
    runtime.set().aside_write = Some(std::sync::Arc::clone(&gate));
    let open = OpenOnDrop(std::sync::Arc::clone(&gate));
    let mut handle = runtime.start("Plan a picnic").unwrap();
    let events = handle.take_events().expect("the run's own channel");
    let dir = runs.join(handle.run_id());
    // The review's call starts while the checkpoint is held.
    loop {
        let event = events
            .recv_timeout(Duration::from_secs(30))
            .expect("the review's call started while the checkpoint was held");
        match event.kind {
            EventKind::CallStarted {
                phase: Phase::Review,
                ..
            } => break,
            EventKind::RunFinished { .. } => panic!("the run ended without a review call"),
            _ => {}
        }
    }
    let until = Instant::now() + Duration::from_secs(30);
    while gate.arrived.load(Ordering::SeqCst) == 0 {
        assert!(Instant::now() < until, "no checkpoint was written aside");
        std::thread::sleep(Duration::from_millis(5));
    }
    // Held: the review's turn and records wait, the run does not end.
    std::thread::sleep(Duration::from_millis(200));
    assert!(!handle.is_finished(), "the run ended before its checkpoint");
    let turns = std::fs::read_to_string(dir.join("turns.jsonl")).unwrap();
    assert!(
        !turns.contains("\"phase\":\"review\""),
        "the review's turn came before the checkpoint"
    );
    let held = crate::store::load_run(&dir).unwrap();
    assert_ne!(held.state.phase(), crate::record::RunPhase::Review);
    // What a kill now would leave resumes whole.
    let copy = tmp.path().join("copy").join(handle.run_id());
    copy_dir(&dir, &copy);
    let resumed = Runtime::new(team(), Sim::new())
        .runs_dir(tmp.path().join("copy"))
        .max_rounds(1)
        .resume(&copy)
        .unwrap();
    assert_eq!(resumed.status, crate::RunStatus::Done);
    let filed = crate::store::read_turns(&copy).unwrap();
    let mut sum = crate::model::Usage::default();
    for turn in &filed.items {
        sum.prompt_tokens += turn.usage.prompt_tokens;
        sum.completion_tokens += turn.usage.completion_tokens;
    }
    assert_eq!(resumed.usage, sum, "the totals are the sum over the turns");
    let mut ids: Vec<&str> = resumed
        .plan
        .tasks
        .iter()
        .map(|m| m.task_id.as_str())
        .collect();
    let modules = ids.len();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), modules, "no module twice");
    // Let go: the run ends, every phase's line in order.
    drop(open);
    let outcome = handle.wait().unwrap();
    assert_eq!(outcome.status, crate::RunStatus::Done);
    let record = crate::store::load_run(&dir).unwrap();
    assert_eq!(record.state.status(), crate::RunStatus::Done);
    assert_eq!(record.state.board().len(), outcome.board.len());
    assert_eq!(record.state.usage, outcome.usage);
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}
