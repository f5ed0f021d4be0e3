//! What runs a round's members (issue 24): rayon by default for the
//! default team, the own pool on request, as the library, `team.yaml`,
//! `--executor`, `run_started` and `show` say. Seen from the threads that
//! made the members' calls, never timed.

use std::fs;
use std::path::Path;
use std::sync::Arc;

use boardroom::testing::{Scripted, Sim};
use boardroom::{
    AgentSpec, ChatModel, ChatRequest, ChatResponse, Event, EventKind, Executor, ModelError, Phase,
    RunStatus, Runtime, Team, TeamConfig,
};
use parking_lot::Mutex;

mod support;

use support::cli::{boardroom, text, with_runs_dir};

/// The sim, noting the name of the thread of each member call.
struct Noting {
    sim: Sim,
    names: Arc<Mutex<Vec<String>>>,
}

impl ChatModel for Noting {
    fn name(&self) -> String {
        "noting".into()
    }

    fn chat(
        &self,
        req: &ChatRequest,
        on_delta: &mut dyn FnMut(&str),
    ) -> Result<ChatResponse, ModelError> {
        if matches!(req.phase, Phase::Draft | Phase::Challenge) {
            let name = std::thread::current().name().unwrap_or("").to_string();
            self.names.lock().push(name);
        }
        self.sim.chat(req, on_delta)
    }
}

/// The names of the threads the default team's members ran on, and the
/// executor its `run_started` named.
fn member_threads(executor: Option<Executor>) -> (Vec<String>, Option<Executor>) {
    let names = Arc::new(Mutex::new(Vec::new()));
    let model = Noting {
        sim: Sim::new(),
        names: Arc::clone(&names),
    };
    let (tx, rx) = crossbeam_channel::unbounded();
    let mut runtime = Runtime::new(Team::builtin().unwrap(), model).events(tx);
    if let Some(x) = executor {
        runtime = runtime.executor(x);
    }
    let run = runtime.run("Write a haiku about tea").unwrap();
    assert_eq!(run.status, RunStatus::Done);
    drop(runtime);
    let started = rx.iter().find_map(|e| match e.kind {
        EventKind::RunStarted { executor, .. } => Some(executor),
        _ => None,
    });
    let names = names.lock().clone();
    assert!(!names.is_empty(), "the members were called");
    (names, started.flatten())
}

#[test]
fn a_default_run_of_the_default_team_runs_its_members_on_rayon() {
    let (names, ran) = member_threads(None);
    assert!(
        names.iter().all(|n| n.starts_with("boardroom-rayon-")),
        "{names:?}"
    );
    assert_eq!(ran, Some(Executor::Rayon));
}

#[test]
fn the_threads_executor_runs_them_on_the_own_pool() {
    let (names, ran) = member_threads(Some(Executor::Threads));
    assert!(
        names.iter().all(|n| n.starts_with("boardroom-member-")),
        "{names:?}"
    );
    assert_eq!(ran, Some(Executor::Threads));
}

/// The `executor` of a run's JSON `run_started` line.
fn started_with(stdout: &[u8]) -> serde_json::Value {
    let out = text(stdout);
    let first = out.lines().next().unwrap_or_default();
    let v: serde_json::Value = serde_json::from_str(first).expect("a JSON event");
    assert_eq!(v["type"], "run_started", "{first}");
    v["executor"].clone()
}

/// The `run_id` of a run's first JSON line.
fn run_id(stdout: &[u8]) -> String {
    let out = text(stdout);
    let first = out.lines().next().unwrap_or_default();
    let v: serde_json::Value = serde_json::from_str(first).expect("a JSON event");
    v["run_id"].as_str().expect("a run id").to_string()
}

