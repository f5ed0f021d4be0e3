//! Issue 4: a run killed with SIGKILL in the middle of a round resumes
//! with nothing lost and no completed member called twice. Issue 8: the
//! same for a kill in every phase (the kill -9 matrix), one process per
//! run (two resumes at once), and resumed members shown the board of the
//! round's start. These start the real binary, kill it for real, and
//! count model calls in `turns.jsonl`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use boardroom::plan::ModuleStatus;
use boardroom::store::{RunPhase, load_run, read_events, read_turns};
use boardroom::{Phase, RunStatus};

const BIN: &str = env!("CARGO_BIN_EXE_boardroom");
const MEMBERS: [&str; 4] = ["analyst", "critic", "researcher", "writer"];

fn run_dir(runs: &Path) -> Option<PathBuf> {
    std::fs::read_dir(runs)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.join("events.jsonl").is_file())
}

/// The sentence of the first point of a sim member's notes
/// (`1. **Point.** Sentence.`).
fn first_point(notes: &str) -> &str {
    notes
        .lines()
        .find_map(|l| l.strip_prefix("1. **"))
        .and_then(|l| l.split_once(".** "))
        .map_or(notes, |(_, sentence)| sentence)
}

/// Members whose drafts the events on disk show.
fn drafted(dir: &Path) -> Vec<String> {
    let events = read_events(dir).unwrap();
    events
        .items
        .iter()
        .filter(|e| {
            let v = serde_json::to_value(e).unwrap();
            v["type"] == "board_entry" && v["kind"] == "draft"
        })
        .map(|e| e.agent.clone())
        .collect()
}

fn draft_calls(dir: &Path, round: u32) -> BTreeMap<String, usize> {
    let mut calls = BTreeMap::new();
    for t in read_turns(dir).unwrap().items {
        if t.phase == Phase::Draft && t.round == round {
            *calls.entry(t.agent).or_insert(0) += 1;
        }
    }
    calls
}

