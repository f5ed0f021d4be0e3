//! Issue 11, the gaps a reviewer found in the run core and the handoff
//! process: per-run event receivers, `resume --json`, flags a handoff run
//! does not use, the turn cap before a routing call, the user's message as
//! an event, and the master's memory of handoff runs.

mod support;

use std::collections::BTreeSet;

use boardroom::testing::{Sim, SimOptions};
use boardroom::{Event, EventKind, RunStatus, Runtime, Team};
use support::handoff::{PAIR, boardroom, only_run, text, write_team, you_are};

fn run_ids(events: &[Event]) -> BTreeSet<String> {
    events.iter().map(|e| e.run_id.clone()).collect()
}

#[test]
fn each_handle_has_its_own_receiver_and_its_own_cancel() {
    // Issue 11: a run is a handle with its own events receiver. Two runs
    // started from clones of one runtime: each receiver sees only its own
    // run's events, and cancelling one does not stop the other.
    let sim = Sim::with_options(SimOptions {
        latency: std::time::Duration::from_millis(40),
        ..SimOptions::default()
    });
    let runtime = Runtime::new(Team::builtin().unwrap(), sim).events_per_run();
    let mut a = runtime.clone().start("Plan a picnic").unwrap();
    let mut b = runtime.clone().start("Plan a party").unwrap();
    assert!(a.events().is_some());
    a.cancel();
    let rx_a = a.take_events().expect("a receiver of its own");
    let rx_b = b.take_events().expect("a receiver of its own");
    assert!(a.events().is_none(), "taken");
    let (id_a, id_b) = (a.run_id().to_string(), b.run_id().to_string());
    assert_ne!(id_a, id_b);
    let out_a = a.wait().unwrap();
    let out_b = b.wait().unwrap();
    assert_eq!(out_a.status, RunStatus::Cancelled);
    assert_eq!(out_b.status, RunStatus::Done);
    // The receivers end when their runs end (no sender is left).
    let seen_a: Vec<Event> = rx_a.iter().collect();
    let seen_b: Vec<Event> = rx_b.iter().collect();
    assert_eq!(run_ids(&seen_a), BTreeSet::from([id_a]));
    assert_eq!(run_ids(&seen_b), BTreeSet::from([id_b]));
    assert!(matches!(
        seen_b.last().map(|e| &e.kind),
        Some(EventKind::RunFinished {
            status: RunStatus::Done,
            ..
        })
    ));
    assert!(
        seen_b
            .iter()
            .filter(|e| matches!(e.kind, EventKind::AgentDelta { .. }))
            .count()
            > 10
    );
}

#[test]
fn without_events_per_run_a_handle_has_no_receiver() {
    // Opt-in: a caller who never asked holds no channel that fills up.
    let mut h = Runtime::new(Team::builtin().unwrap(), Sim::new())
        .start("Plan a picnic")
        .unwrap();
    assert!(h.events().is_none());
    assert!(h.take_events().is_none());
    assert_eq!(h.wait().unwrap().status, RunStatus::Done);
}

#[test]
fn a_dropped_receiver_does_not_stop_the_run() {
    let runtime = Runtime::new(Team::builtin().unwrap(), Sim::new()).events_per_run();
    let mut h = runtime.start("Plan a picnic").unwrap();
    drop(h.take_events());
    assert_eq!(h.wait().unwrap().status, RunStatus::Done);
}

// ---- the command line ----

use std::path::Path;
use std::process::Output;

/// A handoff team of two on disk (`extra`: more team.yaml lines).
fn handoff_team(dir: &Path, extra: &str) {
    write_team(
        dir,
        &PAIR,
        you_are,
        &format!("name: pair\nprocess: handoff\nentry: researcher\n{extra}"),
    );
}

/// The id of the one run saved under `runs`.
fn only_run_id(runs: &Path) -> String {
    only_run(runs)
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

/// Every stdout line is a JSON object; their `type`s.
fn json_types(o: &Output) -> Vec<serde_json::Value> {
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(!stdout.trim().is_empty(), "{}", text(o));
    stdout
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l)
                .unwrap_or_else(|e| panic!("not JSON ({e}): {l}\n{}", text(o)))
        })
        .collect()
}