#[test]
fn the_cli_runs_on_rayon_by_default_and_on_threads_when_asked_and_show_says_which() {
    let runs = tempfile::tempdir().unwrap();
    let out = with_runs_dir(&["run", "--json", "Write a haiku"], runs.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(started_with(&out.stdout), "rayon");
    let first = run_id(&out.stdout);
    let out = with_runs_dir(&["show", "last"], runs.path());
    assert!(
        text(&out.stdout).contains("\nmembers ran on rayon\n"),
        "{}",
        text(&out.stdout)
    );
    let out = with_runs_dir(
        &["run", "--json", "--executor", "threads", "Write a haiku"],
        runs.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(started_with(&out.stdout), "threads");
    let out = with_runs_dir(&["show", "last"], runs.path());
    assert!(
        text(&out.stdout).contains("\nmembers ran on threads\n"),
        "{}",
        text(&out.stdout)
    );
    // A follow-up of the first run, resumed with the flag, runs on the
    // executor it names; show names both.
    let out = with_runs_dir(
        &[
            "resume",
            &first,
            "--json",
            "--executor",
            "threads",
            "--message",
            "and one more",
        ],
        runs.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(started_with(&out.stdout), "threads");
    let out = with_runs_dir(&["show", &first], runs.path());
    assert!(
        text(&out.stdout).contains("\nmembers ran on rayon, then threads\n"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn a_bad_executor_flag_names_the_accepted_values_and_exits_2() {
    let runs = tempfile::tempdir().unwrap();
    let out = with_runs_dir(&["run", "--executor", "rayn", "Task"], runs.path());
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("--executor")
            && err.contains(
                "unknown executor 'rayn' (did you mean 'rayon'?), expected one of 'auto', 'rayon', 'threads'"
            ),
        "{err}"
    );
}

/// A team directory with a master and one member, and `yaml` as its
/// `team.yaml`.
fn team_dir(dir: &Path, yaml: &str) {
    fs::create_dir_all(dir.join("agents")).unwrap();
    fs::create_dir_all(dir.join("souls")).unwrap();
    fs::write(
        dir.join("agents/lead.md"),
        "---\nname: lead\nrole: master\n---\n",
    )
    .unwrap();
    fs::write(
        dir.join("agents/writer.md"),
        "---\nname: writer\nrole: member\n---\n",
    )
    .unwrap();
    fs::write(dir.join("souls/lead.md"), "You lead.").unwrap();
    fs::write(dir.join("souls/writer.md"), "You write.").unwrap();
    fs::write(dir.join("team.yaml"), yaml).unwrap();
}

#[test]
fn team_yaml_sets_the_executor_and_a_bad_one_is_named_at_its_line() {
    let dir = tempfile::tempdir().unwrap();
    team_dir(dir.path(), "name: pair\nexecutor: threads\n");
    let out = boardroom(&["run", "--json", "Task"], dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(started_with(&out.stdout), "threads");
    // The flag wins over the file.
    let out = boardroom(
        &["run", "--json", "--executor", "rayon", "Task"],
        dir.path(),
    );
    assert_eq!(started_with(&out.stdout), "rayon");

    team_dir(dir.path(), "name: pair\nmax_rounds: 2\nexecutor: rayn\n");
    for args in [&["check"][..], &["run", "Task"][..]] {
        let out = boardroom(args, dir.path());
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = text(&out.stderr);
        assert!(
            err.contains(
                "team.yaml:3: executor: unknown executor 'rayn' (did you mean 'rayon'?), expected one of 'auto', 'rayon', 'threads'"
            ),
            "{args:?}: {err}"
        );
    }
}

/// `events.jsonl` written before the executor was recorded still loads:
/// its `run_started` names none.
#[test]
fn an_old_run_started_without_an_executor_still_reads() {
    let line = r#"{"run_id":"r","agent":"lead","parent":null,"time_ms":1,"type":"run_started","task":"t","team":"x","model":"sim","members":2,"max_rounds":3,"process":"blackboard"}"#;
    let event: Event = serde_json::from_str(line).unwrap();
    assert!(matches!(
        event.kind,
        EventKind::RunStarted { executor: None, .. }
    ));
    assert!(Event::executors_of(&[event]).is_empty());
}

/// The threads of a model's member calls (a draft each).
struct Drafts<M> {
    model: M,
    names: Arc<Mutex<Vec<String>>>,
}

impl<M: ChatModel> ChatModel for Drafts<M> {
    fn name(&self) -> String {
        self.model.name()
    }

    fn chat(
        &self,
        req: &ChatRequest,
        on_delta: &mut dyn FnMut(&str),
    ) -> Result<ChatResponse, ModelError> {
        if req.phase == Phase::Draft {
            let name = std::thread::current().name().unwrap_or("").to_string();
            self.names.lock().push(name);
        }
        self.model.chat(req, on_delta)
    }
}

/// `auto` is judged per round, not by the team's size: a narrow team whose
/// plan gives each member several assignments has a round wider than
/// `auto`'s limit (set small here), and that round runs on the own pool;
/// the run started on rayon, as its `run_started` says.
#[test]
fn auto_runs_a_round_wider_than_its_limit_on_the_own_pool() {
    let mut plan = String::new();
    for i in 0..4 {
        plan.push_str(&format!(
            "ASSIGN:writer:part {i}\nASSIGN:editor:check {i}\n"
        ));
    }
    let model = Scripted::new()
        .reply("lead", plan)
        .otherwise("lead", "DONE\nThe answer.")
        .otherwise("writer", "A draft.")
        .otherwise("editor", "Checked.");
    let names = Arc::new(Mutex::new(Vec::new()));
    let model = Drafts {
        model,
        names: Arc::clone(&names),
    };
    let team = Team::new(
        "narrow",
        TeamConfig::default(),
        vec![
            AgentSpec::master("lead", "You lead."),
            AgentSpec::member("writer", "Writes", "You write."),
            AgentSpec::member("editor", "Checks", "You check."),
        ],
    )
    .unwrap();
    let (tx, rx) = crossbeam_channel::unbounded();
    let run = Runtime::new(team, model)
        .events(tx)
        .executor(Executor::Auto)
        .auto_limit_for_tests(4)
        .max_rounds(1)
        .run("Write four parts")
        .unwrap();
    assert_eq!(run.status, RunStatus::Done, "{run:?}");
    let names = names.lock().clone();
    assert_eq!(names.len(), 8, "{names:?}");
    assert!(
        names.iter().all(|n| n.starts_with("boardroom-member-")),
        "{names:?}"
    );
    let started = rx.try_iter().find_map(|e| match e.kind {
        EventKind::RunStarted { executor, .. } => Some(executor),
        _ => None,
    });
    assert_eq!(started, Some(Some(Executor::Rayon)));
}

/// A resumed run keeps the executor its run was started with; a flag
/// given on resume still wins.
#[test]
fn resume_keeps_the_executor_of_the_run_and_a_flag_wins() {
    let runs = tempfile::tempdir().unwrap();
    let out = with_runs_dir(
        &["run", "--json", "--executor", "threads", "Write a haiku"],
        runs.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(started_with(&out.stdout), "threads");
    let id = run_id(&out.stdout);
    let out = with_runs_dir(
        &["resume", &id, "--json", "--message", "and one more"],
        runs.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(started_with(&out.stdout), "threads");
    let out = with_runs_dir(
        &[
            "resume",
            &id,
            "--json",
            "--executor",
            "rayon",
            "--message",
            "and another",
        ],
        runs.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(started_with(&out.stdout), "rayon");
}

/// A run started from inside a rayon pool's job (a library caller's
/// `par_iter`) runs its members on the own pool, never waiting in a rayon
/// scope where its thread would take its caller's jobs, and completes.
#[test]
fn a_run_started_inside_a_rayon_job_runs_on_the_own_pool() {
    let outer = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let (names, ran) = outer.install(|| member_threads(Some(Executor::Rayon)));
    assert!(
        names.iter().all(|n| n.starts_with("boardroom-member-")),
        "{names:?}"
    );
    assert_eq!(ran, Some(Executor::Threads));
}
