//! Issue 8: faults that must leave a saved run truthful and resumable — a
//! server outage mid-round (finding 9) and panics in the master's calls
//! and in a single tool call (finding 11).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};

use boardroom::board::EntryKind;
use boardroom::store::{load_run, read_events, read_turns};
use boardroom::testing::{Scripted, Sim};
use boardroom::{
    AgentSpec, ChatModel, ChatRequest, ChatResponse, ModelError, OpenAi, Phase, RunStatus, Runtime,
    Team, TeamConfig, Tool, ToolCall, ToolContext, ToolError,
};
use serde_json::{Value, json};

mod support;

use support::models::Hooked;

/// The sim, except that once `outage` is armed, every call after the
/// master's plan goes to a real OpenAI-compatible client aimed at a
/// loopback port nobody listens on: a real transport error.
struct Outage {
    sim: Sim,
    dead: OpenAi,
    down: AtomicBool,
    arm_after_plan: bool,
}

impl Outage {
    fn new(arm_after_plan: bool) -> Self {
        let port = support::free_port();
        let dead = OpenAi::builder(format!("http://127.0.0.1:{port}/v1"), "m")
            .sleep_with(|_| {})
            .build()
            .unwrap();
        Outage {
            sim: Sim::new(),
            dead,
            down: AtomicBool::new(false),
            arm_after_plan,
        }
    }
}

impl ChatModel for Outage {
    fn name(&self) -> String {
        "outage".into()
    }

    fn chat(
        &self,
        req: &ChatRequest,
        on_delta: &mut dyn FnMut(&str),
    ) -> Result<ChatResponse, ModelError> {
        if self.down.load(Ordering::SeqCst) {
            return self.dead.chat(req, on_delta);
        }
        let answer = self.sim.chat(req, on_delta);
        if req.phase == Phase::Plan && self.arm_after_plan {
            self.down.store(true, Ordering::SeqCst);
        }
        answer
    }
}

#[test]
fn a_run_failed_by_a_server_outage_reruns_the_failed_assignments_on_resume() {
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path().join("runs");
    let failed = Runtime::new(Team::builtin().unwrap(), Outage::new(true))
        .runs_dir(&runs)
        .run("Plan a garden party");
    assert!(
        failed.is_err(),
        "the master cannot answer either: {failed:?}"
    );
    let dir = support::only_run_dir(&runs);
    let saved = load_run(&dir).unwrap();
    assert_eq!(saved.state.status(), RunStatus::Failed);
    let member_errors: Vec<_> = saved
        .state
        .board()
        .iter()
        .filter(|e| e.kind == EntryKind::Error && e.task.is_some())
        .collect();
    assert_eq!(member_errors.len(), 4, "{:?}", saved.state.board());
    assert!(
        member_errors.iter().all(|e| e.transport),
        "member errors are marked as transport failures"
    );

    // The server is back: resume runs the four assignments again.
    let resumed = Runtime::new(saved.team.to_team().unwrap(), Outage::new(false))
        .resume(&dir)
        .unwrap();
    assert_eq!(resumed.status, RunStatus::Done);
    let drafts: Vec<&str> = resumed
        .board
        .iter()
        .filter(|e| e.round == 1 && e.kind == EntryKind::Draft)
        .map(|e| e.author.as_str())
        .collect();
    assert_eq!(drafts.len(), 4, "{drafts:?}");
    // Every member's notes reached the answer, one document that does not
    // name them: the first point's sentence of each.
    for e in resumed
        .board
        .iter()
        .filter(|e| e.round == 1 && e.kind == EntryKind::Draft)
    {
        let first = e
            .text
            .lines()
            .find_map(|l| l.strip_prefix("1. **"))
            .and_then(|l| l.split_once(".** "))
            .map_or(e.text.as_str(), |(_, sentence)| sentence);
        assert!(
            resumed.answer.contains(first),
            "{first}: {}",
            resumed.answer
        );
    }

    let turns = read_turns(&dir).unwrap().items;
    let mut drafts_by: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for t in turns.iter().filter(|t| t.phase == Phase::Draft) {
        let n = drafts_by.entry(t.agent.clone()).or_default();
        if t.error.is_some() {
            n.0 += 1
        } else {
            n.1 += 1
        }
    }
    let once_each: BTreeMap<String, (usize, usize)> = ["analyst", "critic", "researcher", "writer"]
        .iter()
        .map(|m| (m.to_string(), (1, 1)))
        .collect();
    assert_eq!(
        drafts_by, once_each,
        "one failed call, then one draft, each"
    );
    assert_eq!(turns.iter().filter(|t| t.phase == Phase::Plan).count(), 1);

    // And it says so.
    let events = read_events(&dir).unwrap().items;
    let rerun = events
        .iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .find(|v| v["type"] == "rerun")
        .expect("a rerun event");
    assert_eq!(rerun["round"], 1);
    assert_eq!(
        rerun["members"],
        json!(["analyst", "critic", "researcher", "writer"])
    );
}

