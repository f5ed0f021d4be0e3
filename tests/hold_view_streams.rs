//! Issue 28, finding 5 (the rest): each live page's event stream held one
//! of the view's 16 workers for as long as it was open, so 16 open live
//! pages left the next request a 503 (or waiting). Streams are now served
//! by one thread of their own: 20 open live streams on the real server on
//! 127.0.0.1, and a normal request still gets its page at once.

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use boardroom::Runtime;
use boardroom::testing::Scripted;
use boardroom::view::ViewServer;

/// Turns every `"status": "done"` in `v` into `"running"`.
fn running(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(map) => {
            for (k, x) in map.iter_mut() {
                if k == "status" && x == "done" {
                    *x = "running".into();
                } else {
                    running(x);
                }
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(running),
        _ => {}
    }
}

fn request(port: u16, path: &str) -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    s
}

#[test]
fn finding5_twenty_open_live_streams_leave_the_view_answering() {
    let tmp = tempfile::tempdir().unwrap();
    let model = Scripted::new()
        .reply("master", "ASSIGN:writer:Write")
        .reply("writer", "A draft.")
        .reply("critic", "AGREE")
        .reply("master", "DONE\nok");
    let id = Runtime::new(support::teams::trio("owls"), model)
        .runs_dir(tmp.path())
        .run("Plan")
        .unwrap()
        .run_id;
    // The run as a live page sees one still going: no run_finished yet,
    // run.json says running (its streams stay open, 30 s each).
    let dir = tmp.path().join(&id);
    let events = std::fs::read_to_string(dir.join("events.jsonl")).unwrap();
    let kept: String = events
        .lines()
        .filter(|l| !l.contains("\"type\":\"run_finished\""))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(dir.join("events.jsonl"), kept).unwrap();
    let mut run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    running(&mut run);
    std::fs::write(dir.join("run.json"), run.to_string()).unwrap();

    let view = ViewServer::start(tmp.path(), "127.0.0.1", 0).unwrap();
    let port = view.addr().port();
    let mut streams = Vec::new();
    for i in 0..20 {
        let s = request(port, &format!("/runs/{id}/events"));
        let mut r = BufReader::new(s);
        let mut status = String::new();
        r.read_line(&mut status)
            .unwrap_or_else(|e| panic!("live stream {i} got no answer: {e}"));
        assert!(status.starts_with("HTTP/1.1 200 "), "stream {i}: {status}");
        // Its first event arrives: the stream is live, not queued.
        let mut seen = String::new();
        while !seen.contains("data: ") {
            let mut line = String::new();
            r.read_line(&mut line)
                .unwrap_or_else(|e| panic!("live stream {i} sent no event: {e}"));
            assert!(!line.is_empty(), "stream {i} ended");
            seen.push_str(&line);
        }
        streams.push(r);
    }
    // A normal request, while all 20 are open.
    let mut page = String::new();
    request(port, "/")
        .read_to_string(&mut page)
        .unwrap_or_else(|e| panic!("the run list got no answer with 20 live streams open: {e}"));
    assert!(page.starts_with("HTTP/1.1 200 "), "{page}");
    assert!(page.contains(&id), "{page}");
    let mut state = String::new();
    request(port, &format!("/runs/{id}/state.json"))
        .read_to_string(&mut state)
        .unwrap();
    assert!(state.starts_with("HTTP/1.1 200 "), "{state}");
    drop(streams);
    view.stop();
}
