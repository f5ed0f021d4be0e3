use super::*;

const ROSTER: &[&str] = &["researcher", "writer", "reviewer", "publisher"];

fn line(text: &str) -> Option<(String, String)> {
    parse_handoff_line(text).map(|d| (d.to, d.reason))
}

fn pair(to: &str, reason: &str) -> Option<(String, String)> {
    Some((to.to_string(), reason.to_string()))
}

#[test]
fn handoff_lines_as_models_write_them() {
    assert_eq!(
        line("HANDOFF:writer:research is complete"),
        pair("writer", "research is complete")
    );
    assert_eq!(
        line("Here are the facts.\n\n  - **HANDOFF:** writer: facts are in, please draft"),
        pair("writer", "facts are in, please draft")
    );
    assert_eq!(
        line("handoff: `Reviewer` - draft ready for review"),
        pair("Reviewer", "draft ready for review")
    );
    assert_eq!(
        line("**Handoff**: to publisher — approved"),
        pair("publisher", "approved")
    );
    assert_eq!(line("HANDOFF -> writer"), pair("writer", ""));
    assert_eq!(
        line("Hand off: writer, because the outline is done"),
        pair("writer", "the outline is done")
    );
    assert_eq!(line("1. HANDOFF: [writer]: go"), pair("writer", "go"));
    assert_eq!(
        line("> HANDOFF:writer:\"quoted reason\""),
        pair("writer", "quoted reason")
    );
    // The last directive wins: the reply usually ends with it, and an
    // earlier one may be a plan the agent changed.
    assert_eq!(
        line("HANDOFF: writer: at first I meant this\nbut then\nHANDOFF: reviewer: check it"),
        pair("reviewer", "check it")
    );
    assert_eq!(line("I could write HANDOFF:writer:x here."), None);
    // Prose that mentions a handoff is not one.
    assert_eq!(line("The handoff to the writer went well."), None);
    assert_eq!(line("Handoff the draft when you are ready"), None);
    assert_eq!(line("HANDOFF:"), None);
    assert_eq!(line("HANDOFF: **"), None);
    assert_eq!(line(""), None);
}

#[test]
fn stripping_keeps_the_work() {
    assert_eq!(
        strip_handoff_lines("Facts:\n1. a\n2. b\n\nHANDOFF: writer: draft it\n"),
        "Facts:\n1. a\n2. b"
    );
}

#[test]
fn destinations_are_checked_with_corrective_text() {
    assert_eq!(
        resolve_destination("**Writer**", "researcher", ROSTER).unwrap(),
        "writer"
    );
    let err = resolve_destination("writter", "researcher", ROSTER).unwrap_err();
    assert_eq!(
        err,
        "Your handoff names 'writter', who is not on the team (did you mean 'writer'?): hand \
         off to one of: writer, reviewer, publisher, or hand off to nobody if the work is \
         finished. Reply again with your work and a valid handoff."
    );
    let err = resolve_destination("Researcher", "researcher", ROSTER).unwrap_err();
    assert!(
        err.starts_with("Your handoff names yourself ('researcher'): hand off to one of: writer, reviewer, publisher"),
        "{err}"
    );
    let d = HandoffDirective {
        to: "editor".into(),
        reason: String::new(),
    };
    let err = check_destination(&d, "writer", ROSTER).unwrap_err();
    assert!(err.contains("'editor', who is not on the team:"), "{err}");
    assert!(!err.contains("did you mean"), "{err}");
}

