//! A handoff team that also has a partner (for `boardroom chat`): the
//! partner talks with the user and is never on the chain's roster: not an
//! entry, not a rule's destination, never handed control by the sim or the
//! router.

use std::path::Path;
use std::process::Output;

mod support;

use support::cli::{boardroom, text};

/// The sequential example team plus a partner agent named `pal`, with
/// `team.yaml` edited by `edit`.
fn sequential_with_partner(edit: impl Fn(String) -> String) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/teams/sequential");
    for sub in ["agents", "souls"] {
        std::fs::create_dir(dir.path().join(sub)).unwrap();
        for f in std::fs::read_dir(src.join(sub)).unwrap() {
            let f = f.unwrap();
            std::fs::copy(f.path(), dir.path().join(sub).join(f.file_name())).unwrap();
        }
    }
    std::fs::write(
        dir.path().join("agents/pal.md"),
        "---\nname: pal\nrole: partner\ndescription: Talks with the user about the work\n---\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("souls/pal.md"), "You talk with the user.\n").unwrap();
    let yaml = std::fs::read_to_string(src.join("team.yaml")).unwrap();
    std::fs::write(dir.path().join("team.yaml"), edit(yaml)).unwrap();
    dir
}

#[test]
fn the_partner_is_neither_an_entry_nor_a_destination() {
    let dir = sequential_with_partner(|y| y.replace("entry: researcher", "entry: pal"));
    let out = boardroom(&["check", "--team", "."], dir.path());
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("team.yaml:"), "{stderr}");
    assert!(stderr.contains("unknown agent 'pal'"), "{stderr}");

    let dir =
        sequential_with_partner(|y| y.replace("    to_agent: writer\n", "    to_agent: pal\n"));
    let out = boardroom(&["check", "--team", "."], dir.path());
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("unknown agent 'pal'"), "{stderr}");
}

#[test]
fn a_chain_never_hands_control_to_the_partner() {
    // Without rules, the sim hands off in roster order: the partner would
    // come first among those that have not acted if it were on the roster.
    let dir = sequential_with_partner(|y| {
        let start = y.find("handoffs:").unwrap();
        let end = y.find("# The publisher's reply").unwrap();
        format!("{}{}", &y[..start], &y[end..])
    });
    let out = boardroom(
        &["run", "--team", ".", "--no-memory", "Write a note on tea"],
        dir.path(),
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("· 4 agents ·"), "{stderr}");
    assert!(stderr.contains("⇢ "), "the chain hands off: {stderr}");
    assert!(!stderr.contains("→ pal"), "{stderr}");
}

#[test]
fn a_handoff_team_of_one_agent_runs() {
    // A one-agent chain is a sensible handoff team (it terminates, continues
    // or returns to its user); only a blackboard team needs members.
    let dir = sequential_with_partner(|_| {
        "name: solo\nprocess: handoff\nentry: researcher\nafter_work_behavior: terminate\ncontext_variables:\n  audience: readers\n  length: short\n"
            .to_string()
    });
    for f in ["writer", "reviewer", "publisher", "pal"] {
        std::fs::remove_file(dir.path().join(format!("agents/{f}.md"))).unwrap();
        std::fs::remove_file(dir.path().join(format!("souls/{f}.md"))).unwrap();
    }
    let md = dir.path().join("agents/researcher.md");
    // The researcher is already the master of the sequential team.
    assert!(
        std::fs::read_to_string(&md)
            .unwrap()
            .contains("role: master")
    );
    let out = boardroom(&["check", "--team", "."], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", text_of(&out));
    let out = boardroom(
        &["run", "--team", ".", "--no-memory", "Write a note on tea"],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text_of(&out));
    assert!(!text(&out.stdout).trim().is_empty());
}

fn text_of(out: &Output) -> String {
    format!("{}{}", text(&out.stdout), text(&out.stderr))
}
