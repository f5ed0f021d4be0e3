//! The logical retry as it meets real models (issue 9): an answer cut off
//! by the length limit is asked again *differently* (a shorter answer, a
//! raised cap, the cut text not sent back), at most once; a run whose every
//! member was cut off fails and says so (exit 1, resumable), and makes no
//! review, final-answer or memory call.

mod support;

use std::path::Path;
use std::process::Command;

use boardroom::testing::Scripted;
use boardroom::{
    AgentSpec, ChatResponse, FinishReason, Phase, RunStatus, Runtime, Team, TeamConfig, Usage,
};
use support::{Reply, Request, Server};

const MEMBERS: usize = 4;

/// An answer cut at the length limit after 384 tokens, as llama.cpp's
/// server sends it (`finish_reason: length`), streamed or not.
fn cut_reply(req: &Request, text: &str) -> Reply {
    let usage =
        serde_json::json!({"prompt_tokens": 900, "completion_tokens": 384, "total_tokens": 1284});
    if req.streaming() {
        Reply::Sse(vec![
            format!(
                "data: {}\n\n",
                serde_json::json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]})
            ),
            format!(
                "data: {}\n\n",
                serde_json::json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]})
            ),
            format!(
                "data: {}\n\n",
                serde_json::json!({"choices": [], "usage": usage})
            ),
            "data: [DONE]\n\n".into(),
        ])
    } else {
        Reply::status(
            200,
            &serde_json::json!({
                "id": "x", "object": "chat.completion",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                             "finish_reason": "length"}],
                "usage": usage
            })
            .to_string(),
        )
    }
}

/// The master plans one assignment per member; every member echoes its
/// prompt until the cap cuts it, as a small base model does.
fn server() -> Server {
    Server::start(|req| {
        let text = req.all_text();
        if text.contains("Split this task") {
            let plan: String = (0..MEMBERS)
                .map(|i| format!("ASSIGN:m{i}:write part {i}\n"))
                .collect();
            Reply::answer(req, &plan)
        } else {
            cut_reply(req, &format!("{text} {text}"))
        }
    })
}

fn team_dir(dir: &Path) {
    std::fs::create_dir_all(dir.join("agents")).unwrap();
    std::fs::create_dir_all(dir.join("souls")).unwrap();
    let mut agents = vec![("lead".to_string(), "master")];
    agents.extend((0..MEMBERS).map(|i| (format!("m{i}"), "member")));
    for (name, role) in agents {
        std::fs::write(
            dir.join(format!("agents/{name}.md")),
            format!("---\nname: {name}\nrole: {role}\n---\n"),
        )
        .unwrap();
        std::fs::write(
            dir.join(format!("souls/{name}.md")),
            format!("You are {name}."),
        )
        .unwrap();
    }
}

#[test]
fn every_member_cut_off_fails_the_run_after_one_different_retry_each() {
    let server = server();
    let dir = tempfile::tempdir().unwrap();
    team_dir(&dir.path().join("team"));
    let runs = dir.path().join("runs");
    let out = run_team(
        dir.path(),
        &server,
        &runs,
        &["Write a guide to green tea", "--rounds", "1"],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "failed: no member produced a usable draft (4 of 4 cut off at the length limit)"
        ),
        "{stderr}"
    );
    assert!(stdout.trim().is_empty(), "no answer on stdout: {stdout}");

    // One plan, then two calls per member: the retry and no third try; no
    // review, no final answer, no memory note.
    let seen = server.seen();
    assert_eq!(
        seen.len(),
        1 + 2 * MEMBERS,
        "{:#?}",
        seen.iter().map(|r| r.all_text()).collect::<Vec<_>>()
    );
    assert!(
        seen.iter()
            .all(|r| !r.all_text().contains("worth remembering")),
        "a failed run makes no memory call"
    );
    for i in 0..MEMBERS {
        let mine: Vec<&Request> = seen
            .iter()
            .filter(|r| r.all_text().contains(&format!("You are m{i}.")))
            .collect();
        assert_eq!(mine.len(), 2, "m{i}");
        let (first, second) = (&mine[0].body, &mine[1].body);
        // The retry asks for something different: room to finish, and a
        // much shorter answer, without the cut text sent back.
        assert!(first["max_tokens"].is_null(), "{first}");
        assert_eq!(second["max_tokens"], 768, "{second}");
        let last = second["messages"].as_array().unwrap().last().unwrap()["content"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(
            last.contains("cut off by the length limit after about 384 tokens")
                && last.contains("at most 144 words"),
            "{last}"
        );
        let sent = second["messages"].as_array().unwrap().len();
        assert_eq!(
            sent,
            first["messages"].as_array().unwrap().len() + 1,
            "only the note is added: the cut echo is not sent back"
        );
    }

    // Saved as failed, and resumable: the members phase is where it stands.
    let run_dir = std::fs::read_dir(&runs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.join("run.json").is_file())
        .unwrap();
    let record = boardroom::store::load_run(&run_dir).unwrap();
    assert_eq!(record.state.status(), RunStatus::Failed);
    assert_eq!(record.state.phase(), boardroom::store::RunPhase::Members);
    assert_eq!(
        record.state.error(),
        Some("no member produced a usable draft (4 of 4 cut off at the length limit)")
    );
}

