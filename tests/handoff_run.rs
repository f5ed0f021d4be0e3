//! The handoff process (issue 11 §2) driven by a scripted model: every
//! path of the loop, counted by the model calls and the saved steps.

mod support;

use boardroom::protocol::Protocol;
use boardroom::store::load_run;
use boardroom::testing::Scripted;
use boardroom::{
    ChatRequest, ChatResponse, Event, EventKind, FinishReason, Phase, RunStatus, Runtime, ToolCall,
};
use support::handoff::{calls, chain as team, run_line};

fn handoff_call(to: &str, reason: &str) -> ChatResponse {
    ChatResponse {
        text: "my notes".into(),
        tool_calls: vec![ToolCall {
            id: "call_1".into(),
            name: "handoff".into(),
            arguments: serde_json::json!({"destination_agent": to, "reason": reason}).to_string(),
        }],
        finish: FinishReason::ToolCalls,
        ..ChatResponse::default()
    }
}

fn tool_call(name: &str, args: serde_json::Value) -> ChatResponse {
    ChatResponse {
        tool_calls: vec![ToolCall {
            id: "call_v".into(),
            name: name.into(),
            arguments: args.to_string(),
        }],
        finish: FinishReason::ToolCalls,
        ..ChatResponse::default()
    }
}

fn last_user(r: &ChatRequest) -> String {
    r.messages
        .iter()
        .rev()
        .find(|m| m.role == boardroom::Role::User)
        .map(|m| m.content.clone())
        .unwrap_or_default()
}

#[test]
fn a_handoff_tool_call_is_intercepted_and_never_run_as_a_tool() {
    let (_t, team) = team("after_work_behavior: terminate\n");
    let model = Scripted::new()
        .respond("researcher", handoff_call("writer", "write it up"))
        .reply("writer", "the article")
        .reply("writer", "NONE");
    let (tx, rx) = boardroom::channel::unbounded();
    let run = Runtime::new(team, model.clone())
        .events(tx)
        .run("Explain tea")
        .unwrap();
    assert_eq!(run.status, RunStatus::Done);
    assert_eq!(run.answer, "the article");
    let first = &run.steps[0];
    assert_eq!(first.agent, "researcher");
    assert_eq!(first.text, "my notes");
    assert!(first.handoff_triggered);
    assert_eq!(first.handoff_target.as_deref(), Some("writer"));
    assert_eq!(first.how.as_deref(), Some("tool"));
    assert_eq!(first.tool_calls, vec!["handoff"]);
    // The tool was offered, and the run took the call: no tool event, no
    // second call of the researcher with a tool result.
    let researcher = calls(&model, "researcher", Phase::Converse);
    assert_eq!(researcher.len(), 1);
    assert!(researcher[0].tools.iter().any(|t| t.name == "handoff"));
    let events: Vec<Event> = rx.try_iter().collect();
    assert!(!events.iter().any(|e| matches!(
        &e.kind,
        EventKind::ToolCall { .. } | EventKind::ToolResult { .. }
    )));
    let handoff = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::Handoff {
                from,
                to,
                reason,
                how,
            } => Some((from.clone(), to.clone(), reason.clone(), how.clone())),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        handoff,
        (
            "researcher".into(),
            "writer".into(),
            "write it up".into(),
            "tool".into()
        )
    );
    // The writer saw the researcher's step and its reason in the history.
    let writer = calls(&model, "writer", Phase::Converse);
    assert!(last_user(&writer[0]).contains("my notes"));
    assert!(last_user(&writer[0]).contains("write it up"));
}

#[test]
fn a_handoff_line_is_read_when_the_run_uses_the_line_protocol() {
    let (_t, team) = team("after_work_behavior: terminate\n");
    let model = Scripted::new()
        .reply("researcher", "notes\n- **HANDOFF:** writer: draft it")
        .reply("writer", "the article")
        .reply("writer", "NONE");
    let run = run_line(team, &model);
    assert_eq!(run.steps[0].how.as_deref(), Some("line"));
    assert_eq!(run.steps[0].handoff_target.as_deref(), Some("writer"));
    assert_eq!(run.steps[0].reason.as_deref(), Some("draft it"));
    assert_eq!(
        run.steps[0].text, "notes",
        "the HANDOFF line leaves the text"
    );
    let researcher = calls(&model, "researcher", Phase::Converse);
    assert!(
        researcher[0].tools.is_empty(),
        "no tool with --protocol line"
    );
    assert!(last_user(&researcher[0]).contains("It is your turn"));
}

