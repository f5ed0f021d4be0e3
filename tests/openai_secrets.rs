//! Secrets: the API key never appears in logs (RUST_LOG=trace), events,
//! errors, Debug output, the answer or the run's files, even when the server
//! echoes it.

mod support;

use std::process::Command;

use boardroom::{ChatModel, ChatRequest, Message, OpenAi, Phase, Runtime, Team};
use support::{Reply, Server};

const KEY: &str = "sk-boardroom-test-5ecret-key-0123456789";

/// A server that answers DONE, or refuses with a body that echoes the key.
fn server(refuse: bool) -> Server {
    Server::start(move |req| {
        let auth = req.header("authorization").unwrap_or_default().to_string();
        assert_eq!(auth, format!("Bearer {KEY}"), "the key is sent");
        if refuse {
            Reply::status(
                401,
                &format!(r#"{{"error":{{"message":"invalid key {auth}"}}}}"#),
            )
        } else {
            Reply::one_round(req, "writer", "The answer.")
        }
    })
}

/// Runs the CLI in a fresh directory; returns success and everything it
/// printed and wrote (the run's files included).
fn run_cli(server: &Server) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_boardroom"))
        .args(["run", "Say hello", "--model", "openai:test-model", "--json"])
        .current_dir(dir.path())
        .env("BOARDROOM_HOME", dir.path())
        .env("OPENAI_BASE_URL", server.base_url())
        .env("OPENAI_API_KEY", KEY)
        .env("RUST_LOG", "trace")
        .output()
        .unwrap();
    let mut all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let files = read_tree(dir.path(), &mut all);
    assert!(files > 0, "the run wrote its files");
    (out.status.success(), all)
}

/// Appends every file under `dir` to `out`; returns how many there were.
fn read_tree(dir: &std::path::Path, out: &mut String) -> usize {
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            n += read_tree(&path, out);
        } else {
            out.push_str(&String::from_utf8_lossy(&std::fs::read(&path).unwrap()));
            n += 1;
        }
    }
    n
}

#[test]
fn no_key_in_trace_logs_or_events_of_a_cli_run() {
    let s = server(false);
    let (ok, all) = run_cli(&s);
    assert!(ok, "{all}");
    assert!(all.contains("TRACE"), "trace logging was on");
    assert!(all.contains("run_finished"), "events were printed");
    assert!(!all.contains(KEY), "the key leaked:\n{all}");
    assert!(!all.contains("5ecret"), "part of the key leaked:\n{all}");
}

#[test]
fn no_key_in_the_error_of_a_refused_cli_run() {
    let s = server(true);
    let (ok, all) = run_cli(&s);
    assert!(!ok);
    assert!(all.contains("http 401"), "{all}");
    assert!(all.contains("check OPENAI_API_KEY"), "{all}");
    assert!(!all.contains("5ecret"), "the key leaked:\n{all}");
}

#[test]
fn no_key_in_debug_events_or_errors_of_the_library() {
    let s = server(true);
    let model = OpenAi::builder(s.base_url(), "m")
        .api_key(KEY)
        .build()
        .unwrap();
    assert!(!format!("{model:?}").contains("5ecret"));
    let req = ChatRequest::new("a", Phase::Draft, 1, vec![Message::user("hi")]);
    let err = model.chat(&req, &mut |_| {}).unwrap_err();
    assert!(!err.to_string().contains("5ecret"), "{err}");
    assert!(!format!("{err:?}").contains("5ecret"), "{err:?}");
    assert!(err.to_string().contains("invalid key Bearer ***"), "{err}");

    let (tx, rx) = crossbeam_channel::unbounded();
    let runtime = Runtime::new(Team::builtin().unwrap(), model).events(tx);
    assert!(!format!("{runtime:?}").contains("5ecret"));
    let result = runtime.run("Say hello");
    drop(runtime);
    let events: Vec<String> = rx
        .iter()
        .map(|e| serde_json::to_string(&e).unwrap())
        .collect();
    assert!(!events.is_empty());
    for e in &events {
        assert!(!e.contains("5ecret"), "{e}");
    }
    let shown = match result {
        Ok(o) => format!("{o:?}"),
        Err(e) => format!("{e} {e:?}"),
    };
    assert!(!shown.contains("5ecret"), "{shown}");
}
