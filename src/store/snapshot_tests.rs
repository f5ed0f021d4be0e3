//! Format 2: a small `run.json`, the team once, what changed per checkpoint.

use std::io::Write;

use super::*;
use crate::board::{Entry, EntryKind};
use crate::record::{HandoffState, HandoffStep, ProcessState, RunPhase, RunSettings, RunState};
use crate::team::Team;

fn entry(seq: u64, author: &str) -> Entry {
    Entry {
        seq,
        round: 1,
        author: author.into(),
        kind: EntryKind::Draft,
        task: Some("task_001".into()),
        text: format!("draft {seq} by {author}"),
        transport: false,
        failure: None,
    }
}

fn save(dir: &RunDir, state: &RunState) {
    let team = Team::builtin().unwrap();
    let snapshot = || TeamSnapshot::of(&team);
    dir.checkpoint(
        state,
        Checkpoint {
            created_ms: 7,
            settings: RunSettings::default(),
            team_name: "default",
            team: &snapshot,
            journal_len: None,
            last_turn: None,
        },
    )
    .unwrap();
}

fn state_lines(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("state.jsonl"))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn issue25_each_checkpoint_writes_what_changed_and_loads_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("r");
    let dir = RunDir::create(&path).unwrap();
    let mut state = RunState::new("r".into(), "a task".into());
    save(&dir, &state);
    state.phase = RunPhase::Members;
    state.round = 1;
    state.plan.add("part one", Some("writer".into()));
    state.board.push(entry(1, "writer"));
    save(&dir, &state);
    // The same state again: no line, the summary only.
    save(&dir, &state);
    state.board.push(entry(2, "critic"));
    save(&dir, &state);
    let lines = state_lines(&path);
    assert_eq!(lines.len(), 3, "{lines:#?}");
    assert!(lines[0].contains("\"task\":\"a task\""), "{}", lines[0]);
    assert_eq!(lines[1].matches("draft 1 by writer").count(), 1);
    assert!(!lines[2].contains("draft 1"), "{}", lines[2]);
    assert!(lines[2].contains("draft 2 by critic"), "{}", lines[2]);
    let run_json = std::fs::read_to_string(path.join("run.json")).unwrap();
    assert!(!run_json.contains("draft"), "{run_json}");
    assert!(!run_json.contains("soul"), "{run_json}");
    let back = load_run(&path).unwrap();
    assert_eq!(back.state, state);
    assert_eq!(back.team.name, "default");
    assert_eq!(back.version, RUN_FORMAT_VERSION);
}

#[test]
fn issue25_a_journaled_entry_is_pointed_to_not_written_again() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("r");
    let dir = RunDir::create(&path).unwrap();
    let mut state = RunState::new("r".into(), "a task".into());
    save(&dir, &state);
    for (seq, who) in [(1, "writer"), (2, "critic")] {
        dir.append_journal(&JournalRecord::Entry {
            round: 1,
            phase: RunPhase::Members,
            entry: entry(seq, who),
        })
        .unwrap();
        state.board.push(entry(seq, who));
    }
    // One the journal does not hold: written out.
    state.board.push(entry(3, "editor"));
    save(&dir, &state);
    let lines = state_lines(&path);
    let last = lines.last().unwrap();
    assert!(
        !last.contains("draft 1") && !last.contains("draft 2"),
        "{last}"
    );
    assert!(last.contains("draft 3 by editor"), "{last}");
    assert_eq!(load_run(&path).unwrap().state, state);
}

#[test]
fn issue25_a_checkpoint_cut_before_its_run_json_is_not_read_and_is_cut_off_on_reopen() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("r");
    let mut state = RunState::new("r".into(), "a task".into());
    {
        let dir = RunDir::create(&path).unwrap();
        save(&dir, &state);
        state.board.push(entry(1, "writer"));
        save(&dir, &state);
    }
    // What a kill between the line and run.json leaves: a line (torn,
    // here) that run.json does not cover.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(path.join("state.jsonl"))
        .unwrap();
    f.write_all(b"{\"board\":[{\"seq\":2,").unwrap();
    drop(f);
    assert_eq!(load_run(&path).unwrap().state, state);
    let dir = RunDir::open(&path).unwrap();
    state.board.push(entry(2, "critic"));
    save(&dir, &state);
    assert_eq!(load_run(&path).unwrap().state, state);
    assert!(state_lines(&path).iter().all(|l| l.ends_with('}')));
}