#[test]
fn a_run_killed_mid_round_resumes_without_running_a_finished_member_again() {
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path().join("runs");
    let dir = run_and_kill_mid_round(&runs, "Write a short guide to brewing green tea", &[]);

    let landed = drafted(&dir);
    assert!(
        (1..MEMBERS.len()).contains(&landed.len()),
        "killed mid-round: {landed:?}"
    );
    let before = load_run(&dir).unwrap();
    assert_eq!(before.state.phase(), RunPhase::Members);
    assert_eq!(before.state.status(), RunStatus::Running);
    let calls_before = draft_calls(&dir, 1);
    for agent in &landed {
        assert_eq!(calls_before.get(agent), Some(&1), "{agent} before the kill");
    }

    let id = dir.file_name().unwrap().to_str().unwrap().to_string();
    let listed = Command::new(BIN)
        .arg("runs")
        .arg("--runs-dir")
        .arg(&runs)
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&listed.stdout).into_owned();
    assert!(
        listed.contains(&format!("{id}  ")) && listed.contains("interrupted"),
        "{listed}"
    );
    let shown = Command::new(BIN)
        .args(["show", &id, "--runs-dir"])
        .arg(&runs)
        .output()
        .unwrap();
    assert!(shown.status.success());
    assert!(String::from_utf8_lossy(&shown.stdout).contains(&format!(
        "stopped before phase 'members'; `boardroom resume {id}` continues it"
    )));
    let out = Command::new(BIN)
        .args(["resume", &id, "--model", "sim", "--runs-dir"])
        .arg(&runs)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "resume failed: {stderr}");
    let answer = String::from_utf8_lossy(&out.stdout);

    // Every member drafted round 1 exactly once over both processes: the
    // ones that landed before the kill were not called again.
    let calls = draft_calls(&dir, 1);
    let expected: BTreeMap<String, usize> = MEMBERS.iter().map(|m| (m.to_string(), 1)).collect();
    assert_eq!(calls, expected);
    let turns = read_turns(&dir).unwrap();
    assert!(turns.warnings.is_empty(), "{:?}", turns.warnings);
    let plans = turns
        .items
        .iter()
        .filter(|t| t.phase == Phase::Plan)
        .count();
    assert_eq!(plans, 1, "the master did not plan again");

    // The run finished with the answer an uninterrupted run gives.
    let after = load_run(&dir).unwrap();
    assert_eq!(after.state.phase(), RunPhase::Finished);
    assert_eq!(after.state.status(), RunStatus::Done);
    let drafts_r1: Vec<&str> = after
        .state
        .board()
        .iter()
        .filter(|e| e.round == 1 && e.kind == boardroom::board::EntryKind::Draft)
        .map(|e| e.author.as_str())
        .collect();
    assert_eq!(drafts_r1.len(), MEMBERS.len(), "{drafts_r1:?}");
    for m in MEMBERS {
        assert!(drafts_r1.contains(&m));
    }
    // Every member's notes reached the answer (one document: members are
    // not named in it).
    for e in after
        .state
        .board()
        .iter()
        .filter(|e| e.round == 1 && e.kind == boardroom::board::EntryKind::Draft)
    {
        let first = first_point(&e.text);
        assert!(
            answer.contains(first),
            "{}'s {first:?} missing in {answer}",
            e.author
        );
    }
    assert!(
        after
            .state
            .plan()
            .tasks
            .iter()
            .all(|m| m.status == ModuleStatus::Completed)
    );
    assert!(dir.join("workspace/report.md").is_file());
    assert!(dir.join("workspace/plan.json").is_file());

    // No tokens lost: the run's totals are the sum of every call on record,
    // the drafts that landed before the kill included (review finding).
    let mut from_turns: BTreeMap<String, u64> = BTreeMap::new();
    for t in &turns.items {
        *from_turns.entry(t.agent.clone()).or_default() += t.usage.total();
    }
    let saved: BTreeMap<String, u64> = after
        .state
        .usage_by_agent()
        .iter()
        .map(|(a, u)| (a.clone(), u.total()))
        .collect();
    assert_eq!(saved, from_turns);
    assert_eq!(
        after.state.usage().total(),
        from_turns.values().sum::<u64>()
    );
}

/// Waits (bounded) until the events on disk show `n` drafts, then kills
/// the process with SIGKILL.
/// Starts the binary on the built-in team (four members on two threads,
/// each draft taking 3 s: the first two land at about 3 s, the other two
/// at about 6 s) and kills it with SIGKILL once two drafts are on disk.
/// (Drafts of 1.5 s left a kill held up on a loaded machine too little
/// time to land mid-round.)
fn run_and_kill_mid_round(runs: &Path, task: &str, extra: &[&str]) -> PathBuf {
    let child = Command::new(BIN)
        .args([
            "run",
            task,
            "--model",
            "sim:latency=3s,latency_phases=draft",
            "--parallel",
            "2",
            "--no-memory",
            "--json",
        ])
        .args(extra)
        .arg("--runs-dir")
        .arg(runs)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    kill_after_drafts(child, runs, 2)
}

