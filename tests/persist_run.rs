//! Issue 4, through the library: what a run leaves on disk, the plan of
//! work modules, Turn records, master memory across runs.

use boardroom::plan::ModuleStatus;
use boardroom::store::{MasterMemory, RunPhase, load_run, read_events, read_turns};
use boardroom::testing::{Scripted, Sim, SimOptions};
use boardroom::{EventKind, Phase, Role, RunStatus, Runtime, Team};

mod support;

/// The `owls`: master and writer.
fn small_team() -> Team {
    support::teams::duo("owls")
}

#[test]
fn a_saved_run_holds_every_file_and_modules_go_through_their_statuses() {
    let tmp = tempfile::tempdir().unwrap();
    let sim = Sim::with_options(SimOptions {
        challenge_round: Some(1),
        ..SimOptions::default()
    });
    let stats = sim.stats();
    let (tx, rx) = crossbeam_channel::unbounded();
    let outcome = Runtime::new(Team::builtin().unwrap(), sim)
        .runs_dir(tmp.path())
        .events(tx)
        .run("Write a short guide to brewing green tea")
        .unwrap();
    let received: Vec<_> = rx.iter().collect();
    let dir = tmp.path().join(&outcome.run_id);
    for f in [
        "run.json",
        "events.jsonl",
        "turns.jsonl",
        "workspace/plan.json",
        "workspace/report.md",
    ] {
        assert!(dir.join(f).is_file(), "{f} missing");
    }

    let record = load_run(&dir).unwrap();
    assert_eq!(record.version, boardroom::store::RUN_FORMAT_VERSION);
    assert_eq!(record.state.phase(), RunPhase::Finished);
    assert_eq!(record.state.status(), RunStatus::Done);
    assert_eq!(record.state.answer(), Some(outcome.answer.as_str()));
    assert_eq!(record.state.board(), outcome.board);
    assert_eq!(record.team.name, "default");
    assert_eq!(record.settings.model, "sim");

    // Every event is on disk (members write from their own threads, so
    // the file and the channel may interleave them differently); every
    // model call is a turn.
    let events = read_events(&dir).unwrap();
    assert!(events.warnings.is_empty());
    let sorted = |v: &[boardroom::Event]| {
        let mut s: Vec<String> = v
            .iter()
            .map(|e| serde_json::to_string(e).unwrap())
            .collect();
        s.sort();
        s
    };
    // The file leaves out what repeats (issue 25).
    let received = support::events::without_repeats(&received);
    assert_eq!(sorted(&events.items), sorted(&received));
    assert_eq!(events.items.first(), received.first());
    assert_eq!(events.items.last(), received.last());
    let turns = read_turns(&dir).unwrap().items;
    assert_eq!(turns.len(), stats.calls());
    let ids: Vec<String> = turns.iter().map(|t| t.turn_id.to_string()).collect();
    assert_eq!(ids[0], "t0001");
    assert!(
        turns
            .iter()
            .all(|t| t.run_id == outcome.run_id && !t.messages.is_empty())
    );
    let completed = received
        .iter()
        .filter(|e| matches!(e.kind, EventKind::TurnCompleted { .. }))
        .count();
    assert_eq!(completed, turns.len());
    // A round-1 draft is based on the master's plan; a round-2 draft on
    // the master's review of round 1.
    let plan_turn = turns.iter().find(|t| t.phase == Phase::Plan).unwrap();
    let review1 = turns
        .iter()
        .find(|t| t.phase == Phase::Review && t.round == 1)
        .unwrap();
    for t in turns.iter().filter(|t| t.phase == Phase::Draft) {
        let want = if t.round == 1 { plan_turn } else { review1 };
        assert_eq!(t.parents, vec![want.turn_id], "{}", t.turn_id);
    }

    // The sim challenges round 1, so the master sends every member back:
    // one module per member, re-opened for round 2, then completed.
    let plan = &outcome.plan;
    assert_eq!(plan.tasks.len(), 4);
    for m in &plan.tasks {
        assert_eq!(m.status, ModuleStatus::Completed, "{}", m.task_id);
        assert_eq!(m.round, Some(2));
        assert_eq!(m.metadata["previous"].as_array().unwrap().len(), 1);
        // The archive holds both rounds: sent messages, then the answer.
        let roles: Vec<Role> = m.context_archive.iter().map(|x| x.role).collect();
        assert_eq!(
            roles,
            vec![
                Role::System,
                Role::User,
                Role::Assistant,
                Role::System,
                Role::User,
                Role::Assistant
            ]
        );
    }
    // plan.json names each transcript's turns (issue 25): the same plan,
    // the transcripts aside (load_run above read them back whole).
    let text = std::fs::read_to_string(dir.join("workspace/plan.json")).unwrap();
    // Each module names its member's two drafts, round 1's then round 2's
    // (which turn ids they got depends on which call came back first).
    let saved: serde_json::Value = serde_json::from_str(&text).unwrap();
    for (m, saved) in plan.tasks.iter().zip(saved["tasks"].as_array().unwrap()) {
        let member = m.assigned_agent.as_deref().unwrap();
        let drafts: Vec<String> = turns
            .iter()
            .filter(|t| t.agent == member && t.phase == Phase::Draft)
            .map(|t| t.turn_id.to_string())
            .collect();
        assert_eq!(drafts.len(), 2, "{member}");
        assert_eq!(saved["context_turns"], serde_json::json!(drafts), "{text}");
    }
    let on_disk: boardroom::plan::Plan = serde_json::from_str(&text).unwrap();
    let mut without = plan.clone();
    for m in &mut without.tasks {
        m.context_archive.clear();
    }
    assert_eq!(on_disk, without);
    let report = std::fs::read_to_string(dir.join("workspace/report.md")).unwrap();
    assert!(report.contains(outcome.answer.trim()));
}