fn cut(text: &str) -> ChatResponse {
    ChatResponse {
        finish: FinishReason::Length,
        ..ChatResponse::text(text, Usage::default())
    }
}

#[test]
fn a_cut_final_answer_is_asked_again_once_then_kept() {
    let team = support::teams::duo("pair");
    let model = Scripted::new()
        .reply("master", "ASSIGN:writer:write")
        .reply("master", "DONE")
        .respond("master", cut("first cut"))
        .respond("master", cut("second cut"))
        .reply("writer", "A draft.");
    let run = Runtime::new(team, model.clone()).run("Task").unwrap();
    assert_eq!(run.status, RunStatus::Done);
    assert_eq!(run.answer, "second cut");
    let finals: Vec<_> = model
        .requests()
        .into_iter()
        .filter(|r| r.phase == Phase::Final)
        .collect();
    assert_eq!(finals.len(), 2, "a second cut is not asked a third time");
    assert_eq!(finals[0].max_tokens, None);
    assert_eq!(
        finals[1].max_tokens,
        Some(256),
        "raised for a cut of ~2 tokens: the floor"
    );
    let note = &finals[1].messages.last().unwrap().content;
    assert!(note.contains("cut off by the length limit"), "{note}");
    assert!(
        !finals[1].messages.iter().any(|m| m.content == "first cut"),
        "the cut text is not sent back"
    );
}

#[test]
fn an_agents_own_max_tokens_is_never_passed() {
    let mut writer = AgentSpec::member("writer", "Writes", "You write.");
    writer.max_tokens = Some(300);
    let team = Team::new(
        "pair",
        TeamConfig::default(),
        vec![AgentSpec::master("master", "You lead."), writer],
    )
    .unwrap();
    let model = Scripted::new()
        .reply("master", "ASSIGN:writer:write")
        .reply("master", "DONE: fine")
        .respond("writer", cut("cut"))
        .reply("writer", "A short draft.");
    let run = Runtime::new(team, model.clone()).run("Task").unwrap();
    assert_eq!(run.answer, "fine");
    let drafts: Vec<_> = model
        .requests()
        .into_iter()
        .filter(|r| r.phase == Phase::Draft)
        .collect();
    assert_eq!(drafts.len(), 2);
    assert_eq!(drafts[0].max_tokens, Some(300));
    assert_eq!(drafts[1].max_tokens, Some(300));
}

/// A server that reports an absurd completion count with a cut answer
/// (`completion_tokens` near `u64::MAX`) gets the usual retry note, capped
/// words and cap, not an overflow panic in the run's thread.
#[test]
fn an_absurd_token_count_on_a_cut_answer_does_not_panic() {
    let team = support::teams::duo("pair");
    let absurd = Usage {
        prompt_tokens: 1,
        completion_tokens: u64::MAX,
        ..Usage::default()
    };
    let model = Scripted::new()
        .respond(
            "master",
            ChatResponse {
                finish: FinishReason::Length,
                ..ChatResponse::text("ASSIGN:wri", absurd)
            },
        )
        .reply("master", "ASSIGN:writer:write")
        .reply("master", "DONE: fine")
        .reply("writer", "A draft.");
    let run = Runtime::new(team, model.clone()).run("Task").unwrap();
    assert_eq!(run.answer, "fine");
    let plans: Vec<_> = model
        .requests()
        .into_iter()
        .filter(|r| r.phase == Phase::Plan)
        .collect();
    assert_eq!(plans.len(), 2);
    assert_eq!(plans[1].max_tokens, Some(4096), "the raised cap's ceiling");
    let note = &plans[1].messages.last().unwrap().content;
    assert!(note.contains("at most 1536 words"), "{note}");
}

