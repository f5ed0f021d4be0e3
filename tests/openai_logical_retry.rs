//! The logical retry as it meets real models: answers cut off by the length
//! limit are asked again with a corrective note; a member's cut draft ends as
//! an error entry, and the master's last try at the final answer keeps what
//! it wrote.

use boardroom::{
    AgentSpec, ChatResponse, EntryKind, FinishReason, Phase, RunStatus, Runtime, Scripted, Team,
    TeamConfig, Usage,
};

fn cut(text: &str) -> ChatResponse {
    ChatResponse {
        finish: FinishReason::Length,
        ..ChatResponse::text(text, Usage::default())
    }
}

fn team() -> Team {
    Team::new(
        "pair",
        TeamConfig::default(),
        vec![
            AgentSpec::master("master", "You lead."),
            AgentSpec::member("writer", "Writes", "You write."),
        ],
    )
    .unwrap()
}

#[test]
fn a_cut_final_answer_is_asked_again_then_kept() {
    let model = Scripted::new()
        .reply("master", "ASSIGN:writer:write")
        .reply("master", "DONE")
        .respond("master", cut("first cut"))
        .respond("master", cut("second cut"))
        .respond("master", cut("third cut"))
        .respond("writer", cut("draft cut 1"))
        .respond("writer", cut("draft cut 2"))
        .respond("writer", cut("draft cut 3"));
    let run = Runtime::new(team(), model.clone()).run("Task").unwrap();
    assert_eq!(run.status, RunStatus::Done);
    assert_eq!(run.answer, "third cut");
    let finals: Vec<_> = model
        .requests()
        .into_iter()
        .filter(|r| r.phase == Phase::Final)
        .collect();
    assert_eq!(finals.len(), 3);
    let note = &finals[1].messages.last().unwrap().content;
    assert!(
        note.contains("the answer was cut off by the length limit; write a shorter one"),
        "{note}"
    );
    let errors: Vec<_> = run
        .board
        .iter()
        .filter(|e| e.kind == EntryKind::Error)
        .collect();
    assert_eq!(errors.len(), 1);
    assert_eq!(
        errors[0].text,
        "writer gave no usable draft: the answer was cut off by the length limit; write a shorter one"
    );
}
