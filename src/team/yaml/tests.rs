use super::*;

fn outline(y: &str, first: usize) -> Outline {
    Outline::parse(Path::new("t.yaml"), y, first).unwrap()
}

#[test]
fn list_items_and_their_key_lines() {
    let y = "name: t\nhandoffs:\n  # rules\n  - from_agent: a\n    to_agent: b\n\n    priority: 2\n  - {from_agent: b, to_agent: a}\n  -\n    to_agent: c\nmax_turns: 3\n";
    let o = outline(y, 1);
    let item = |i| [Step::Key("handoffs"), Step::Item(i)];
    assert_eq!(o.line(&item(0)), Some(4));
    assert_eq!(o.line_in(&item(0), "to_agent"), Some(5));
    assert_eq!(o.line_in(&item(0), "priority"), Some(7));
    assert_eq!(o.line(&item(1)), Some(8));
    assert_eq!(o.line_in(&item(2), "to_agent"), Some(10));
    // A key the item lacks: the item's own line.
    assert_eq!(o.line_in(&item(2), "priority"), Some(10));
    assert_eq!(o.line(&item(3)), None);
    // A list written at column 0 under its key.
    let o = outline("handoffs:\n- from_agent: a\n  to_agent: b\nentry: a\n", 1);
    assert_eq!(
        o.line_in(&[Step::Key("handoffs"), Step::Item(0)], "to_agent"),
        Some(3)
    );
    assert_eq!(o.line(&[Step::Key("missing")]), None);
}

#[test]
fn keys_and_lines() {
    let y = "name: a\nrole: member\ntools:\n  - x\n# c\ndescription: d\n";
    assert_eq!(
        outline(y, 2).top_level_keys(),
        vec![("name", 2), ("role", 3), ("tools", 4), ("description", 7)]
    );
    let y =
        "name: x\nmodels:\n  fast: sim\n  # c\n  'gpt':\n    base_url: ftp://x\nmax_rounds: 2\n";
    let o = outline(y, 1);
    assert_eq!(o.line(&[Step::Key("models"), Step::Key("fast")]), Some(3));
    assert_eq!(o.line(&[Step::Key("models"), Step::Key("gpt")]), Some(5));
    assert_eq!(o.line(&[Step::Key("models"), Step::Key("base_url")]), None);
}

#[test]
fn the_line_of_a_list_item() {
    let o = outline(
        "name: w\nrole: member\ntools:\n  - workspace_read\n  # c\n  - \"plan_reed\"\n",
        2,
    );
    let tools = [Step::Key("tools")];
    assert_eq!(o.item_line(&tools, "plan_reed"), Some(7));
    assert_eq!(o.item_line(&tools, "workspace_read"), Some(5));
    // Not in the list: the key's line.
    assert_eq!(o.item_line(&tools, "other"), Some(4));
    let o = outline("name: w\ntools: [a,\n  b]\n", 2);
    assert_eq!(o.item_line(&tools, "a"), Some(3));
    assert_eq!(o.item_line(&tools, "b"), Some(4));
    assert_eq!(o.item_line(&[Step::Key("missing")], "a"), None);
}

#[test]
fn duplicates_name_both_lines_at_any_depth() {
    let e = Outline::parse(Path::new("t.yaml"), "name: a\nrole: b\nname: c\n", 2)
        .unwrap_err()
        .to_string();
    assert_eq!(e, "t.yaml:4: duplicate key 'name' (first at line 2)");
    let y = "models:\n  gpt:\n    model: a\n    timeout: 3\n    model: b\n";
    let e = Outline::parse(Path::new("t.yaml"), y, 1)
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "t.yaml:5: models.gpt: duplicate key 'model' (first at line 3)"
    );
}

#[test]
fn a_wide_mapping_costs_one_lookup_per_key() {
    // 50,000 keys under one mapping, the last a duplicate of the first:
    // found, at its line, with one look-up per key (a search of the
    // keys before each one would make 1.25e9 comparisons).
    let n = 50_000;
    let mut y = String::from("context_variables:\n");
    for i in 0..n {
        y.push_str(&format!("  v{i}: {i}\n"));
    }
    y.push_str("  v0: again\n");
    probes::take();
    let e = Outline::parse(Path::new("t.yaml"), &y, 1)
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        format!(
            "t.yaml:{}: context_variables: duplicate key 'v0' (first at line 2)",
            n + 2
        )
    );
    let probes = probes::take();
    assert!(probes <= 2 * (n + 2), "{probes} look-ups for {n} keys");
    // And a line is found by the index too.
    y.truncate(y.len() - "  v0: again\n".len());
    let o = Outline::parse(Path::new("t.yaml"), &y, 1).unwrap();
    let last = format!("v{}", n - 1);
    probes::take();
    assert_eq!(
        o.line(&[Step::Key("context_variables"), Step::Key(&last)]),
        Some(n + 1)
    );
    assert_eq!(probes::take(), 2);
}