#[test]
fn an_unknown_destination_goes_back_to_the_agent_with_the_roster() {
    let (_t, team) = team("after_work_behavior: terminate\n");
    let model = Scripted::new()
        .reply("researcher", "notes\nHANDOFF: editor: polish it")
        .reply("researcher", "notes\nHANDOFF: reviewer: check it")
        .reply("reviewer", "checked")
        .reply("reviewer", "NONE");
    let run = run_line(team, &model);
    let researcher = calls(&model, "researcher", Phase::Converse);
    assert_eq!(researcher.len(), 2, "one corrective retry");
    let note = last_user(&researcher[1]);
    assert!(note.contains("editor"), "{note}");
    assert!(
        note.contains("writer") && note.contains("reviewer"),
        "{note}"
    );
    assert_eq!(run.steps.len(), 2);
    assert_eq!(run.steps[0].handoff_target.as_deref(), Some("reviewer"));
    assert_eq!(run.answer, "checked");
}

#[test]
fn rules_are_tried_highest_priority_first_in_one_routing_call() {
    let (_t, team) = team(
        "after_work_behavior: terminate\nhandoffs:\n  - from_agent: researcher\n    to_agent: writer\n    condition: the notes are complete\n    priority: 1\n  - from_agent: \"*\"\n    to_agent: reviewer\n    condition: the notes need checking\n    priority: 5\n",
    );
    let model = Scripted::new()
        .reply("researcher", "notes, no handoff")
        .reply("researcher", "RULE: 2")
        .reply("writer", "the article")
        .reply("writer", "NONE");
    let run = run_line(team, &model);
    let routing = calls(&model, "researcher", Phase::Route);
    assert_eq!(routing.len(), 1, "one routing call");
    let prompt = last_user(&routing[0]);
    let reviewer = prompt.find("1. to reviewer").expect(&prompt);
    let writer = prompt.find("2. to writer").expect(&prompt);
    assert!(reviewer < writer);
    assert_eq!(run.steps[0].handoff_target.as_deref(), Some("writer"));
    assert_eq!(run.steps[0].how.as_deref(), Some("rule 2"));
    assert!(!run.steps[0].handoff_triggered);
}

#[test]
fn the_router_picks_from_the_roster_when_no_rule_holds() {
    let (_t, team) = team(
        "after_work_behavior: terminate\nhandoffs:\n  - from_agent: researcher\n    to_agent: writer\n    condition: the notes are complete\n",
    );
    let model = Scripted::new()
        .reply("researcher", "half the notes")
        .reply("researcher", "NONE")
        .reply("researcher", "NEXT: reviewer")
        .reply("reviewer", "reviewed")
        .reply("reviewer", "NONE")
        .reply("reviewer", "NONE");
    let run = run_line(team, &model);
    assert_eq!(run.steps[0].handoff_target.as_deref(), Some("reviewer"));
    assert_eq!(run.steps[0].how.as_deref(), Some("router"));
    let routing = calls(&model, "researcher", Phase::Route);
    assert_eq!(routing.len(), 2, "the rules, then the router");
    assert!(last_user(&routing[1]).contains("<candidates>"));
    assert_eq!(run.status, RunStatus::Done);
    assert_eq!(run.answer, "reviewed");
}

#[test]
fn after_work_terminate_ends_done_with_the_last_answer() {
    let (_t, team) = team("after_work_behavior: terminate\n");
    let model = Scripted::new()
        .reply("researcher", "all done here")
        .reply("researcher", "NONE");
    let run = Runtime::new(team, model.clone())
        .run("Explain tea")
        .unwrap();
    assert_eq!(run.status, RunStatus::Done);
    assert_eq!(run.answer, "all done here");
    assert_eq!(run.steps.len(), 1);
    assert_eq!(run.steps[0].handoff_target, None);
}

