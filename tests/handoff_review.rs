//! Found in review of the handoff process (issue 11): each test failed on
//! the code before its fix.

mod support;

use boardroom::protocol::Protocol;
use boardroom::store::load_run;
use boardroom::testing::Scripted;
use boardroom::{ChatRequest, Phase, RunStatus, Runtime, Team};
use support::handoff::{calls, chain as team, run_line};

fn prompt(r: &ChatRequest) -> String {
    r.messages
        .iter()
        .map(|m| m.content.as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// A rule with no condition always holds: when the conditional rules
/// above it do not, it is taken, not the router.
#[test]
fn a_rule_without_a_condition_is_taken_when_the_ones_above_it_do_not_hold() {
    let (_t, team) = team(
        "after_work_behavior: terminate\nhandoffs:\n  - from_agent: researcher\n    to_agent: reviewer\n    condition: the notes need checking\n    priority: 5\n  - from_agent: researcher\n    to_agent: writer\n    priority: 1\n",
    );
    let model = Scripted::new()
        .reply("researcher", "notes")
        .reply("researcher", "NONE")
        // Were the router asked, it would pick the reviewer.
        .reply("researcher", "NEXT: reviewer")
        .reply("writer", "the article")
        .reply("writer", "NONE")
        .reply("writer", "NONE");
    let run = run_line(team, &model);
    assert_eq!(run.steps[0].handoff_target.as_deref(), Some("writer"));
    assert_eq!(run.steps[0].how.as_deref(), Some("rule 2"));
    let routing = calls(&model, "researcher", Phase::Route);
    assert_eq!(routing.len(), 1, "the rules only, no router call");
    assert_eq!(run.answer, "the article");
}

/// Rules below one that always holds can never be reached: the routing
/// call is not asked about them.
#[test]
fn rules_below_one_that_always_holds_are_not_put_to_the_router() {
    let (_t, team) = team(
        "after_work_behavior: terminate\nhandoffs:\n  - from_agent: researcher\n    to_agent: reviewer\n    condition: the notes need checking\n    priority: 5\n  - from_agent: researcher\n    to_agent: writer\n    priority: 3\n  - from_agent: researcher\n    to_agent: reviewer\n    condition: never reached\n    priority: 1\n",
    );
    let model = Scripted::new()
        .reply("researcher", "notes")
        .reply("researcher", "RULE: 1")
        .reply("reviewer", "checked")
        .reply("reviewer", "NONE")
        .reply("reviewer", "NONE");
    let run = run_line(team, &model);
    assert_eq!(run.steps[0].how.as_deref(), Some("rule 1"));
    let routing = calls(&model, "researcher", Phase::Route);
    assert!(
        !prompt(&routing[0]).contains("never reached"),
        "{}",
        prompt(&routing[0])
    );
}

/// The note about a handoff that could not be used goes to the agent that
/// made it, not to the next agent.
#[test]
fn a_bad_handoff_note_is_not_shown_to_the_next_agent() {
    let (_t, team) = team(
        "after_work_behavior: terminate\nhandoffs:\n  - from_agent: researcher\n    to_agent: writer\n",
    );
    let model = Scripted::new()
        .otherwise("researcher", "notes\nHANDOFF: editor: polish it")
        .reply("writer", "the article")
        .reply("writer", "NONE");
    let run = run_line(team, &model);
    assert_eq!(calls(&model, "researcher", Phase::Converse).len(), 3);
    assert_eq!(run.steps[0].handoff_target.as_deref(), Some("writer"));
    let writer = calls(&model, "writer", Phase::Converse);
    let seen = prompt(&writer[0]);
    assert!(!seen.contains("could not be used"), "{seen}");
    assert!(!seen.contains("editor"), "{seen}");
}

/// A handoff run that ended at a cap is finished: the user may follow it
/// up with a message, as a done one (resuming it without one does nothing).
#[test]
fn a_run_ended_at_a_cap_takes_a_follow_up_message() {
    let (_t, team) = team("after_work_behavior: continue\nmax_turns: 1\n");
    let runs = tempfile::tempdir().unwrap();
    // No routing call after the last allowed turn (issue 11): one reply
    // a turn.
    let model = Scripted::new()
        .reply("researcher", "part one")
        .reply("researcher", "part two");
    let runtime = Runtime::new(team, model.clone()).runs_dir(runs.path());
    let first = runtime.run("Explain tea").unwrap();
    assert_eq!(first.status, RunStatus::TurnLimit);
    let dir = runs.path().join(&first.run_id);
    let next = runtime
        .resume_with_message(&dir, "and the second part?")
        .unwrap();
    assert_eq!(next.status, RunStatus::TurnLimit);
    assert_eq!(next.answer, "part two");
    let agents: Vec<&str> = next.steps.iter().map(|s| s.agent.as_str()).collect();
    assert_eq!(agents, ["researcher", "user", "researcher"]);
    assert_eq!(load_run(&dir).unwrap().state.status(), RunStatus::TurnLimit);
}

/// A run that is not finished is resumed, not answered: the message is
/// refused and the run left as it was.
#[test]
fn a_message_to_a_run_that_is_not_finished_is_refused() {
    let (_t, team) = team("after_work_behavior: terminate\n");
    let runs = tempfile::tempdir().unwrap();
    let model = Scripted::new()
        .reply("researcher", "notes\nHANDOFF: writer: go")
        .fail("writer", "the server is down");
    let runtime = Runtime::new(team, model.clone())
        .protocol(Protocol::Line)
        .runs_dir(runs.path());
    runtime.run("Explain tea").unwrap_err();
    let dir = std::fs::read_dir(runs.path())
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let err = runtime.resume_with_message(&dir, "hello").unwrap_err();
    assert!(
        err.to_string().contains("is failed") && err.to_string().contains("without --message"),
        "{err}"
    );
    let saved = load_run(&dir).unwrap().state;
    assert_eq!(saved.status(), RunStatus::Failed);
    assert_eq!(saved.handoff().unwrap().steps.len(), 1);
}

/// A saved run goes on only with a team of its own process: a runtime
/// holding a team of the other process refuses it and leaves it as saved
/// (it was marked failed, or driven by the wrong process, before).
#[test]
fn a_run_is_not_resumed_by_a_team_of_the_other_process() {
    let runs = tempfile::tempdir().unwrap();
    let (_t, handoff) = team("");
    let model = Scripted::new()
        .reply("researcher", "Which tea?")
        .reply("researcher", "NONE");
    let waiting = Runtime::new(handoff.clone(), model)
        .runs_dir(runs.path())
        .run("Explain tea")
        .unwrap();
    assert_eq!(waiting.status, RunStatus::AwaitingUser);
    let dir = runs.path().join(&waiting.run_id);
    let blackboard = Team::builtin().unwrap();
    let err = Runtime::new(blackboard.clone(), boardroom::testing::Sim::new())
        .resume_with_message(&dir, "green")
        .unwrap_err();
    assert!(err.to_string().contains("handoff"), "{err}");
    let err = Runtime::new(blackboard.clone(), boardroom::testing::Sim::new())
        .resume(&dir)
        .unwrap_err();
    assert!(err.to_string().contains("handoff"), "{err}");
    assert_eq!(
        load_run(&dir).unwrap().state.status(),
        RunStatus::AwaitingUser,
        "left as it was saved"
    );

    let done = Runtime::new(blackboard, boardroom::testing::Sim::new())
        .runs_dir(runs.path())
        .run("Plan a picnic")
        .unwrap();
    let dir = runs.path().join(&done.run_id);
    let before = std::fs::read(dir.join("run.json")).unwrap();
    let err = Runtime::new(handoff, boardroom::testing::Sim::new())
        .resume(&dir)
        .unwrap_err();
    assert!(err.to_string().contains("blackboard"), "{err}");
    assert_eq!(std::fs::read(dir.join("run.json")).unwrap(), before);
}

/// Panics in `writer`'s calls; the rest from a script.
struct WriterPanics(Scripted);

impl boardroom::ChatModel for WriterPanics {
    fn name(&self) -> String {
        "writer-panics".into()
    }

    fn chat(
        &self,
        req: &ChatRequest,
        on_delta: &mut dyn FnMut(&str),
    ) -> Result<boardroom::ChatResponse, boardroom::ModelError> {
        assert!(req.agent != "writer", "the writer's model broke");
        self.0.chat(req, on_delta)
    }
}

/// A member's turn in a handoff run is on the run's own thread (there is
/// no pool): a panic in its model is an error of the call that fails the
/// run cleanly, as for a master, not a panic through `Runtime::run`.
#[test]
fn a_members_model_that_panics_fails_the_handoff_run_without_a_panic() {
    let (_t, team) = team("after_work_behavior: terminate\n");
    let runs = tempfile::tempdir().unwrap();
    let script = Scripted::new().reply("researcher", "notes\nHANDOFF: writer: go");
    let runtime = Runtime::new(team, WriterPanics(script))
        .protocol(Protocol::Line)
        .runs_dir(runs.path());
    let result =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| runtime.run("Explain tea")));
    let err = result
        .expect("Runtime::run returned, it did not panic")
        .unwrap_err();
    assert!(
        err.to_string().contains("the writer's model broke"),
        "{err}"
    );
    let dir = std::fs::read_dir(runs.path())
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let saved = load_run(&dir).unwrap().state;
    assert_eq!(saved.status(), RunStatus::Failed);
    assert_eq!(
        saved.handoff().unwrap().steps.len(),
        1,
        "the researcher's step"
    );
}

