//! Handoff settings and context variables as `Team::load` reads them.

use std::fs;

use super::super::{AfterWork, Team};

const AGENTS: &[(&str, &str)] = &[
    ("writer", "master"),
    ("reviewer", "member"),
    ("publisher", "member"),
];

/// A handoff team dir with this team.yaml and, optionally, a soul for the
/// writer.
fn team_dir(yaml: &str, writer_soul: Option<&str>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join("agents")).unwrap();
    fs::create_dir_all(dir.path().join("souls")).unwrap();
    for (name, role) in AGENTS {
        fs::write(
            dir.path().join(format!("agents/{name}.md")),
            format!("---\nname: {name}\nrole: {role}\ndescription: The {name}\n---\n"),
        )
        .unwrap();
        let soul = match (*name, writer_soul) {
            ("writer", Some(s)) => s.to_string(),
            _ => format!("You are the {name}."),
        };
        fs::write(dir.path().join(format!("souls/{name}.md")), soul).unwrap();
    }
    fs::write(dir.path().join("team.yaml"), yaml).unwrap();
    dir
}

fn err(yaml: &str) -> String {
    err_with(yaml, None)
}

fn err_with(yaml: &str, soul: Option<&str>) -> String {
    let dir = team_dir(yaml, soul);
    let e = Team::load(dir.path()).unwrap_err().to_string();
    e.replace(&format!("{}/", dir.path().display()), "")
}

const ITERATIVE: &str = "\
process: handoff
context_variables:
  max_revisions: 3
  audience: beginners
handoffs:
  - from_agent: writer
    to_agent: reviewer
    condition: the draft is complete
  - from_agent: reviewer
    to_agent: writer
    condition: revisions are needed and fewer than {{ max_revisions }} were made
    priority: 1
  - from_agent: reviewer
    to_agent: publisher
    condition: the draft is approved
    priority: 2
  - from_agent: \"*\"
    to_agent: publisher
    priority: -5
after_work_behavior: terminate
max_handoffs: 9
";

#[test]
fn loads_rules_sorted_by_priority_with_defaults() {
    let dir = team_dir(ITERATIVE, Some("You write for {{ audience }}."));
    let team = Team::load(dir.path()).unwrap();
    let h = team.handoff().expect("a handoff team");
    assert_eq!(h.entry, "writer");
    assert_eq!(h.after_work, AfterWork::Terminate);
    assert_eq!((h.max_handoffs, h.max_turns), (9, 40));
    let order: Vec<(&str, &str, i64)> = h
        .rules
        .iter()
        .map(|r| (r.from_agent.as_str(), r.to_agent.as_str(), r.priority))
        .collect();
    assert_eq!(
        order,
        vec![
            ("reviewer", "publisher", 2),
            ("writer", "reviewer", 1),
            ("reviewer", "writer", 1),
            ("*", "publisher", -5),
        ]
    );
    let from_reviewer: Vec<&str> = h
        .rules_from("reviewer")
        .map(|r| r.to_agent.as_str())
        .collect();
    assert_eq!(from_reviewer, vec!["publisher", "writer", "publisher"]);
    // "*" never routes an agent to itself.
    assert_eq!(h.rules_from("publisher").count(), 0);
    assert_eq!(
        team.variables().names(),
        vec!["max_revisions".to_string(), "audience".to_string()]
    );
    assert_eq!(
        team.variables().get_text("max_revisions").as_deref(),
        Some("3")
    );
    // A blackboard team has none.
    assert!(Team::builtin().unwrap().handoff().is_none());
}

#[test]
fn entry_and_after_work_defaults() {
    let dir = team_dir("process: handoff\nentry: Reviewer\n", None);
    let team = Team::load(dir.path()).unwrap();
    let h = team.handoff().unwrap();
    assert_eq!(h.entry, "reviewer");
    assert_eq!(h.after_work, AfterWork::ReturnToUser);
    assert_eq!((h.max_handoffs, h.max_turns), (20, 40));
    assert!(h.rules.is_empty());
    let dir = team_dir("process: handoff\n", None);
    assert_eq!(
        Team::load(dir.path()).unwrap().handoff().unwrap().entry,
        "writer"
    );
}