/// The sim, with a master whose review panics.
fn panicky_review() -> impl ChatModel {
    Hooked::new("panicky", Sim::new(), |req, _| {
        if req.phase == Phase::Review {
            panic!("review bug");
        }
    })
}

#[test]
fn a_panic_in_a_master_call_is_an_error_and_run_json_never_says_running() {
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path().join("runs");
    let result = std::panic::catch_unwind(|| {
        Runtime::new(Team::builtin().unwrap(), panicky_review())
            .runs_dir(&runs)
            .run("Plan a picnic")
    });
    let outcome = result.expect("the panic does not escape Runtime::run");
    let dir = support::only_run_dir(&runs);
    let saved = load_run(&dir).unwrap();
    assert_ne!(saved.state.status(), RunStatus::Running);
    // The review's failure goes on the board, and the master's final answer
    // (which does not panic) still ends the run.
    let outcome = outcome.unwrap();
    assert_eq!(outcome.status, RunStatus::Done);
    let review_error = outcome
        .board
        .iter()
        .find(|e| e.kind == EntryKind::Error && e.author == "master")
        .expect("the review's panic is an error entry");
    assert!(
        review_error.text.contains("the call panicked: review bug"),
        "{}",
        review_error.text
    );
}

/// The sim, with a master that panics on every call.
fn panicky_master() -> impl ChatModel {
    Hooked::new("panicky", Sim::new(), |_, _| panic!("plan bug"))
}

#[test]
fn a_panic_in_the_masters_plan_fails_the_run_cleanly() {
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path().join("runs");
    let result = std::panic::catch_unwind(|| {
        Runtime::new(Team::builtin().unwrap(), panicky_master())
            .runs_dir(&runs)
            .run("Plan a picnic")
    });
    let err = result
        .expect("the panic does not escape Runtime::run")
        .unwrap_err();
    assert!(
        err.to_string().contains("the call panicked: plan bug"),
        "{err}"
    );
    let dir = support::only_run_dir(&runs);
    let saved = load_run(&dir).unwrap();
    assert_eq!(saved.state.status(), RunStatus::Failed);
    assert!(
        saved.state.error().unwrap_or("").contains("plan bug"),
        "{:?}",
        saved.state.error()
    );
}

/// A tool that panics.
#[derive(Debug)]
struct Boom;

impl Tool for Boom {
    fn name(&self) -> &str {
        "boom"
    }
    fn description(&self) -> &str {
        "Panics"
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {}})
    }
    fn call(&self, _: Value, _: &ToolContext<'_>) -> Result<String, ToolError> {
        panic!("tool bug");
    }
}

#[test]
fn a_panic_in_a_single_tool_call_is_its_result() {
    let team = Team::new(
        "tools",
        TeamConfig::default(),
        vec![
            AgentSpec::master("lead", "You lead."),
            AgentSpec::member("writer", "Writes", "You write.").with_tools(["boom"]),
        ],
    )
    .unwrap();
    let model = Scripted::new()
        .reply("lead", "ASSIGN:writer:Try the tool")
        .respond(
            "writer",
            ChatResponse {
                tool_calls: vec![ToolCall {
                    id: "c1".into(),
                    name: "boom".into(),
                    arguments: "{}".into(),
                }],
                finish: boardroom::FinishReason::ToolCalls,
                ..ChatResponse::default()
            },
        )
        .reply("writer", "The tool broke.")
        .reply("lead", "DONE\nok");
    let run = Runtime::new(team, model.clone())
        .tool(Boom)
        .run("Try it")
        .unwrap();
    assert_eq!(run.status, RunStatus::Done);
    let last = model
        .requests()
        .into_iter()
        .rfind(|r| r.agent == "writer")
        .unwrap();
    let result = last.messages.last().unwrap();
    assert_eq!(result.content, "error: tool 'boom' panicked");
}

