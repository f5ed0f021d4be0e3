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

/// Lines of `stderr` that warn a model cannot call tools.
fn no_tools_warnings(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.contains("cannot call tools"))
        .collect()
}

/// The warning that the writer's tools are not sent is logged once a run,
/// not once a turn (the binary logs warnings by default): a run of three
/// rounds drafts three times and warns once; a second run warns again.
#[test]
fn the_no_tools_warning_is_logged_once_a_run_not_once_a_turn() {
    let reviews = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = std::sync::Arc::clone(&reviews);
    let server = Server::start(move |req| {
        let text = req.all_text();
        let reply = if text.contains("Split this task") {
            "ASSIGN:writer:part one".to_string()
        } else if text.contains("is over. This is the board") {
            // Two more rounds, then done (the count runs across runs).
            let n = seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            if n % 3 < 2 {
                format!("ASSIGN:writer:part {}", n % 3 + 2)
            } else {
                "DONE\nThe answer.".to_string()
            }
        } else if text.contains("The work is over") {
            "The answer.".to_string()
        } else if text.contains("Reply CHALLENGE:<...> or AGREE") {
            "AGREE".to_string()
        } else if text.contains("worth remembering") {
            "- nothing".to_string()
        } else {
            "A draft.".to_string()
        };
        Reply::answer(req, &reply)
    });
    let dir = team_dir(None, "name: t\n");
    let model = format!("{}#m,tools=false", server.base_url());
    for run in 1..=2 {
        let before = server.seen().len();
        let out = run_cli(dir.path(), &model);
        let drafts = server.seen()[before..]
            .iter()
            .filter(|r| {
                let text = r.all_text();
                text.contains("You write.") && !text.contains("Reply CHALLENGE:<...> or AGREE")
            })
            .count();
        assert!(drafts >= 3, "run {run}: the writer drafted {drafts} times");
        let err = text(&out.stderr);
        let warned = no_tools_warnings(&err);
        assert_eq!(warned.len(), 1, "run {run}:\n{err}");
        assert!(
            warned[0].contains("agent 'writer': its model"),
            "{}",
            warned[0]
        );
    }
    assert_eq!(with_tools(&server), 0);
}

/// The chat partner's warning is logged once a chat: two partner turns
/// on a model with `tools=false`, one warning.
#[test]
fn the_partners_no_tools_warning_is_logged_once_a_chat() {
    let server = Server::start(|req| Reply::answer(req, "Tell me more."));
    let dir = tempfile::tempdir().unwrap();
    let model = format!("{}#partner,tools=false", server.base_url());
    let out = support::chat::PipedChat::start(
        dir.path(),
        &["--model", &model],
        "Plan a team offsite\nFor twenty people\n",
        std::time::Duration::from_secs(30),
    )
    .finish();
    assert_eq!(out.status.code(), Some(0), "{}\n{}", out.stdout, out.stderr);
    assert_eq!(server.requests(), 2, "two partner turns");
    assert_eq!(with_tools(&server), 0);
    let warned = no_tools_warnings(&out.stderr);
    assert_eq!(warned.len(), 1, "{}", out.stderr);
}

/// `boardroom check` says when an agent's granted tools will not be sent
/// because its model has none.
#[test]
fn check_says_the_tools_of_an_agent_on_a_model_without_tool_calling_are_not_sent() {
    for (tools, said) in [("", false), ("    tools: false\n", true)] {
        let yaml = format!("models:\n  local:\n    base_url: http://127.0.0.1:9/v1\n{tools}");
        let dir = team_dir(Some("local"), &yaml);
        let out = boardroom(&["check"], dir.path());
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let stdout = text(&out.stdout);
        let writer = stdout
            .lines()
            .find(|l| l.contains("writer"))
            .unwrap_or_else(|| panic!("{stdout}"));
        assert!(writer.contains("tools: workspace_write"), "{writer}");
        assert_eq!(
            writer.contains("tools: workspace_write (not sent: its model has no tool calling)"),
            said,
            "team.yaml {tools:?}: {writer}"
        );
    }
}
