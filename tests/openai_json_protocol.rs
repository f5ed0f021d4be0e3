//! The structured-output protocol in whole runs: the master and the
//! challengers are asked for JSON with a schema built from the roster, and
//! their JSON maps to the same decisions as the line protocol.

mod support;

use boardroom::board::EntryKind;
use boardroom::protocol::Protocol;
use boardroom::testing::{Sim, SimOptions};
use boardroom::{AgentSpec, OpenAi, RunStatus, Runtime, Team, TeamConfig};
use serde_json::json;
use support::{Reply, Request, Server};

fn team() -> Team {
    Team::new(
        "pair",
        TeamConfig::default(),
        vec![
            AgentSpec::master("lead", "You lead the team."),
            AgentSpec::member("researcher", "Finds facts", "You are researcher.").challenger(),
            AgentSpec::member("writer", "Writes", "You are writer."),
        ],
    )
    .unwrap()
}

/// A model that answers in JSON, wrapped in code fences as models do.
fn brain(req: &Request) -> Reply {
    let text = req.all_text();
    let body = if text.contains("Split this task") {
        json!({"decision": "assign", "assignments": [
            {"member": "researcher", "task": "find the facts"},
            {"member": "Writer", "task": "write it up"}], "answer": ""})
        .to_string()
    } else if text.contains("is over. This is the board") {
        json!({"decision": "done", "assignments": [], "answer": "The merged answer."}).to_string()
    } else if text.contains("The challenge round") {
        json!({"verdict": "challenge", "reason": "writer: the date is wrong"}).to_string()
    } else {
        return Reply::answer(req, "A draft.");
    };
    Reply::answer(req, &format!("```json\n{body}\n```"))
}

#[test]
fn json_mode_sends_schemas_and_reads_json_decisions() {
    let server = Server::start(brain);
    let model = OpenAi::builder(server.base_url(), "m").build().unwrap();
    let outcome = Runtime::new(team(), model)
        .protocol(Protocol::Json)
        .run("Write about tea")
        .unwrap();
    assert_eq!(outcome.status, RunStatus::Done);
    assert_eq!(outcome.answer, "The merged answer.");
    let drafts = outcome
        .board
        .iter()
        .filter(|e| e.kind == EntryKind::Draft)
        .count();
    assert_eq!(drafts, 2);
    let challenge = outcome
        .board
        .iter()
        .find(|e| e.kind == EntryKind::Challenge)
        .expect("the challenge is on the board");
    assert_eq!(challenge.text, "writer: the date is wrong");

    let seen = server.seen();
    let plan = seen
        .iter()
        .find(|r| r.all_text().contains("Split this task"))
        .unwrap();
    let format = &plan.body["response_format"];
    assert_eq!(format["type"], "json_schema");
    // The plan's schema allows only an assignment: nobody has drafted yet.
    assert_eq!(format["json_schema"]["name"], "master_plan");
    assert_eq!(
        format["json_schema"]["schema"]["properties"]["decision"]["enum"],
        json!(["assign"])
    );
    assert_eq!(
        format["json_schema"]["schema"]["properties"]["assignments"]["minItems"],
        1
    );
    let review = seen
        .iter()
        .find(|r| r.all_text().contains("is over. This is the board"))
        .unwrap();
    assert_eq!(
        review.body["response_format"]["json_schema"]["name"],
        "master_decision"
    );
    assert_eq!(
        review.body["response_format"]["json_schema"]["schema"]["properties"]["decision"]["enum"],
        json!(["assign", "done", "ask_user"])
    );
    assert_eq!(
        format["json_schema"]["schema"]["properties"]["assignments"]["items"]["properties"]["member"]
            ["enum"],
        json!(["researcher", "writer"]),
        "member names as an enum"
    );
    assert!(
        plan.all_text().contains("\"decision\": \"assign\""),
        "the master is told the JSON form"
    );
    assert!(
        !plan.all_text().contains("ASSIGN"),
        "no line-protocol asks left"
    );
    let ask = plan.body["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap();
    assert!(
        ask.contains("\"assign\" decision") && !ask.contains("\"done\""),
        "the plan is not offered a done decision: {ask}"
    );
    let challenger = seen
        .iter()
        .find(|r| r.all_text().contains("The challenge round"))
        .unwrap();
    assert_eq!(
        challenger.body["response_format"]["json_schema"]["name"],
        "challenge_verdict"
    );
    let draft = seen
        .iter()
        .find(|r| r.all_text().contains("Your assignment"))
        .unwrap();
    assert!(
        draft.body.get("response_format").is_none(),
        "drafts are free text"
    );
}

#[test]
fn line_mode_sends_no_schema() {
    let server = Server::start(|req| {
        let text = req.all_text();
        let reply = if text.contains("Split this task") {
            "ASSIGN:writer:write it"
        } else if text.contains("is over") {
            "DONE\nok"
        } else if text.contains("The challenge round") {
            "AGREE"
        } else {
            "A draft."
        };
        Reply::answer(req, reply)
    });
    let model = OpenAi::builder(server.base_url(), "m").build().unwrap();
    let outcome = Runtime::new(team(), model).run("Write about tea").unwrap();
    assert_eq!(outcome.answer, "ok");
    assert!(
        server
            .seen()
            .iter()
            .all(|r| r.body.get("response_format").is_none())
    );
}

#[test]
fn a_bad_json_decision_is_asked_again_with_the_problem() {
    let server = Server::start(|req| {
        let text = req.all_text();
        if text.contains("Split this task") && !text.contains("could not be used") {
            Reply::answer(
                req,
                &json!({"decision": "assign", "assignments": [{"member": "writr", "task": "x"}], "answer": ""})
                    .to_string(),
            )
        } else if text.contains("Split this task") {
            Reply::answer(
                req,
                r#"{"decision":"assign","assignments":[{"member":"writer","task":"x"}],"answer":""}"#,
            )
        } else if text.contains("is over. This is the board") {
            Reply::answer(
                req,
                r#"{"decision":"done","assignments":[],"answer":"fixed"}"#,
            )
        } else if text.contains("The challenge round") {
            Reply::answer(req, r#"{"verdict":"agree","reason":""}"#)
        } else {
            Reply::answer(req, "A draft.")
        }
    });
    let model = OpenAi::builder(server.base_url(), "m").build().unwrap();
    let outcome = Runtime::new(team(), model)
        .protocol(Protocol::Json)
        .run("Write about tea")
        .unwrap();
    assert_eq!(outcome.answer, "fixed");
    let retry = &server.seen()[1];
    assert!(
        retry
            .all_text()
            .contains("line 1: unknown member 'writr' (did you mean 'writer'?)"),
        "{}",
        retry.all_text()
    );
}

#[test]
fn the_offline_model_plays_json_mode() {
    let sim = Sim::with_options(SimOptions {
        challenge_round: Some(1),
        ..SimOptions::default()
    });
    let stats = sim.stats();
    let outcome = Runtime::new(Team::builtin().unwrap(), sim)
        .protocol(Protocol::Json)
        .run("Write a short guide to brewing green tea")
        .unwrap();
    assert_eq!(outcome.status, RunStatus::Done);
    assert!(outcome.rounds >= 2, "the challenge sent work back");
    assert!(outcome.board.iter().any(|e| e.kind == EntryKind::Challenge));
    assert!(!outcome.answer.trim().is_empty());
    assert!(outcome.board.iter().all(|e| e.kind != EntryKind::Error));
    assert!(stats.calls() > 0);
}