/// Reads the saved run before each call: what a kill -9 in that call
/// would leave.
struct Peeks {
    script: Scripted,
    runs: std::path::PathBuf,
    saved_steps: std::sync::Arc<parking_lot::Mutex<Vec<Vec<String>>>>,
}

impl boardroom::ChatModel for Peeks {
    fn name(&self) -> String {
        "peeks".into()
    }

    fn chat(
        &self,
        req: &ChatRequest,
        on_delta: &mut dyn FnMut(&str),
    ) -> Result<boardroom::ChatResponse, boardroom::ModelError> {
        if let Some(dir) = std::fs::read_dir(&self.runs)
            .ok()
            .and_then(|mut d| d.next())
            .and_then(Result::ok)
        {
            let steps = load_run(&dir.path())
                .ok()
                .and_then(|r| r.state.handoff().cloned())
                .map(|h| h.steps.into_iter().map(|s| s.text).collect())
                .unwrap_or_default();
            self.saved_steps.lock().push(steps);
        }
        self.script.chat(req, on_delta)
    }
}

/// The user's reply is saved before the first call it leads to: a run
/// killed in that call and resumed still has it (it was lost before).
#[test]
fn the_users_message_is_saved_before_the_agent_is_called() {
    let (_t, team) = team("");
    let runs = tempfile::tempdir().unwrap();
    let saved_steps = std::sync::Arc::default();
    let model = Peeks {
        script: Scripted::new()
            .reply("researcher", "Which tea?")
            .reply("researcher", "NONE")
            .reply("researcher", "Green: 80 degrees.")
            .reply("researcher", "NONE"),
        runs: runs.path().to_path_buf(),
        saved_steps: std::sync::Arc::clone(&saved_steps),
    };
    let runtime = Runtime::new(team, model).runs_dir(runs.path());
    let waiting = runtime.run("Explain tea").unwrap();
    let dir = runs.path().join(&waiting.run_id);
    saved_steps.lock().clear();
    runtime.resume_with_message(&dir, "green, please").unwrap();
    let first = saved_steps.lock()[0].clone();
    assert_eq!(first, ["Which tea?", "green, please"], "{first:?}");
}

