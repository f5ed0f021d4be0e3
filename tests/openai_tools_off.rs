//! Tool calling turned off by what a user writes (not a custom
//! `ChatModel`): `tools=false` in an OpenAI model spec and `tools: false`
//! on a `team.yaml` endpoint make the provider's `supports_tools()` false,
//! so no request to that server carries `tools` (counted on a real
//! loopback server); a value that is not a boolean exits 2 naming where.

mod support;

use std::path::Path;

use support::cli::{boardroom, text};
use support::{Reply, Request, Server};

/// A team on disk: `lead` (master) and `writer` (a member granted
/// `workspace_write`), both on model `model` where one is given.
fn team_dir(model: Option<&str>, team_yaml: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("agents")).unwrap();
    std::fs::create_dir_all(root.join("souls")).unwrap();
    let model = model.map(|m| format!("model: {m}\n")).unwrap_or_default();
    std::fs::write(
        root.join("agents/lead.md"),
        format!("---\nname: lead\nrole: master\n{model}---\n"),
    )
    .unwrap();
    std::fs::write(
        root.join("agents/writer.md"),
        format!(
            "---\nname: writer\nrole: member\ndescription: Writes\n{model}tools: [workspace_write]\n---\n"
        ),
    )
    .unwrap();
    std::fs::write(root.join("souls/lead.md"), "You lead.").unwrap();
    std::fs::write(root.join("souls/writer.md"), "You write.").unwrap();
    std::fs::write(root.join("team.yaml"), team_yaml).unwrap();
    dir
}

/// The blackboard protocol in one round, the writer assigned.
fn one_round(req: &Request) -> Reply {
    Reply::one_round(req, "writer", "The answer.")
}

/// Requests that carried `tools`.
fn with_tools(server: &Server) -> usize {
    server
        .seen()
        .iter()
        .filter(|r| r.body.get("tools").is_some())
        .count()
}

fn run_cli(dir: &Path, model: &str) -> std::process::Output {
    let out = boardroom(
        &["run", "Write a haiku", "--team", ".", "--model", model],
        dir,
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    out
}

#[test]
fn tools_false_in_a_model_spec_sends_no_tools() {
    let dir = team_dir(None, "name: t\n");
    // The same team on a tool model sends the writer's grant, so the
    // count below can tell.
    let server = Server::start(one_round);
    run_cli(dir.path(), &format!("{}#m", server.base_url()));
    assert!(with_tools(&server) >= 1, "the writer's grant is sent");

    let server = Server::start(one_round);
    run_cli(dir.path(), &format!("{}#m,tools=false", server.base_url()));
    assert!(server.requests() >= 3, "plan, draft, review");
    assert_eq!(with_tools(&server), 0, "no request carried tools");
}

#[test]
fn tools_false_on_a_team_yaml_endpoint_sends_no_tools() {
    for (tools, sent) in [("", true), ("    tools: false\n", false)] {
        let server = Server::start(one_round);
        let yaml = format!(
            "models:\n  local:\n    base_url: {}\n    model: small\n{tools}",
            server.base_url()
        );
        let dir = team_dir(Some("local"), &yaml);
        run_cli(dir.path(), "sim");
        let drafts = server
            .seen()
            .iter()
            .filter(|r| r.all_text().contains("You write."))
            .count();
        assert!(drafts >= 1, "the writer drafted on the endpoint");
        assert_eq!(with_tools(&server) > 0, sent, "team.yaml {tools:?}");
    }
}

#[test]
fn a_tools_value_that_is_not_a_boolean_exits_2_naming_where() {
    let dir = team_dir(
        Some("local"),
        "models:\n  local:\n    base_url: http://127.0.0.1:9/v1\n    tools: maybe\n",
    );
    for args in [&["check"][..], &["run", "x", "--team", "."][..]] {
        let out = boardroom(args, dir.path());
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = text(&out.stderr);
        assert!(
            err.contains(
                "team.yaml:4: models.local.tools: wrong type: 'maybe' is not true or false"
            ),
            "{args:?}: {err}"
        );
    }
    let dir = team_dir(None, "name: t\n");
    let out = boardroom(
        &[
            "run",
            "x",
            "--team",
            ".",
            "--model",
            "http://127.0.0.1:9/v1#m,tools=maybe",
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains(
            "model spec 'http://127.0.0.1:9/v1#m,tools=maybe': tools: 'maybe' is not true or \
             false (allowed true, false, on, off, yes, no, 1, 0)"
        ),
        "{}",
        text(&out.stderr)
    );
}