#[test]
fn issue25_handoff_steps_are_appended() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("r");
    let dir = RunDir::create(&path).unwrap();
    let mut state = RunState::new("r".into(), "a task".into());
    state.phase = RunPhase::Step;
    let step = |n: usize| HandoffStep {
        step_id: format!("s{n}"),
        agent: "writer".into(),
        text: format!("step text {n}"),
        tool_calls: Vec::new(),
        artifacts: Vec::new(),
        handoff_triggered: false,
        handoff_target: None,
        reason: None,
        how: None,
    };
    let mut hs = HandoffState {
        active: "writer".into(),
        ..HandoffState::default()
    };
    for n in 1..=3 {
        hs.steps.push(step(n));
        hs.handoffs = n as u32;
        state.process = ProcessState::Handoff(hs.clone());
        save(&dir, &state);
    }
    let lines = state_lines(&path);
    assert_eq!(lines.last().unwrap().matches("step text").count(), 1);
    assert_eq!(load_run(&path).unwrap().state, state);
}

#[test]
fn issue28_finding4_a_long_task_is_written_once_and_turns_get_it_back() {
    use crate::model::{Message, Phase, Role};
    use crate::record::AgentRole;
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("r");
    let dir = RunDir::create(&path).unwrap();
    let task = format!("Plan a \"picnic\"\n{}", "é and more words. ".repeat(4000));
    let state = RunState::new("r".into(), task.clone());
    save(&dir, &state);
    let mut turn =
        crate::record::turn::sample_turn("t0001", "writer", AgentRole::Member, 1, Phase::Draft);
    let message = |role, content: String| Message {
        role,
        content,
        tool_calls: Vec::new(),
        tool_call_id: None,
    };
    // As prompts hold it: escaped in its `<task>` block (the task has
    // quotes), as it stands elsewhere.
    let escaped = crate::util::text::escape_xml(&task);
    turn.messages = vec![
        message(Role::System, "You write.".into()),
        message(
            Role::User,
            format!(
                "<task>\n{escaped}\n</task>\n\n<assignment>\n{task} (your part)\n</assignment>"
            ),
        ),
    ];
    dir.append_turn(&turn).unwrap();
    let short =
        crate::record::turn::sample_turn("t0002", "critic", AgentRole::Member, 1, Phase::Draft);
    dir.append_turn(&short).unwrap();
    let turns = std::fs::read_to_string(path.join("turns.jsonl")).unwrap();
    assert!(turns.len() < 1000, "{} bytes of turns", turns.len());
    let back = read_turns(&path).unwrap();
    assert!(back.warnings.is_empty(), "{:?}", back.warnings);
    assert_eq!(back.items, vec![turn, short]);
    // Written once: in state.jsonl, not in run.json.
    let run_json = std::fs::read_to_string(path.join("run.json")).unwrap();
    assert!(!run_json.contains("picnic"), "{run_json}");
    assert_eq!(load_run(&path).unwrap().state.task(), task);
}

#[test]
fn issue25_a_journaled_transcript_is_pointed_to_not_written_again() {
    use crate::model::{Message, Role};
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("r");
    let dir = RunDir::create(&path).unwrap();
    let mut state = RunState::new("r".into(), "a task".into());
    state.plan.add("part one", Some("writer".into()));
    save(&dir, &state);
    let module = &mut state.plan.tasks[0];
    module.context_archive = vec![Message {
        role: Role::Assistant,
        content: "the transcript of part one".into(),
        tool_calls: Vec::new(),
        tool_call_id: None,
    }];
    module.status = crate::plan::ModuleStatus::PendingReview;
    dir.append_journal(&JournalRecord::Module {
        round: 1,
        phase: RunPhase::Members,
        module: module.clone(),
    })
    .unwrap();
    save(&dir, &state);
    let last = state_lines(&path).pop().unwrap();
    assert!(last.contains("\"module_at\""), "{last}");
    assert!(!last.contains("transcript of part one"), "{last}");
    assert_eq!(load_run(&path).unwrap().state, state);
}

