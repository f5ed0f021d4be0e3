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
use boardroom::{
    AgentSpec, Anthropic, ChatModel, ChatRequest, Event, EventKind, Message, Phase, RunStatus,
    Runtime, Team, TeamConfig,
};
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
    let said = ran
        .stderr
        .lines()
        .find(|l| l.starts_with("error:"))
        .unwrap_or_else(|| panic!("no error line:\n{}", ran.stderr));
    // Retried until the attempts or the deadline ran out (the backoff is
    // random): either way the status, the attempts and the server's word.
    assert!(
        said.starts_with(&format!(
            "error: master (plan): model 'anthropic:claude-test': http 529 from {url} after "
        )) && (said.ends_with(" attempts: Overloaded")
            || said.ends_with("(server said: Overloaded)")),
        "{said}"
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

#[test]
fn a_500_and_a_503_are_retried_with_backoff_then_answered() {
    for status in [500, 503] {
        let server = Server::start(move |req| {
            if req.index < 2 {
                error(status, "api_error", "Internal server error")
            } else {
                answer(req, "on the third try")
            }
        });
        let waits = Arc::new(Mutex::new(Vec::new()));
        let r = model(&server, &waits).chat(&ask(), &mut |_| {}).unwrap();
        assert_eq!(r.text, "on the third try", "{status}");
        assert_eq!(r.retries, 2, "{status}");
        assert_eq!(server.seen().len(), 3, "{status}");
        // Full jitter under an exponential ceiling: 500 ms, then 1 s.
        let waits = waits.lock().clone();
        assert_eq!(waits.len(), 2, "{status}: {waits:?}");
        assert!(waits[0] <= Duration::from_millis(500), "{waits:?}");
        assert!(waits[1] <= Duration::from_secs(1), "{waits:?}");
    }
}

#[test]
fn a_deadline_that_runs_out_mid_retries_is_told_with_its_exit_code() {
    // The first attempt is refused at once; the retry after it (the
    // jittered wait is at most 500 ms) hangs until the deadline runs out.
    // A server that always refused at once raced: a wait drawn over the
    // time left ended the call after one attempt.
    let server = Server::start(|req| {
        if req.index == 0 {
            error(503, "api_error", "Service unavailable")
        } else {
            Reply::Hang
        }
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
    let said = ran
        .stderr
        .lines()
        .find(|l| l.starts_with("error:"))
        .unwrap_or_else(|| panic!("no error line:\n{}", ran.stderr));
    assert!(
        said.contains("model 'anthropic:claude-test': ")
            && said.contains("the call deadline of 3s (every attempt and wait included; change it with timeout= in the model spec or timeout: in team.yaml)"),
        "{said}"
    );
    assert!(server.seen().len() > 1, "retried before the deadline");
    no_key(&ran.all());
}

#[test]
fn a_400_403_or_404_is_told_in_one_line_with_the_fix_and_not_retried() {
    let cases = [
        (
            400,
            "invalid_request_error",
            "max_tokens: 999999 > 64000, the maximum for claude-test",
            "the request for model 'claude-test' was refused: check its max_tokens (max_tokens=N \
             in the model spec) and temperature (server said: max_tokens: 999999 > 64000, the \
             maximum for claude-test)",
        ),
        (
            403,
            "permission_error",
            "Your API key does not have permission to use the specified resource.",
            "the key in ANTHROPIC_API_KEY lacks permission for model 'claude-test' (server said: \
             Your API key does not have permission to use the specified resource.)",
        ),
        (
            404,
            "not_found_error",
            "model: claude-test",
            "the model name 'claude-test' is unknown to the API: name a model it serves (e.g. \
             claude-sonnet-4-5), or check the base url (server said: model: claude-test)",
        ),
    ];
    for (status, kind, message, detail) in cases {
        let server = Server::start(move |_| error(status, kind, message));
        let ran = run_cli(
            &server,
            &["run", "Explain tea", "--model", "anthropic:claude-test"],
            None,
        );
        assert_eq!(ran.code, 1, "as for OpenAI: {}", ran.stderr);
        assert_eq!(server.seen().len(), 1, "a {status} is not retried");
        let url = format!("{}/v1/messages", base_url(&server));
        let said: Vec<&str> = ran
            .stderr
            .lines()
            .filter(|l| l.starts_with("error:"))
            .collect();
        assert_eq!(
            said,
            [format!(
                "error: master (plan): model 'anthropic:claude-test': http {status} from {url}: {detail}"
            )],
            "{}",
            ran.stderr
        );
        no_key(&ran.all());
    }
}

#[test]
fn no_log_level_shows_the_key() {
    for level in ["error", "warn", "info", "debug", "trace"] {
        let server = Server::start(|req| {
            let key = req.header("x-api-key").unwrap_or_default().to_string();
            if req.index == 0 {
                // Retried and logged: the key the server echoes with it.
                error(500, "api_error", &format!("bad gateway for {key}"))
            } else {
                one_round(req, "writer", &format!("Done, {key}."))
            }
        });
        let ran = run_cli_logged(
            &server,
            &["run", "Explain tea", "--model", "anthropic:claude-test"],
            None,
            Some(KEY),
            level,
        );
        assert_eq!(ran.code, 0, "{level}: {}", ran.stderr);
        assert!(ran.stdout.contains("Done, ***."), "{level}: {}", ran.stdout);
        no_key(&ran.all());
    }
}

#[test]
fn a_529_lowers_the_endpoint_limit_and_it_recovers() {
    const MEMBERS: usize = 12;
    // The first draft is refused with 529 while the other drafts are in
    // flight (a refusal alone says nothing about concurrency): the limit
    // comes down, and grows again as the answers come back.
    let drafts = Arc::new(AtomicUsize::new(0));
    let d = Arc::clone(&drafts);
    // Every answer takes as long (the latency floor stays put), the 529
    // comes back sooner, while the other drafts are still in flight.
    let server = Server::start(move |req| {
        let text = text_of(req);
        let reply = if text.contains("Split this task") {
            let plan: String = (0..MEMBERS)
                .map(|i| format!("ASSIGN:m{i}:write part {i}\n"))
                .collect();
            answer(req, &plan)
        } else if text.contains("Round 1 of") {
            answer(req, "DONE\nThe parts, merged.")
        } else if d.fetch_add(1, Ordering::SeqCst) == 0 {
            let refused = error(529, "overloaded_error", "Overloaded");
            return Reply::Delayed(Duration::from_millis(300), Box::new(refused));
        } else {
            answer(req, "A draft.")
        };
        Reply::Delayed(Duration::from_millis(600), Box::new(reply))
    });
    let model = Anthropic::builder("claude-test")
        .base_url(base_url(&server))
        .api_key(KEY)
        .max_in_flight(4)
        .sleep_with(|_| {})
        .build()
        .unwrap();
    let mut agents = vec![AgentSpec::master("lead", "You lead the team.")];
    agents.extend((0..MEMBERS).map(|i| AgentSpec::member(format!("m{i}"), "a part", "You work.")));
    let team = Team::new("limits", TeamConfig::default(), agents).unwrap();
    let (tx, rx) = crossbeam_channel::unbounded();
    let run = Runtime::new(team, model)
        .events(tx)
        .run("Write the parts")
        .unwrap();
    assert_eq!(run.status, RunStatus::Done);
    assert_eq!(run.answer, "The parts, merged.");
    assert!(
        drafts.load(Ordering::SeqCst) > MEMBERS,
        "the refused draft was sent again"
    );
    let changes: Vec<(usize, usize, String)> = rx
        .try_iter()
        .filter_map(|e: Event| match e.kind {
            EventKind::LimitChanged {
                from, to, reason, ..
            } => Some((from, to, reason.to_string())),
            _ => None,
        })
        .collect();
    let down = changes
        .iter()
        .position(|(from, to, reason)| reason == "overloaded" && to < from)
        .unwrap_or_else(|| panic!("the 529 lowered the limit: {changes:?}"));
    assert!(
        changes[down..].iter().any(|(from, to, _)| to > from),
        "and the limit grew back: {changes:?}"
    );
}
