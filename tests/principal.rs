//! The principal process (issue 23, item 4), end to end: on sim, and on a
//! loopback OpenAI-compatible server scripted here that plays the
//! principal and three associates — all three associates in flight at
//! once (counted at the server), deliverables valid per their schemas
//! (one after a corrective retry), archives holding each associate's
//! messages, one module sent back and redone, the report, finish_flow.
//! Then kill -9 during the dispatch and during the review, and `resume`:
//! done, no delivered module asked for again, usage equal to the turns'
//! sum.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use boardroom::store::{load_run, read_turns};
use boardroom::testing::{Sim, SimOptions};
use boardroom::{RunStatus, Runtime, Team};
use parking_lot::Mutex;
use serde_json::{Value, json};
use support::{Reply, Request, Server};

const BIN: &str = env!("CARGO_BIN_EXE_boardroom");
const ASSOCIATES: [&str; 3] = ["analyst", "researcher", "writer"];
const REPORT: &str = "# Moving CI\n\nThe report, from the three deliverables.";

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/teams/principal")
}

/// How the scripted server behaves, and what it counted.
#[derive(Default)]
struct Script {
    /// Associates' first requests of the first dispatch that arrived.
    arrived: AtomicUsize,
    /// Set once three were in flight together.
    all_three: AtomicBool,
    /// Hang the first requests of every associate but the researcher.
    hang_others: AtomicBool,
    /// Hang the principal's review turn.
    hang_review: AtomicBool,
    /// A hung request was seen.
    hung: AtomicBool,
    /// Ends every hang.
    release: AtomicBool,
    /// The writer's first deliverable is prose (a corrective retry follows).
    writer_prose: AtomicBool,
    /// Requests by (associate, module).
    asked: Mutex<BTreeMap<(String, String), usize>>,
}