#[test]
fn after_work_continue_gives_the_same_agent_another_turn() {
    let (_t, team) = team("after_work_behavior: continue\nmax_turns: 3\n");
    let model = Scripted::new()
        .reply("researcher", "part one")
        .reply("researcher", "NONE")
        .reply("researcher", "part two")
        .reply("researcher", "NONE")
        .reply("researcher", "part three")
        .reply("researcher", "NONE");
    let run = Runtime::new(team, model.clone())
        .run("Explain tea")
        .unwrap();
    assert_eq!(calls(&model, "researcher", Phase::Converse).len(), 3);
    assert_eq!(run.status, RunStatus::TurnLimit);
    assert_eq!(run.answer, "part three");
    assert_eq!(run.steps[0].how.as_deref(), Some("after_work"));
    assert_eq!(run.steps[0].handoff_target.as_deref(), Some("researcher"));
}

#[test]
fn return_to_user_waits_and_a_message_continues_with_the_users_words() {
    let (_t, team) = team("");
    let runs = tempfile::tempdir().unwrap();
    let model = Scripted::new()
        .reply("researcher", "Which tea do you mean?")
        .reply("researcher", "NONE")
        .reply("researcher", "Green tea: 80 degrees, two minutes.")
        .reply("researcher", "NONE");
    let runtime = Runtime::new(team, model.clone()).runs_dir(runs.path());
    let events = {
        let (tx, rx) = boardroom::channel::unbounded();
        let waiting = runtime.clone().events(tx).run("Explain tea").unwrap();
        assert_eq!(waiting.status, RunStatus::AwaitingUser);
        assert_eq!(waiting.answer, "Which tea do you mean?");
        let saved = load_run(&runs.path().join(&waiting.run_id)).unwrap();
        assert_eq!(saved.state.status(), RunStatus::AwaitingUser);
        (rx.try_iter().collect::<Vec<Event>>(), waiting.run_id)
    };
    let (events, id) = events;
    assert!(events.iter().any(|e| matches!(
        &e.kind,
        EventKind::AwaitingUser { question } if question == "Which tea do you mean?"
    )));
    let dir = runs.path().join(&id);
    let done = runtime
        .resume_with_message(&dir, "green tea, please")
        .unwrap();
    assert_eq!(done.status, RunStatus::AwaitingUser);
    assert_eq!(done.answer, "Green tea: 80 degrees, two minutes.");
    let turns = calls(&model, "researcher", Phase::Converse);
    assert_eq!(turns.len(), 2, "the first turn is not run again");
    let history = last_user(&turns[1]);
    assert!(history.contains("green tea, please"), "{history}");
    assert!(history.contains("Which tea do you mean?"), "{history}");
    let agents: Vec<&str> = done.steps.iter().map(|s| s.agent.as_str()).collect();
    assert_eq!(agents, ["researcher", "user", "researcher"]);
}

#[test]
fn max_handoffs_stops_a_ping_pong_with_an_answer() {
    let (_t, team) = team("max_handoffs: 3\n");
    let model = Scripted::new()
        .otherwise("researcher", "ping\nHANDOFF: writer: your turn")
        .otherwise("writer", "pong\nHANDOFF: researcher: your turn");
    let run = run_line(team, &model);
    assert_eq!(run.status, RunStatus::HandoffLimit);
    assert_eq!(
        run.steps.len(),
        4,
        "three handoffs, then the fourth is refused"
    );
    assert_eq!(run.answer, "pong");
    assert_eq!(model.requests().len(), 4);
}