#[test]
fn a_tab_is_reported_at_its_own_line() {
    let e = Outline::parse(
        Path::new("t.yaml"),
        "name: d\nmax_rounds: 3\n\tdescription: x\n",
        1,
    )
    .unwrap_err()
    .to_string();
    assert!(e.starts_with("t.yaml:3: "), "{e}");
    // In front matter that starts at line 2 of its file.
    let e = Outline::parse(Path::new("a.md"), "name: d\nrole: x\n\tmodel: y\n", 2)
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("a.md:4: "), "{e}");
}

#[test]
fn parser_errors_in_a_team_authors_words() {
    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct T {
        temperature: Option<f64>,
    }
    let read = |y: &str| {
        read_checked::<T>(Path::new("dir/team.yaml"), y, 1, &["temperature"])
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        read("temperature: hot\n"),
        "dir/team.yaml:1: temperature: wrong type: 'hot' is not a number"
    );
    assert_eq!(
        read("temperature: 1\n---\ntemperature: 2\n"),
        "dir/team.yaml:2: team.yaml holds more than one YAML document (a second '---' at line 2)"
    );
    // A billion laughs: 10 aliases of 10 aliases ... of one value.
    let mut y = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..7 {
        let p = i - 1;
        y.push_str(&format!(
            "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
        ));
    }
    let e = read(&y);
    assert!(
        e.ends_with(": too many nodes (aliases expand to more than 250000 values)"),
        "{e}"
    );
    // A long list with no alias is called what it is (issue 28, finding 21).
    let long = format!("tools: [{}]\n", vec!["t"; 300_000].join(", "));
    let e = read(&long);
    assert!(
        e.ends_with(": too many values (more than 250000 in one file)"),
        "{e}"
    );
}

#[test]
fn syntax_errors_have_their_line() {
    let e = Outline::parse(Path::new("t.yaml"), "name: t\nmodels:\n  a: [x\n", 1).unwrap_err();
    let TeamError::Invalid { line, .. } = &e else {
        panic!("{e}")
    };
    assert!(line.is_some_and(|l| l >= 3), "{e}");
}

/// An agent file the typed read takes whole is parsed once: its outline
/// waits until a line is asked of it, and then tells the same lines. A file
/// the typed read refuses is read the long way, with the same messages.
#[test]
fn an_agent_file_read_cleanly_is_parsed_once() {
    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct A {
        name: String,
        role: String,
        #[serde(default)]
        tools: Vec<String>,
    }
    const KEYS: &[&str] = &["name", "role", "tools"];
    let path = Path::new("agents/a.md");
    let read = |y: &str| read_agent_checked::<A>(path, y, 2, KEYS);
    probes::take_parses();
    let y = "name: a\nrole: member\ntools:\n  - search\n  - fetch\n";
    let (a, later) = read(y).unwrap();
    assert_eq!(a.tools, ["search", "fetch"]);
    assert_eq!(
        probes::take_parses(),
        0,
        "no outline before a line is asked"
    );
    assert_eq!(later.line(&[Step::Key("role")]), Some(3));
    assert_eq!(
        later.item_line(&[Step::Key("tools")], "fetch"),
        outline(y, 2).item_line(&[Step::Key("tools")], "fetch")
    );
    assert_eq!(later.line(&[Step::Key("tools"), Step::Item(1)]), Some(6));
    assert_eq!(
        probes::take_parses(),
        2,
        "one later parse, and the eager one"
    );

    let err = |y: &str| read(y).unwrap_err().to_string();
    assert_eq!(
        err("name: a\nrole: member\nrloe: x\n"),
        "agents/a.md:4: unknown key 'rloe' (did you mean 'role'?)"
    );
    assert_eq!(
        err("name: a\nrole: member\nname: b\n"),
        "agents/a.md:4: duplicate key 'name' (first at line 2)"
    );
    assert_eq!(
        err("name: a\nrole: member\ntools: 3\n"),
        read_checked::<A>(path, "name: a\nrole: member\ntools: 3\n", 2, KEYS)
            .unwrap_err()
            .to_string()
    );
}