fn kill_after_drafts(mut child: Child, runs: &Path, n: usize) -> PathBuf {
    let started = Instant::now();
    loop {
        if let Some(dir) = run_dir(runs)
            && drafted(&dir).len() >= n
        {
            child.kill().unwrap();
            child.wait().unwrap();
            return dir;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("the run ended before it could be killed: {status}");
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "no drafts appeared"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_run_killed_twice_loses_nothing_and_resume_reuses_the_saved_model() {
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path().join("runs");
    let quiet = |c: &mut Command| {
        c.stdout(Stdio::null()).stderr(Stdio::null());
    };
    // One member at a time, 2 s a draft: each kill must land before the
    // next draft does (800 ms raced with it on a loaded machine).
    let mut first = Command::new(BIN);
    first
        .args([
            "run",
            "Plan a tea tasting",
            "--parallel",
            "1",
            "--no-memory",
            "--model",
        ])
        .arg("sim:latency=2s,latency_phases=draft")
        .arg("--runs-dir")
        .arg(&runs);
    quiet(&mut first);
    let dir = kill_after_drafts(first.spawn().unwrap(), &runs, 1);
    let id = dir.file_name().unwrap().to_str().unwrap().to_string();

    // The first resume uses the model spec saved in run.json (still slow)
    // and is killed in its turn after one more draft.
    let mut second = Command::new(BIN);
    second.args(["resume", &id, "--runs-dir"]).arg(&runs);
    quiet(&mut second);
    kill_after_drafts(second.spawn().unwrap(), &runs, 2);
    assert_eq!(drafted(&dir).len(), 2);

    let out = Command::new(BIN)
        .args(["resume", &id, "--model", "sim", "--runs-dir"])
        .arg(&runs)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let expected: BTreeMap<String, usize> = MEMBERS.iter().map(|m| (m.to_string(), 1)).collect();
    assert_eq!(draft_calls(&dir, 1), expected);
    let record = load_run(&dir).unwrap();
    assert_eq!(record.state.status(), RunStatus::Done);
    assert_eq!(
        record.settings.model_spec.as_deref(),
        Some("sim"),
        "the last resume's model is what run.json says now"
    );
    let ids: Vec<String> = read_turns(&dir)
        .unwrap()
        .items
        .into_iter()
        .map(|t| t.turn_id.to_string())
        .collect();
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(
        unique.len(),
        ids.len(),
        "turn ids go on across processes: {ids:?}"
    );
}

#[test]
fn a_resumed_run_keeps_the_protocol_it_was_started_with() {
    // Review finding: the saved --protocol was applied on resume but never
    // tested. The resumed master's review must still be asked for JSON.
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path().join("runs");
    let dir = run_and_kill_mid_round(&runs, "Plan a picnic", &["--protocol", "json"]);
    let out = Command::new(BIN)
        .args(["resume", "last", "--runs-dir"])
        .arg(&runs)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let turns = read_turns(&dir).unwrap();
    let review = turns
        .items
        .iter()
        .find(|t| t.phase == Phase::Review)
        .expect("the resumed run reviewed round 1");
    let system = &review.messages[0].content;
    assert!(
        system.contains("Reply with exactly one JSON object"),
        "the review after resume was not in JSON mode: {system}"
    );
    assert_eq!(load_run(&dir).unwrap().state.status(), RunStatus::Done);
}

// ---- issue 8: the kill -9 matrix --------------------------------------

fn spawn_quiet(cmd: &mut Command) -> Child {
    cmd.stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Kills `child` with SIGKILL once `ready` holds for its run directory
/// (bounded wait; a run that ends first fails the test).
fn kill_when(mut child: Child, runs: &Path, ready: impl Fn(&Path) -> bool) -> PathBuf {
    let started = Instant::now();
    loop {
        if let Some(dir) = run_dir(runs)
            && ready(&dir)
        {
            child.kill().unwrap();
            child.wait().unwrap();
            return dir;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("the run ended before it could be killed: {status}");
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the run never reached the point to kill it at"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn phase_of(dir: &Path) -> Option<RunPhase> {
    load_run(dir).ok().map(|r| r.state.phase())
}

fn turns_of(dir: &Path, phase: Phase) -> usize {
    read_turns(dir)
        .map(|t| t.items.iter().filter(|t| t.phase == phase).count())
        .unwrap_or(0)
}

/// Resumes the run in `dir` with the plain sim and checks what every kill
/// must leave true: the run ends `done`; no completed draft was asked for
/// again (each member drafted round 1 once over all processes); the master
/// planned once; run.json's totals are the sum over turns.jsonl; the
/// master-memory note is there exactly once.
fn resume_and_check(runs: &Path, dir: &Path) {
    let id = dir.file_name().unwrap().to_str().unwrap().to_string();
    let out = Command::new(BIN)
        .args(["resume", &id, "--model", "sim", "--runs-dir"])
        .arg(runs)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "resume failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let after = load_run(dir).unwrap();
    assert_eq!(after.state.phase(), RunPhase::Finished);
    assert_eq!(after.state.status(), RunStatus::Done);
    let expected: BTreeMap<String, usize> = MEMBERS.iter().map(|m| (m.to_string(), 1)).collect();
    assert_eq!(draft_calls(dir, 1), expected, "drafts asked for once each");
    assert_eq!(turns_of(dir, Phase::Plan), 1, "the master planned once");

    let turns = read_turns(dir).unwrap();
    let mut from_turns: BTreeMap<String, u64> = BTreeMap::new();
    for t in &turns.items {
        *from_turns.entry(t.agent.clone()).or_default() += t.usage.total();
    }
    let saved: BTreeMap<String, u64> = after
        .state
        .usage_by_agent()
        .iter()
        .map(|(a, u)| (a.clone(), u.total()))
        .collect();
    assert_eq!(saved, from_turns, "run.json totals per agent = turns.jsonl");
    assert_eq!(
        after.state.usage().total(),
        from_turns.values().sum::<u64>(),
        "run.json total = turns.jsonl"
    );

    // The master's memory (`<team>.md`); each member that drafted keeps
    // its own beside it (`<team>.<member>.md`, issue 23).
    let memory: Vec<PathBuf> = std::fs::read_dir(runs.join("memory"))
        .expect("a memory folder")
        .map(|e| e.unwrap().path())
        .filter(|p| !p.file_stem().unwrap().to_str().unwrap().contains('.'))
        .collect();
    assert_eq!(memory.len(), 1, "{memory:?}");
    let text = std::fs::read_to_string(&memory[0]).unwrap();
    let heading = format!("## run {id}");
    assert_eq!(
        text.lines().filter(|l| *l == heading).count(),
        1,
        "one memory note: {text}"
    );
}

/// Starts a run (memory on, one member at a time) whose calls of `phase`
/// take 2 s, kills it once `ready`, resumes it, checks the result, then
/// runs the caller's own `checks` on the run directory.
fn kill_and_resume(phase: &str, ready: impl Fn(&Path) -> bool, checks: impl Fn(&Path)) {
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path().join("runs");
    let child = spawn_quiet(
        Command::new(BIN)
            .args(["run", "Plan a garden party", "--parallel", "1", "--model"])
            .arg(format!("sim:latency=2s,latency_phases={phase}"))
            .arg("--runs-dir")
            .arg(&runs),
    );
    let dir = kill_when(child, &runs, ready);
    resume_and_check(&runs, &dir);
    checks(&dir);
}

#[test]
fn kill_9_during_planning_then_resume() {
    kill_and_resume("plan", |dir| phase_of(dir) == Some(RunPhase::Plan), |_| {});
}

#[test]
fn kill_9_mid_round_then_resume() {
    kill_and_resume("draft", |dir| drafted(dir).len() >= 2, |_| {});
}

#[test]
fn kill_9_during_the_challenge_then_resume() {
    // Killed after one challenger answered: that call's tokens must still
    // be in run.json (issue 8: usage lost in non-member phases). The phase
    // runs again, and the challenger that answered is answered from its
    // turn, not called again.
    kill_and_resume(
        "challenge",
        |dir| turns_of(dir, Phase::Challenge) >= 1,
        |dir| {
            let mut by_agent: BTreeMap<String, usize> = BTreeMap::new();
            for t in read_turns(dir).unwrap().items {
                if t.phase == Phase::Challenge {
                    *by_agent.entry(t.agent).or_default() += 1;
                }
            }
            assert!(by_agent.len() >= 2, "the phase ran on: {by_agent:?}");
            assert!(
                by_agent.values().all(|n| *n == 1),
                "no challenger called twice: {by_agent:?}"
            );
        },
    );
}

#[test]
fn kill_9_during_review_then_resume() {
    kill_and_resume(
        "review",
        |dir| phase_of(dir) == Some(RunPhase::Review),
        |_| {},
    );
}

#[test]
fn kill_9_after_the_final_checkpoint_keeps_the_memory_note() {
    // Held in the memory step: run.json already says finished. The resume
    // asks for the note and nothing else.
    kill_and_resume(
        "memory",
        |dir| phase_of(dir) == Some(RunPhase::Finished),
        |dir| {
            assert_eq!(turns_of(dir, Phase::Review), 1);
            // The master's note once (the members' notes follow it).
            let master_notes = read_turns(dir)
                .unwrap()
                .items
                .iter()
                .filter(|t| t.phase == Phase::Memory && t.agent == "master")
                .count();
            assert_eq!(master_notes, 1);
        },
    );
}

// ---- issue 8 finding 4, issue 9 item 4: one process owns a run ----------

#[test]
fn two_resumes_at_once_one_proceeds_and_the_other_is_refused_while_the_run_lists_as_running() {
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path().join("runs");
    let dir = kill_when(
        spawn_quiet(
            Command::new(BIN)
                .args([
                    "run",
                    "Plan a tea tasting",
                    "--parallel",
                    "1",
                    "--no-memory",
                ])
                .args([
                    "--model",
                    "sim:latency=1s,latency_phases=draft",
                    "--runs-dir",
                ])
                .arg(&runs),
        ),
        &runs,
        |dir| !drafted(dir).is_empty(),
    );
    let id = dir.file_name().unwrap().to_str().unwrap().to_string();

    // The first resume's drafts wait for the hold file: it holds the run
    // while the checks below run (a 1 s latency raced with them).
    let hold = tmp.path().join("go");
    let mut first = Command::new(BIN)
        .args(["resume", &id, "--model"])
        .arg(format!("sim:hold={}", hold.display()))
        .arg("--runs-dir")
        .arg(&runs)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = first.id();
    let started = Instant::now();
    while std::fs::read_to_string(dir.join("run.lock")).unwrap_or_default() != pid.to_string() {
        assert!(started.elapsed() < Duration::from_secs(60), "never locked");
        std::thread::sleep(Duration::from_millis(10));
    }

    let listed = Command::new(BIN)
        .args(["runs", "--runs-dir"])
        .arg(&runs)
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&listed.stdout).into_owned();
    let line = listed.lines().find(|l| l.starts_with(&id)).unwrap();
    assert!(line.contains("  running  "), "{line}");
    assert!(!line.contains("interrupted"), "{line}");

    let shown = Command::new(BIN)
        .args(["show", &id, "--runs-dir"])
        .arg(&runs)
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout).into_owned();
    assert!(
        shown.contains(&format!(
            "(no answer yet: running now in boardroom pid {pid})"
        )),
        "{shown}"
    );
    assert!(!shown.contains("boardroom resume"), "{shown}");

    let second = Command::new(BIN)
        .args(["resume", &id, "--model", "sim", "--runs-dir"])
        .arg(&runs)
        .output()
        .unwrap();
    assert_eq!(second.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&second.stderr),
        format!("error: run {id}: in use by another boardroom (pid {pid})\n")
    );

    // The library takes the same lock.
    let saved = load_run(&dir).unwrap();
    let err = boardroom::Runtime::new(
        saved.team.to_team().unwrap(),
        boardroom::testing::Sim::new(),
    )
    .resume(&dir)
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("run directory: run {id}: in use by another boardroom (pid {pid})")
    );

    std::fs::write(&hold, "").unwrap();
    let status = first.wait().unwrap();
    assert!(status.success());
    let expected: BTreeMap<String, usize> = MEMBERS.iter().map(|m| (m.to_string(), 1)).collect();
    assert_eq!(draft_calls(&dir, 1), expected, "no member ran twice");
    assert_eq!(load_run(&dir).unwrap().state.status(), RunStatus::Done);
    let listed = Command::new(BIN)
        .args(["runs", "--runs-dir"])
        .arg(&runs)
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&listed.stdout).into_owned();
    assert!(listed.contains("  done  "), "{listed}");
}

// ---- issue 8 finding 8: a resumed round shows members the same board ----

#[test]
fn members_of_a_resumed_round_get_the_prompts_of_an_uninterrupted_run() {
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path().join("runs");
    let task = "Write a short guide to brewing green tea";
    let dir = run_and_kill_mid_round(&runs, task, &[]);
    let id = dir.file_name().unwrap().to_str().unwrap().to_string();
    let out = Command::new(BIN)
        .args(["resume", &id, "--model", "sim", "--runs-dir"])
        .arg(&runs)
        .output()
        .unwrap();
    assert!(out.status.success());

    let plain_runs = tmp.path().join("plain");
    let plain = Command::new(BIN)
        .args(["run", task, "--model", "sim", "--no-memory", "--runs-dir"])
        .arg(&plain_runs)
        .output()
        .unwrap();
    assert!(plain.status.success());
    let plain_dir = run_dir(&plain_runs).unwrap();

    let prompts = |dir: &Path| -> BTreeMap<String, Vec<boardroom::Message>> {
        read_turns(dir)
            .unwrap()
            .items
            .into_iter()
            .filter(|t| t.phase == Phase::Draft && t.round == 1)
            .map(|t| (t.agent, t.messages))
            .collect()
    };
    let resumed = prompts(&dir);
    let uninterrupted = prompts(&plain_dir);
    assert_eq!(resumed.len(), MEMBERS.len());
    for (member, messages) in &uninterrupted {
        assert_eq!(
            resumed.get(member),
            Some(messages),
            "{member}'s round-1 prompt differs after the resume"
        );
    }
}

#[test]
fn a_kill_between_a_drafts_turn_and_its_board_entry_does_not_call_the_member_again() {
    // The turn is the first thing written when a call's answer is in; a
    // kill right after it (before the draft reaches the board and the
    // journal) left a call answered and paid for that the resume made
    // again. The crash point aborts there, at the first member's draft
    // (turn 2: the master's plan is turn 1), one member at a time.
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path().join("runs");
    let out = Command::new(BIN)
        .args([
            "run",
            "Write a short guide to brewing green tea",
            "--model",
            "sim",
            "--parallel",
            "1",
            "--no-memory",
            "--json",
        ])
        .arg("--runs-dir")
        .arg(&runs)
        .env("BOARDROOM_TEST_CRASH_AT", "turn-filed:2")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        None,
        "aborted at the crash point: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = run_dir(&runs).unwrap();
    assert!(drafted(&dir).is_empty(), "no draft reached the board");
    let before = draft_calls(&dir, 1);
    assert_eq!(before.values().sum::<usize>(), 1, "{before:?}");

    let id = dir.file_name().unwrap().to_str().unwrap();
    let out = Command::new(BIN)
        .args(["resume", id, "--json"])
        .arg("--runs-dir")
        .arg(&runs)
        .env_remove("BOARDROOM_TEST_CRASH_AT")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let record = load_run(&dir).unwrap();
    assert_eq!(record.state.status(), RunStatus::Done);
    let calls = draft_calls(&dir, 1);
    assert_eq!(calls.len(), MEMBERS.len(), "{calls:?}");
    for (agent, n) in &calls {
        assert_eq!(*n, 1, "{agent} was called again: {calls:?}");
    }
    // Its draft is on the board, as the turn answered.
    let drafts = drafted(&dir);
    for agent in before.keys() {
        assert!(drafts.contains(agent), "{agent}'s draft: {drafts:?}");
    }
    let sum: u64 = read_turns(&dir)
        .unwrap()
        .items
        .iter()
        .map(|t| t.usage.total())
        .sum();
    assert_eq!(record.state.usage().total(), sum, "usage is the turns' sum");
}
