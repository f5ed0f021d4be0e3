//! Context variables in a blackboard team: souls and the task are rendered
//! over the team's variables (`--var` over the defaults), and a resumed run
//! keeps the values it started with.

use std::path::Path;
use std::process::{Command, Output};

fn boardroom(args: &[&str], dir: &Path, runs: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_boardroom"))
        .args(args)
        .current_dir(dir)
        .env("BOARDROOM_RUNS_DIR", runs)
        .env_remove("BOARDROOM_MODEL")
        .env_remove("RUST_LOG")
        .env_remove("OPENAI_BASE_URL")
        .output()
        .expect("the binary runs")
}

fn team() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("agents")).unwrap();
    std::fs::create_dir(dir.path().join("souls")).unwrap();
    for (name, role) in [("lead", "master"), ("scribe", "member")] {
        std::fs::write(
            dir.path().join(format!("agents/{name}.md")),
            format!("---\nname: {name}\nrole: {role}\ndescription: the team's {name}\n---\n"),
        )
        .unwrap();
        std::fs::write(
            dir.path().join(format!("souls/{name}.md")),
            format!("You are the {name}. Write for {{{{ audience }}}}.\n"),
        )
        .unwrap();
    }
    std::fs::write(
        dir.path().join("team.yaml"),
        "name: vars\ncontext_variables:\n  audience: adults\n",
    )
    .unwrap();
    dir
}

/// Every message the run sent to a model, from turns.jsonl.
fn sent(runs: &Path) -> String {
    let run = std::fs::read_dir(runs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.join("turns.jsonl").exists())
        .expect("a run directory");
    std::fs::read_to_string(run.join("turns.jsonl")).unwrap()
}

#[test]
fn souls_and_task_are_rendered_over_the_variables() {
    let dir = team();
    let runs = tempfile::tempdir().unwrap();
    let out = boardroom(
        &[
            "run",
            "--team",
            ".",
            "--no-memory",
            "--var",
            "audience=children",
            "A note for {{ audience }} on tea",
        ],
        dir.path(),
        runs.path(),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let turns = sent(runs.path());
    assert!(
        turns.contains("You are the lead. Write for children."),
        "{turns}"
    );
    assert!(
        turns.contains("You are the scribe. Write for children."),
        "{turns}"
    );
    assert!(turns.contains("A note for children on tea"), "{turns}");
    assert!(!turns.contains("{{ audience }}"), "{turns}");
    // The value is saved for resume.
    let run = std::fs::read_dir(runs.path())
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let saved = std::fs::read_to_string(run.join("run.json")).unwrap();
    assert!(saved.contains("\"children\""), "{saved}");

    // Without --var, the default.
    let runs = tempfile::tempdir().unwrap();
    let out = boardroom(
        &["run", "--team", ".", "--no-memory", "A note on tea"],
        dir.path(),
        runs.path(),
    );
    assert_eq!(out.status.code(), Some(0));
    assert!(sent(runs.path()).contains("Write for adults."));
}

/// Issue 15: a variable name that is not an identifier, or one declared
/// twice, stops `check` and `run` with exit 2 at its file and line.
#[test]
fn bad_and_duplicate_variable_names_exit_2_at_their_line() {
    let cases = [
        (
            "name: vars\ncontext_variables:\n  audience: adults\n  reading level: 3\n",
            "team.yaml:4: context_variables: bad variable name 'reading level': use letters, \
             digits and '_', starting with a letter or '_' (at most 64), so that a template \
             can name it",
        ),
        (
            "name: vars\ncontext_variables:\n  audience: adults\n  audience: children\n",
            "team.yaml:4: context_variables: duplicate key 'audience' (first at line 3)",
        ),
    ];
    for (yaml, want) in cases {
        let dir = team();
        let runs = dir.path().join("runs");
        std::fs::write(dir.path().join("team.yaml"), yaml).unwrap();
        for args in [&["check"][..], &["run", "a task", "--model", "sim"][..]] {
            let out = boardroom(args, dir.path(), &runs);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
            assert!(stderr.contains(want), "{args:?}: {stderr}");
        }
        assert!(!runs.exists());
    }
}
