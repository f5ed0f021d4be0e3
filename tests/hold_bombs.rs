//! Issue 28, finding 1: a gzip bomb. The caps on what a model's answer
//! may hold count the bytes held in memory, after `Content-Encoding:
//! gzip` is undone, not the bytes on the wire. The bomb is scaled down
//! (it expands to 400 MiB, the cap is 32 MiB) and the bound asserted is
//! the test process's peak RSS (`VmHWM` in `/proc/self/status`).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::{Command, Stdio};

use boardroom::{ChatModel, ChatRequest, Message, ModelError, OpenAi, Phase};

/// `bytes` spaces, gzipped by the system's `gzip`.
fn gzip_of_spaces(bytes: usize) -> Vec<u8> {
    let mut child = Command::new("gzip")
        .args(["-c", "-1"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("gzip runs");
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let chunk = vec![b' '; 1 << 20];
        let mut left = bytes;
        while left > 0 {
            let n = left.min(chunk.len());
            stdin.write_all(&chunk[..n]).unwrap();
            left -= n;
        }
    });
    let mut out = Vec::new();
    child.stdout.take().unwrap().read_to_end(&mut out).unwrap();
    writer.join().unwrap();
    assert!(child.wait().unwrap().success());
    out
}

/// A server on 127.0.0.1 that answers every request with `body` as a
/// gzip-encoded `200` of `content_type`.
fn serve_gzip(body: Vec<u8>, content_type: &'static str) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut length = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    break;
                }
                let lower = line.to_ascii_lowercase();
                if let Some(v) = lower.strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
                if line == "\r\n" {
                    break;
                }
            }
            let mut request = vec![0; length];
            let _ = reader.read_exact(&mut request);
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Encoding: gzip\r\n\
                 Content-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(&body);
        }
    });
    port
}

/// The most resident memory this process has had, in MiB.
fn peak_rss_mib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .expect("VmHWM in /proc/self/status")
        / 1024
}

/// 400 MiB of answer in well under 1 MiB of gzip: refused at the 32 MiB
/// cap with a message that says so, and the process never holds the
/// expanded answer.
#[test]
fn finding1_a_gzip_bomb_from_the_model_endpoint_is_capped_decompressed() {
    const EXPANDS_TO: usize = 400 << 20;
    let bomb = gzip_of_spaces(EXPANDS_TO);
    assert!(bomb.len() < 2 << 20, "the bomb is small on the wire");
    let port = serve_gzip(bomb, "application/json");
    let model = OpenAi::builder(format!("http://127.0.0.1:{port}/v1"), "m")
        .api_key("sk-test")
        .stream(false)
        .sleep_with(|_| {})
        .build()
        .unwrap();
    let before = peak_rss_mib();
    let request = ChatRequest::new("writer", Phase::Draft, 1, vec![Message::user("hi")]);
    let err = model.chat(&request, &mut |_| {}).unwrap_err();
    let peak = peak_rss_mib();
    assert!(matches!(err, ModelError::BadResponse { .. }), "{err:?}");
    assert!(
        err.to_string()
            .contains("the answer is larger than 32 MiB (decompressed)"),
        "{err}"
    );
    assert!(
        peak < before + 160,
        "peak RSS {peak} MiB (was {before} MiB) while the answer would expand to 400 MiB"
    );
}
