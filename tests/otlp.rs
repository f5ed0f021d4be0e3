//! Issue 13, traces without a trace backend: a collector that is down or
//! hangs never fails or holds up the run (spans are dropped and counted);
//! what goes over the wire is protobuf with the standard headers, holds
//! prompt text only on request, and never the API key.

#![cfg(feature = "otlp")]

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use boardroom::otlp::{OtlpConfig, OtlpExporter};
use boardroom::store::read_turns;
use boardroom::testing::{Sim, SimOptions};
use boardroom::{EventKind, RunStatus, Runtime, Team};
use parking_lot::Mutex;

/// A run of the built-in team on the sim model (each call taking
/// `latency`), its events handed to the exporter by a second consumer
/// while the run works, as the CLI does; returns how many model calls it
/// made, once the run is over.
fn run_with(exporter: &OtlpExporter, latency: Duration) -> usize {
    let (tx, rx) = crossbeam_channel::unbounded::<boardroom::Event>();
    let to_exporter = exporter.events();
    let tee = std::thread::spawn(move || {
        let mut calls = 0;
        for e in rx {
            if matches!(e.kind, EventKind::TurnCompleted { .. }) {
                calls += 1;
            }
            to_exporter.send(e).unwrap();
        }
        calls
    });
    let sim = Sim::with_options(SimOptions {
        latency,
        ..SimOptions::default()
    });
    let outcome = Runtime::new(Team::builtin().unwrap(), sim)
        .events(tx)
        .run("Plan a picnic")
        .unwrap();
    assert_eq!(outcome.status, RunStatus::Done);
    tee.join().unwrap()
}

#[test]
fn a_collector_that_is_down_costs_the_run_nothing_and_every_span_is_counted() {
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    }; // closed again: connections are refused
    let config = OtlpConfig::new(&format!("http://127.0.0.1:{port}"))
        .unwrap()
        .timeout(Duration::from_secs(2));
    let exporter = OtlpExporter::start(config).unwrap();
    let calls = run_with(&exporter, Duration::ZERO);
    let report = exporter.finish();
    assert_eq!(report.exported, 0);
    // One chat span per call, at least one agent span more, and the root.
    assert!(report.dropped > calls as u64 + 1, "{report:?}");
    let text = report.to_string();
    assert!(
        text.starts_with(&format!(
            "otlp: {0} of {0} spans dropped for http://127.0.0.1:{port}/v1/traces (first: ",
            report.dropped
        )),
        "{text}"
    );
}

