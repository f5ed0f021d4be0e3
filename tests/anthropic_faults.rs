//! Issue 26: what goes wrong with Anthropic's Messages API, told as a
//! person can act on it: a cut-off answer (asked again, shorter), 429 with
//! `retry-after`, 529 overloaded, a malformed event, a stream cut inside
//! an event, a 401 whose body echoes the key. Each through the CLI (the
//! message and the exit code) or the library (the waits).

mod anthropic_support;
mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use anthropic_support::*;
use boardroom::{Anthropic, ChatModel, ChatRequest, Message, Phase};
use parking_lot::Mutex;
use support::{Reply, Server};

/// `Anthropic` at `server`, its waits recorded instead of slept.
fn model(server: &Server, waits: &Arc<Mutex<Vec<Duration>>>) -> Anthropic {
    let waits = Arc::clone(waits);
    Anthropic::builder("claude-test")
        .base_url(base_url(server))
        .api_key(KEY)
        .sleep_with(move |d| waits.lock().push(d))
        .build()
        .unwrap()
}

fn ask() -> ChatRequest {
    ChatRequest::new("writer", Phase::Draft, 1, vec![Message::user("hi")])
}

#[test]
fn a_cut_off_answer_is_asked_again_shorter() {
    let cuts = Arc::new(AtomicUsize::new(0));
    let seen_cuts = Arc::clone(&cuts);
    let server = Server::start(move |req| {
        check_shape(req);
        let text = text_of(req);
        if text.contains("Split this task") && !text.contains("cut off") {
            seen_cuts.fetch_add(1, Ordering::SeqCst);
            return answer_with(req, "ASSIGN:writer:do your pa", &[], "max_tokens");
        }
        one_round(req, "writer", "The answer.")
    });
    let ran = run_cli(
        &server,
        &["run", "Explain tea", "--model", "anthropic:claude-test"],
        None,
    );
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert!(ran.stdout.contains("The answer."), "{}", ran.stdout);
    assert_eq!(cuts.load(Ordering::SeqCst), 1);
    let again = server
        .seen()
        .into_iter()
        .find(|r| text_of(r).contains("cut off"))
        .expect("asked again");
    assert!(text_of(&again).contains("shorter"), "{}", text_of(&again));
    no_key(&ran.all());
}

#[test]
fn a_429_waits_as_retry_after_says() {
    let server = Server::start(|req| {
        if req.index == 0 {
            error(
                429,
                "rate_limit_error",
                "Number of requests has exceeded your rate limit",
            )
            .with_header("retry-after", "2")
        } else {
            answer(req, "after the wait")
        }
    });
    let waits = Arc::new(Mutex::new(Vec::new()));
    let r = model(&server, &waits).chat(&ask(), &mut |_| {}).unwrap();
    assert_eq!(r.text, "after the wait");
    assert_eq!(r.retries, 1);
    // The wait the server asked for (then the endpoint's pause, which
    // every request honours, is slept out of what is left of it).
    assert_eq!(waits.lock()[0], Duration::from_secs(2));
}

#[test]
fn a_529_is_retried_then_told_with_its_exit_code() {
    let server = Server::start(|req| {
        if req.index == 0 {
            error(529, "overloaded_error", "Overloaded")
        } else {
            answer(req, "once it had room")
        }
    });
    let waits = Arc::new(Mutex::new(Vec::new()));
    let r = model(&server, &waits).chat(&ask(), &mut |_| {}).unwrap();
    assert_eq!(r.text, "once it had room");
    assert_eq!(waits.lock().len(), 1, "one backoff");

    let server = Server::start(|_| error(529, "overloaded_error", "Overloaded"));
    let ran = run_cli(
        &server,
        &[
            "run",
            "Explain tea",
            "--model",
            "anthropic:claude-test,timeout=2s",
        ],
        None,
    );
    assert_eq!(ran.code, 1, "{}", ran.stderr);
    let url = format!("{}/v1/messages", base_url(&server));
    assert!(
        ran.stderr.contains(&format!(
            "model 'anthropic:claude-test': http 529 from {url}: Overloaded"
        )),
        "{}",
        ran.stderr
    );
    no_key(&ran.all());
}

#[test]
fn a_malformed_event_is_a_bad_answer() {
    let server = Server::start(|_| {
        let mut events = events(&["Hel"], &[], "end_turn");
        events.insert(4, "event: content_block_delta\ndata: {not json}\n\n".into());
        Reply::Sse(events)
    });
    let ran = run_cli(
        &server,
        &["run", "Explain tea", "--model", "anthropic:claude-test"],
        None,
    );
    assert_eq!(ran.code, 1, "{}", ran.stderr);
    assert!(
        ran.stderr.contains(
            "model 'anthropic:claude-test': bad response: bad stream chunk: key must be a string"
        ),
        "{}",
        ran.stderr
    );
    no_key(&ran.all());
}

#[test]
fn a_stream_cut_inside_an_event_is_retried_then_told() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let server = Server::start(move |_| {
        counted.fetch_add(1, Ordering::SeqCst);
        let mut events = events(&[], &[], "end_turn");
        events.truncate(2);
        events.push("event: content_block_start\ndata: {\"type\":\"content_blo".into());
        Reply::Sse(events)
    });
    let ran = run_cli(
        &server,
        &[
            "run",
            "Explain tea",
            "--model",
            "anthropic:claude-test,timeout=3s",
        ],
        None,
    );
    assert_eq!(ran.code, 1, "{}", ran.stderr);
    assert!(
        ran.stderr
            .contains("model 'anthropic:claude-test': the stream was cut inside an event"),
        "{}",
        ran.stderr
    );
    assert!(
        calls.load(Ordering::SeqCst) > 1,
        "a cut before any text is retried"
    );
    no_key(&ran.all());
}

#[test]
fn a_401_that_echoes_the_key_says_which_variable_and_never_the_key() {
    let server = Server::start(|req| {
        let key = req.header("x-api-key").unwrap_or_default().to_string();
        error(
            401,
            "authentication_error",
            &format!("invalid x-api-key {key}"),
        )
    });
    let ran = run_cli(
        &server,
        &["run", "Explain tea", "--model", "claude-test"],
        None,
    );
    assert_eq!(ran.code, 1, "{}", ran.stderr);
    let url = format!("{}/v1/messages", base_url(&server));
    assert!(
        ran.stderr.contains(&format!(
            "model 'anthropic:claude-test': http 401 from {url}: check ANTHROPIC_API_KEY \
             (the key was not accepted) (server said: invalid x-api-key ***)"
        )),
        "{}",
        ran.stderr
    );
    assert_eq!(server.seen().len(), 1, "a 401 is not retried");
    no_key(&ran.all());
}

#[test]
fn no_key_for_the_anthropic_api_is_said_before_any_request() {
    let tmp = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_boardroom"))
        .args(["run", "Explain tea", "--model", "claude-test"])
        .current_dir(tmp.path())
        .env("BOARDROOM_HOME", tmp.path())
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("ANTHROPIC_BASE_URL")
        .env_remove("BOARDROOM_MODEL")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(
        stderr,
        "error: --model claude-test: ANTHROPIC_API_KEY is unset: set it to your Anthropic API \
         key, or use --model sim to try boardroom offline\n"
    );
}
