//! Agent profiles (issue 23): a prompt segment that holds only under its
//! condition, a post-turn observer's note in the agent's next prompt, a
//! flow decider that waits for the user, bad profiles at FILE:LINE — all
//! against a loopback OpenAI-compatible server the test starts.

mod support;

use std::path::Path;
use std::process::{Command, Output};

use support::{Reply, Request, Server};

/// A team in `dir/team`: the master `lead` with `lead_front` added to its
/// front matter, and the member `scribe`.
fn team(dir: &Path, lead_front: &str) {
    let t = dir.join("team");
    std::fs::create_dir_all(t.join("agents")).unwrap();
    std::fs::create_dir_all(t.join("souls")).unwrap();
    std::fs::write(
        t.join("agents/lead.md"),
        format!("---\nname: lead\nrole: master\n{lead_front}---\n"),
    )
    .unwrap();
    std::fs::write(
        t.join("agents/scribe.md"),
        "---\nname: scribe\nrole: member\ndescription: writes\n---\n",
    )
    .unwrap();
    std::fs::write(t.join("souls/lead.md"), "You are the lead.\n").unwrap();
    std::fs::write(t.join("souls/scribe.md"), "You are the scribe.\n").unwrap();
}

fn boardroom(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_boardroom"))
        .args(args)
        .env("BOARDROOM_RUNS_DIR", dir.join("runs"))
        .current_dir(dir)
        .env_remove("BOARDROOM_MODEL")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("RUST_LOG")
        .output()
        .unwrap()
}

fn run(dir: &Path, server: &Server, task: &str) -> Output {
    let model = format!("{}#tiny", server.base_url());
    boardroom(
        dir,
        &[
            "run",
            "--team",
            "team",
            "--no-memory",
            "--model",
            &model,
            task,
        ],
    )
}

/// Who asks: `plan`, `review` or `draft`.
fn kind(req: &Request) -> &'static str {
    let text = req.all_text();
    if text.contains("Split this task") {
        "plan"
    } else if text.contains("is over. This is the board") {
        "review"
    } else {
        "draft"
    }
}

/// The system prompt a request sent.
fn system(req: &Request) -> String {
    req.body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

const SEGMENTS: &str = "\
prompt_segments:
  - text: \"{{ soul }}\"
  - name: review
    when: \"phase == 'review'\"
    text: \"REVIEW-SEGMENT for round {{ round }}.\"
post_turn_observers:
  - name: reflect
    when: not tools_called
    inbox: \"You called no tool in your {{ phase }} turn.\"
";

#[test]
fn a_segment_holds_only_under_its_condition_and_an_observer_speaks_next_turn() {
    let dir = tempfile::tempdir().unwrap();
    team(dir.path(), SEGMENTS);
    let server = Server::start(|req| match kind(req) {
        "plan" => Reply::answer(req, "ASSIGN:scribe:write the note"),
        "review" => Reply::answer(req, "DONE\nthe note, checked"),
        _ => Reply::answer(req, "A draft."),
    });
    let out = run(dir.path(), &server, "Write a note");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("the note, checked"));
    let seen = server.seen();
    let plan = seen
        .iter()
        .find(|r| kind(r) == "plan")
        .expect("a plan call");
    let review = seen.iter().find(|r| kind(r) == "review").expect("a review");
    // The segment: in the review's system prompt only, after the soul.
    assert!(
        system(plan).starts_with("You are the lead.\n\n## Your team"),
        "{}",
        system(plan)
    );
    assert!(!plan.all_text().contains("REVIEW-SEGMENT"));
    assert!(
        system(review)
            .starts_with("You are the lead.\n\nREVIEW-SEGMENT for round 1.\n\n## Your team"),
        "{}",
        system(review)
    );
    // The observer: the plan called no tool, so the review reads its note
    // (before the review's ask); the plan read none.
    let note =
        "<observation from=\"reflect\">\nYou called no tool in your plan turn.\n</observation>";
    assert!(!plan.all_text().contains("<observation"));
    let msgs = review.body["messages"].as_array().unwrap();
    assert_eq!(msgs[1]["content"], note, "{msgs:?}");
    assert!(msgs[2]["content"].as_str().unwrap().contains("Round 1 of"));
    // The review's turn record names both inbox items it read.
    let run_dir = support::only_run_dir(&dir.path().join("runs"));
    let turns = std::fs::read_to_string(run_dir.join("turns.jsonl")).unwrap();
    let review_turn: serde_json::Value = turns
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|t| t["phase"] == "review")
        .unwrap();
    assert_eq!(review_turn["inputs"], serde_json::json!(["i2", "i3"]));
    assert!(
        review_turn["predicted_usage"]["prompt_tokens"]
            .as_u64()
            .unwrap()
            > 0
    );
}