/// A collector that accepts connections and never answers, until released.
struct Hanging {
    port: u16,
    accepted: Arc<AtomicUsize>,
    release: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Hanging {
    fn start() -> Hanging {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let accepted = Arc::new(AtomicUsize::new(0));
        let release = Arc::new(AtomicBool::new(false));
        let (a, r) = (Arc::clone(&accepted), Arc::clone(&release));
        let thread = std::thread::spawn(move || {
            let mut held: Vec<TcpStream> = Vec::new();
            while !r.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((s, _)) => {
                        a.fetch_add(1, Ordering::SeqCst);
                        held.push(s);
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        Hanging {
            port,
            accepted,
            release,
            thread: Some(thread),
        }
    }
}

impl Drop for Hanging {
    fn drop(&mut self) {
        self.release.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[test]
fn a_collector_that_hangs_never_holds_up_the_run() {
    let collector = Hanging::start();
    // A request may take 30 s: were the run waiting on the exporter, it
    // could not end before the first one timed out.
    let config = OtlpConfig::new(&format!("http://127.0.0.1:{}", collector.port))
        .unwrap()
        .timeout(Duration::from_secs(30))
        .queue_capacity(2);
    let exporter = OtlpExporter::start(config).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    // The exporter is the run's event subscriber; the drafts wait for `go`,
    // written once the collector holds the exporter's first request (the
    // plan's spans), so the rest of the run's spans meet a full queue.
    // (Calls of 150 ms raced with the exporter's first send.)
    let go = tmp.path().join("go");
    let sim = Sim::with_options(SimOptions {
        hold: Some(go.clone()),
        ..SimOptions::default()
    });
    let accepted = Arc::clone(&collector.accepted);
    let release = std::thread::spawn(move || {
        let started = std::time::Instant::now();
        while accepted.load(Ordering::SeqCst) == 0 && started.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(Duration::from_millis(5));
        }
        // A test that failed first may have removed its directory.
        let _ = std::fs::write(&go, "");
    });
    let outcome = Runtime::new(Team::builtin().unwrap(), sim)
        .runs_dir(tmp.path().join("runs"))
        .events(exporter.events())
        .run("Plan a picnic")
        .unwrap();
    release.join().unwrap();
    assert_eq!(outcome.status, RunStatus::Done);
    // The run is over while the collector holds a request it never answered:
    // nothing delivered, no request failed yet, only the full queue dropped.
    assert!(collector.accepted.load(Ordering::SeqCst) >= 1);
    let during = exporter.report();
    assert_eq!(during.exported, 0, "{during:?}");
    assert!(during.dropped > 0, "{during:?}");
    assert_eq!(
        during.first_error.as_deref(),
        Some("the export queue is full (collector too slow)")
    );
    // The collector goes away: the request in flight fails, what is left
    // is dropped, and everything is counted.
    drop(collector);
    let report = exporter.finish();
    let calls = read_turns(&tmp.path().join("runs").join(&outcome.run_id))
        .unwrap()
        .items
        .len();
    assert_eq!(report.exported, 0, "{report:?}");
    assert!(report.dropped > calls as u64, "{report:?}");
}

/// One request: headers (names lowercased), path, body.
type Recorded = (Vec<(String, String)>, String, Vec<u8>);

/// A collector that records each request and answers 200.
struct Recorder {
    port: u16,
    requests: Arc<Mutex<Vec<Recorded>>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Recorder {
    fn start() -> Recorder {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (reqs, halt) = (Arc::clone(&requests), Arc::clone(&stop));
        let thread = std::thread::spawn(move || {
            while !halt.load(Ordering::SeqCst) {
                let Ok((stream, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                };
                stream.set_nonblocking(false).unwrap();
                stream
                    .set_read_timeout(Some(Duration::from_secs(5)))
                    .unwrap();
                let mut r = BufReader::new(stream);
                let mut line = String::new();
                r.read_line(&mut line).unwrap();
                let path = line.split(' ').nth(1).unwrap_or("").to_string();
                let mut headers = Vec::new();
                loop {
                    line.clear();
                    r.read_line(&mut line).unwrap();
                    let l = line.trim_end();
                    if l.is_empty() {
                        break;
                    }
                    if let Some((k, v)) = l.split_once(':') {
                        headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
                    }
                }
                let len: usize = headers
                    .iter()
                    .find(|(k, _)| k == "content-length")
                    .map_or(0, |(_, v)| v.parse().unwrap());
                let mut body = vec![0; len];
                r.read_exact(&mut body).unwrap();
                reqs.lock().push((headers, path, body));
                let mut s = r.into_inner();
                let _ = s.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                );
            }
        });
        Recorder {
            port,
            requests,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn contains(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}

#[test]
fn spans_go_as_protobuf_with_the_otel_settings_content_only_on_request_never_the_key() {
    let collector = Recorder::start();
    let tmp = tempfile::tempdir().unwrap();
    let run = |content: bool| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_boardroom"));
        cmd.args([
            "run",
            "Plan a picnic by the lake",
            "--model",
            "sim",
            "--no-memory",
        ])
        .arg("--runs-dir")
        .arg(tmp.path())
        .env(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            format!("http://127.0.0.1:{}", collector.port),
        )
        .env(
            "OTEL_EXPORTER_OTLP_HEADERS",
            "authorization=Bearer%20otlp-token",
        )
        .env("OTEL_SERVICE_NAME", "picnic-service")
        .env("OPENAI_API_KEY", "sk-test-NEVER-EXPORT-ME");
        if content {
            cmd.arg("--otlp-content");
        }
        let out = cmd.output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!String::from_utf8_lossy(&out.stderr).contains("dropped"));
        let reqs: Vec<_> = collector.requests.lock().drain(..).collect();
        assert!(!reqs.is_empty());
        for (headers, path, _) in &reqs {
            assert_eq!(path, "/v1/traces");
            let h = |k: &str| {
                headers
                    .iter()
                    .find(|(n, _)| n == k)
                    .map(|(_, v)| v.as_str())
            };
            assert_eq!(h("content-type"), Some("application/x-protobuf"));
            assert_eq!(h("authorization"), Some("Bearer otlp-token"));
        }
        reqs.into_iter()
            .flat_map(|(_, _, b)| b)
            .collect::<Vec<u8>>()
    };

    let plain = run(false);
    for s in [
        "picnic-service",
        "invoke_workflow default",
        "invoke_agent writer",
        "chat sim",
        "gen_ai.usage.input_tokens",
        // Issue 27: what Phoenix draws spans by.
        "openinference.span.kind",
        "llm.token_count.total",
    ] {
        assert!(contains(&plain, s), "{s} missing");
    }
    for s in [
        "by the lake",
        "gen_ai.input.messages",
        "input.value",
        "output.value",
        "sk-test-NEVER-EXPORT-ME",
        "otlp-token",
    ] {
        assert!(!contains(&plain, s), "{s} exported without --otlp-content");
    }

    let full = run(true);
    for s in [
        "by the lake",
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "input.value",
        "output.value",
    ] {
        assert!(contains(&full, s), "{s} missing with --otlp-content");
    }
    assert!(!contains(&full, "sk-test-NEVER-EXPORT-ME"));
    drop(collector);
}

#[test]
fn bad_otlp_settings_exit_2_naming_the_setting() {
    let tmp = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_boardroom");
    let out = Command::new(bin)
        .args([
            "run",
            "t",
            "--model",
            "sim",
            "--otlp",
            "localhost:4318",
            "--runs-dir",
        ])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "error: --otlp: 'localhost:4318' is not an OTLP/HTTP endpoint (expected http://host:port or https://..., e.g. http://127.0.0.1:4318)"
    );
    let out = Command::new(bin)
        .args(["run", "t", "--model", "sim", "--runs-dir"])
        .arg(tmp.path())
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
        .env("OTEL_EXPORTER_OTLP_HEADERS", "authorization")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "error: OTEL_EXPORTER_OTLP_HEADERS: entry 1 is not key=value (expected key1=value1,key2=value2)"
    );
    let out = Command::new(bin)
        .args([
            "export",
            "nope",
            "--otlp",
            "http://127.0.0.1:9",
            "--runs-dir",
        ])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("error: run 'nope': not found in"));
}

/// `resume` takes `--otlp` and `--view` as `run` does: a run killed
/// midway and resumed sends its trace, and its page is served until
/// Ctrl-C, after which boardroom exits with the run's code.
#[test]
fn a_resumed_run_is_traced_and_viewed_like_a_new_one() {
    use std::process::Stdio;
    use std::time::Instant;
    let collector = Recorder::start();
    let tmp = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_boardroom");
    let mut first = Command::new(bin)
        .args([
            "run",
            "Plan a picnic",
            "--no-memory",
            "--model",
            // The drafts come at once, then the challenges and the review
            // take 30 s: the run is killed long before it could end (300 ms
            // calls raced with the kill on a loaded machine).
            "sim:latency=30s,latency_phases=challenge+review",
        ])
        .arg("--runs-dir")
        .arg(tmp.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Killed once a member's draft is saved: the run is resumable.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let drafted = std::fs::read_dir(tmp.path())
            .unwrap()
            .filter_map(Result::ok)
            .filter_map(|d| std::fs::read_to_string(d.path().join("events.jsonl")).ok())
            .any(|t| {
                t.contains("\"type\":\"agent_message\"") && t.contains("\"parent\":\"master\"")
            });
        if drafted {
            first.kill().unwrap();
            first.wait().unwrap();
            break;
        }
        assert!(first.try_wait().unwrap().is_none(), "the run ended first");
        assert!(Instant::now() < deadline, "no draft came");
        std::thread::sleep(Duration::from_millis(20));
    }

    let mut resumed = Command::new(bin)
        .args(["resume", "last", "--no-memory", "--model", "sim", "--view"])
        .arg("--otlp")
        .arg(format!("http://127.0.0.1:{}", collector.port))
        .arg("--runs-dir")
        .arg(tmp.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(resumed.stderr.take().unwrap()).lines();
    let mut said = Vec::new();
    loop {
        let Some(Ok(line)) = lines.next() else {
            let _ = resumed.kill();
            panic!("resume ended without serving the view: {said:?}");
        };
        let done = line.contains("still serving");
        said.push(line);
        if done {
            break;
        }
    }
    let drain = std::thread::spawn(move || lines.map_while(Result::ok).count());
    assert!(
        said.iter()
            .any(|l| l.starts_with("view: http://127.0.0.1:")),
        "{said:?}"
    );
    support::cli::ctrl_c(&resumed);
    let status = support::cli::exit_within(
        &mut resumed,
        Duration::from_secs(10),
        "Ctrl-C did not end the resumed run's view",
    );
    assert_eq!(status.code(), Some(0), "{said:?}");
    drain.join().unwrap();

    let body: Vec<u8> = collector
        .requests
        .lock()
        .drain(..)
        .flat_map(|(_, _, b)| b)
        .collect();
    for s in ["invoke_workflow default", "invoke_agent master", "chat sim"] {
        assert!(
            contains(&body, s),
            "{s} missing from the resumed run's trace"
        );
    }
    drop(collector);
}
