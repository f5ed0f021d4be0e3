//! The transport retry of the OpenAI-compatible provider, against a
//! loopback server: which statuses and failures are retried, the waits the
//! client chose (recorded, never timed), and the errors a person reads.

mod support;

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use boardroom::openai::RetryPolicy;
use boardroom::testing::OpenAiProbe;
use boardroom::{ChatModel, ChatRequest, Message, ModelError, OpenAi, Phase};
use parking_lot::Mutex;
use support::{Reply, Server};

fn request() -> ChatRequest {
    ChatRequest::new("writer", Phase::Draft, 1, vec![Message::user("hello")])
}

/// A model whose waits are recorded instead of slept.
fn model(server: &Server, stream: bool) -> (OpenAi, Arc<Mutex<Vec<Duration>>>) {
    let slept = Arc::new(Mutex::new(Vec::new()));
    let s = Arc::clone(&slept);
    let m = OpenAi::builder(server.base_url(), "test-model")
        .label("default")
        .api_key("sk-test")
        .stream(stream)
        .retry(RetryPolicy {
            max_attempts: 4,
            base_delay: Duration::from_millis(200),
            max_delay: Duration::from_secs(2),
        })
        .sleep_with(move |d| s.lock().push(d))
        .build()
        .unwrap();
    (m, slept)
}

