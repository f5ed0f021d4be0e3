//! Issue 28, finding 20: a view off loopback requires an access token or
//! refuses to start; with one, a request without it (any Host header) is
//! refused.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;

use boardroom::view::{ViewError, ViewServer};

/// A raw GET with these extra header lines: the whole response.
fn get(port: u16, path: &str, headers: &str) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n{headers}\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

#[test]
fn off_loopback_without_a_token_the_view_does_not_start() {
    let runs = tempfile::tempdir().unwrap();
    let err = ViewServer::start(runs.path(), "0.0.0.0", 0).unwrap_err();
    assert!(matches!(err, ViewError::NeedsToken { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "refusing to listen on 0.0.0.0:0 without an access token: the address is not \
         loopback, so anyone who can reach it could read these runs"
    );

    // The CLI says what to do, exit 2 (a run first: with no runs `view`
    // only says so).
    let team = tempfile::tempdir().unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_boardroom"))
        .args(["run", "--no-memory", "hi"])
        .current_dir(team.path())
        .env("BOARDROOM_RUNS_DIR", runs.path())
        .env_remove("BOARDROOM_MODEL")
        .env_remove("OPENAI_BASE_URL")
        .output()
        .unwrap();
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let out = Command::new(env!("CARGO_BIN_EXE_boardroom"))
        .args(["view", "--host", "0.0.0.0", "--port", "0"])
        .env("BOARDROOM_RUNS_DIR", runs.path())
        .env_remove("BOARDROOM_VIEW_TOKEN")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "error: view: refusing to listen on 0.0.0.0:0 without an access token: the address \
             is not loopback, so anyone who can reach it could read these runs; give --token TOKEN"
        ),
        "{stderr}"
    );
}

#[test]
fn with_a_token_every_request_must_carry_it() {
    let runs = tempfile::tempdir().unwrap();
    let view =
        ViewServer::start_with_token(runs.path(), "0.0.0.0", 0, Some("s3cret-t0ken")).unwrap();
    let port = view.addr().port();
    // Any Host, no token: refused, nothing listed.
    let r = get(port, "/", "");
    assert!(r.starts_with("HTTP/1.1 401"), "{r}");
    let r = get(port, "/", "Authorization: Bearer wrong\r\n");
    assert!(r.starts_with("HTTP/1.1 401"), "{r}");
    // The bearer token: served.
    let r = get(port, "/", "Authorization: Bearer s3cret-t0ken\r\n");
    assert!(r.starts_with("HTTP/1.1 200"), "{r}");
    // The printed URL: a redirect that sets the cookie, off the address bar.
    let r = get(port, "/?token=s3cret-t0ken", "");
    assert!(r.starts_with("HTTP/1.1 303"), "{r}");
    assert!(r.contains("Location: /\r\n"), "{r}");
    assert!(
        r.contains("Set-Cookie: boardroom_view=s3cret-t0ken; Path=/; HttpOnly; SameSite=Strict"),
        "{r}"
    );
    let r = get(
        port,
        "/",
        "Cookie: other=1; boardroom_view=s3cret-t0ken\r\n",
    );
    assert!(r.starts_with("HTTP/1.1 200"), "{r}");
    view.stop();
}
