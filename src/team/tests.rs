use std::fs;
use std::path::Path;

use super::*;

/// Writes a team: `(name, agent file text, soul text or None)`.
fn team_dir(agents: &[(&str, &str, Option<&str>)], team_yaml: Option<&str>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join("agents")).unwrap();
    fs::create_dir_all(dir.path().join("souls")).unwrap();
    for (name, agent, soul) in agents {
        fs::write(dir.path().join(format!("agents/{name}.md")), agent).unwrap();
        if let Some(soul) = soul {
            fs::write(dir.path().join(format!("souls/{name}.md")), soul).unwrap();
        }
    }
    if let Some(y) = team_yaml {
        fs::write(dir.path().join("team.yaml"), y).unwrap();
    }
    dir
}

const MASTER: &str = "---\nname: master\nrole: master\n---\n";
const WRITER: &str =
    "---\nname: writer\nrole: member\ndescription: Writes\ncan_challenge: true\n---\nnotes here\n";

fn err_text(dir: &Path) -> String {
    Team::load(dir).unwrap_err().to_string()
}

fn rel(dir: &Path, s: &str) -> String {
    s.replace(&format!("{}/", dir.display()), "")
}

#[test]
fn loads_a_team_with_notes_and_config() {
    let dir = team_dir(
        &[
            ("master", MASTER, Some("You lead.")),
            ("writer", WRITER, Some("You write.")),
        ],
        Some("name: demo\nmax_rounds: 3\nmodels:\n  fast: sim:latency=1ms\n"),
    );
    let team = Team::load(dir.path()).unwrap();
    assert_eq!(team.name(), "demo");
    assert_eq!(team.master().name, "master");
    let writer = team.agent("writer").unwrap();
    assert!(writer.can_challenge);
    assert_eq!(writer.notes, "notes here");
    assert_eq!(writer.soul, "You write.");
    assert_eq!(team.config().max_rounds, Some(3));
    assert!(
        matches!(team.config().models.get("fast"), Some(ModelConfig::Spec(s)) if s == "sim:latency=1ms")
    );
}

#[test]
fn an_unknown_key_names_file_and_line_with_a_suggestion() {
    let typo = "---\nname: writer\nrole: member\ncan_chalenge: true\n---\n";
    let dir = team_dir(
        &[("master", MASTER, Some("s")), ("writer", typo, Some("s"))],
        None,
    );
    assert_eq!(
        rel(dir.path(), &err_text(dir.path())),
        "agents/writer.md:4: unknown key 'can_chalenge' (did you mean 'can_challenge'?)"
    );
}

#[test]
fn a_missing_soul_names_the_agent_file() {
    let dir = team_dir(
        &[("master", MASTER, Some("s")), ("writer", WRITER, None)],
        None,
    );
    let msg = rel(dir.path(), &err_text(dir.path()));
    assert_eq!(
        msg,
        "agents/writer.md:2: no soul for 'writer': souls/writer.md not found"
    );
}

#[test]
fn a_second_master_is_refused() {
    let second = "---\nname: boss\nrole: master\n---\n";
    let dir = team_dir(
        &[("boss", second, Some("s")), ("master", MASTER, Some("s"))],
        None,
    );
    let msg = rel(dir.path(), &err_text(dir.path()));
    assert_eq!(
        msg,
        "agents/master.md: a second master 'master' (the first is 'boss'): a team has exactly one"
    );
}

#[test]
fn no_master_is_refused() {
    let dir = team_dir(&[("writer", WRITER, Some("s"))], None);
    assert!(
        err_text(dir.path()).ends_with("agents: no master: exactly one agent needs 'role: master'")
    );
}

#[test]
fn a_team_of_the_master_alone_is_refused() {
    let dir = team_dir(&[("master", MASTER, Some("s"))], None);
    let err = err_text(dir.path());
    assert!(
        err.ends_with(
            "agents: no member: the master's plan must assign work, so a team needs at least one \
             agent with 'role: member'"
        ),
        "{err}"
    );
}

#[test]
fn a_bad_name_is_refused_at_its_line() {
    let bad = "---\nrole: member\nname: 9 lives\n---\n";
    let dir = team_dir(
        &[("master", MASTER, Some("s")), ("bad", bad, Some("s"))],
        None,
    );
    assert_eq!(
        rel(dir.path(), &err_text(dir.path())),
        "agents/bad.md:3: bad agent name '9 lives': use letters, digits, '_' and '-', starting with a letter (at most 64)"
    );
}