impl Script {
    fn hang(&self) {
        self.hung.store(true, Ordering::SeqCst);
        let until = Instant::now() + Duration::from_secs(60);
        while !self.release.load(Ordering::SeqCst) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn asked(&self, agent: &str, module: &str) -> usize {
        self.asked
            .lock()
            .get(&(agent.to_string(), module.to_string()))
            .copied()
            .unwrap_or(0)
    }
}

fn reply_with(message: Value) -> Reply {
    let finish = if message.get("tool_calls").is_some() {
        "tool_calls"
    } else {
        "stop"
    };
    Reply::status(
        200,
        &json!({
            "id": "x", "object": "chat.completion",
            "choices": [{"index": 0, "finish_reason": finish, "message": message}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        })
        .to_string(),
    )
}

fn tool_call(req: &Request, name: &str, args: Value) -> Reply {
    reply_with(json!({
        "role": "assistant", "content": "",
        "tool_calls": [{"id": format!("call_{}", req.index), "type": "function",
            "function": {"name": name, "arguments": args.to_string()}}]
    }))
}

fn text(t: &str) -> Reply {
    reply_with(json!({"role": "assistant", "content": t}))
}

fn messages(req: &Request) -> Vec<Value> {
    req.body["messages"].as_array().cloned().unwrap_or_default()
}

fn offers(req: &Request, tool: &str) -> bool {
    req.body["tools"]
        .as_array()
        .is_some_and(|t| t.iter().any(|t| t["function"]["name"] == tool))
}

/// The tool whose result is the request's last message.
fn answered_tool(msgs: &[Value]) -> Option<(String, String)> {
    let last = msgs.last()?;
    if last["role"] != "tool" {
        return None;
    }
    let id = last["tool_call_id"].as_str()?;
    let name = msgs
        .iter()
        .filter_map(|m| m["tool_calls"].as_array())
        .flatten()
        .find(|c| c["id"] == id)?["function"]["name"]
        .as_str()?
        .to_string();
    Some((name, last["content"].as_str().unwrap_or("").to_string()))
}

fn attr(tag: &str, name: &str) -> String {
    tag.split(&format!("{name}=\""))
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap_or("")
        .to_string()
}

fn principal(req: &Request, script: &Script) -> Reply {
    let msgs = messages(req);
    if let Some((tool, result)) = answered_tool(&msgs) {
        return match tool.as_str() {
            "manage_work_modules" => {
                let pending: Vec<String> = result
                    .lines()
                    .filter(|l| l.contains(" [pending] "))
                    .filter_map(|l| l.split(' ').next().map(str::to_string))
                    .collect();
                if !pending.is_empty() {
                    tool_call(req, "dispatch_submodules", json!({ "module_ids": pending }))
                } else if !result.contains("[pending_review]") && !result.contains("[ongoing]") {
                    tool_call(req, "generate_markdown_report", json!({}))
                } else {
                    text("Waiting.")
                }
            }
            "generate_markdown_report" => {
                assert!(
                    result.contains("<deliverable module=\"task_003\""),
                    "{result}"
                );
                text(REPORT)
            }
            _ => text("Noted."),
        };
    }
    let user = msgs[1]["content"].as_str().unwrap_or("").to_string();
    let modules: Vec<(String, String, String)> = user
        .lines()
        .filter(|l| l.starts_with("<module "))
        .map(|l| (attr(l, "id"), attr(l, "status"), attr(l, "reworks")))
        .collect();
    if user.contains("<report_status>written</report_status>") {
        return tool_call(req, "finish_flow", json!({"summary": "reported"}));
    }
    if modules.is_empty() {
        let created: Vec<Value> = ASSOCIATES
            .iter()
            .map(|a| json!({"description": format!("the part for the {a}"), "agent": a}))
            .collect();
        return tool_call(req, "manage_work_modules", json!({ "modules": created }));
    }
    if modules.iter().any(|(_, s, _)| s == "pending_review") {
        if script.hang_review.load(Ordering::SeqCst) {
            script.hang();
        }
        let updates: Vec<Value> = modules
            .iter()
            .filter(|(_, s, _)| s == "pending_review")
            .map(|(id, _, reworks)| {
                if id == "task_002" && reworks == "0" {
                    json!({"id": id, "status": "pending", "note": "give a source for each finding"})
                } else {
                    json!({"id": id, "status": "completed"})
                }
            })
            .collect();
        return tool_call(req, "manage_work_modules", json!({ "modules": updates }));
    }
    let pending: Vec<&String> = modules
        .iter()
        .filter(|(_, s, _)| s == "pending")
        .map(|(id, _, _)| id)
        .collect();
    if !pending.is_empty() {
        return tool_call(req, "dispatch_submodules", json!({ "module_ids": pending }));
    }
    tool_call(req, "generate_markdown_report", json!({}))
}

fn deliverable(agent: &str) -> Value {
    match agent {
        "researcher" => json!({"findings": ["GitHub Actions bills by the minute"],
                               "sources": ["github.com/pricing"], "confidence": "medium"}),
        "analyst" => json!({"options": [
                                {"name": "stay", "pros": "no work", "cons": "upkeep"},
                                {"name": "move", "pros": "less upkeep", "cons": "migration"}],
                            "recommendation": "move", "reasons": ["upkeep costs more"]}),
        _ => json!({"title": "Moving CI", "text": "We move in two steps."}),
    }
}

fn associate(req: &Request, script: &Script) -> Reply {
    let msgs = messages(req);
    let system = msgs[0]["content"].as_str().unwrap_or("");
    let agent = ASSOCIATES
        .iter()
        .find(|a| {
            system.contains(&format!(
                "You are a{} {a}",
                if **a == "analyst" { "n" } else { "" }
            ))
        })
        .copied()
        .unwrap_or("unknown");
    let briefing = msgs[1]["content"].as_str().unwrap_or("");
    let module = briefing
        .split("<module id=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap_or("")
        .to_string();
    *script
        .asked
        .lock()
        .entry((agent.to_string(), module.clone()))
        .or_default() += 1;
    match answered_tool(&msgs) {
        Some((tool, instructions)) if tool == "generate_message_summary" => {
            assert!(instructions.contains("<schema>"), "{instructions}");
            if agent == "writer" && script.writer_prose.swap(false, Ordering::SeqCst) {
                return text("I wrote it up; it reads well.");
            }
            text(&deliverable(agent).to_string())
        }
        _ if msgs.len() > 2 => text(&deliverable(agent).to_string()),
        _ => {
            if !briefing.contains("<review_note>") {
                let n = script.arrived.fetch_add(1, Ordering::SeqCst) + 1;
                if script.hang_others.load(Ordering::SeqCst) && agent != "researcher" {
                    script.hang();
                } else if !script.hang_others.load(Ordering::SeqCst) {
                    // All three in flight at once, or a generous bound.
                    let until = Instant::now() + Duration::from_secs(20);
                    while script.arrived.load(Ordering::SeqCst) < 3 && Instant::now() < until {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    if n <= 3 && script.arrived.load(Ordering::SeqCst) >= 3 {
                        script.all_three.store(true, Ordering::SeqCst);
                    }
                }
            }
            tool_call(req, "generate_message_summary", json!({}))
        }
    }
}

fn server(script: Arc<Script>) -> Server {
    Server::start(move |req| {
        if offers(req, "manage_work_modules") {
            principal(req, &script)
        } else if offers(req, "generate_message_summary") {
            associate(req, &script)
        } else {
            text("?")
        }
    })
}

fn spec(server: &Server) -> String {
    format!(
        "http://127.0.0.1:{}/v1#test-model,stream=false",
        server.port
    )
}

fn only_run(runs: &Path) -> Option<PathBuf> {
    std::fs::read_dir(runs)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.join("run.json").is_file())
}

/// Checks a finished run's directory: modules, deliverables, archives,
/// report, events, usage.
fn check_done(dir: &Path, report: Option<&str>) {
    let record = load_run(dir).unwrap();
    assert_eq!(record.state.status(), RunStatus::Done);
    let plan: Value =
        serde_json::from_slice(&std::fs::read(dir.join("workspace/plan.json")).unwrap()).unwrap();
    let tasks = plan["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 3, "{plan:#}");
    for t in tasks {
        assert_eq!(t["status"], "completed", "{t:#}");
        let agent = t["assigned_agent"].as_str().unwrap();
        let d = &t["deliverable"];
        let required: &[&str] = match agent {
            "researcher" => &["findings", "sources", "confidence"],
            "analyst" => &["options", "recommendation", "reasons"],
            _ => &["title", "text"],
        };
        for key in required {
            assert!(d.get(key).is_some(), "{agent}: {key} in {d:#}");
        }
        // plan.json names the associate's turns (issue 25); the run reads
        // the transcript back whole.
        let turns = t["context_turns"].as_array().unwrap();
        assert!(!turns.is_empty(), "{t:#}");
        assert!(t.get("context_archive").is_none(), "{t:#}");
        let id = t["task_id"].as_str().unwrap();
        let module = record.state.plan().get(id).unwrap();
        let archive = serde_json::to_value(&module.context_archive).unwrap();
        let archive = archive.as_array().unwrap();
        assert!(archive.len() >= 4, "{agent}: {archive:#?}");
        assert_eq!(archive[0]["role"], "system");
        assert!(
            archive[1]["content"]
                .as_str()
                .unwrap()
                .contains(&format!("<module id=\"{id}\""))
        );
        assert_eq!(archive.last().unwrap()["role"], "assistant");
    }
    assert_eq!(
        tasks[1]["metadata"]["reworks"], 1,
        "task_002 was sent back once"
    );
    let md = std::fs::read_to_string(dir.join("workspace/report.md")).unwrap();
    if let Some(report) = report {
        assert_eq!(md.trim(), report.trim());
    }
    let events = std::fs::read_to_string(dir.join("events.jsonl")).unwrap();
    let started: Value = serde_json::from_str(events.lines().next().unwrap()).unwrap();
    assert_eq!(started["type"], "run_started");
    assert_eq!(started["process"], "principal");
    let sum: u64 = read_turns(dir)
        .unwrap()
        .items
        .iter()
        .map(|t| t.usage.total())
        .sum();
    assert_eq!(
        record.state.usage().total(),
        sum,
        "usage equals the turns' sum"
    );
}

#[test]
fn a_principal_run_on_sim_dispatches_in_parallel_reviews_and_reports() {
    let tmp = tempfile::tempdir().unwrap();
    // The associates' calls wait for `go`, written once three are in flight
    // (or after 30 s): a 300 ms sleep per call raced with their start on a
    // loaded machine.
    let go = tmp.path().join("go");
    let sim = Sim::with_options(SimOptions {
        hold: Some(go.clone()),
        ..SimOptions::default()
    });
    let stats = sim.stats();
    let release = support::hold::release_when(&stats, 3, Duration::ZERO, &go);
    let run = Runtime::new(Team::load(example()).unwrap(), sim)
        .runs_dir(tmp.path().join("runs"))
        .run("Should our team move from Jenkins to GitHub Actions?")
        .unwrap();
    release.join().unwrap();
    assert_eq!(run.status, RunStatus::Done);
    assert!(run.answer.contains("simulated"), "{}", run.answer);
    assert!(stats.max_in_flight() >= 3, "{}", stats.max_in_flight());
    check_done(
        &only_run(&tmp.path().join("runs")).unwrap(),
        Some(&run.answer),
    );
}

#[test]
fn a_principal_run_over_http_has_three_associates_in_flight_and_a_rework() {
    let script = Arc::new(Script::default());
    script.writer_prose.store(true, Ordering::SeqCst);
    let server = server(Arc::clone(&script));
    let tmp = tempfile::tempdir().unwrap();
    let model = boardroom::openai::resolve_model(&spec(&server)).unwrap();
    let run = Runtime::with_shared_model(Team::load(example()).unwrap(), model)
        .runs_dir(tmp.path())
        .run("Should our team move from Jenkins to GitHub Actions?")
        .unwrap();
    assert_eq!(run.status, RunStatus::Done, "{}", run.answer);
    assert_eq!(run.answer.trim(), REPORT);
    assert!(
        script.all_three.load(Ordering::SeqCst),
        "three associates in flight at once"
    );
    assert!(server.peak_in_flight() >= 3, "{}", server.peak_in_flight());
    // The rework: task_002 (the researcher's) briefed again with the note.
    let reworked = server.seen().iter().any(|r| {
        offers(r, "generate_message_summary")
            && r.all_text()
                .contains("<review_note>give a source for each finding</review_note>")
    });
    assert!(reworked);
    // The writer's prose was corrected into a deliverable.
    assert!(
        server
            .seen()
            .iter()
            .any(|r| r.all_text().contains("Your last reply could not be used"))
    );
    check_done(&only_run(tmp.path()).unwrap(), Some(REPORT));
}

/// Runs the example team on the server with the CLI, kills it (SIGKILL)
/// once `ready` holds for its run directory, and resumes it.
fn kill_and_resume(
    runs: &Path,
    script: &Arc<Script>,
    server: &Server,
    ready: impl Fn(&Path) -> bool,
) -> PathBuf {
    let mut child = Command::new(BIN)
        .args([
            "run",
            "--team",
            example().to_str().unwrap(),
            "--model",
            &spec(server),
        ])
        .arg("--runs-dir")
        .arg(runs)
        .arg("Should our team move from Jenkins to GitHub Actions?")
        .env_remove("BOARDROOM_MODEL")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let dir = loop {
        if let Some(dir) = only_run(runs)
            && script.hung.load(Ordering::SeqCst)
            && ready(&dir)
        {
            child.kill().unwrap();
            child.wait().unwrap();
            break dir;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("the run ended before it could be killed: {status}");
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "not ready to kill: hung {}, asked {:?}, modules {:?}",
            script.hung.load(Ordering::SeqCst),
            script.asked.lock(),
            only_run(runs).map(|d| ["task_001", "task_002", "task_003"].map(|t| status_of(&d, t)))
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    script.hang_others.store(false, Ordering::SeqCst);
    script.hang_review.store(false, Ordering::SeqCst);
    script.release.store(true, Ordering::SeqCst);
    assert_eq!(load_run(&dir).unwrap().state.status(), RunStatus::Running);
    let id = dir.file_name().unwrap().to_str().unwrap().to_string();
    let out = Command::new(BIN)
        .args(["resume", &id])
        .arg("--runs-dir")
        .arg(runs)
        .env_remove("BOARDROOM_MODEL")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir
}

fn status_of(dir: &Path, id: &str) -> Option<String> {
    let plan = load_run(dir).ok()?.state.plan().clone();
    plan.get(id).map(|m| m.status.to_string())
}

#[test]
fn a_principal_run_killed_during_dispatch_resumes_without_asking_for_a_delivered_module() {
    let script = Arc::new(Script::default());
    script.hang_others.store(true, Ordering::SeqCst);
    let server = server(Arc::clone(&script));
    // Killed once the researcher's module is saved as delivered while the
    // other two associates are in flight.
    let tmp = tempfile::tempdir().unwrap();
    let dir = kill_and_resume(tmp.path(), &script, &server, |dir| {
        status_of(dir, "task_002").as_deref() == Some("pending_review")
    });
    // The researcher: two calls for its delivery (its work, its JSON), two
    // for the rework; none again after the kill.
    assert_eq!(script.asked("researcher", "task_002"), 4);
    assert_eq!(
        script.asked("analyst", "task_001"),
        1 + 2,
        "its hung call, then its work"
    );
    check_done(&dir, Some(REPORT));
}

#[test]
fn a_principal_run_killed_during_review_resumes_without_asking_an_associate_again() {
    let script = Arc::new(Script::default());
    script.hang_review.store(true, Ordering::SeqCst);
    let server = server(Arc::clone(&script));
    let tmp = tempfile::tempdir().unwrap();
    let dir = kill_and_resume(tmp.path(), &script, &server, |dir| {
        status_of(dir, "task_001").as_deref() == Some("pending_review")
    });
    // Each associate delivered once (two calls), the researcher once more
    // for the rework: no delivered module was asked for again.
    assert_eq!(script.asked("analyst", "task_001"), 2);
    assert_eq!(script.asked("researcher", "task_002"), 4);
    assert_eq!(script.asked("writer", "task_003"), 2);
    check_done(&dir, Some(REPORT));
}

#[test]
fn every_cap_ends_a_principal_run_with_a_report_from_what_was_delivered() {
    let task = "Should our team move from Jenkins to GitHub Actions?";
    // One round of dispatch: the module sent back cannot go out again,
    // and the principal's turns run out.
    let run = Runtime::new(Team::load(example()).unwrap(), Sim::new())
        .max_rounds(1)
        .run(task)
        .unwrap();
    assert_eq!(run.status, RunStatus::TurnLimit, "{}", run.answer);
    assert!(
        run.answer.starts_with("# Should our team move"),
        "{}",
        run.answer
    );
    assert!(run.answer.contains("\"findings\""), "{}", run.answer);
    assert_eq!(run.rounds, 1);
    // The token budget: spent during the first dispatch.
    let run = Runtime::new(Team::load(example()).unwrap(), Sim::new())
        .token_budget(3_000)
        .run(task)
        .unwrap();
    assert_eq!(run.status, RunStatus::BudgetExhausted, "{}", run.answer);
    assert!(run.usage.total() < 10_000, "{}", run.usage.total());
    // The time limit.
    let slow = Sim::with_options(SimOptions {
        latency: Duration::from_millis(400),
        ..SimOptions::default()
    });
    let run = Runtime::new(Team::load(example()).unwrap(), slow)
        .timeout(Duration::from_millis(600))
        .run(task)
        .unwrap();
    assert_eq!(run.status, RunStatus::TimedOut, "{}", run.answer);
}