#[test]
fn mistakes_name_file_and_line() {
    assert_eq!(
        err("process: handoff\nhandoffs:\n  - from_agent: writer\n    to_agent: reviewr\n"),
        "team.yaml:4: handoffs[1].to_agent: unknown agent 'reviewr' (did you mean 'reviewer'?); agents: writer, publisher, reviewer"
    );
    assert_eq!(
        err(
            "process: handoff\nhandoffs:\n  - from_agent: writer\n    to_agent: reviewer\n  - from_agent: editor\n    to_agent: writer\n"
        ),
        "team.yaml:5: handoffs[2].from_agent: unknown agent 'editor'; agents: writer, publisher, reviewer"
    );
    assert_eq!(
        err(
            "process: handoff\nhandoffs:\n  - from_agent: writer\n    to_agent: reviewer\n    priority: high\n"
        ),
        "team.yaml:5: handoffs[1].priority: 'high' is not a whole number (higher numbers are tried first, default 1)"
    );
    assert_eq!(
        err(
            "process: handoff\nhandoffs:\n  - from_agent: writer\n    to_agent: reviewer\n    priority: 1.5\n"
        ),
        "team.yaml:5: handoffs[1].priority: 1.5 is not a whole number (higher numbers are tried first, default 1)"
    );
    assert_eq!(
        err("process: handoff\n\nafter_work_behavior: return_to_sender\n"),
        "team.yaml:3: after_work_behavior: unknown variant 'return_to_sender', expected one of 'return_to_user', 'terminate', 'continue'"
    );
    assert_eq!(
        err(
            "process: handoff\ncontext_variables:\n  max_revisions: 3\nhandoffs:\n  - from_agent: writer\n    to_agent: reviewer\n    condition: \"draft done and words >= {{ min_words }}\"\n"
        ),
        "team.yaml:7: handoffs[1].condition: undeclared variable '{{ min_words }}' (known: max_revisions)"
    );
    assert_eq!(
        err_with(
            "process: handoff\n",
            Some("You write.\n\nAim at {{ audience }}.")
        ),
        "souls/writer.md:3: undeclared variable '{{ audience }}' (the team declares no context_variables)"
    );
    assert_eq!(
        err("process: handoff\nentry: boss\n"),
        "team.yaml:2: entry: unknown agent 'boss'; agents: writer, publisher, reviewer"
    );
    assert_eq!(
        err("process: handoff\nhandoffs:\n  - from_agent: writer\n    to_agent: writer\n"),
        "team.yaml:4: handoffs[1]: a rule from 'writer' to itself (use after_work_behavior: continue for another turn)"
    );
    assert_eq!(
        err("process: handoff\nhandoffs:\n  - to_agent: writer\n"),
        "team.yaml:3: handoffs[1]: missing 'from_agent' (an agent name or \"*\")"
    );
    assert_eq!(
        err("process: handoff\nmax_turns: 0\n"),
        "team.yaml:2: max_turns must be at least 1"
    );
    assert_eq!(
        err("name: x\nhandoffs:\n  - from_agent: writer\n    to_agent: reviewer\n"),
        "team.yaml:2: 'handoffs' is for handoff teams: add 'process: handoff' or remove it"
    );
    let e = err("process: handoff\nhandoffs:\n  - from_agent: writer\n    to_agnet: reviewer\n");
    assert!(e.starts_with("team.yaml:4: "), "{e}");
    assert!(e.contains("unknown field 'to_agnet'"), "{e}");
    let e = err("process: relay\n");
    assert!(e.starts_with("team.yaml:1: "), "{e}");
    assert!(
        e.contains("expected one of 'blackboard', 'handoff', 'principal'"),
        "{e}"
    );
    let e = err("process: handoff\ncontext_variables:\n  topics: [a, b]\n");
    assert!(e.contains("must be text, a number or a boolean"), "{e}");
}