#[test]
fn a_duplicate_name_is_refused() {
    let dir = team_dir(
        &[
            ("master", MASTER, Some("s")),
            ("writer", WRITER, Some("s")),
            ("writer2", WRITER, Some("s")),
        ],
        None,
    );
    let msg = rel(dir.path(), &err_text(dir.path()));
    assert!(
        msg.starts_with("agents/writer2.md: duplicate agent name 'writer' (also in "),
        "{msg}"
    );
}

#[test]
fn a_bad_value_type_names_its_line() {
    let bad = "---\nname: writer\nrole: member\ncan_challenge: sometimes\n---\n";
    let dir = team_dir(
        &[("master", MASTER, Some("s")), ("writer", bad, Some("s"))],
        None,
    );
    let msg = rel(dir.path(), &err_text(dir.path()));
    assert!(msg.starts_with("agents/writer.md:4: "), "{msg}");
}

#[test]
fn missing_front_matter_is_refused() {
    let dir = team_dir(&[("master", "name: master\n", Some("s"))], None);
    assert_eq!(
        rel(dir.path(), &err_text(dir.path())),
        "agents/master.md:1: expected front matter: the file must start with a '---' line"
    );
}

#[test]
fn team_yaml_keys_are_checked() {
    let dir = team_dir(
        &[("master", MASTER, Some("s"))],
        Some("name: x\nmax_round: 3\n"),
    );
    assert_eq!(
        rel(dir.path(), &err_text(dir.path())),
        "team.yaml:2: unknown key 'max_round' (did you mean 'max_rounds'?)"
    );
    let dir = team_dir(&[("master", MASTER, Some("s"))], Some("max_rounds: 0\n"));
    assert_eq!(
        rel(dir.path(), &err_text(dir.path())),
        "team.yaml:1: max_rounds must be at least 1"
    );
}

#[test]
fn the_shipped_team_loads_from_disk_and_built_in() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let team = Team::load(root).unwrap();
    let builtin = Team::builtin().unwrap();
    for t in [&team, &builtin] {
        assert_eq!(t.master().name, "master");
        assert!(t.members().count() >= 3);
        assert!(t.members().any(|m| m.can_challenge));
        assert!(
            t.members()
                .all(|m| !m.description.is_empty() && m.soul.len() > 200)
        );
    }
    let names = |t: &Team| {
        t.agents()
            .iter()
            .map(|a| a.name.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&team), names(&builtin));
}

/// Issue 8, finding 10: bad values in `models` are reported as themselves,
/// at their file and line, not as "did not match any variant".
#[test]
fn bad_model_settings_name_the_value_file_and_line() {
    let cases = [
        (
            "models:\n  gpt:\n    base_url: http://127.0.0.1:1/v1\n    max_in_flight: -1\n",
            "team.yaml:4: models.gpt.max_in_flight: -1 is out of range (allowed 1 to 4096)",
        ),
        (
            "models:\n  gpt:\n    timeout: 1e300\n",
            "team.yaml:3: models.gpt.timeout: 1e300 seconds is out of range (allowed 1ms to 24h)",
        ),
        (
            "models:\n  gpt:\n    timeout: .nan\n",
            "team.yaml:3: models.gpt.timeout: .nan seconds is out of range (allowed 1ms to 24h)",
        ),
        (
            "models:\n  gpt:\n    timeout: 0\n",
            "team.yaml:3: models.gpt.timeout: 0 seconds is out of range (allowed 1ms to 24h)",
        ),
        (
            "mcpServers:\n  fs:\n    command: cat\n    timeout: 1e300\n",
            "team.yaml:4: mcpServers.fs.timeout: 1e300 seconds is out of range (allowed 1ms to 24h)",
        ),
    ];
    for (yaml, want) in cases {
        let dir = team_dir(&[("master", MASTER, Some("You lead."))], Some(yaml));
        assert_eq!(rel(dir.path(), &err_text(dir.path())), want, "{yaml}");
    }
}