/// A server failing the first `fails` requests with `status`, then answering.
fn failing(status: u16, fails: usize, retry_after: Option<&'static str>) -> Server {
    Server::start(move |req| {
        if req.index < fails {
            let r = Reply::status(status, r#"{"error":{"message":"try later"}}"#);
            match retry_after {
                Some(v) => r.with_header("Retry-After", v),
                None => r,
            }
        } else {
            Reply::answer(req, "fine")
        }
    })
}

#[test]
fn retryable_statuses_are_retried_with_backoff() {
    for status in [429, 500, 502, 503, 504] {
        let server = failing(status, 2, None);
        let (m, slept) = model(&server, false);
        let r = m.chat(&request(), &mut |_| {}).unwrap();
        assert_eq!(r.text, "fine", "status {status}");
        assert_eq!(r.retries, 2, "status {status}");
        assert_eq!(server.requests(), 3, "status {status}");
        let waits = m.retry_waits();
        assert_eq!(waits, *slept.lock(), "the waits chosen are the waits slept");
        assert_eq!(waits.len(), 2);
        // Full jitter under an exponential ceiling: 200 ms, then 400 ms.
        assert!(waits[0] <= Duration::from_millis(200), "{waits:?}");
        assert!(waits[1] <= Duration::from_millis(400), "{waits:?}");
    }
}

#[test]
fn retry_after_seconds_is_honoured() {
    let server = failing(429, 1, Some("1"));
    let (m, _) = model(&server, true);
    let r = m.chat(&request(), &mut |_| {}).unwrap();
    assert_eq!(r.retries, 1);
    assert_eq!(m.retry_waits(), vec![Duration::from_secs(1)]);
}

#[test]
fn retry_after_http_date_is_honoured() {
    // A date about 30 s ahead; the wait is measured from "now" on the
    // client, so allow the seconds that pass between the two.
    let at = SystemTime::now() + Duration::from_secs(30);
    let date = http_date(at);
    let server = Server::start(move |req| {
        if req.index == 0 {
            Reply::status(503, "busy").with_header("Retry-After", &date)
        } else {
            Reply::answer(req, "fine")
        }
    });
    let (m, _) = model(&server, false);
    m.chat(&request(), &mut |_| {}).unwrap();
    let waits = m.retry_waits();
    assert_eq!(waits.len(), 1);
    assert!(
        waits[0] > Duration::from_secs(20) && waits[0] <= Duration::from_secs(30),
        "{waits:?}"
    );
}

#[test]
fn gives_up_after_the_attempt_cap() {
    let server = failing(503, 100, None);
    let (m, _) = model(&server, false);
    let e = m.chat(&request(), &mut |_| {}).unwrap_err();
    assert_eq!(server.requests(), 4);
    assert_eq!(m.retry_waits().len(), 3);
    assert_eq!(
        e.to_string(),
        format!(
            "model 'default': http 503 from {}/chat/completions after 4 attempts: try later",
            server.base_url()
        )
    );
}

#[test]
fn a_retry_after_past_the_time_cap_gives_up() {
    let server = failing(429, 100, Some("3600"));
    let (m, _) = model(&server, false);
    let e = m.chat(&request(), &mut |_| {}).unwrap_err();
    assert!(
        matches!(
            e,
            ModelError::Http {
                status: 429,
                attempts: 1,
                ..
            }
        ),
        "{e}"
    );
    assert!(m.retry_waits().is_empty());
}

#[test]
fn client_errors_are_not_retried_and_say_what_to_do() {
    let cases = [
        (401, "check OPENAI_API_KEY (server said: bad key)"),
        (
            403,
            "check OPENAI_API_KEY and its access to model 'test-model' (server said: bad key)",
        ),
        (
            404,
            "check the base url and the model name 'test-model' (server said: bad key)",
        ),
        (400, "bad key"),
    ];
    for (status, detail) in cases {
        let server =
            Server::start(move |_| Reply::status(status, r#"{"error":{"message":"bad key"}}"#));
        let (m, _) = model(&server, true);
        let e = m.chat(&request(), &mut |_| {}).unwrap_err();
        assert_eq!(server.requests(), 1, "status {status} must not be retried");
        assert!(m.retry_waits().is_empty());
        assert_eq!(
            e.to_string(),
            format!(
                "model 'default': http {status} from {}/chat/completions: {detail}",
                server.base_url()
            )
        );
    }
}

#[test]
fn dropped_connections_are_retried() {
    let server = Server::start(|req| {
        if req.index == 0 {
            Reply::Drop
        } else {
            Reply::answer(req, "fine")
        }
    });
    let (m, _) = model(&server, true);
    let r = m.chat(&request(), &mut |_| {}).unwrap();
    assert_eq!(r.text, "fine");
    assert_eq!(r.retries, 1);
    assert_eq!(server.requests(), 2);
}

/// Issue 8, finding 5: one deadline per call. A server that holds the
/// first attempt past the deadline ends the call at the deadline, with no
/// second attempt and a message that says which setting to change.
#[test]
fn a_slow_attempt_ends_at_the_call_deadline() {
    let server = Server::start(|req| {
        Reply::Delayed(
            Duration::from_millis(1500),
            Box::new(Reply::answer(req, "late")),
        )
    });
    let m = OpenAi::builder(server.base_url(), "test-model")
        .label("default")
        .timeout(Duration::from_millis(300))
        .sleep_with(|_| {})
        .build()
        .unwrap();
    let e = m.chat(&request(), &mut |_| {}).unwrap_err();
    assert_eq!(
        e.to_string(),
        "model 'default': no complete answer within the call deadline of 300ms (every attempt \
         and wait included; change it with timeout= in the model spec or timeout: in team.yaml)"
    );
    assert_eq!(server.requests(), 1);
}

#[test]
fn unreachable_server_is_a_transport_error_after_retries() {
    // Bind then drop a listener: nothing listens on that port now.
    let port = support::free_port();
    let m = OpenAi::builder(format!("http://127.0.0.1:{port}/v1"), "m")
        .label("default")
        .retry(RetryPolicy {
            max_attempts: 3,
            ..RetryPolicy::default()
        })
        .sleep_with(|_| {})
        .build()
        .unwrap();
    let e = m.chat(&request(), &mut |_| {}).unwrap_err();
    assert!(
        matches!(e, ModelError::Transport { attempts: 3, .. }),
        "{e}"
    );
    assert!(e.to_string().starts_with("model 'default': "), "{e}");
}

/// IMF-fixdate for a time.
fn http_date(t: SystemTime) -> String {
    let secs = t.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs();
    let days = secs / 86_400;
    let (h, m, s) = ((secs % 86_400) / 3600, (secs % 3600) / 60, secs % 60);
    // Civil from days (Howard Hinnant).
    let z = days as i64 + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let mo = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(mo <= 2);
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    format!(
        "{}, {d:02} {} {y} {h:02}:{m:02}:{s:02} GMT",
        DAYS[(days % 7) as usize],
        MONTHS[(mo - 1) as usize]
    )
}
