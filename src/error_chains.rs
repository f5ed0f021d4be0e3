//! Every error enum keeps its cause: a unit test per error type walks
//! `source()` down to the underlying error (issue 15).

use std::error::Error;
use std::io;
use std::path::PathBuf;

use crate::chat::ChatError;
use crate::store::StoreError;
use crate::{RunError, TeamError, ToolError};

/// The error and every cause under it, outermost first, as text.
fn chain(err: &(dyn Error + 'static)) -> Vec<String> {
    let mut out = vec![err.to_string()];
    let mut cur = err.source();
    while let Some(e) = cur {
        out.push(e.to_string());
        cur = e.source();
    }
    out
}

fn json_error() -> serde_json::Error {
    serde_json::from_str::<serde_json::Value>("{not json").unwrap_err()
}

#[test]
fn store_errors_keep_the_io_and_json_causes() {
    let io = StoreError::io("runs/r1/run.json", io::Error::other("disk full"));
    assert_eq!(chain(&io), ["runs/r1/run.json: disk full", "disk full"]);

    let json = StoreError::json("runs/r1/run.json", "not valid json", json_error());
    let c = chain(&json);
    assert_eq!(c.len(), 2, "{c:?}");
    assert!(
        c[0].starts_with("runs/r1/run.json: not valid json: key must be a string"),
        "{c:?}"
    );
    let source = json.source().expect("a json error has a source");
    assert!(source.downcast_ref::<serde_json::Error>().is_some());
}

#[test]
fn chat_store_errors_keep_their_cause() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("c1")).unwrap();
    std::fs::write(dir.path().join("c1").join("chat.json"), "{not json").unwrap();
    let err = crate::chat::ChatStore::open(dir.path(), "c1").unwrap_err();
    assert!(matches!(err, ChatError::Store { .. }), "{err:?}");
    let source = err.source().expect("a store error has a source");
    assert!(
        source.downcast_ref::<serde_json::Error>().is_some(),
        "{source:?}"
    );
    assert!(err.to_string().ends_with(&source.to_string()), "{err}");
}

#[test]
fn chat_errors_wrap_the_run_error_and_its_store_error() {
    let store = StoreError::io("runs/r1", io::Error::other("permission denied"));
    let err = ChatError::from(RunError::Store(store));
    let c = chain(&err);
    assert_eq!(c.len(), 4, "chat -> run -> store -> io: {c:?}");
    assert_eq!(c.last().unwrap(), "permission denied");
}

#[test]
fn tool_errors_keep_the_io_cause() {
    let err = ToolError::Io {
        path: PathBuf::from("notes.md"),
        source: io::Error::other("read-only file system"),
    };
    let c = chain(&err);
    assert_eq!(c.last().unwrap(), "read-only file system", "{c:?}");
    assert_eq!(c.len(), 2);
}

#[test]
fn team_errors_keep_the_io_cause() {
    let err = TeamError::Io {
        path: PathBuf::from("agents/writer.md"),
        source: io::Error::other("no such file"),
    };
    let c = chain(&err);
    assert_eq!(c.len(), 2, "{c:?}");
    assert_eq!(c[1], "no such file");
}

/// A request to a model at `base_url`, one attempt, no waiting.
fn one_call(base_url: &str) -> crate::ModelError {
    use crate::{ChatModel, ChatRequest, Message, OpenAi, Phase};
    let model = OpenAi::builder(base_url, "m")
        .api_key("sk-test-key-0123456789")
        .retry(crate::openai::RetryPolicy {
            max_attempts: 1,
            ..crate::openai::RetryPolicy::default()
        })
        .timeout(std::time::Duration::from_secs(5))
        .build()
        .unwrap();
    let request = ChatRequest::new("writer", Phase::Draft, 1, vec![Message::user("hi")]);
    model.chat(&request, &mut |_| {}).unwrap_err()
}

#[test]
fn a_model_transport_error_keeps_the_connection_error() {
    // A port nothing listens on: bind one, learn it, close it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let err = one_call(&format!("http://127.0.0.1:{port}/v1"));
    assert!(
        matches!(err, crate::ModelError::Transport { .. }),
        "{err:?}"
    );
    let source = err.source().expect("a transport error has a source");
    assert!(source.downcast_ref::<ureq::Error>().is_some(), "{source:?}");
    assert!(
        !chain(&err).concat().contains("sk-test-key"),
        "no key in the chain"
    );
}