#[test]
fn var_and_set_variable_change_how_a_condition_reads() {
    let yaml = "after_work_behavior: terminate\ncontext_variables:\n  mode: lenient\nhandoffs:\n  - from_agent: researcher\n    to_agent: reviewer\n    condition: the review is {{ mode }}\n";
    // --var: the routing call reads the overridden value.
    let (_t, chain) = team(yaml);
    let model = Scripted::new()
        .reply("researcher", "notes")
        .reply("researcher", "NONE")
        .reply("researcher", "NONE");
    Runtime::new(chain.clone(), model.clone())
        .protocol(Protocol::Line)
        .var("mode", "thorough")
        .run("Explain tea")
        .unwrap();
    let routing = calls(&model, "researcher", Phase::Route);
    assert!(last_user(&routing[0]).contains("the review is thorough"));
    assert!(last_user(&calls(&model, "researcher", Phase::Converse)[0]).contains("mode: thorough"));

    // set_variable: intercepted (never run as a tool), and the routing call
    // after the turn reads the new value.
    let model = Scripted::new()
        .respond(
            "researcher",
            tool_call(
                "set_variable",
                serde_json::json!({"name": "mode", "value": "strict"}),
            ),
        )
        .reply("researcher", "notes")
        .reply("researcher", "NONE")
        .reply("researcher", "NONE");
    let (tx, rx) = boardroom::channel::unbounded();
    let run = Runtime::new(chain, model.clone())
        .events(tx)
        .run("Explain tea")
        .unwrap();
    let routing = calls(&model, "researcher", Phase::Route);
    assert!(last_user(&routing[0]).contains("the review is strict"));
    let turn = calls(&model, "researcher", Phase::Converse);
    assert_eq!(turn.len(), 2, "the turn goes on after set_variable");
    assert!(
        turn[1]
            .messages
            .iter()
            .any(|m| m.content.contains("mode is now strict"))
    );
    assert!(
        !rx.try_iter()
            .any(|e| matches!(e.kind, EventKind::ToolCall { .. }))
    );
    assert_eq!(run.steps[0].tool_calls, vec!["set_variable"]);
    // An undeclared variable is refused, naming the known ones.
    let (_t2, other) = team(yaml);
    let err = Runtime::new(other, Scripted::new())
        .var("moood", "x")
        .run("Explain tea")
        .unwrap_err();
    assert!(
        err.to_string().contains("moood") && err.to_string().contains("mode"),
        "{err}"
    );
}

#[test]
fn the_token_budget_ends_a_chain_with_the_last_answer() {
    let (_t, team) = team("");
    let model = Scripted::new()
        .otherwise("researcher", "notes\nHANDOFF: writer: go on")
        .otherwise("writer", "draft\nHANDOFF: researcher: go on");
    let run = Runtime::new(team, model.clone())
        .protocol(Protocol::Line)
        .token_budget(1)
        .run("Explain tea")
        .unwrap();
    assert_eq!(run.status, RunStatus::BudgetExhausted);
    assert_eq!(run.answer, "notes");
    assert_eq!(
        model.requests().len(),
        1,
        "no call after the budget ran out"
    );
}