#[test]
fn a_module_the_master_does_not_send_back_is_completed() {
    let model = Scripted::new()
        .reply("master", "ASSIGN:writer:Draft the intro")
        .reply("master", "DONE\nThe intro.")
        .reply("writer", "An intro.");
    let outcome = Runtime::new(small_team(), model)
        .run("Write an intro")
        .unwrap();
    let m = &outcome.plan.tasks[0];
    assert_eq!(m.task_id, "task_001");
    assert_eq!(m.assigned_agent.as_deref(), Some("writer"));
    assert_eq!(m.description, "Draft the intro");
    assert_eq!(m.status, ModuleStatus::Completed);
    assert_eq!(m.context_archive.last().unwrap().content, "An intro.");
}

#[test]
fn the_second_master_remembers_what_the_first_stored_unless_memory_is_off() {
    let tmp = tempfile::tempdir().unwrap();
    let memory = MasterMemory::for_team(tmp.path(), "owls");
    let first = Scripted::new()
        .reply("master", "ASSIGN:writer:Draft it")
        .reply("master", "DONE\nThe answer.")
        .reply("master", "- Owls prefer the night shift.")
        .reply("writer", "A draft.");
    Runtime::new(small_team(), first.clone())
        .runs_dir(tmp.path())
        .master_memory(memory.clone())
        .run("First task")
        .unwrap();
    let asked = first.requests();
    assert_eq!(asked.last().unwrap().phase, Phase::Memory);
    assert!(
        memory
            .load()
            .unwrap()
            .contains("Owls prefer the night shift.")
    );

    let script = || {
        Scripted::new()
            .reply("master", "ASSIGN:writer:Draft it")
            .reply("master", "DONE\nDone in one round.")
            .reply("writer", "A draft.")
            .otherwise("master", "- nothing")
    };
    let second = script();
    Runtime::new(small_team(), second.clone())
        .master_memory(memory.clone())
        .run("Second task")
        .unwrap();
    let system = &second.requests()[0].messages[0].content;
    assert!(system.contains("<memory>"), "{system}");
    assert!(system.contains("Owls prefer the night shift."), "{system}");

    // Memory off: nothing injected, nothing asked.
    let third = script();
    Runtime::new(small_team(), third.clone())
        .run("Third task")
        .unwrap();
    let requests = third.requests();
    assert!(!requests[0].messages[0].content.contains("Owls"));
    assert!(requests.iter().all(|r| r.phase != Phase::Memory));
}