/// Issue 25: a member's transcript is what its turns were sent and
/// answered: the journal and `state.jsonl` name the turns, and every
/// reader gets the transcript back whole; a changed module writes only
/// what changed.
#[test]
fn issue25_a_transcript_of_turns_is_saved_by_id_and_read_back_whole() {
    use crate::model::{Message, Phase};
    use crate::record::AgentRole;
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("r");
    let dir = RunDir::create(&path).unwrap();
    let mut state = RunState::new("r".into(), "a task".into());
    let id = state.plan.add("part one", Some("writer".into()));
    save(&dir, &state);
    let mut turn =
        crate::record::turn::sample_turn("t0002", "writer", AgentRole::Member, 1, Phase::Draft);
    turn.messages = vec![
        Message::system("the writer's soul"),
        Message::user("write part one"),
    ];
    turn.answer = Some("the draft of part one".into());
    dir.append_turn(&turn).unwrap();
    let module = state.plan.get_mut(&id).unwrap();
    let reply = crate::plan::reply(turn.answer.as_deref(), None);
    module.archive_turn(2, 0, turn.messages.clone(), Some(reply));
    module.status = crate::plan::ModuleStatus::PendingReview;
    let journaled = JournalRecord::Module {
        round: 1,
        phase: RunPhase::Members,
        module: module.clone(),
    };
    dir.append_journal(&journaled).unwrap();
    let journal = std::fs::read_to_string(path.join("journal.jsonl")).unwrap();
    assert!(
        journal.contains("\"context_turns\":[\"t0002\"]"),
        "{journal}"
    );
    assert!(!journal.contains("soul"), "{journal}");
    // The journal's replay and the run read it back whole.
    assert_eq!(read_journal(&path, 0).unwrap().items, vec![journaled]);
    save(&dir, &state);
    assert_eq!(load_run(&path).unwrap().state, state);
    assert_eq!(
        load_run(&path).unwrap().state.plan.tasks[0]
            .context_archive
            .len(),
        3
    );
    // A change: the keys that changed, no transcript.
    let module = state.plan.get_mut(&id).unwrap();
    module.status = crate::plan::ModuleStatus::Completed;
    module.metadata.insert("completed_ms".into(), 9.into());
    save(&dir, &state);
    let last = state_lines(&path).pop().unwrap();
    assert!(
        last.contains("\"metadata_set\":{\"completed_ms\":9}"),
        "{last}"
    );
    assert!(!last.contains("context_"), "{last}");
    // A transcript edited by hand is saved whole.
    state.plan.get_mut(&id).unwrap().context_archive[0].content = "edited".into();
    let mut edited = state.plan.tasks[0].clone();
    edited.archive_parts.clear();
    state.plan.tasks[0] = edited;
    save(&dir, &state);
    let last = state_lines(&path).pop().unwrap();
    assert!(last.contains("\"context_archive\""), "{last}");
    assert_eq!(load_run(&path).unwrap().state, state);
}

/// Issue 25: `team.json` leaves out an agent's settings at their defaults
/// and a source where the team's files put it, and reads back the same.
#[test]
fn issue25_team_json_leaves_out_what_goes_without_saying() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let team = Team::load(root.join("examples/teams/sequential")).unwrap();
    let snapshot = TeamSnapshot::of(&team);
    assert!(snapshot.agents.iter().all(|a| a.source.is_some()));
    let json = snapshot.to_saved_json().unwrap();
    let text = String::from_utf8(json.clone()).unwrap();
    assert!(!text.contains("\"source\""), "{text}");
    assert!(!text.contains("\"can_challenge\":false"), "{text}");
    assert_eq!(TeamSnapshot::from_saved_json(&json).unwrap(), snapshot);
    // No source at all stays none; a team.json of an earlier build, whole,
    // reads as it is.
    let mut builtin = TeamSnapshot::of(&Team::builtin().unwrap());
    builtin.dir = Some(root.to_path_buf());
    let json = builtin.to_saved_json().unwrap();
    assert_eq!(TeamSnapshot::from_saved_json(&json).unwrap(), builtin);
    let whole = serde_json::to_vec(&snapshot).unwrap();
    assert_eq!(TeamSnapshot::from_saved_json(&whole).unwrap(), snapshot);
}