#[test]
fn souls_may_use_conditional_segments() {
    let soul = "You write.\n{% if audience == \"experts\" %}\nSkip the basics.\n{% endif %}\n";
    let dir = team_dir(
        "process: handoff\ncontext_variables:\n  audience: experts\n",
        Some(soul),
    );
    let team = Team::load(dir.path()).unwrap();
    let soul = &team.agent("writer").unwrap().soul;
    assert_eq!(
        super::super::render(soul, team.variables()).unwrap(),
        "You write.\nSkip the basics.\n"
    );
    let e = err_with(
        "process: handoff\ncontext_variables:\n  audience: experts\n",
        Some("You write.\n{% if audience %}\nno end"),
    );
    assert!(e.starts_with("souls/writer.md:"), "{e}");
    assert!(e.contains("template:"), "{e}");
}

/// Issue 15: the parser's errors about rules count them from 1, as ours do.
#[test]
fn parser_errors_number_rules_from_one() {
    assert_eq!(
        err(
            "process: handoff\nhandoffs:\n  - from_agent: writer\n    to_agent: reviewer\n  - from_agent: reviewer\n    to_agnet: writer\n"
        ),
        "team.yaml:6: handoffs[2]: unknown field 'to_agnet' (did you mean 'to_agent'?), expected one of 'from_agent', 'to_agent', 'condition', 'priority'"
    );
    assert_eq!(
        err("process: handoff\nhandoffs:\n  - from_agent: writer\n    to_agent: [reviewer]\n"),
        "team.yaml:4: handoffs[1].to_agent: wrong type: expected a single value, not a list or mapping"
    );
}

/// Issue 15: an error inside a nested value is at the nested key's line,
/// with its path.
#[test]
fn a_parser_error_in_a_nested_value_is_at_the_nested_line() {
    assert_eq!(
        err(
            "name: t\nmodels:\n  fast: sim\n  gpt:\n    base_url: http://127.0.0.1:1/v1\n    stream: sometimes\n"
        ),
        "team.yaml:6: models.gpt.stream: wrong type: 'sometimes' is not true or false"
    );
    assert_eq!(
        err("mcpServers:\n  fs:\n    command: cat\n\n    args: x\n"),
        "team.yaml:5: mcpServers.fs.args: wrong type: expected a list"
    );
    assert_eq!(
        err("name: t\nmodels:\n  gpt:\n    model: a\n    timeout: 30\n    model: b\n"),
        "team.yaml:6: models.gpt: duplicate key 'model' (first at line 4)"
    );
}

/// Issue 15: variable names are identifiers, and one name is declared once.
#[test]
fn variable_names_are_identifiers_declared_once() {
    assert_eq!(
        err("process: handoff\ncontext_variables:\n  audience: all\n  max-words: 300\n"),
        "team.yaml:4: context_variables: bad variable name 'max-words': use letters, digits and '_', starting with a letter or '_' (at most 64), so that a template can name it"
    );
    assert_eq!(
        err("context_variables:\n  audience: all\n  depth: 2\n  audience: experts\n"),
        "team.yaml:4: context_variables: duplicate key 'audience' (first at line 2)"
    );
    // Read from JSON (a saved run), a second declaration is an error too.
    let twice: Result<super::super::Variables, _> =
        serde_json::from_str(r#"{"audience": "all", "audience": "experts"}"#);
    assert!(
        twice
            .unwrap_err()
            .to_string()
            .contains("context variable 'audience' is declared twice")
    );
    // Built in code, the names are checked too.
    let config = crate::team::TeamConfig {
        context_variables: super::super::Variables::declare([("my var", serde_json::json!(1))]),
        ..Default::default()
    };
    let agents = vec![
        crate::team::AgentSpec::master("lead", "You lead."),
        crate::team::AgentSpec::member("w", "Writes", "You write."),
    ];
    let e = Team::new("code", config, agents).unwrap_err().to_string();
    assert!(
        e.starts_with("team 'code': context_variables: bad variable name 'my var'"),
        "{e}"
    );
    let dir = team_dir("context_variables:\n  _depth: 2\n  audience2: x\n", None);
    assert_eq!(
        Team::load(dir.path()).unwrap().variables().names(),
        vec!["_depth".to_string(), "audience2".to_string()]
    );
}
