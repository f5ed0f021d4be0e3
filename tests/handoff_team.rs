//! `boardroom check` on handoff teams (issue 11): what it lists, and the
//! `FILE:LINE: message` + exit 2 for each kind of mistake in team.yaml or a
//! soul. The `--var` parser the CLI uses is checked here too.

use std::fs;
use std::path::Path;

mod support;

use support::cli::{boardroom, repo, text};

/// A copy of examples/teams/iterative in a temp dir, with team.yaml and,
/// optionally, one soul replaced. With a team.yaml of its own, the souls
/// are plain (the shipped ones use the shipped variables).
fn iterative_with(team_yaml: Option<&str>, soul: Option<(&str, &str)>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let src = repo().join("examples/teams/iterative");
    for sub in ["agents", "souls"] {
        fs::create_dir_all(dir.path().join(sub)).unwrap();
        for e in fs::read_dir(src.join(sub)).unwrap() {
            let e = e.unwrap();
            fs::copy(e.path(), dir.path().join(sub).join(e.file_name())).unwrap();
        }
    }
    let yaml = match team_yaml {
        Some(y) => {
            for name in ["writer", "reviewer", "publisher"] {
                let soul = format!("You are the {name}.\n");
                fs::write(dir.path().join(format!("souls/{name}.md")), soul).unwrap();
            }
            y.to_string()
        }
        None => fs::read_to_string(src.join("team.yaml")).unwrap(),
    };
    fs::write(dir.path().join("team.yaml"), yaml).unwrap();
    if let Some((name, text)) = soul {
        fs::write(dir.path().join(format!("souls/{name}.md")), text).unwrap();
    }
    dir
}

/// `check --team DIR` in the temp dir: (exit code, stdout, stderr with the
/// temp path removed).
fn check(dir: &Path) -> (Option<i32>, String, String) {
    let out = boardroom(&["check", "--team", "."], dir);
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

#[test]
fn check_lists_agents_entry_rules_variables_after_work_and_caps() {
    let out = boardroom(&["check", "--team", "examples/teams/iterative"], repo());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "team 'iterative' (examples/teams/iterative): 3 agents, handoff process\n\
         \x20 master writer         Writes the draft and revises it from the reviewer's feedback\n\
         \x20 member publisher      Formats the approved text for publication and gives the final version\n\
         \x20 member reviewer       Reviews each draft and either approves it or asks for specific changes\n\
         \x20 entry  writer\n\
         \x20 rule   reviewer -> publisher [priority 2] when: the reviewer approved the draft\n\
         \x20 rule   writer -> reviewer [priority 1] when: the writer has produced a draft or a new version of the draft\n\
         \x20 rule   reviewer -> writer [priority 1] when: the reviewer asked for changes and the writer has revised fewer than {{ max_revisions }} times\n\
         \x20 rule   reviewer -> publisher [priority 0] when: the writer has already revised {{ max_revisions }} times\n\
         \x20 var    max_revisions = 2\n\
         \x20 var    audience = curious readers with no special background\n\
         \x20 after  terminate (when no handoff, rule or router picks the next agent)\n\
         \x20 caps   max_handoffs 10, max_turns 12\n\
         ok\n"
    );
}

#[test]
fn defaults_are_listed_for_a_minimal_handoff_team() {
    let dir = iterative_with(Some("name: mini\nprocess: handoff\n"), None);
    let (code, stdout, stderr) = check(dir.path());
    assert_eq!(code, Some(0), "{stderr}");
    let tail: Vec<&str> = stdout.lines().skip(4).collect();
    assert_eq!(
        tail,
        vec![
            "  entry  writer",
            "  rules  none (a turn without a handoff goes to the router)",
            "  after  return_to_user (when no handoff, rule or router picks the next agent)",
            "  caps   max_handoffs 20, max_turns 40",
            "ok",
        ]
    );
    // A blackboard team's listing is unchanged: no handoff lines.
    let out = boardroom(&["check"], repo());
    let stdout = text(&out.stdout);
    assert!(
        stdout.starts_with("team 'default' (.): 6 agents\n"),
        "{stdout}"
    );
    assert!(!stdout.contains("entry"), "{stdout}");
}

