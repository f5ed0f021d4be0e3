//! The run core (issue 11 §1): what every run has, whatever its process.

use boardroom::store::{MasterMemory, read_events};
use boardroom::testing::Scripted;
use boardroom::{EventKind, Phase, Role, Runtime, Team};

mod support;

fn memory_of(requests: &[boardroom::ChatRequest]) -> Option<String> {
    let plan = requests.iter().find(|r| r.phase == Phase::Plan)?;
    let system = plan.messages.iter().find(|m| m.role == Role::System)?;
    let from = system.content.find("<memory>")?;
    Some(system.content[from..].to_string())
}

#[test]
fn master_memory_is_read_when_each_run_starts_not_when_the_runtime_is_built() {
    // Issue 11: memory was read once at build time, so the second run of a
    // runtime never saw the note the first one left.
    let tmp = tempfile::tempdir().unwrap();
    let memory = MasterMemory::new(tmp.path().join("memory.md"));
    let model = Scripted::new()
        .reply("master", "ASSIGN:researcher:find the facts")
        .reply("master", "DONE: the answer")
        .reply("master", "- tea is best at 80 degrees")
        .reply("master", "ASSIGN:researcher:find more facts")
        .reply("master", "DONE: another answer")
        .reply("master", "- nothing new")
        .otherwise("researcher", "a draft")
        .otherwise("critic", "AGREE");
    let runtime =
        Runtime::new(Team::builtin().unwrap(), model.clone()).master_memory(memory.clone());
    runtime.run("first task").unwrap();
    let first = model.requests();
    assert_eq!(memory_of(&first), None, "nothing remembered yet");
    assert!(memory.load().unwrap().contains("80 degrees"));

    runtime.run("second task").unwrap();
    let second = model.requests()[first.len()..].to_vec();
    let seen = memory_of(&second).expect("the second run's plan shows the memory");
    assert!(seen.contains("80 degrees"), "{seen}");
}

#[test]
fn a_runtime_built_before_a_note_was_written_shows_it_to_its_next_run() {
    let tmp = tempfile::tempdir().unwrap();
    let memory = MasterMemory::new(tmp.path().join("memory.md"));
    let model = Scripted::new()
        .reply("master", "ASSIGN:researcher:x")
        .reply("master", "DONE: y")
        .reply("master", "- a note")
        .otherwise("researcher", "a draft")
        .otherwise("critic", "AGREE");
    let runtime =
        Runtime::new(Team::builtin().unwrap(), model.clone()).master_memory(memory.clone());
    memory
        .remember("earlier", "- written after the build")
        .unwrap();
    runtime.run("a task").unwrap();
    let seen = memory_of(&model.requests()).expect("the plan shows the memory");
    assert!(seen.contains("written after the build"), "{seen}");
}

#[test]
fn the_run_store_and_the_caller_see_the_same_events_in_the_same_order() {
    // Events flow one way to every subscriber: the caller's channel and
    // events.jsonl (written by the store's own thread) hold the same
    // events, deltas included, once the run has returned — but for what
    // the file leaves out as repeats (issue 25): a call's only delta that
    // is its whole message, and a call's task that repeats its agent's
    // assignment.
    let tmp = tempfile::tempdir().unwrap();
    let (tx, rx) = boardroom::channel::unbounded();
    let run = Runtime::new(Team::builtin().unwrap(), boardroom::testing::Sim::new())
        .runs_dir(tmp.path())
        .events(tx)
        .run("Plan a picnic")
        .unwrap();
    let all: Vec<_> = rx.try_iter().collect();
    let caller = support::events::without_repeats(&all);
    assert_ne!(caller, all, "some events repeat");
    let saved = read_events(&tmp.path().join(&run.run_id)).unwrap();
    assert!(saved.warnings.is_empty(), "{:?}", saved.warnings);
    assert_eq!(saved.items.len(), caller.len());
    // Members emit from their own threads, so two subscribers may see
    // two members' events interleaved differently; each agent's own
    // events (one thread each) come in one order everywhere.
    let by_agent = |events: &[boardroom::Event]| {
        let mut map: std::collections::BTreeMap<String, Vec<boardroom::Event>> =
            std::collections::BTreeMap::new();
        for e in events {
            map.entry(e.agent.clone()).or_default().push(e.clone());
        }
        map
    };
    assert_eq!(by_agent(&saved.items), by_agent(&caller));
    let deltas = caller
        .iter()
        .filter(|e| matches!(e.kind, EventKind::AgentDelta { .. }))
        .count();
    assert!(deltas > 10, "the sim streams deltas ({deltas})");
    assert!(matches!(
        saved.items.last().map(|e| &e.kind),
        Some(EventKind::RunFinished { .. })
    ));
}