/// Issue 15: in an agent file, lines count from the top of the file (the
/// front matter starts after `---`), for nested values and duplicates too.
#[test]
fn front_matter_errors_are_at_their_file_line() {
    let cases = [
        (
            "---\nname: writer\nrole: member\ntools:\n  - plan_read\n  - [x]\n---\n",
            "agents/writer.md:6: tools[2]: wrong type: expected a single value, not a list or mapping",
        ),
        (
            "---\nname: writer\nrole: member\ndescription: a\ndescription: b\n---\n",
            "agents/writer.md:5: duplicate key 'description' (first at line 4)",
        ),
        // Two keys to the parser, one to a map of names: the outline's
        // check still tells them, though the typed read takes the file.
        (
            "---\nname: writer\nrole: member\ntoolsets:\n  1: [plan_read]\n  \"1\": [plan_read]\n---\n",
            "agents/writer.md:6: toolsets: duplicate key '1' (first at line 5)",
        ),
        (
            "---\nname: writer\nrole: member\ndeliverable:\n  type: object\n  properties:\n    true: {}\n    \"true\": {}\n---\n",
            "agents/writer.md:8: deliverable.properties: duplicate key 'true' (first at line 7)",
        ),
        (
            "---\nname: writer\nrole: member\n\nmax_tokens: lots\n---\n",
            "agents/writer.md:5: max_tokens: wrong type: 'lots' is not a whole number of 0 or more",
        ),
        (
            "---\nname: writer\nrole: editor\n---\n",
            "agents/writer.md:3: role: unknown variant 'editor', expected one of 'master', 'member', 'partner'",
        ),
    ];
    for (writer, want) in cases {
        let dir = team_dir(
            &[("master", MASTER, Some("s")), ("writer", writer, Some("s"))],
            None,
        );
        assert_eq!(rel(dir.path(), &err_text(dir.path())), want, "{writer}");
    }
}

/// A model given in code is read through the getter (issue 15: the field's
/// type could not be named outside the crate).
#[test]
fn a_model_given_in_code_is_read_through_its_getter() {
    let plain = AgentSpec::member("writer", "Writes", "You write.");
    assert!(plain.chat_model().is_none());
    let own = plain.with_chat_model(crate::testing::Sim::new());
    let model = own.chat_model().expect("the model given");
    assert!(std::sync::Arc::ptr_eq(
        model,
        &own.chat_model.as_ref().expect("kept").0
    ));
    assert!(!model.name().is_empty());
}

#[test]
fn every_agent_is_found_by_name_and_no_other() {
    // Built out of order: the team sorts them (master, members by name,
    // partner) and the lookup relies on that order.
    let mut agents = vec![AgentSpec {
        role: AgentRole::Partner,
        ..AgentSpec::member("zed", "the partner", "Talks with the user.")
    }];
    for i in (0..40).rev() {
        agents.push(AgentSpec::member(
            format!("m{i:02}"),
            "a member",
            "You work.",
        ));
    }
    agents.push(AgentSpec::master("boss", "You lead."));
    agents.push(AgentSpec::member("aardvark", "first by name", "You work."));
    let team = Team::new("t", TeamConfig::default(), agents).unwrap();
    for a in team.members().chain([team.master()]).chain(team.partner()) {
        assert_eq!(team.agent(&a.name).map(|f| &f.name), Some(&a.name));
    }
    assert_eq!(team.agent("zed").unwrap().role, AgentRole::Partner);
    assert_eq!(team.agent("boss").unwrap().role, AgentRole::Master);
    for missing in ["", "m40", "m0", "zz", "a", "Boss"] {
        assert!(team.agent(missing).is_none(), "{missing:?}");
    }
}

/// A team large enough to be read on several threads.
fn large_team(n: usize) -> tempfile::TempDir {
    let names: Vec<String> = (0..n).map(|i| format!("m{i:04}")).collect();
    let agents: Vec<String> = names
        .iter()
        .map(|m| format!("---\nname: {m}\nrole: member\ndescription: writes {m}\n---\n"))
        .collect();
    let mut files: Vec<(&str, &str, Option<&str>)> = vec![("master", MASTER, Some("lead"))];
    for (name, agent) in names.iter().zip(&agents) {
        files.push((name, agent, Some("soul")));
    }
    team_dir(&files, None)
}

#[test]
fn a_large_team_is_read_whole_and_in_order() {
    let n = 3 * PARALLEL_FROM;
    let dir = large_team(n);
    let team = Team::load(dir.path()).unwrap();
    let members: Vec<&str> = team.members().map(|a| a.name.as_str()).collect();
    let want: Vec<String> = (0..n).map(|i| format!("m{i:04}")).collect();
    assert_eq!(members, want);
    assert_eq!(team.agent("m0100").unwrap().description, "writes m0100");
}

#[test]
fn a_large_team_reports_its_first_bad_file_in_file_order() {
    let n = 3 * PARALLEL_FROM;
    let dir = large_team(n);
    // Two bad files far apart: the earlier one (in name order) is named,
    // whichever thread read it.
    let late = format!("m{:04}", n - 2);
    fs::write(
        dir.path().join(format!("agents/{late}.md")),
        "no front matter",
    )
    .unwrap();
    fs::remove_file(dir.path().join("souls/m0070.md")).unwrap();
    let msg = rel(dir.path(), &err_text(dir.path()));
    assert!(msg.starts_with("agents/m0070.md"), "{msg}");
}