/// A soul to put in place of the shipped one: (agent, text).
type Soul<'a> = Option<(&'a str, &'a str)>;

/// `check` of the iterative team with `yaml` (and `soul`) exits 2 with
/// exactly `want` and lists nothing.
fn refused(yaml: &str, soul: Soul<'_>, want: &str) {
    let dir = iterative_with(Some(yaml), soul);
    let (code, stdout, stderr) = check(dir.path());
    assert_eq!(code, Some(2), "{yaml}\n{stdout}{stderr}");
    assert_eq!(stderr.trim_end(), format!("error: {want}"), "{yaml}");
    assert_eq!(stdout, "", "nothing listed for a broken team");
}

/// Each mistake: (team.yaml, soul override, the exact message).
#[test]
fn each_mistake_is_file_line_message_and_exit_2() {
    let cases: &[(&str, Soul<'_>, &str)] = &[
        (
            "process: handoff\nhandoffs:\n  - from_agent: writer\n    to_agent: editor\n",
            None,
            "./team.yaml:4: handoffs[1].to_agent: unknown agent 'editor'; agents: writer, publisher, reviewer",
        ),
        (
            "process: handoff\nhandoffs:\n  - from_agent: writer\n    to_agent: reviewer\n    priority: first\n",
            None,
            "./team.yaml:5: handoffs[1].priority: 'first' is not a whole number (higher numbers are tried first, default 1)",
        ),
        (
            "process: handoff\nafter_work_behavior: ask_user\n",
            None,
            "./team.yaml:2: after_work_behavior: unknown variant 'ask_user', expected one of 'return_to_user', 'terminate', 'continue'",
        ),
        (
            "process: handoff\ncontext_variables:\n  max_revisions: 2\nhandoffs:\n  - from_agent: reviewer\n    to_agent: writer\n    condition: fewer than {{ max_revision }} revisions\n",
            None,
            "./team.yaml:7: handoffs[1].condition: undeclared variable '{{ max_revision }}' (known: max_revisions)",
        ),
        (
            "process: handoff\ncontext_variables:\n  max_revisions: 2\n",
            Some(("reviewer", "# Reviewer\n\nWrite for {{ audience }}.\n")),
            "./souls/reviewer.md:3: undeclared variable '{{ audience }}' (known: max_revisions)",
        ),
    ];
    for (yaml, soul, want) in cases {
        refused(yaml, *soul, want);
    }
}

#[test]
fn the_shipped_iterative_soul_uses_a_conditional_segment() {
    // The writer's soul has an {% if max_revisions == 0 %} segment; a typo in
    // it is caught at load time with the soul's line.
    let soul = fs::read_to_string(repo().join("examples/teams/iterative/souls/writer.md")).unwrap();
    assert!(soul.contains("{% if max_revisions == 0 %}"));
    let broken = soul.replace("{% endif %}", "");
    let dir = iterative_with(None, Some(("writer", &broken)));
    let (code, _, stderr) = check(dir.path());
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.starts_with("error: ./souls/writer.md:"), "{stderr}");
    assert!(stderr.contains("template:"), "{stderr}");
}