#[test]
fn a_principal_runs_state_and_its_paused_approvals_load_back() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("r");
    let dir = RunDir::create(&path).unwrap();
    let mut state = RunState::new("r".into(), "a task".into());
    let mut ps = crate::record::PrincipalState::default();
    ps.log.push("dispatched m1".into());
    ps.dispatching.push("m1".into());
    ps.dispatch_rounds = 1;
    ps.turns = 3;
    state.process = ProcessState::Principal(ps.clone());
    state.plan.add("part one", Some("analyst".into()));
    state.approvals = serde_json::from_value(serde_json::json!([{
        "agent": "writer", "round": 1, "phase": "draft", "messages": [],
        "calls": [{"id": "c1", "name": "workspace_write", "arguments": "{}"}],
        "pending": [{"call_id": "c1", "agent": "writer", "tool": "workspace_write",
                     "arguments": "{}", "round": 1}]
    }]))
    .unwrap();
    save(&dir, &state);
    // The module gets its deliverable; the principal's state changes and
    // is written again, whole.
    state.plan.tasks[0].deliverable = Some(serde_json::json!({"options": ["a"]}));
    ps.turns = 4;
    ps.dispatching.clear();
    state.process = ProcessState::Principal(ps);
    save(&dir, &state);
    let back = load_run(&path).unwrap();
    assert_eq!(back.state, state);
    assert_eq!(back.state.process, state.process);
    assert_eq!(back.state.approvals, state.approvals);
    assert_eq!(back.state.pending_approvals().len(), 1);
    // Decided and cleared: the next load has none.
    state.approvals.clear();
    save(&dir, &state);
    assert!(load_run(&path).unwrap().state.approvals.is_empty());
}