/// A master that says DONE in its very first turn has no plan: nobody has
/// drafted, so nothing would check its answer. It is asked again with a
/// note that says a plan must assign; a master that still finishes alone
/// fails the run as an unusable plan does (exit 1, resumable), and a
/// master that then assigns gets its team's work.
#[test]
fn a_master_that_answers_in_its_plan_is_asked_again_then_fails() {
    let server = Server::start(|req| Reply::answer(req, "DONE\nthe complete final answer"));
    let dir = tempfile::tempdir().unwrap();
    team_dir(&dir.path().join("team"));
    let out = run_team(
        dir.path(),
        &server,
        &dir.path().join("runs"),
        &["Write a guide"],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr
            .contains("failed: no member produced a usable draft (the master gave no usable plan)"),
        "{stderr}"
    );
    // Saved as failed, not finished: a resume asks the master again.
    let run_dir = std::fs::read_dir(dir.path().join("runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.join("run.json").is_file())
        .unwrap();
    let record = boardroom::store::load_run(&run_dir).unwrap();
    assert_eq!(record.state.status(), RunStatus::Failed);
    assert_ne!(record.state.phase(), boardroom::store::RunPhase::Finished);
    assert_eq!(record.state.answer(), None);
    assert!(
        !stdout.contains("the complete final answer"),
        "the unchecked answer is not reported: {stdout}"
    );
    // The plan, then the plan again with the corrective note (twice, the
    // logical retries); no member, no final answer, no memory call.
    let seen = server.seen();
    assert_eq!(
        seen.len(),
        3,
        "{:#?}",
        seen.iter().map(|r| r.all_text()).collect::<Vec<_>>()
    );
    assert!(
        seen.iter()
            .all(|r| r.all_text().contains("Split this task"))
    );
    let first = seen[0].body["messages"].as_array().unwrap();
    let second = seen[1].body["messages"].as_array().unwrap();
    let ask = first.last().unwrap()["content"].as_str().unwrap();
    assert!(
        ask.contains("give at least one member a task") && !ask.contains("needs no team"),
        "the plan prompt offers no DONE: {ask}"
    );
    assert!(second.len() > first.len(), "{second:#?}");
    let note = second.last().unwrap()["content"].as_str().unwrap();
    assert!(
        note.contains("the plan finished the work before any member drafted")
            && note.contains("ASSIGN:<member>:<task> lines")
            && !note.contains("or DONE"),
        "{note}"
    );

    // A master that assigns after the note gets a normal run.
    let server = Server::start(|req| {
        let text = req.all_text();
        if text.contains("before any member drafted") {
            Reply::answer(req, "ASSIGN:m0:write it")
        } else if text.contains("Split this task") {
            Reply::answer(req, "DONE\nalone")
        } else if text.contains("Round 1 of") {
            Reply::answer(req, "DONE\nthe checked answer")
        } else {
            Reply::answer(req, "A draft.")
        }
    });
    let ok = run_team(
        dir.path(),
        &server,
        &dir.path().join("runs"),
        &["Write a guide"],
    );
    let stderr = String::from_utf8_lossy(&ok.stderr);
    assert_eq!(ok.status.code(), Some(0), "{stderr}");
    assert!(
        String::from_utf8_lossy(&ok.stdout).contains("the checked answer"),
        "{stderr}"
    );
}

/// `boardroom run ARGS --team team` in `dir`, saving in `runs`, against the
/// loopback `server`, with no model or OpenAI setting from the environment.
fn run_team(
    dir: &std::path::Path,
    server: &Server,
    runs: &std::path::Path,
    args: &[&str],
) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_boardroom"))
        .arg("run")
        .args(args)
        .args(["--team", "team"])
        .arg("--runs-dir")
        .arg(runs)
        .args(["--model", &format!("{}#tiny", server.base_url())])
        .current_dir(dir)
        .env_remove("BOARDROOM_MODEL")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .output()
        .unwrap()
}