#[test]
fn a_run_that_fails_is_saved_as_failed() {
    let tmp = tempfile::tempdir().unwrap();
    let model = Scripted::new().fail("master", "down");
    let err = Runtime::new(small_team(), model)
        .runs_dir(tmp.path())
        .run("A task")
        .unwrap_err();
    let runs = boardroom::store::list_runs(tmp.path()).unwrap();
    assert_eq!(runs.len(), 1);
    let record = runs[0].record.as_ref().unwrap();
    assert_eq!(record.state.status(), RunStatus::Failed);
    assert_eq!(record.state.error(), Some(err.to_string().as_str()));
    let turns = read_turns(&runs[0].path).unwrap().items;
    assert_eq!(turns.len(), 1);
    assert!(turns[0].error.as_deref().unwrap().contains("down"));
}

#[test]
fn a_workspace_without_a_runs_dir_gets_the_plan_and_the_report_only() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    let outcome = Runtime::new(Team::builtin().unwrap(), Sim::new())
        .workspace(&ws)
        .run("Plan a picnic")
        .unwrap();
    let mut names: Vec<String> = std::fs::read_dir(&ws)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, vec!["plan.json", "report.md"]);
    let report = std::fs::read_to_string(ws.join("report.md")).unwrap();
    assert!(report.starts_with("# Plan a picnic\n\n"));
    assert!(report.contains(outcome.answer.trim()));
    let top: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
    assert_eq!(top.len(), 1, "nothing but the workspace");
    // With no turns.jsonl to point into, each module's transcript is
    // whole in plan.json (review of issue 25).
    let plan: serde_json::Value =
        serde_json::from_slice(&std::fs::read(ws.join("plan.json")).unwrap()).unwrap();
    let tasks = plan["tasks"].as_array().unwrap();
    assert!(!tasks.is_empty());
    for t in tasks {
        assert!(t.get("context_turns").is_none(), "{t}");
        let archive = t["context_archive"].as_array().unwrap();
        assert!(archive.len() >= 2, "{t}");
    }
}

#[test]
fn run_json_holds_no_secrets_and_resume_gets_the_team_directory_back() {
    // Review finding: MCP `env` values and credentials in model URLs were
    // saved verbatim in run.json, and a resumed team lost its directory.
    let team_dir = tempfile::tempdir().unwrap();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for sub in ["agents", "souls"] {
        std::fs::create_dir_all(team_dir.path().join(sub)).unwrap();
        for entry in std::fs::read_dir(root.join(sub)).unwrap() {
            let path = entry.unwrap().path();
            std::fs::copy(
                &path,
                team_dir.path().join(sub).join(path.file_name().unwrap()),
            )
            .unwrap();
        }
    }
    std::fs::write(
        team_dir.path().join("team.yaml"),
        "name: secretive\nmodels:\n  remote: \"http://user:PASSWORD42@127.0.0.1:9/v1#m\"\n\
         mcpServers:\n  gh: {command: \"true\", env: {GITHUB_TOKEN: \"ghp_TOKEN42\"}}\n",
    )
    .unwrap();
    let team = Team::load(team_dir.path()).unwrap();
    let runs = tempfile::tempdir().unwrap();
    let run = Runtime::new(team, Sim::new())
        .runs_dir(runs.path())
        .model_spec("http://user:PASSWORD42@127.0.0.1:9/v1#m")
        .run("Plan a picnic")
        .unwrap();
    let run_dir = runs.path().join(&run.run_id);
    // run.json and, since format 2, the team beside it in team.json.
    let saved = ["run.json", "team.json"]
        .map(|f| std::fs::read_to_string(run_dir.join(f)).unwrap())
        .concat();
    assert!(
        !saved.contains("PASSWORD42") && !saved.contains("ghp_TOKEN42"),
        "{saved}"
    );
    assert!(
        saved.contains("GITHUB_TOKEN"),
        "the key names stay, for the reader"
    );

    let record = boardroom::store::load_run(&run_dir).unwrap();
    let resumed = record.team.to_team().unwrap();
    assert_eq!(
        resumed.dir().map(|d| d.canonicalize().unwrap()),
        Some(team_dir.path().canonicalize().unwrap())
    );
    // The env comes back from the team directory as it is now.
    assert_eq!(
        resumed.config().mcp_servers["gh"].env["GITHUB_TOKEN"],
        "ghp_TOKEN42"
    );
}