#[test]
fn var_flags_are_checked_against_the_declared_variables() {
    let team = boardroom::Team::load(repo().join("examples/teams/iterative")).unwrap();
    let vars =
        boardroom::template::apply_var_flags(team.variables(), &["max_revisions=0".to_string()])
            .unwrap();
    assert_eq!(vars.get("max_revisions"), Some(&serde_json::json!(0)));
    let soul = &team.agent("writer").unwrap().soul;
    let rendered = boardroom::template::render(soul, &vars).unwrap();
    assert!(
        rendered.contains("There is no revision round in this run"),
        "{rendered}"
    );
    assert!(!rendered.contains("send it back up to"), "{rendered}");
    let rendered = boardroom::template::render(soul, team.variables()).unwrap();
    assert!(
        rendered.contains("The reviewer may send it back up to 2 times."),
        "{rendered}"
    );
    assert_eq!(
        boardroom::template::apply_var_flags(team.variables(), &["max_revisons=1".to_string()])
            .unwrap_err(),
        "--var 'max_revisons=1': unknown context variable 'max_revisons' (known: max_revisions, audience)"
    );
    assert_eq!(
        boardroom::template::apply_var_flags(team.variables(), &["max_revisions".to_string()])
            .unwrap_err(),
        "--var 'max_revisions': expected name=value"
    );
}

/// `check` renders the templates as `run` would, with the declared
/// defaults: a soul or condition that parses but fails when rendered (an
/// unknown filter, a division by zero) is FILE:LINE and exit 2, not a run
/// that fails later. A variable declared without a value renders as a
/// placeholder, so a filter on it is no error.
#[test]
fn check_renders_templates_and_reports_runtime_errors_at_file_line() {
    let cases: &[(&str, Soul<'_>, &str)] = &[
        (
            "process: handoff\ncontext_variables:\n  audience: experts\n",
            Some((
                "reviewer",
                "# Reviewer\n\nWrite for {{ audience | shout }}.\n",
            )),
            "./souls/reviewer.md:3: template: filter shout is unknown",
        ),
        (
            // A comment that quotes the condition is not its line.
            "# was: fewer than {{ 10 // (max_revisions - 2) }} revisions\nprocess: handoff\ncontext_variables:\n  max_revisions: 2\nhandoffs:\n  - from_agent: reviewer\n    to_agent: writer\n    condition: fewer than {{ 10 // (max_revisions - 2) }} revisions\n",
            None,
            "./team.yaml:8: template: unable to calculate 10 // 0 (handoff rule reviewer → writer)",
        ),
    ];
    for (yaml, soul, want) in cases {
        refused(yaml, *soul, want);
    }
    // A soul saved with a byte order mark keeps its file and line.
    refused(
        "process: handoff\ncontext_variables:\n  audience: experts\n",
        Some((
            "reviewer",
            "\u{feff}# Reviewer\n\nWrite for {{ audience | shout }}.\n",
        )),
        "./souls/reviewer.md:3: template: filter shout is unknown",
    );
    // Declared without a value: a placeholder stands in for it.
    let dir = iterative_with(
        Some("process: handoff\ncontext_variables:\n  topic:\n"),
        Some((
            "writer",
            "Write about {{ topic | upper }} in {{ topic | length }} letters.\n",
        )),
    );
    let (code, stdout, stderr) = check(dir.path());
    assert_eq!(code, Some(0), "{stdout}{stderr}");
}

/// A failing condition is named at the line of its own `condition:`, as
/// loading read it: not at an earlier rule with the same text (the second
/// rule is tried first, by priority), not at line 1 for a folded one.
#[test]
fn check_names_the_line_of_the_failing_condition_itself() {
    let head = "process: handoff\ncontext_variables:\n  max_revisions: 2\nhandoffs:\n";
    let same = "  - from_agent: reviewer\n    to_agent: writer\n    condition: fewer than {{ 10 // (max_revisions - 2) }} revisions\n  - from_agent: writer\n    to_agent: reviewer\n    priority: 5\n    condition: fewer than {{ 10 // (max_revisions - 2) }} revisions\n";
    refused(
        &format!("{head}{same}"),
        None,
        "./team.yaml:11: template: unable to calculate 10 // 0 (handoff rule writer → reviewer)",
    );
    let folded = "  - from_agent: reviewer\n    to_agent: writer\n    condition: >\n      fewer than\n      {{ 10 // (max_revisions - 2) }} revisions\n";
    refused(
        &format!("{head}{folded}"),
        None,
        "./team.yaml:7: template: unable to calculate 10 // 0 (handoff rule reviewer → writer)",
    );
}