#[test]
fn a_model_bad_response_keeps_the_json_error() {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let server = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        // The whole request, headers and body: a socket closed with unread
        // bytes is reset, and the client would see a reset, not the body.
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while let Ok(n @ 1..) = conn.read(&mut buf) {
            got.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&got).to_ascii_lowercase();
            if let Some(end) = text.find("\r\n\r\n") {
                let length: usize = text[..end]
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(0);
                if got.len() >= end + 4 + length {
                    break;
                }
            }
        }
        let body = "this is not json";
        let _ = write!(
            conn,
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
    });
    let err = one_call(&format!("http://{addr}/v1"));
    server.join().unwrap();
    assert!(
        matches!(err, crate::ModelError::BadResponse { .. }),
        "{err:?}"
    );
    let source = err
        .source()
        .expect("a bad response from the parser has a source");
    assert!(
        source.downcast_ref::<serde_json::Error>().is_some(),
        "{source:?}"
    );
}

#[test]
fn an_mcp_spawn_error_keeps_the_os_error() {
    use crate::mcp::{McpError, McpPool, McpServerConfig};
    let mut servers = std::collections::BTreeMap::new();
    servers.insert(
        "ghost".to_string(),
        McpServerConfig::new(
            "/nonexistent/boardroom-no-such-server",
            Vec::<String>::new(),
        ),
    );
    let err = McpPool::start(&servers, None).unwrap_err();
    let ToolError::Mcp { source: mcp, .. } = &err else {
        panic!("{err:?}");
    };
    assert!(matches!(mcp, McpError::Spawn { .. }), "{mcp:?}");
    let c = chain(&err);
    assert_eq!(c.len(), 3, "tool -> mcp -> io: {c:?}");
    let io = mcp.source().expect("a spawn error has a source");
    assert_eq!(
        io.downcast_ref::<io::Error>().map(io::Error::kind),
        Some(io::ErrorKind::NotFound)
    );
}

#[cfg(feature = "otlp")]
#[test]
fn otlp_errors_keep_the_store_error() {
    let dir = tempfile::tempdir().unwrap();
    // events.jsonl is a directory: reading it fails.
    std::fs::create_dir(dir.path().join("events.jsonl")).unwrap();
    let config = crate::otlp::OtlpConfig::new("http://127.0.0.1:9/v1/traces").unwrap();
    let err = crate::otlp::export_run(dir.path(), &config).unwrap_err();
    let c = chain(&err);
    assert!(matches!(err, crate::otlp::OtlpError::Store(_)), "{err:?}");
    assert!(c.len() >= 2, "otlp -> store (-> io): {c:?}");
    assert!(err.source().unwrap().downcast_ref::<StoreError>().is_some());
}

/// A wrapper that prints its inner error's line as its own passes on the
/// inner error's cause: no line of a walked chain is the one above it
/// (issue 15).
#[test]
fn no_line_of_a_chain_repeats_the_one_above() {
    let pool = RunError::Pool(crate::runtime::ThreadError::Spawn {
        thread: "a thread",
        source: io::Error::other("no more threads"),
    });
    let team = TeamError::Io {
        path: PathBuf::from("team.yaml"),
        source: io::Error::other("no such file"),
    };
    let policy = ToolError::Policy(team);
    for err in [&pool as &(dyn Error + 'static), &policy] {
        let c = chain(err);
        assert!(c.windows(2).all(|w| w[0] != w[1]), "{c:?}");
    }
    assert_eq!(
        chain(&policy),
        ["team.yaml: no such file", "no such file"],
        "policy -> io, the team error's line once"
    );
}

/// A team file the parser refuses keeps the parser's error as its source.
#[test]
fn a_yaml_error_keeps_the_parsers_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("team.yaml"), "name: t\nmodels: [x\n").unwrap();
    let err = crate::TeamConfig::load(&dir.path().join("team.yaml")).unwrap_err();
    let source = err.source().expect("the parser's error");
    assert!(
        source.downcast_ref::<serde_saphyr::Error>().is_some(),
        "{source:?}"
    );
}