/// The sim, except that the first member's call stops the run (it waits
/// for the test to hand it the run's stop flag through `flag`): the members
/// called after it are cancelled before they are sent.
fn cancel_on_first_draft(
    flag: std::sync::Arc<std::sync::Mutex<Option<boardroom::Cancel>>>,
) -> impl ChatModel {
    let fired = AtomicBool::new(false);
    Hooked::new("cancel-on-first-draft", Sim::new(), move |req, _| {
        if req.phase == Phase::Draft && !fired.swap(true, Ordering::SeqCst) {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
            while std::time::Instant::now() < deadline {
                if let Some(flag) = flag.lock().unwrap().take() {
                    flag.cancel();
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
    })
}

/// run.json's totals equal the sum over turns.jsonl.
fn totals_match_turns(dir: &std::path::Path) {
    let turns = read_turns(dir).unwrap().items;
    let sum: u64 = turns.iter().map(|t| t.usage.total()).sum();
    assert_eq!(load_run(dir).unwrap().state.usage().total(), sum);
}

fn round_one_drafts(board: &[boardroom::board::Entry]) -> Vec<String> {
    let mut drafts: Vec<String> = board
        .iter()
        .filter(|e| e.round == 1 && e.kind == EntryKind::Draft)
        .map(|e| e.author.clone())
        .collect();
    drafts.sort();
    drafts
}

/// A member whose call was cancelled before it was sent never did its
/// work: resuming the cancelled run must run it, not count the
/// cancellation as its answer.
#[test]
fn members_cancelled_before_their_call_run_on_resume() {
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path().join("runs");
    let flag = std::sync::Arc::new(std::sync::Mutex::new(None));
    let model = cancel_on_first_draft(std::sync::Arc::clone(&flag));
    let rt = Runtime::new(Team::builtin().unwrap(), model)
        .runs_dir(&runs)
        .max_parallel(1);
    let handle = rt.start("Plan a garden party").unwrap();
    *flag.lock().unwrap() = Some(handle.canceller());
    let cancelled = handle.wait().unwrap();
    assert_eq!(cancelled.status, RunStatus::Cancelled);
    assert_eq!(
        round_one_drafts(&cancelled.board).len(),
        1,
        "one member ran"
    );
    let dir = support::only_run_dir(&runs);

    let saved = load_run(&dir).unwrap();
    let resumed = Runtime::new(saved.team.to_team().unwrap(), Sim::new())
        .resume(&dir)
        .unwrap();
    assert_eq!(resumed.status, RunStatus::Done);
    assert_eq!(
        round_one_drafts(&resumed.board),
        ["analyst", "critic", "researcher", "writer"],
        "every assignment of round 1 has its draft: {:?}",
        resumed.board
    );
    let turns = read_turns(&dir).unwrap().items;
    let sent: BTreeMap<String, usize> = turns
        .iter()
        .filter(|t| t.phase == Phase::Draft && t.error.is_none())
        .fold(BTreeMap::new(), |mut m, t| {
            *m.entry(t.agent.clone()).or_default() += 1;
            m
        });
    assert!(
        sent.values().all(|&n| n == 1),
        "no draft asked twice: {sent:?}"
    );
    totals_match_turns(&dir);
}

/// The saved run holds an error entry for each of the 4 round-1
/// assignments (each passes `check`); resuming it on a working model
/// gives every member its draft, and the totals still match the turns.
fn every_member_failed_then_resume_drafts(
    runs: &std::path::Path,
    check: impl Fn(&boardroom::board::Entry),
) {
    let dir = support::only_run_dir(runs);
    let saved = load_run(&dir).unwrap();
    let member_errors: Vec<_> = saved
        .state
        .board()
        .iter()
        .filter(|e| e.kind == EntryKind::Error && e.task.is_some())
        .collect();
    assert_eq!(member_errors.len(), 4, "{:?}", saved.state.board());
    for e in member_errors {
        check(e);
    }
    let resumed = Runtime::new(saved.team.to_team().unwrap(), Sim::new())
        .resume(&dir)
        .unwrap();
    assert_eq!(resumed.status, RunStatus::Done);
    assert_eq!(
        round_one_drafts(&resumed.board),
        ["analyst", "critic", "researcher", "writer"]
    );
    totals_match_turns(&dir);
}

/// A call that runs out of its deadline (a server that accepts and never
/// answers) is a transport failure: resume runs the assignment again.
#[test]
fn a_member_past_its_call_deadline_runs_again_on_resume() {
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path().join("runs");
    // Accepts connections (the kernel's backlog) and never answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let mut model = Outage::new(true);
    model.dead = OpenAi::builder(format!("http://127.0.0.1:{port}/v1"), "m")
        .timeout(std::time::Duration::from_millis(300))
        .sleep_with(|_| {})
        .build()
        .unwrap();
    let failed = Runtime::new(Team::builtin().unwrap(), model)
        .runs_dir(&runs)
        .run("Plan a garden party");
    assert!(
        failed.is_err(),
        "the master cannot answer either: {failed:?}"
    );
    every_member_failed_then_resume_drafts(&runs, |e| {
        assert!(
            e.text
                .contains("no complete answer within the call deadline of 300ms"),
            "{}",
            e.text
        );
        assert!(e.transport, "a deadline is a transport failure: {}", e.text);
    });
    drop(silent);
}

/// A key revoked mid-run: every member's call is refused with 401, and so
/// is the master's review. With the key fixed, resume runs the refused
/// assignments again instead of counting the refusal as their turn.
#[test]
fn members_refused_with_an_http_error_run_again_on_resume() {
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path().join("runs");
    let server = support::Server::start(|_| {
        support::Reply::status(401, r#"{"error":{"message":"invalid api key"}}"#)
    });
    let mut model = Outage::new(true);
    model.dead = OpenAi::builder(server.base_url(), "m")
        .api_key("sk-revoked")
        .sleep_with(|_| {})
        .build()
        .unwrap();
    let failed = Runtime::new(Team::builtin().unwrap(), model)
        .runs_dir(&runs)
        .run("Plan a garden party");
    assert!(failed.is_err(), "the master is refused too: {failed:?}");
    every_member_failed_then_resume_drafts(&runs, |e| {
        assert!(e.text.contains("http 401"), "{}", e.text);
        assert!(e.transport, "refused, never answered: {}", e.text);
    });
}
