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