#[test]
fn resume_json_of_a_finished_or_waiting_run_prints_json_lines() {
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path().join("runs");
    // Waiting for its user (after_work_behavior defaults to return_to_user).
    let waits = tmp.path().join("waits");
    handoff_team(&waits, "");
    let out = boardroom(
        &[
            "run",
            "--team",
            waits.to_str().unwrap(),
            "--model",
            "sim",
            "Explain tea",
        ],
        &runs,
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let id = only_run_id(&runs);
    let again = boardroom(&["resume", &id, "--json"], &runs);
    assert_eq!(again.status.code(), Some(3), "{}", text(&again));
    let lines = json_types(&again);
    let last = lines.last().unwrap();
    assert_eq!(last["type"], "run_finished", "{lines:?}");
    assert_eq!(last["status"], "awaiting_user");
    assert_eq!(last["run_id"], id.as_str());
    assert!(!last["answer"].as_str().unwrap().is_empty());
    assert!(
        lines.iter().any(|l| l["type"] == "awaiting_user"),
        "{lines:?}"
    );

    // Finished.
    let runs2 = tmp.path().join("runs2");
    let ends = tmp.path().join("ends");
    handoff_team(&ends, "after_work_behavior: terminate\n");
    let out = boardroom(
        &[
            "run",
            "--team",
            ends.to_str().unwrap(),
            "--model",
            "sim",
            "Explain tea",
        ],
        &runs2,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let id = only_run_id(&runs2);
    let again = boardroom(&["resume", &id, "--json"], &runs2);
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
    let lines = json_types(&again);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["type"], "run_finished");
    assert_eq!(lines[0]["status"], "done");
    assert!(lines[0]["rounds"].as_u64().unwrap() >= 1);
}

#[test]
fn rounds_and_parallel_are_refused_for_a_handoff_run() {
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path().join("runs");
    let dir = tmp.path().join("team");
    handoff_team(&dir, "after_work_behavior: terminate\n");
    let team = dir.to_str().unwrap();
    for flag in ["--rounds", "--parallel"] {
        let out = boardroom(
            &["run", "--team", team, "--model", "sim", flag, "3", "Task"],
            &runs,
        );
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        assert_eq!(
            String::from_utf8_lossy(&out.stderr).trim(),
            format!(
                "error: {flag}: team 'pair' runs the handoff process, which has no rounds of parallel members: its caps are max_turns and max_handoffs in team.yaml"
            )
        );
        assert!(!runs.exists() || std::fs::read_dir(&runs).unwrap().next().is_none());
    }
    let out = boardroom(&["run", "--team", team, "--model", "sim", "Task"], &runs);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let id = only_run_id(&runs);
    let out = boardroom(
        &["resume", &id, "--parallel", "2", "--message", "more"],
        &runs,
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("error: --parallel: team 'pair' runs the handoff process"),
        "{}",
        text(&out)
    );
}

// ---- the handoff process ----

use boardroom::Phase;
use boardroom::testing::Scripted;

/// A handoff team loaded from disk (`extra`: more team.yaml lines).
fn loaded(extra: &str) -> (tempfile::TempDir, Team) {
    let tmp = tempfile::tempdir().unwrap();
    handoff_team(tmp.path(), extra);
    let team = Team::load(tmp.path()).unwrap();
    (tmp, team)
}

fn calls_in(model: &Scripted, phase: Phase) -> usize {
    model.requests().iter().filter(|r| r.phase == phase).count()
}

#[test]
fn the_turn_cap_ends_the_run_before_a_routing_call_or_a_handoff() {
    // Issue 11: after the last allowed turn, no routing call is paid for
    // and no handoff is announced: the run ends at the turn cap at once.
    for (answer, what) in [
        (
            "Research done.\nNEXT: writer",
            "no handoff: the router would be asked",
        ),
        (
            "Research done.\nHANDOFF:writer:write it up",
            "a HANDOFF: line",
        ),
    ] {
        let (_tmp, team) = loaded("max_turns: 1\nafter_work_behavior: continue\nprotocol: line\n");
        let model = Scripted::new()
            .otherwise("researcher", answer)
            .otherwise("writer", "A draft.");
        let (tx, rx) = crossbeam_channel::unbounded();
        let run = Runtime::new(team, model.clone())
            .events(tx)
            .run("Explain tea")
            .unwrap();
        assert_eq!(run.status, RunStatus::TurnLimit, "{what}");
        assert!(
            run.answer.starts_with("Research done."),
            "{what}: {}",
            run.answer
        );
        assert_eq!(calls_in(&model, Phase::Route), 0, "{what}: a routing call");
        assert_eq!(model.requests().len(), 1, "{what}: one turn, nothing else");
        let events: Vec<Event> = rx.try_iter().collect();
        assert!(
            !events
                .iter()
                .any(|e| matches!(e.kind, EventKind::Handoff { .. })),
            "{what}: a handoff event"
        );
        assert_eq!(run.steps.len(), 1);
        assert_eq!(run.steps[0].handoff_target, None, "{what}");
    }
}

/// The `user_message` events' texts, in order.
fn user_messages(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::UserMessage { text } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_message_taken_on_resume_is_an_event_for_both_processes() {
    // Issue 11: the user's words on resume are in the stream (the caller's
    // channel and events.jsonl), after run_started and before any call.
    let runs = tempfile::tempdir().unwrap();
    let (_tmp, handoff) = loaded("");
    let cases = [
        (handoff, "researcher"),
        (Team::builtin().unwrap(), "builtin"),
    ];
    for (team, what) in cases {
        let first = Runtime::new(team.clone(), Sim::new())
            .runs_dir(runs.path())
            .run("Explain tea")
            .unwrap();
        let dir = runs.path().join(&first.run_id);
        let (tx, rx) = crossbeam_channel::unbounded();
        let runtime = Runtime::new(team.clone(), Sim::new())
            .runs_dir(runs.path())
            .events(tx);
        runtime
            .resume_with_message(&dir, "only green tea, please")
            .unwrap();
        let events: Vec<Event> = rx.try_iter().collect();
        assert_eq!(user_messages(&events), ["only green tea, please"], "{what}");
        let at = events
            .iter()
            .position(|e| matches!(e.kind, EventKind::UserMessage { .. }))
            .unwrap();
        assert!(
            matches!(events[0].kind, EventKind::RunStarted { .. }),
            "{what}"
        );
        assert!(
            !events[..at]
                .iter()
                .any(|e| matches!(e.kind, EventKind::CallStarted { .. })),
            "{what}: before the calls"
        );
        assert_eq!(events[at].agent, "user", "{what}");
        let saved = boardroom::store::read_events(&dir).unwrap().items;
        assert_eq!(user_messages(&saved), ["only green tea, please"], "{what}");
        // Resumed again without a message: no second event.
        let (tx, rx) = crossbeam_channel::unbounded();
        Runtime::new(team, Sim::new())
            .runs_dir(runs.path())
            .events(tx)
            .resume(&dir)
            .unwrap();
        let again: Vec<Event> = rx.try_iter().collect();
        assert!(!again.is_empty(), "{what}");
        assert!(user_messages(&again).is_empty(), "{what}");
    }
}

#[test]
fn the_user_message_shows_in_json_the_live_view_and_show() {
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path().join("runs");
    let out = boardroom(&["run", "--model", "sim", "Plan a picnic"], &runs);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let id = only_run_id(&runs);
    let json = boardroom(
        &["resume", &id, "--json", "--message", "and a rain plan"],
        &runs,
    );
    assert_eq!(json.status.code(), Some(0), "{}", text(&json));
    let lines = json_types(&json);
    assert!(
        lines
            .iter()
            .any(|l| l["type"] == "user_message" && l["text"] == "and a rain plan"),
        "{lines:?}"
    );
    let human = boardroom(&["resume", &id, "--message", "and shade"], &runs);
    assert_eq!(human.status.code(), Some(0), "{}", text(&human));
    let stderr = String::from_utf8_lossy(&human.stderr);
    assert!(stderr.contains("» user: and shade"), "{stderr}");
    let shown = boardroom(&["show", &id], &runs);
    let shown = text(&shown);
    assert!(shown.contains("== from the user"), "{shown}");
    assert!(shown.contains("and a rain plan"), "{shown}");
    assert!(shown.contains("and shade"), "{shown}");
}

#[test]
fn a_finished_handoff_run_leaves_the_master_a_note_its_next_run_reads() {
    // Issue 11: the master's memory is kept for handoff runs too: a note
    // from the run's last answer (one memory call), shown to the master
    // in the team's next run; a run that waits for its user owes none yet.
    let runs = tempfile::tempdir().unwrap();
    let (_tmp, team) = loaded("after_work_behavior: terminate\n");
    let memory = boardroom::store::MasterMemory::for_team(runs.path(), team.name());
    let sim = Sim::new();
    let runtime = Runtime::new(team, sim.clone())
        .runs_dir(runs.path())
        .master_memory(memory.clone());
    let first = runtime.run("Explain tea").unwrap();
    assert_eq!(first.status, RunStatus::Done);
    assert_eq!(sim.stats().calls_for(Phase::Memory), 1);
    assert!(memory.remembers(&first.run_id));
    let note = memory.load().unwrap();
    assert!(note.contains("Explain tea"), "{note}");

    let second = runtime.run("Explain coffee").unwrap();
    let turns = boardroom::store::read_turns(&runs.path().join(&second.run_id))
        .unwrap()
        .items;
    let master_turn = turns
        .iter()
        .find(|t| t.agent == "researcher" && t.phase == Phase::Converse)
        .unwrap();
    let seen: String = master_turn
        .messages
        .iter()
        .map(|m| m.content.as_str())
        .collect();
    assert!(
        seen.contains("<memory>") && seen.contains("Explain tea"),
        "{seen}"
    );
    let writer_turn = turns
        .iter()
        .find(|t| t.agent == "writer" && t.phase == Phase::Converse);
    if let Some(t) = writer_turn {
        let seen: String = t.messages.iter().map(|m| m.content.as_str()).collect();
        assert!(!seen.contains("<memory>"), "the master's memory: {seen}");
    }

    // Waiting for its user: not over, no note yet.
    let (_tmp2, waits) = loaded("");
    let sim = Sim::new();
    let waiting = Runtime::new(waits, sim.clone())
        .runs_dir(runs.path())
        .master_memory(memory.clone())
        .run("Explain cocoa")
        .unwrap();
    assert_eq!(waiting.status, RunStatus::AwaitingUser);
    assert_eq!(sim.stats().calls_for(Phase::Memory), 0);
    assert!(!memory.remembers(&waiting.run_id));
}