#[test]
fn a_cancelled_handoff_run_is_saved_where_it_stood_and_resume_finishes_it() {
    let (_t, team) = team("after_work_behavior: terminate\n");
    let runs = tempfile::tempdir().unwrap();
    // Steps of 2 s: the cancel must land before the third step is saved
    // (steps of 300 ms raced with it on a loaded machine).
    let sim = boardroom::testing::Sim::with_options(boardroom::testing::SimOptions {
        latency: std::time::Duration::from_secs(2),
        latency_phases: vec![Phase::Converse],
        ..boardroom::testing::SimOptions::default()
    });
    let runtime = Runtime::new(team, sim).runs_dir(runs.path());
    let handle = runtime.start("Explain tea").unwrap();
    let dir = runs.path().join(handle.run_id());
    // Stop once the first step is saved: the call in flight finishes.
    let started = std::time::Instant::now();
    while load_run(&dir)
        .ok()
        .and_then(|r| r.state.handoff().cloned())
        .is_none_or(|h| h.steps.is_empty())
    {
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    handle.cancel();
    let stopped = handle.wait().unwrap();
    assert_eq!(stopped.status, RunStatus::Cancelled);
    let saved = load_run(&dir).unwrap().state;
    assert_eq!(saved.status(), RunStatus::Cancelled);
    let before = saved.handoff().unwrap().steps.clone();
    assert!(!before.is_empty() && before.len() < 3, "{before:?}");
    let done = runtime.resume(&dir).unwrap();
    assert_eq!(done.status, RunStatus::Done);
    assert_eq!(&done.steps[..before.len()], &before[..]);
    let agents: Vec<&str> = done.steps.iter().map(|s| s.agent.as_str()).collect();
    assert_eq!(agents, ["researcher", "reviewer", "writer"], "each once");
}

#[test]
fn a_handoff_call_with_no_text_is_a_step_not_an_empty_answer() {
    let (_t, team) = team("after_work_behavior: terminate\n");
    let mut silent = handoff_call("writer", "over to you");
    silent.text.clear();
    let model = Scripted::new()
        .respond("researcher", silent)
        .reply("writer", "the article")
        .reply("writer", "NONE");
    let run = Runtime::new(team, model.clone())
        .run("Explain tea")
        .unwrap();
    assert_eq!(
        calls(&model, "researcher", Phase::Converse).len(),
        1,
        "not asked again"
    );
    assert_eq!(run.steps[0].text, "");
    assert_eq!(run.steps[0].handoff_target.as_deref(), Some("writer"));
}

#[test]
fn a_task_that_is_not_a_template_is_used_as_it_stands() {
    let (_t, team) = team("after_work_behavior: terminate\n");
    let model = Scripted::new()
        .reply("researcher", "done")
        .reply("researcher", "NONE");
    let run = Runtime::new(team, model.clone())
        .run("Explain {{ this }} and {% that")
        .unwrap();
    assert_eq!(run.status, RunStatus::Done);
    let turn = &calls(&model, "researcher", Phase::Converse)[0];
    assert!(last_user(turn).contains("{% that"));
}

#[test]
fn a_step_whose_model_fails_fails_the_run_and_resume_tries_it_again() {
    let (_t, team) = team("after_work_behavior: terminate\n");
    let runs = tempfile::tempdir().unwrap();
    let model = Scripted::new()
        .reply("researcher", "notes\nHANDOFF: writer: go")
        .fail("writer", "the server is down")
        .reply("writer", "the article")
        .reply("writer", "NONE");
    let runtime = Runtime::new(team, model.clone())
        .protocol(Protocol::Line)
        .runs_dir(runs.path());
    let err = runtime.run("Explain tea").unwrap_err();
    assert!(err.to_string().contains("the server is down"), "{err}");
    let dir = std::fs::read_dir(runs.path())
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let saved = load_run(&dir).unwrap().state;
    assert_eq!(saved.status(), RunStatus::Failed);
    assert_eq!(saved.handoff().unwrap().steps.len(), 1);
    let done = runtime.resume(&dir).unwrap();
    assert_eq!(done.status, RunStatus::Done);
    assert_eq!(done.answer, "the article");
    assert_eq!(calls(&model, "researcher", Phase::Converse).len(), 1);
}

/// Issue 11's weaker point: a model that declares no tool support is sent
/// no tools at all (neither `handoff` nor `set_variable`), is told the
/// `HANDOFF:` line protocol, and its line hands off, with the run on the
/// default (tool) protocol. Counted on the requests the model received.
#[test]
fn a_model_without_tools_gets_no_handoff_tool_and_hands_off_by_line() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let (_t, team) = team("after_work_behavior: terminate\ncontext_variables:\n  tone: plain\n");
    let scripted = Scripted::new()
        .reply("researcher", "notes\nHANDOFF:writer:draft it")
        .reply("writer", "the article")
        .reply("writer", "NONE");
    let (turns, with_tools) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (t, w) = (Arc::clone(&turns), Arc::clone(&with_tools));
    let model = support::models::Hooked::new("no-tools", scripted.clone(), move |req, _| {
        if req.phase == Phase::Converse {
            t.fetch_add(1, Ordering::SeqCst);
            if !req.tools.is_empty() {
                w.fetch_add(1, Ordering::SeqCst);
            }
        }
    })
    .without_tools();
    let run = Runtime::new(team, model).run("Explain tea").unwrap();
    assert_eq!(run.status, RunStatus::Done);
    assert_eq!(run.answer, "the article");
    assert_eq!(run.steps[0].how.as_deref(), Some("line"));
    assert_eq!(run.steps[0].handoff_target.as_deref(), Some("writer"));
    assert_eq!(
        turns.load(Ordering::SeqCst),
        2,
        "the researcher's and the writer's turns"
    );
    assert_eq!(
        with_tools.load(Ordering::SeqCst),
        0,
        "no turn carried a tool"
    );
    let researcher = calls(&scripted, "researcher", Phase::Converse);
    let system = &researcher[0].messages[0].content;
    assert!(
        system.contains("end your reply with one line `HANDOFF:<agent>:<reason>`"),
        "told the line protocol: {system}"
    );
}