/// Issue 25: modules changed the same way (a review completing a round)
/// are one change with their ids, and assignments that are modules' are
/// their ids; both read back.
#[test]
fn issue25_the_same_change_to_many_modules_is_written_once() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("r");
    let dir = RunDir::create(&path).unwrap();
    let mut state = RunState::new("r".into(), "a task".into());
    for member in ["writer", "critic", "analyst"] {
        state.plan.add("write your part", Some(member.into()));
        state.assignments.push(crate::protocol::Assignment {
            member: member.into(),
            task: "write your part".into(),
        });
    }
    state.assignments.push(crate::protocol::Assignment {
        member: "writer".into(),
        task: "not a module's".into(),
    });
    save(&dir, &state);
    let first = state_lines(&path).pop().unwrap();
    assert!(
        first.contains(r#""assignments":["task_001","task_002","task_003",{"#),
        "{first}"
    );
    for m in &mut state.plan.tasks[..2] {
        m.status = crate::plan::ModuleStatus::Completed;
        m.metadata.insert("completed_ms".into(), 5.into());
    }
    state.plan.tasks[2].status = crate::plan::ModuleStatus::Completed;
    save(&dir, &state);
    let last = state_lines(&path).pop().unwrap();
    assert!(
        last.contains(r#"{"task_ids":["task_001","task_002"],"status":"completed","#),
        "{last}"
    );
    assert!(
        last.contains(r#"{"task_id":"task_003","status":"completed"}"#),
        "{last}"
    );
    assert_eq!(load_run(&path).unwrap().state, state);
}

/// Issue 25 with issue 28's finding 4: a transcript whose turn had the
/// long task cut out of it reads back with the task in it.
#[test]
fn issue25_a_transcript_gets_a_long_task_back() {
    use crate::model::{Message, Phase};
    use crate::record::AgentRole;
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("r");
    let dir = RunDir::create(&path).unwrap();
    let task = format!("Plan a picnic. {}", "Details. ".repeat(600));
    let mut state = RunState::new("r".into(), task.clone());
    let id = state.plan.add("part one", Some("writer".into()));
    save(&dir, &state);
    let mut turn =
        crate::record::turn::sample_turn("t0001", "writer", AgentRole::Member, 1, Phase::Draft);
    turn.messages = vec![Message::user(format!("<task>{task}</task> part one"))];
    turn.answer = Some("a draft".into());
    dir.append_turn(&turn).unwrap();
    let turns = std::fs::read_to_string(path.join("turns.jsonl")).unwrap();
    assert!(!turns.contains("Details. Details."), "the task is cut out");
    let reply = crate::plan::reply(turn.answer.as_deref(), None);
    let module = state.plan.get_mut(&id).unwrap();
    module.archive_turn(1, 0, turn.messages.clone(), Some(reply));
    save(&dir, &state);
    let back = load_run(&path).unwrap().state;
    assert_eq!(back, state);
    assert!(
        back.plan.tasks[0].context_archive[0]
            .content
            .contains(&task)
    );
}

#[test]
fn issue28_finding4_a_task_cut_out_before_masking_comes_back_in_place() {
    use crate::model::{Message, Phase, Role};
    use crate::record::AgentRole;
    // A secret around the task (not in it): the pieces around the task
    // are masked, so the places are counted in the masked text.
    let secret = "hold5-Zq9XkW7pL2mNv4";
    crate::util::secrets::remember(secret);
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("r");
    let dir = RunDir::create(&path).unwrap();
    let task = "a long task, with nothing hidden in it. ".repeat(300);
    save(&dir, &RunState::new("r".into(), task.clone()));
    let mut turn =
        crate::record::turn::sample_turn("t0001", "writer", AgentRole::Member, 1, Phase::Draft);
    let content = format!("key {secret} then\n<task>\n{task}\n</task>\nand {secret} again {task}.");
    turn.messages = vec![Message {
        role: Role::User,
        content: content.clone(),
        tool_calls: Vec::new(),
        tool_call_id: None,
    }];
    turn.answer = Some(format!("echo {secret}"));
    dir.append_turn(&turn).unwrap();
    let line = std::fs::read_to_string(path.join("turns.jsonl")).unwrap();
    assert!(
        line.len() < 1000,
        "{} bytes: the task was not cut",
        line.len()
    );
    assert!(
        !line.contains(&secret[..6]) && !line.contains(&secret[8..]),
        "{line}"
    );
    let back = read_turns(&path).unwrap().items;
    let masked = crate::util::secrets::mask(&content).into_owned();
    assert!(masked.contains(&task) && !masked.contains(secret));
    assert_eq!(back[0].messages[0].content, masked);
}

/// Review of issue 25: a module the journal holds whole is pointed to,
/// and its record names turns: `turns.jsonl` goes to disk before the line
/// too, not the journal alone.
#[test]
fn issue25_a_journaled_module_of_turns_points_into_turns_too() {
    use crate::model::Message;
    let mut state = RunState::new("r".into(), "a task".into());
    let id = state.plan.add("part one", Some("writer".into()));
    let written = snapshot::Written::of(&state, 0);
    let module = state.plan.get_mut(&id).unwrap();
    let reply = crate::plan::reply(Some("a draft"), None);
    module.archive_turn(2, 0, vec![Message::user("write part one")], Some(reply));
    module.status = crate::plan::ModuleStatus::PendingReview;
    let (line, points) = written
        .delta(&state, &|_| None, &|_| Some(10))
        .unwrap()
        .unwrap();
    let line = String::from_utf8(line).unwrap();
    assert!(line.contains("\"module_at\""), "{line}");
    assert!(points.journal && points.turns, "{points:?}");
}

/// Review of issue 25: a module handed to another member keeps the first
/// one's turns in its transcript when read back.
#[test]
fn issue25_a_reassigned_module_reads_back_the_first_members_turn() {
    use crate::model::{Message, Phase};
    use crate::record::AgentRole;
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("r");
    let dir = RunDir::create(&path).unwrap();
    let mut state = RunState::new("r".into(), "a task".into());
    let id = state.plan.add("part one", Some("writer".into()));
    save(&dir, &state);
    let mut turn =
        crate::record::turn::sample_turn("t0002", "writer", AgentRole::Member, 1, Phase::Draft);
    turn.messages = vec![Message::user("write part one")];
    turn.answer = Some("the writer's draft".into());
    dir.append_turn(&turn).unwrap();
    let module = state.plan.get_mut(&id).unwrap();
    let reply = crate::plan::reply(turn.answer.as_deref(), None);
    module.archive_turn(2, 0, turn.messages.clone(), Some(reply));
    module.assigned_agent = Some("critic".into());
    save(&dir, &state);
    let back = load_run(&path).unwrap().state;
    assert_eq!(back.plan.tasks[0].context_archive.len(), 2);
    assert_eq!(back, state);
}

/// Review of issue 25 with issue 28's finding 4: a transcript read back
/// holds no task over 64 KiB, as the live run's does not (every member's
/// would hold it again).
#[test]
fn issue25_a_transcript_read_back_keeps_no_long_task() {
    use crate::model::{Message, Phase};
    use crate::record::AgentRole;
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("r");
    let dir = RunDir::create(&path).unwrap();
    let task = "Plan a picnic. ".repeat(5000);
    let mut state = RunState::new("r".into(), task.clone());
    let id = state.plan.add("part one", Some("writer".into()));
    save(&dir, &state);
    let mut turn =
        crate::record::turn::sample_turn("t0001", "writer", AgentRole::Member, 1, Phase::Draft);
    turn.messages = vec![Message::user(format!("<task>\n{task}\n</task>\npart one"))];
    turn.answer = Some("a draft".into());
    dir.append_turn(&turn).unwrap();
    let cut: Vec<Message> = turn
        .messages
        .iter()
        .map(|m| Message::user(crate::plan::without_long_tasks(&m.content).into_owned()))
        .collect();
    assert!(!cut[0].content.contains(&task));
    let reply = crate::plan::reply(turn.answer.as_deref(), None);
    let module = state.plan.get_mut(&id).unwrap();
    module.archive_turn(1, 0, cut, Some(reply));
    save(&dir, &state);
    let back = load_run(&path).unwrap().state;
    assert!(
        !back.plan.tasks[0].context_archive[0]
            .content
            .contains(&task)
    );
    assert_eq!(back, state);
}

/// Issue 25: a checkpoint that changes nothing writes nothing (the end of
/// a run saved its last phase, then again as it wrapped up); one that
/// changes anything writes `run.json` again.
#[test]
fn issue25_a_checkpoint_of_nothing_new_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("r");
    let dir = RunDir::create(&path).unwrap();
    let mut state = RunState::new("r".into(), "a task".into());
    save(&dir, &state);
    let first = std::fs::read(path.join("run.json")).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(5));
    save(&dir, &state);
    assert_eq!(std::fs::read(path.join("run.json")).unwrap(), first);
    state.round = 2;
    save(&dir, &state);
    assert_ne!(std::fs::read(path.join("run.json")).unwrap(), first);
    assert_eq!(load_run(&path).unwrap().state, state);
}