#[test]
fn tool_specs_and_their_arguments() {
    let spec = handoff_tool_spec(&["writer", "reviewer"]);
    assert_eq!(spec.name, "handoff");
    assert_eq!(
        spec.parameters["properties"]["destination_agent"]["enum"],
        json!(["writer", "reviewer"])
    );
    assert_eq!(
        spec.parameters["required"],
        json!(["destination_agent", "reason"])
    );
    let d =
        parse_handoff_args(r#"{"destination_agent": " writer ", "reason": "facts done"}"#).unwrap();
    assert_eq!((d.to.as_str(), d.reason.as_str()), ("writer", "facts done"));
    let d = parse_handoff_args(r#"{"agent": "writer"}"#).unwrap();
    assert_eq!((d.to.as_str(), d.reason.as_str()), ("writer", ""));
    assert_eq!(
        parse_handoff_args(r#"{"reason": "x"}"#).unwrap_err(),
        "handoff: 'destination_agent' is missing: name the agent that should act next"
    );
    assert!(
        parse_handoff_args("{destination_agent: writer")
            .unwrap_err()
            .starts_with("handoff: the arguments are not valid JSON")
    );
    assert!(parse_handoff_args("").is_err());

    let vars = Variables::declare([("max_revisions", json!(3))]);
    let spec = set_variable_tool_spec(&vars);
    assert_eq!(spec.name, "set_variable");
    assert_eq!(
        spec.parameters["properties"]["name"]["enum"],
        json!(["max_revisions"])
    );
    assert_eq!(
        parse_set_variable_args(r#"{"name": "max_revisions", "value": 5}"#).unwrap(),
        ("max_revisions".to_string(), "5".to_string())
    );
    assert_eq!(
        parse_set_variable_args(r#"{"name": "tone", "value": "dry"}"#).unwrap(),
        ("tone".to_string(), "dry".to_string())
    );
    assert_eq!(
        parse_set_variable_args(r#"{"name": "tone"}"#).unwrap_err(),
        "set_variable: 'value' is missing (text, a number or a boolean)"
    );
    assert_eq!(
        parse_set_variable_args("[1]").unwrap_err(),
        "set_variable: the arguments must be a JSON object"
    );
}

fn history() -> Vec<HistoryStep> {
    vec![
        HistoryStep {
            agent: "researcher".into(),
            text:
                "Facts: water at 80°C <not boiling> & 2 minutes.\n\nHANDOFF: writer: facts are in"
                    .into(),
            artifacts: vec!["notes.md".into()],
            handoff_to: Some("writer".into()),
            reason: Some("facts are in".into()),
        },
        HistoryStep {
            agent: "user".into(),
            text: "Make it shorter.".into(),
            ..HistoryStep::default()
        },
    ]
}

#[test]
fn the_turn_prompt_carries_everything_escaped() {
    let vars = Variables::declare([("audience", json!("<beginners>"))]);
    let roster = [("researcher", "Finds facts"), ("writer", "Writes drafts")];
    let rules = [("reviewer", Some("the draft is complete"))];
    let h = history();
    let input = TurnInput {
        agent: "writer",
        soul: "You write clearly.",
        task: "A guide to <tea>",
        variables: &vars,
        roster: &roster,
        rules: &rules,
        history: &h,
        tools: false,
    };
    let msgs = turn_prompt(&input);
    assert_eq!(msgs.len(), 2);
    assert!(
        msgs[0]
            .content
            .starts_with("You write clearly.\n\n## How this team works")
    );
    assert!(msgs[0].content.contains("`HANDOFF:<agent>:<reason>`"));
    let u = &msgs[1].content;
    assert!(
        u.starts_with("<task>\nA guide to &lt;tea&gt;\n</task>\n"),
        "{u}"
    );
    assert!(u.contains("<context_variables>\n- audience: &lt;beginners&gt;\n</context_variables>"));
    assert!(u.contains("<roster>\n- researcher: Finds facts\n- writer: Writes drafts\n</roster>"));
    assert!(u.contains("<handoff_rules>\n- to reviewer: the draft is complete\n</handoff_rules>"));
    assert!(u.contains(
        "<step n=\"1\" agent=\"researcher\" handoff_to=\"writer\">\nFacts: water at 80°C &lt;not boiling&gt; &amp; 2 minutes.\n<artifacts>notes.md</artifacts>\n<reason>facts are in</reason>\n</step>"
    ), "{u}");
    assert!(u.contains("<step n=\"2\" agent=\"user\">\nMake it shorter.\n</step>"));
    assert!(
        u.ends_with("follow them unless the work needs otherwise."),
        "{u}"
    );
    let with_tools = turn_prompt(&TurnInput {
        tools: true,
        history: &[],
        rules: &[],
        ..input
    });
    assert!(with_tools[0].content.contains("call the `handoff` tool"));
    assert!(with_tools[1].content.contains("<history>\n</history>"));
    assert!(with_tools[1].content.contains("You act first."));
    assert!(!with_tools[1].content.contains("<handoff_rules>"));
}

#[test]
fn rule_routing_prompt_and_choices() {
    let rules = [
        RoutingRule {
            to_agent: "publisher",
            condition: Some("the draft is approved"),
        },
        RoutingRule {
            to_agent: "writer",
            condition: Some("revisions are needed and fewer than 3 were made"),
        },
    ];
    let (msgs, schema) = rule_routing_prompt("reviewer", "tea", &rules, &history());
    assert_eq!(schema.name, RULE_CHOICE_SCHEMA);
    assert_eq!(schema.schema["properties"]["rule"]["maximum"], json!(2));
    assert!(msgs[1].content.contains(
        "<routing_rules from=\"reviewer\">\n1. to publisher when: the draft is approved\n2. to writer when: revisions are needed and fewer than 3 were made\n</routing_rules>"
    ));
    for (answer, want) in [
        ("RULE: 2", Some(1)),
        ("rule 1", Some(0)),
        ("**Rule:** `2`", Some(1)),
        ("The draft needs work.\nRULE: #2", Some(1)),
        ("2", Some(1)),
        ("**1**", Some(0)),
        ("1.", Some(0)),
        ("NONE", None),
        ("None of them hold.", None),
        ("RULE: 3", None),
        ("RULE: 0", None),
        ("{\"rule\": 1, \"reason\": \"approved\"}", Some(0)),
        ("```json\n{\"rule\": 2, \"reason\": \"x\"}\n```", Some(1)),
        ("{\"rule\": 0, \"reason\": \"none holds\"}", None),
        ("{\"rule\": \"2\"}", Some(1)),
        ("I am not sure.", None),
        ("", None),
    ] {
        assert_eq!(parse_rule_choice(answer, 2), want, "{answer:?}");
    }
}

#[test]
fn roster_routing_prompt_and_choices() {
    let candidates = [("writer", "Writes drafts"), ("reviewer", "Checks drafts")];
    let (msgs, schema) = roster_routing_prompt("researcher", "tea", &candidates, &history());
    assert_eq!(schema.name, AGENT_CHOICE_SCHEMA);
    assert_eq!(
        schema.schema["properties"]["agent"]["enum"],
        json!(["writer", "reviewer", "none"])
    );
    assert!(msgs[1].content.contains(
        "<candidates>\n- writer: Writes drafts\n- reviewer: Checks drafts\n</candidates>"
    ));
    let names = ["writer", "reviewer"];
    for (answer, want) in [
        ("NEXT: writer", Some("writer")),
        ("next: **Reviewer**", Some("reviewer")),
        ("Next agent - writer.", Some("writer")),
        ("Writer", Some("writer")),
        ("I pick reviewer.", Some("reviewer")),
        ("NONE", None),
        ("none: the work is done", None),
        ("NEXT: editor", None),
        (
            "{\"agent\": \"writer\", \"reason\": \"draft\"}",
            Some("writer"),
        ),
        ("{\"agent\": \"none\", \"reason\": \"done\"}", None),
        (
            "The work looks finished to me, nothing more to do here.",
            None,
        ),
    ] {
        assert_eq!(
            parse_agent_choice(answer, &names).as_deref(),
            want,
            "{answer:?}"
        );
    }
}

/// The example the public doc carried before the parser became internal.
#[test]
fn a_bold_bulleted_handoff_line_is_read() {
    let d = parse_handoff_line("Draft done.\n- **Handoff:** `reviewer`: please check").unwrap();
    assert_eq!(
        (d.to.as_str(), d.reason.as_str()),
        ("reviewer", "please check")
    );
}