/// `resume` of a finished handoff run says it is finished and runs
/// nothing (it drove the run again before): the run left its memory note
/// when it ended, so it owes none.
#[test]
fn resume_of_a_finished_handoff_run_says_so_and_runs_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path().join("runs");
    let (team_tmp, _team) = team("after_work_behavior: terminate\n");
    let bin = env!("CARGO_BIN_EXE_boardroom");
    let run = std::process::Command::new(bin)
        .args(["run", "--model", "sim", "--team"])
        .arg(team_tmp.path())
        .arg("--runs-dir")
        .arg(&runs)
        .arg("Explain tea")
        .env_remove("BOARDROOM_MODEL")
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(0), "{run:?}");
    let dir = std::fs::read_dir(&runs)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.join("run.json").is_file())
        .unwrap();
    let before = std::fs::read(dir.join("run.json")).unwrap();
    let out = std::process::Command::new(bin)
        .args(["resume", "last", "--runs-dir"])
        .arg(&runs)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("already finished"), "{stderr}");
    assert_eq!(std::fs::read(dir.join("run.json")).unwrap(), before);
}

/// Says `Cancelled` on its own (a program's model whose client was shut
/// down), though nobody stopped the run; answers after 20 calls.
struct SaysCancelled(std::sync::atomic::AtomicUsize);