#[test]
fn a_flow_decider_rule_waits_for_the_user_and_resume_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    team(
        dir.path(),
        "flow_decider:\n  - when: \"phase == 'plan' and '?' in answer\"\n    action: await_user_input\n  - action: end_agent_turn\n",
    );
    let server = Server::start(|req| {
        let all = req.all_text();
        match kind(req) {
            "plan" if all.contains("The user answered: Lisbon") => {
                Reply::answer(req, "ASSIGN:scribe:a picnic in Lisbon")
            }
            "plan" => Reply::answer(req, "Which city?"),
            "review" => Reply::answer(req, "DONE\nA picnic in Lisbon."),
            _ => Reply::answer(req, "A draft."),
        }
    });
    let out = run(dir.path(), &server, "Plan a picnic");
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "Which city?");
    let run_dir = support::only_run_dir(&dir.path().join("runs"));
    let events = std::fs::read_to_string(run_dir.join("events.jsonl")).unwrap();
    // The room waits on its user: pending, not done.
    assert!(events.contains("\"status\":\"pending\""), "{events}");
    let id = run_dir.file_name().unwrap().to_str().unwrap().to_string();
    let model = format!("{}#tiny", server.base_url());
    let out = boardroom(
        dir.path(),
        &[
            "resume",
            &id,
            "--no-memory",
            "--model",
            &model,
            "--message",
            "Lisbon",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("A picnic in Lisbon."));
}

#[test]
fn bad_profiles_are_refused_at_their_line_and_check_lists_segments() {
    let dir = tempfile::tempdir().unwrap();
    team(dir.path(), SEGMENTS);
    let out = boardroom(dir.path(), &["check", "--team", "team"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let listed = text(&out.stdout);
    for line in [
        "segment 1: always",
        "segment 2 review: when phase == 'review'",
        "post-turn observer 1 reflect: when not tools_called",
    ] {
        assert!(listed.contains(line), "{line}\n{listed}");
    }
    for (front, error) in [
        (
            "prompt_segments:\n  - when: \"phase ==\"\n    text: x\n",
            "team/agents/lead.md:5: prompt_segments[1]: when 'phase ==': unexpected end of input, expected expression",
        ),
        (
            "post_turn_observers:\n  - when: not tool_called\n    inbox: x\n",
            "team/agents/lead.md:5: post_turn_observers[1]: when 'not tool_called': unknown name 'tool_called' (did you mean 'tools_called'?)",
        ),
        (
            "flow_decider:\n  - action: handoff\n",
            "team/agents/lead.md:5: flow_decider[1]: action 'handoff' is not one this team's process has (a handoff team's agents hand off with the handoff tool)",
        ),
        (
            "prompt_segments:\n  - text: \"{{ round | nosuchfilter }}\"\n",
            "team/agents/lead.md:5: prompt_segments[1]:",
        ),
    ] {
        team(dir.path(), front);
        for args in [
            &["check", "--team", "team"][..],
            &["run", "--team", "team", "--model", "sim", "x"][..],
        ] {
            let out = boardroom(dir.path(), args);
            let stderr = text(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{args:?} {front}: {stderr}");
            assert!(stderr.contains(error), "{args:?}: {error}\n{stderr}");
        }
    }
}

#[test]
fn a_handoff_agents_segments_stand_in_place_of_its_soul() {
    use boardroom::testing::Scripted;
    let (tmp, _) = support::handoff::chain("");
    std::fs::write(
        tmp.path().join("agents/writer.md"),
        "---\nname: writer\nrole: member\ndescription: the team's writer\nprompt_segments:\n  - text: \"{{ soul }}\"\n  - when: \"round > 5\"\n    text: NEVER-SHOWN\n  - when: \"phase == 'step' and round == 2\"\n    text: \"STEP-SEGMENT {{ round }}\"\n---\n",
    )
    .unwrap();
    let team = boardroom::Team::load(tmp.path()).unwrap();
    let model = Scripted::new()
        .reply("researcher", "Facts.\nHANDOFF:writer:write it")
        .reply("writer", "The text.");
    let outcome = support::handoff::run_line(team, &model);
    assert_eq!(outcome.answer.trim(), "The text.");
    let asked = support::handoff::calls(&model, "writer", boardroom::Phase::Converse);
    let system = &asked[0].messages[0].content;
    assert!(
        system.starts_with("You are the writer.\n\nSTEP-SEGMENT 2"),
        "{system}"
    );
    assert!(!system.contains("NEVER-SHOWN"), "{system}");
}
