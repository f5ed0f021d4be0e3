use super::*;
use crate::util::vars::probes;

fn vars() -> Variables {
    Variables::declare([
        ("max_revisions", serde_json::json!(3)),
        ("audience", serde_json::json!("beginners")),
        ("strict", serde_json::json!(false)),
    ])
}

#[test]
fn renders_values_and_conditional_segments() {
    let v = vars();
    assert_eq!(
        render("Revise at most {{ max_revisions }} times.", &v).unwrap(),
        "Revise at most 3 times."
    );
    let soul = "You write.\n{% if audience == \"experts\" %}Skip basics.\n{% else %}Explain terms.\n{% endif %}Be brief.";
    assert_eq!(
        render(soul, &v).unwrap(),
        "You write.\nExplain terms.\nBe brief."
    );
    let mut v2 = v.clone();
    v2.set("audience", "experts").unwrap();
    assert_eq!(
        render(soul, &v2).unwrap(),
        "You write.\nSkip basics.\nBe brief."
    );
    assert_eq!(
        render("{% if max_revisions > 2 %}many{% endif %}", &v).unwrap(),
        "many"
    );
    // No template syntax: returned as is, braces and all.
    assert_eq!(render("a {b} c", &v).unwrap(), "a {b} c");
    // Prompts are not HTML: nothing is escaped.
    let mut v3 = v.clone();
    v3.set("audience", "<b>&</b>").unwrap();
    assert_eq!(render("{{ audience }}", &v3).unwrap(), "<b>&</b>");
}

#[test]
fn strict_undefined_names_the_variable_and_its_line() {
    let err = render("line one\nthen {{ tone }} here", &vars()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "line 2: undeclared variable '{{ tone }}' (known: max_revisions, audience, strict)"
    );
    let err = check_template("a\nb\n{% if depth > 2 %}x{% endif %}", &[]).unwrap_err();
    assert_eq!(err.line(), Some(3));
    assert_eq!(
        err.message(),
        "undeclared variable '{{ depth }}' (the team declares no context_variables)"
    );
    // A loop variable is declared by the template itself.
    check_template(
        "{% for i in range(max_revisions) %}{{ i }}{% endfor %}",
        &vars().names(),
    )
    .unwrap();
}

#[test]
fn syntax_errors_have_lines() {
    let err = check_template("ok\n{% if audience %}\nno end", &vars().names()).unwrap_err();
    assert!(matches!(err, TemplateError::Syntax { .. }), "{err:?}");
    assert!(err.line().is_some());
    assert!(err.to_string().contains("template:"), "{err}");
}

#[test]
fn set_keeps_kinds_and_rejects_unknown_names() {
    let mut v = vars();
    v.set("max_revisions", " 5 ").unwrap();
    assert_eq!(v.get("max_revisions"), Some(&serde_json::json!(5)));
    v.set("max_revisions", "a few").unwrap();
    assert_eq!(v.get("max_revisions"), Some(&serde_json::json!("a few")));
    v.set("strict", "TRUE").unwrap();
    assert_eq!(v.get("strict"), Some(&serde_json::json!(true)));
    let err = v.set("audiance", "x").unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown context variable 'audiance' (known: max_revisions, audience, strict)"
    );
}

#[test]
fn var_flags() {
    assert_eq!(
        parse_var_flag("q=a=b").unwrap(),
        ("q".to_string(), "a=b".to_string())
    );
    assert_eq!(
        parse_var_flag("q=").unwrap(),
        ("q".to_string(), String::new())
    );
    assert_eq!(
        parse_var_flag("novalue").unwrap_err().to_string(),
        "--var 'novalue': expected name=value"
    );
    assert!(parse_var_flag("=x").is_err());
    let v = apply_var_flags(&vars(), &["max_revisions=1".into()]).unwrap();
    assert_eq!(v.get_text("max_revisions").as_deref(), Some("1"));
    assert_eq!(
        apply_var_flags(&vars(), &["tone=dry".into()]).unwrap_err(),
        "--var 'tone=dry': unknown context variable 'tone' (known: max_revisions, audience, strict)"
    );
}