/// A checkpoint's record of what it wrote, brought up to date field by
/// field, leaves nothing to write when the state has not changed since,
/// whatever changed before: modules added, transcripts grown, redone, cut
/// and emptied, metadata keys added, changed and removed, an agent's usage
/// added, changed and removed, the plan reordered and shortened.
#[test]
fn issue25_what_a_checkpoint_wrote_is_the_state_it_wrote() {
    use crate::model::{Message, Usage};
    fn usage(prompt_tokens: u64, completion_tokens: u64) -> Usage {
        Usage {
            prompt_tokens,
            completion_tokens,
            ..Usage::default()
        }
    }
    let mut state = RunState::new("r".into(), "a task".into());
    let mut written = snapshot::Written::of(&state, 0);
    type Change = Box<dyn Fn(&mut RunState)>;
    let changes: Vec<Change> = vec![
        Box::new(|s| {
            s.plan.add("part one", Some("a".into()));
            s.plan.add("part two", Some("b".into()));
        }),
        Box::new(|s| s.plan.tasks[0].context_archive = vec![Message::user("u")]),
        Box::new(|s| {
            s.plan.tasks[0]
                .context_archive
                .push(Message::assistant("draft"));
        }),
        Box::new(|s| s.plan.tasks[0].context_archive[1] = Message::assistant("redraft")),
        Box::new(|s| {
            let t = &mut s.plan.tasks[0].context_archive;
            t.truncate(1);
            t.extend([Message::assistant("x"), Message::assistant("y")]);
        }),
        Box::new(|s| s.plan.tasks[0].context_archive.clear()),
        Box::new(|s| {
            let m = &mut s.plan.tasks[1].metadata;
            m.insert("kept".into(), 1.into());
            m.insert("changed".into(), "old".into());
            m.insert("gone".into(), true.into());
        }),
        Box::new(|s| {
            let m = &mut s.plan.tasks[1].metadata;
            m.insert("changed".into(), "new".into());
            m.remove("gone");
        }),
        Box::new(|s| {
            s.usage_by_agent.insert("x".into(), usage(3, 4));
            s.usage_by_agent.insert("y".into(), usage(1, 1));
        }),
        Box::new(|s| {
            s.usage_by_agent.insert("x".into(), usage(5, 6));
            s.usage_by_agent.remove("y");
        }),
        Box::new(|s| s.plan.tasks[1].status = crate::plan::ModuleStatus::Completed),
        Box::new(|s| s.plan.tasks.swap(0, 1)),
        Box::new(|s| {
            s.plan.tasks.pop();
        }),
    ];
    for (i, change) in changes.iter().enumerate() {
        change(&mut state);
        let (line, _) = written
            .delta(&state, &|_| None, &|_| None)
            .unwrap()
            .unwrap_or_else(|| panic!("change {i} wrote nothing"));
        written.wrote(&state, line.len() as u64);
        assert!(
            written
                .delta(&state, &|_| None, &|_| None)
                .unwrap()
                .is_none(),
            "after change {i}, what was written is not the state"
        );
    }
}