impl boardroom::ChatModel for SaysCancelled {
    fn name(&self) -> String {
        "says-cancelled".into()
    }

    fn chat(
        &self,
        _req: &ChatRequest,
        _on_delta: &mut dyn FnMut(&str),
    ) -> Result<boardroom::ChatResponse, boardroom::ModelError> {
        let n = self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if n < 20 {
            Err(boardroom::ModelError::Cancelled)
        } else {
            Ok(boardroom::ChatResponse::text(
                "NONE",
                boardroom::Usage::default(),
            ))
        }
    }
}

/// A call that fails with `Cancelled` when the run was not stopped is a
/// failed call (the run fails, resumable), not a stop: the step was
/// asked for again and again before, without end.
#[test]
fn a_cancelled_call_of_a_run_nobody_stopped_fails_the_step() {
    let (_t, team) = team("after_work_behavior: terminate\n");
    let model = std::sync::Arc::new(SaysCancelled(Default::default()));
    let err = Runtime::with_shared_model(team, model.clone())
        .run("Explain tea")
        .unwrap_err();
    assert!(err.to_string().contains("cancel"), "{err}");
    assert_eq!(
        model.0.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "asked once"
    );
}

/// A handoff run saved in a blackboard phase (a hand-edited run.json) is
/// refused, as the blackboard refuses a handoff step; it was "finished"
/// with status `running` before.
#[test]
fn a_handoff_run_saved_in_a_blackboard_phase_is_refused() {
    let (_t, team) = team("after_work_behavior: terminate\n");
    let runs = tempfile::tempdir().unwrap();
    let model = Scripted::new()
        .reply("researcher", "notes")
        .reply("researcher", "NONE");
    let runtime = Runtime::new(team, model).runs_dir(runs.path());
    let run = runtime.run("Explain tea").unwrap();
    let dir = runs.path().join(&run.run_id);
    let path = dir.join("run.json");
    let mut json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    json["phase"] = "plan".into();
    json["status"] = "running".into();
    std::fs::write(&path, serde_json::to_vec(&json).unwrap()).unwrap();
    let err = runtime.resume(&dir).unwrap_err();
    assert!(err.to_string().contains("Plan"), "{err}");
}

/// A routing call is a choice, not work: the agent's own tools are not
/// offered in it (they were, so a model could write files while routing).
#[test]
fn a_routing_call_offers_no_tools() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("agents")).unwrap();
    std::fs::create_dir_all(dir.join("souls")).unwrap();
    for (name, role) in [("researcher", "master"), ("writer", "member")] {
        std::fs::write(
            dir.join("agents").join(format!("{name}.md")),
            format!(
                "---\nname: {name}\nrole: {role}\ndescription: the {name}\ntools: [workspace_read]\n---\n"
            ),
        )
        .unwrap();
        std::fs::write(dir.join("souls").join(format!("{name}.md")), "You work.").unwrap();
    }
    std::fs::write(
        dir.join("team.yaml"),
        "name: two\nprocess: handoff\nafter_work_behavior: terminate\n",
    )
    .unwrap();
    let team = Team::load(dir).unwrap();
    let model = Scripted::new()
        .reply("researcher", "all done")
        .reply("researcher", "NONE");
    let ws = tempfile::tempdir().unwrap();
    let run = Runtime::new(team, model.clone())
        .workspace(ws.path())
        .run("Explain tea")
        .unwrap();
    assert_eq!(run.status, RunStatus::Done);
    let turn = &calls(&model, "researcher", Phase::Converse)[0];
    assert!(
        turn.tools.iter().any(|t| t.name.contains("workspace_read")),
        "the turn offers the agent's tools"
    );
    let routing = calls(&model, "researcher", Phase::Route);
    assert_eq!(routing.len(), 1);
    let offered: Vec<&str> = routing[0].tools.iter().map(|t| t.name.as_str()).collect();
    assert!(offered.is_empty(), "{offered:?}");
}