#[test]
fn saved_in_declaration_order() {
    let v = vars();
    let json = serde_json::to_string(&v).unwrap();
    assert_eq!(
        json,
        r#"{"max_revisions":3,"audience":"beginners","strict":false}"#
    );
    let back: Variables = serde_json::from_str(&json).unwrap();
    assert_eq!(back, v);
    assert!(serde_json::from_str::<Variables>(r#"{"a":[1]}"#).is_err());
}

#[test]
fn a_render_that_would_run_for_hours_stops_with_an_error() {
    let task = "{% for a in range(100000) %}{% for b in range(100000) %}{{ audience }}{% endfor %}{% endfor %}";
    let err = render(task, &vars()).unwrap_err();
    assert!(err.to_string().contains("fuel"), "{err}");
    // An ordinary loop over a few hundred items still renders.
    let fine = render("{% for i in range(300) %}{{ i }} {% endfor %}", &vars()).unwrap();
    assert!(fine.starts_with("0 1 2"), "{fine}");
}

/// Issue 28 (2): what a bounded template may still do, and what not.
#[test]
fn bounded_templates_keep_ordinary_forms() {
    let v = vars();
    for (t, want) in [
        ("{{ max_revisions * 2 }}", "6"),
        (
            "{% for i in range(3) %}{{ loop.index * i }}{% endfor %}",
            "026",
        ),
        (
            "{%- if max_revisions is divisibleby(3) -%} yes {%- endif %}",
            "yes",
        ),
        (
            "{{ audience | upper }} {{ strict | default('none') }}",
            "BEGINNERS False",
        ),
        ("{% raw %}{{ 'x' * 9 }}{% endraw %}", "{{ 'x' * 9 }}"),
        ("{# {{ 'x' * 9 }} #}ok", "ok"),
    ] {
        assert_eq!(render(t, &v).unwrap(), want, "{t}");
    }
    for t in [
        "{{ 'x' * 100000000 }}",
        "{{ audience * 3 }}",
        "{% for c in audience %}{{ c * 3 }}{% endfor %}",
        "{{ (max_revisions ~ 'x') * 3 }}",
        "{{ audience | center(1000000) }}",
        "{% set s = 'x' %}",
        "{{ namespace(s=1) }}",
    ] {
        let err = render(t, &v).unwrap_err();
        assert!(
            matches!(err, TemplateError::Unbounded { line: 1, .. }),
            "{t}: {err}"
        );
    }
}

/// Issue 28 (22): checking a team costs one name look-up per variable
/// (and a few per template), not one per pair: counted, not timed.
#[test]
fn checking_many_variables_costs_one_look_up_each() {
    let n = 20_000;
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("agents")).unwrap();
    std::fs::create_dir(dir.path().join("souls")).unwrap();
    for (name, role) in [("lead", "master"), ("scribe", "member")] {
        std::fs::write(
            dir.path().join(format!("agents/{name}.md")),
            format!("---\nname: {name}\nrole: {role}\ndescription: d\n---\n"),
        )
        .unwrap();
        std::fs::write(
            dir.path().join(format!("souls/{name}.md")),
            format!("For {{{{ v{} }}}}.\n", n - 1),
        )
        .unwrap();
    }
    let mut yaml = String::from("name: wide\ncontext_variables:\n");
    for i in 0..n {
        yaml.push_str(&format!("  v{i}: {i}\n"));
    }
    std::fs::write(dir.path().join("team.yaml"), yaml).unwrap();
    probes::take();
    let team = crate::team::Team::load(dir.path()).unwrap();
    team.check_templates().unwrap();
    // What `check` prints: each name with its value.
    let vars = team.variables();
    let listed = vars
        .names()
        .iter()
        .filter(|name| vars.get_text(name).is_some())
        .count();
    assert_eq!(listed, n);
    let mut changed = vars.clone();
    changed.set(&format!("v{}", n - 1), "7").unwrap();
    let probes = probes::take();
    assert!(probes <= 2 * n, "{probes} look-ups for {n} variables");
}
