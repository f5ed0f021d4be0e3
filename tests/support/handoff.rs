//! A handoff team on disk and the helpers the handoff tests share: the
//! team's files (`agents/`, `souls/`, `team.yaml`), the model calls of one
//! agent in one phase, and the binary run with a runs directory.

use std::path::{Path, PathBuf};
use std::process::Output;

use boardroom::protocol::Protocol;
use boardroom::testing::Scripted;
use boardroom::{ChatRequest, Phase, RunOutcome, Runtime, Team};

/// `researcher` (the master), `writer` and `reviewer`.
pub const TRIO: [(&str, &str); 3] = [
    ("researcher", "master"),
    ("writer", "member"),
    ("reviewer", "member"),
];

/// `researcher` (the master) and `writer`.
pub const PAIR: [(&str, &str); 2] = [("researcher", "master"), ("writer", "member")];

/// Writes a team to `dir`: for each `(name, role)` an agent file and a
/// soul (`soul(name)`), and `team.yaml` as `team_yaml`.
pub fn write_team(
    dir: &Path,
    agents: &[(&str, &str)],
    soul: impl Fn(&str) -> String,
    team_yaml: &str,
) {
    std::fs::create_dir_all(dir.join("agents")).unwrap();
    std::fs::create_dir_all(dir.join("souls")).unwrap();
    for &(name, role) in agents {
        std::fs::write(
            dir.join("agents").join(format!("{name}.md")),
            format!("---\nname: {name}\nrole: {role}\ndescription: the team's {name}\n---\n"),
        )
        .unwrap();
        std::fs::write(dir.join("souls").join(format!("{name}.md")), soul(name)).unwrap();
    }
    std::fs::write(dir.join("team.yaml"), team_yaml).unwrap();
}

/// "You are the NAME."
pub fn you_are(name: &str) -> String {
    format!("You are the {name}.")
}

/// The `TRIO` as team `chain` (entry `researcher`), loaded from a temporary
/// folder; `extra` goes after the common team.yaml keys.
pub fn chain(extra: &str) -> (tempfile::TempDir, Team) {
    let tmp = tempfile::tempdir().unwrap();
    write_team(
        tmp.path(),
        &TRIO,
        you_are,
        &format!("name: chain\nprocess: handoff\nentry: researcher\n{extra}"),
    );
    let team = Team::load(tmp.path()).unwrap();
    (tmp, team)
}

/// "Explain tea" run by `team` on `model` with the line protocol.
pub fn run_line(team: Team, model: &Scripted) -> RunOutcome {
    Runtime::new(team, model.clone())
        .protocol(Protocol::Line)
        .run("Explain tea")
        .unwrap()
}

/// The requests `agent` made in `phase`.
pub fn calls(model: &Scripted, agent: &str, phase: Phase) -> Vec<ChatRequest> {
    model
        .requests()
        .into_iter()
        .filter(|r| r.agent == agent && r.phase == phase)
        .collect()
}

/// The boardroom binary run with `args` and `--runs-dir RUNS`, with no
/// model taken from the environment.
pub fn boardroom(args: &[&str], runs: &Path) -> Output {
    super::cli::with_runs_dir(args, runs)
}

/// Stdout then stderr.
pub fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The one run saved under `runs`.
pub fn only_run(runs: &Path) -> PathBuf {
    let mut dirs: Vec<_> = std::fs::read_dir(runs)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("run.json").is_file())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs.pop().unwrap()
}
