//! A junk plan does not start a thread a line: a master that assigns 50
//! tasks to one member in one reply gets the first
//! `max_assignments_per_member` (default 8) run; the rest are dropped, said
//! in the `review_decision` event the renderer shows, and told to the
//! master in its next prompt. Nothing else about the plan changes.

mod support;

use boardroom::board::EntryKind;
use boardroom::testing::Scripted;
use boardroom::{AgentSpec, EventKind, Phase, RunStatus, Runtime, Team, TeamConfig};
use support::cli::{boardroom, text};
use support::{Reply, Server};

/// 50 ASSIGN lines for the writer, with two for the editor among them.
fn junk_plan() -> String {
    let mut plan = String::new();
    for i in 0..50 {
        plan.push_str(&format!("ASSIGN:writer:part {i}\n"));
        if i == 3 || i == 40 {
            plan.push_str(&format!("ASSIGN:editor:check {i}\n"));
        }
    }
    plan
}

fn team(config: TeamConfig) -> Team {
    Team::new(
        "junk",
        config,
        vec![
            AgentSpec::master("lead", "You lead."),
            AgentSpec::member("writer", "Writes", "You write."),
            AgentSpec::member("editor", "Checks", "You check."),
        ],
    )
    .unwrap()
}

#[test]
fn fifty_assignments_to_one_member_run_the_first_eight_and_the_drop_is_said() {
    let model = Scripted::new()
        .reply("lead", junk_plan())
        .otherwise("lead", "DONE\nThe answer.")
        .otherwise("writer", "A draft.")
        .otherwise("editor", "Checked.");
    let (tx, rx) = crossbeam_channel::unbounded();
    let run = Runtime::new(team(TeamConfig::default()), model.clone())
        .events(tx)
        .max_rounds(1)
        .run("Write fifty parts")
        .unwrap();
    assert_eq!(run.status, RunStatus::Done, "{run:?}");

    // Exactly the limit ran for the writer (its first eight, in order);
    // the editor's two are untouched.
    let drafts = |who: &str| {
        model
            .requests()
            .iter()
            .filter(|r| r.phase == Phase::Draft && r.agent == who)
            .count()
    };
    assert_eq!(drafts("writer"), 8);
    assert_eq!(drafts("editor"), 2);
    let on_board = run
        .board
        .iter()
        .filter(|e| e.kind == EntryKind::Draft)
        .count();
    assert_eq!(on_board, 10);
    let tasks: Vec<String> = run
        .board
        .iter()
        .filter(|e| e.kind == EntryKind::Draft && e.author == "writer")
        .filter_map(|e| e.task.clone())
        .collect();
    let first_eight: Vec<String> = (0..8).map(|i| format!("part {i}")).collect();
    let mut sorted = tasks.clone();
    sorted.sort_by_key(|t| t[5..].parse::<u32>().unwrap());
    assert_eq!(sorted, first_eight, "{tasks:?}");

    // The drop is an event, with the count the plan kept.
    let said = "50 assignments to 'writer' in one reply: the first 8 are kept, the other 42 \
                dropped (at most 8 per member a round: max_assignments_per_member in team.yaml)";
    let decision = rx
        .try_iter()
        .find_map(|e| match e.kind {
            EventKind::ReviewDecision {
                round: 0,
                assignments,
                rejected,
                ..
            } => Some((assignments, rejected)),
            _ => None,
        })
        .expect("the plan's decision event");
    assert_eq!(decision, (10, vec![said.to_string()]));

    // The master is told in its next turn (the review).
    let review = model
        .requests()
        .into_iter()
        .find(|r| r.agent == "lead" && r.phase == Phase::Review)
        .expect("the review");
    let prompt: String = review.messages.iter().map(|m| m.content.as_str()).collect();
    assert!(prompt.contains(said), "{prompt}");
}

/// `max_assignments_per_member` in team.yaml sets the limit, and the CLI's
/// live view shows the drop; 0 is refused at its line.
#[test]
fn team_yaml_sets_the_limit_and_the_live_view_shows_the_drop() {
    let server = Server::start(|req| {
        let text = req.all_text();
        let reply = if text.contains("Split this task") {
            junk_plan()
        } else if text.contains("is over. This is the board") {
            "DONE\nThe answer.".to_string()
        } else if text.contains("worth remembering") {
            "- nothing".to_string()
        } else {
            "A draft.".to_string()
        };
        Reply::answer(req, &reply)
    });
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("agents")).unwrap();
    std::fs::create_dir_all(root.join("souls")).unwrap();
    for (name, role) in [
        ("lead", "master"),
        ("writer", "member"),
        ("editor", "member"),
    ] {
        std::fs::write(
            root.join(format!("agents/{name}.md")),
            format!("---\nname: {name}\nrole: {role}\ndescription: Works\n---\n"),
        )
        .unwrap();
        std::fs::write(
            root.join(format!("souls/{name}.md")),
            format!("You are {name}."),
        )
        .unwrap();
    }
    std::fs::write(
        root.join("team.yaml"),
        "name: junk\nmax_assignments_per_member: 3\n",
    )
    .unwrap();
    let model = format!("{}#m", server.base_url());
    let out = boardroom(
        &["run", "Write fifty parts", "--team", ".", "--model", &model],
        root,
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let writer_calls = server
        .seen()
        .iter()
        // Drafts only: after the run the writer is also asked for its
        // memory note.
        .filter(|r| {
            let t = r.all_text();
            t.contains("You are writer.") && !t.contains("worth remembering")
        })
        .count();
    assert_eq!(writer_calls, 3);
    assert!(
        err.contains(
            "! lead: rejected directive: 50 assignments to 'writer' in one reply: the first 3 \
             are kept, the other 47 dropped (at most 3 per member a round"
        ),
        "{err}"
    );
    assert!(
        err.contains("lead split the task into 5 assignments"),
        "{err}"
    );

    std::fs::write(
        root.join("team.yaml"),
        "name: junk\nmax_assignments_per_member: 0\n",
    )
    .unwrap();
    let out = boardroom(&["check"], root);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("team.yaml:2: max_assignments_per_member must be at least 1"),
        "{}",
        text(&out.stderr)
    );
}
