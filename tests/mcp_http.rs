//! The Streamable HTTP transport against a scripted loopback server, for
//! what the reference server and the conformance suite do not do: a real
//! 404 on an expired session, the session and version headers, a server
//! ping and notifications on the response stream, a bearer token from
//! `${VAR}`, a line past the cap, an unreachable URL (issue 10).

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use boardroom::mcp::{McpPool, McpServerConfig};
use boardroom::testing::McpProbe;
use serde_json::{Value, json};
use support::{Reply, Request, Server};

fn json_reply(id: &Value, result: Value) -> Reply {
    Reply::status(
        200,
        &json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string(),
    )
}

/// A small MCP server: sessions `s1`, `s2`, ... (a new one per
/// initialize), one tool `hello`, GET answered 405. `tools/call` on the
/// first session answers 404 (the session expired) when `expire` is set;
/// otherwise it answers on an event stream that first carries a log
/// notification and a ping.
fn mcp_server(expire: bool) -> (Server, Arc<AtomicUsize>) {
    let sessions = Arc::new(AtomicUsize::new(0));
    let s = Arc::clone(&sessions);
    let server = Server::start(move |req: &Request| {
        let method = req.body["method"].as_str().unwrap_or("");
        let id = &req.body["id"];
        match method {
            "" if req.body.is_null() => Reply::status(405, ""),
            "" => Reply::status(202, ""),
            "initialize" => {
                let n = s.fetch_add(1, Ordering::SeqCst) + 1;
                json_reply(
                    id,
                    json!({"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                           "serverInfo": {"name": "scripted"}}),
                )
                .with_header("Mcp-Session-Id", &format!("s{n}"))
            }
            "notifications/initialized" => Reply::status(202, ""),
            "tools/list" => json_reply(
                id,
                json!({"tools": [{"name": "hello", "inputSchema": {"type": "object"}}]}),
            ),
            "tools/call" if expire && req.header("mcp-session-id") == Some("s1") => {
                Reply::status(404, r#"{"jsonrpc":"2.0","error":{"code":-32001,"message":"Session not found"}}"#)
            }
            "tools/call" => Reply::Sse(vec![
                "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"working\"}}\n\n".into(),
                "data: {\"jsonrpc\":\"2.0\",\"id\":\"srv-1\",\"method\":\"ping\"}\n\n".into(),
                format!(
                    "data: {}\n\n",
                    json!({"jsonrpc": "2.0", "id": id,
                           "result": {"content": [{"type": "text", "text": "hi there"}]}})
                ),
            ]),
            _ => Reply::status(400, "unexpected"),
        }
    });
    (server, sessions)
}

fn pool(config: McpServerConfig) -> Result<McpPool, boardroom::ToolError> {
    let mut servers = BTreeMap::new();
    servers.insert("remote".to_string(), config);
    McpPool::start(&servers, None)
}

fn url(server: &Server) -> String {
    format!("http://127.0.0.1:{}/mcp", server.port)
}

#[test]
fn session_and_version_headers_ping_and_notifications_on_the_stream() {
    let (server, _) = mcp_server(false);
    let pool = pool(McpServerConfig::http(url(&server))).unwrap();
    assert_eq!(pool.call("remote", "hello", json!({})).unwrap(), "hi there");
    assert!(
        pool.notifications("remote")
            .contains(&"notifications/message".to_string())
    );
    let seen = server.seen();
    let init = seen
        .iter()
        .find(|r| r.body["method"] == "initialize")
        .unwrap();
    assert_eq!(
        init.header("accept"),
        Some("application/json, text/event-stream")
    );
    assert_eq!(init.header("mcp-session-id"), None);
    assert_eq!(init.header("mcp-protocol-version"), None);
    let call = seen
        .iter()
        .find(|r| r.body["method"] == "tools/call")
        .unwrap();
    assert_eq!(call.header("mcp-session-id"), Some("s1"));
    assert_eq!(call.header("mcp-protocol-version"), Some("2025-06-18"));
    // The server's ping was answered with a POST of the result.
    let pong = seen
        .iter()
        .find(|r| r.body["id"] == "srv-1")
        .expect("the ping was not answered");
    assert_eq!(pong.body["result"], json!({}));
    assert_eq!(pong.header("mcp-session-id"), Some("s1"));
}

#[test]
fn an_expired_session_is_initialized_again_once() {
    let (server, sessions) = mcp_server(true);
    let pool = pool(McpServerConfig::http(url(&server))).unwrap();
    assert_eq!(pool.call("remote", "hello", json!({})).unwrap(), "hi there");
    assert_eq!(sessions.load(Ordering::SeqCst), 2);
    let calls: Vec<Option<String>> = server
        .seen()
        .iter()
        .filter(|r| r.body["method"] == "tools/call")
        .map(|r| r.header("mcp-session-id").map(str::to_string))
        .collect();
    assert_eq!(calls, [Some("s1".to_string()), Some("s2".to_string())]);
    assert_eq!(pool.restarts("remote"), 0);
}

#[test]
fn a_bearer_token_from_the_environment_reaches_the_server() {
    let var = "BOARDROOM_TEST_MCP_HTTP_TOKEN";
    set_env(var, "tok-12345-secret");
    let (server, _) = mcp_server(false);
    let config =
        McpServerConfig::http(url(&server)).header("Authorization", format!("Bearer ${{{var}}}"));
    let pool = pool(config).unwrap();
    pool.call("remote", "hello", json!({})).unwrap();
    assert!(
        server
            .seen()
            .iter()
            .all(|r| r.header("authorization") == Some("Bearer tok-12345-secret"))
    );

    let config = McpServerConfig::http(url(&server))
        .header("Authorization", "Bearer ${BOARDROOM_SURELY_UNSET_TOKEN}");
    let err = self::pool(config).unwrap_err().to_string();
    assert_eq!(
        err,
        "mcp server 'remote': header 'Authorization': environment variable \
         'BOARDROOM_SURELY_UNSET_TOKEN' is not set"
    );
}

/// Sets a variable for this process.
fn set_env(var: &str, value: &str) {
    // SAFETY: set_var is unsafe because another thread may read the
    // environment at the same time; the name is read by this test only.
    unsafe { std::env::set_var(var, value) };
}

#[test]
fn an_unreachable_url_is_named() {
    // A port nothing listens on: bind, take the port, close.
    let port = support::free_port();
    let err = pool(McpServerConfig::http(format!(
        "http://127.0.0.1:{port}/mcp"
    )))
    .unwrap_err()
    .to_string();
    assert!(
        err.starts_with(&format!(
            "mcp server 'remote': cannot reach http://127.0.0.1:{port}/mcp: "
        )),
        "{err}"
    );
}

#[test]
fn an_endless_event_line_is_an_error_not_a_buffer() {
    let big = "x".repeat(17 * 1024 * 1024);
    let server = Server::start(move |req: &Request| {
        let id = &req.body["id"];
        match req.body["method"].as_str().unwrap_or("") {
            "initialize" => json_reply(
                id,
                json!({"protocolVersion": "2025-06-18", "capabilities": {},
                       "serverInfo": {"name": "flood"}}),
            ),
            "tools/list" => Reply::Sse(vec![format!("data: {big}")]),
            "" if req.body.is_null() => Reply::status(405, ""),
            _ => Reply::status(202, ""),
        }
    });
    let err = pool(McpServerConfig::http(url(&server)))
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "mcp server 'remote': the server wrote a line of more than 16 MiB to the event \
         stream (the limit)"
    );
}

/// A scripted server whose `tools/call` is `reply`.
fn calls_answered_with(reply: impl Fn() -> Reply + Send + Sync + 'static) -> Server {
    Server::start(move |req: &Request| {
        let id = &req.body["id"];
        match req.body["method"].as_str().unwrap_or("") {
            "initialize" => json_reply(
                id,
                json!({"protocolVersion": "2025-06-18", "capabilities": {},
                       "serverInfo": {"name": "odd"}}),
            ),
            "tools/list" => json_reply(id, json!({"tools": [{"name": "t"}]})),
            "tools/call" => reply(),
            "" if req.body.is_null() => Reply::status(405, ""),
            _ => Reply::status(202, ""),
        }
    })
}

#[test]
fn a_server_that_never_answers_a_call_times_out() {
    let server = calls_answered_with(|| {
        Reply::Delayed(
            std::time::Duration::from_secs(5),
            Box::new(Reply::status(200, "{}")),
        )
    });
    let mut config = McpServerConfig::http(url(&server));
    // The timeout also bounds tools/list at the pool's start (0.5 s raced
    // with it on a loaded machine).
    config.timeout = Some(2.0);
    let pool = pool(config).unwrap();
    let err = pool.call("remote", "t", json!({})).unwrap_err().to_string();
    assert_eq!(
        err,
        "mcp server 'remote': tools/call: no answer within 2.0s"
    );
}

#[test]
fn a_flood_of_notifications_without_an_answer_ends_the_call() {
    let flood: Vec<String> = (0..1500)
        .map(|i| {
            format!(
                "data: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{{\"data\":{i}}}}}\n\n"
            )
        })
        .collect();
    let server = calls_answered_with(move || Reply::Sse(flood.clone()));
    let pool = pool(McpServerConfig::http(url(&server))).unwrap();
    let err = pool.call("remote", "t", json!({})).unwrap_err().to_string();
    assert!(
        err.ends_with("tools/call: the server closed the stream before answering"),
        "{err}"
    );
    // Only the last thousand notifications are kept.
    assert_eq!(pool.notifications("remote").len(), 1000);
}

#[test]
fn a_token_the_server_echoes_in_an_error_is_masked() {
    let var = "BOARDROOM_TEST_MCP_ECHOED_TOKEN";
    set_env(var, "echoed-secret-4242");
    let server = Server::start(|req: &Request| {
        let auth = req.header("authorization").unwrap_or("").to_string();
        Reply::status(401, &format!("{{\"error\":\"bad credentials: {auth}\"}}"))
    });
    let config = McpServerConfig::http(url(&server))
        .header("Authorization", format!("Bearer ${{{var}}}"))
        .header("X-Client", "boardroom-tests");
    let err = pool(config).unwrap_err().to_string();
    assert_eq!(
        err,
        "mcp server 'remote': http status 401: {\"error\":\"bad credentials: ***\"}"
    );
}

#[test]
fn server_pings_whose_answers_hang_do_not_stretch_a_call_past_its_timeout() {
    // The call's stream carries four pings, then the answer; the server
    // takes 5 s to take each pong. Answering the pings belongs to the
    // call: once its 2 s are up it ends, with no more pongs sent. (The
    // timeout also bounds tools/list at the start: 1 s raced with it.)
    let pongs = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&pongs);
    let server = Server::start(move |req: &Request| {
        let id = &req.body["id"];
        if req.body.get("result").is_some() {
            seen.fetch_add(1, Ordering::SeqCst);
            return Reply::Delayed(
                std::time::Duration::from_secs(5),
                Box::new(Reply::status(202, "")),
            );
        }
        match req.body["method"].as_str().unwrap_or("") {
            "initialize" => json_reply(
                id,
                json!({"protocolVersion": "2025-06-18", "capabilities": {},
                       "serverInfo": {"name": "pings"}}),
            ),
            "tools/list" => json_reply(id, json!({"tools": [{"name": "t"}]})),
            "tools/call" => {
                let mut events: Vec<String> = (0..4)
                    .map(|i| {
                        format!(
                            "data: {{\"jsonrpc\":\"2.0\",\"id\":\"p{i}\",\"method\":\"ping\"}}\n\n"
                        )
                    })
                    .collect();
                events.push(format!(
                    "data: {}\n\n",
                    json!({"jsonrpc": "2.0", "id": id,
                           "result": {"content": [{"type": "text", "text": "late"}]}})
                ));
                Reply::Sse(events)
            }
            "" if req.body.is_null() => Reply::status(405, ""),
            _ => Reply::status(202, ""),
        }
    });
    let mut config = McpServerConfig::http(url(&server));
    config.timeout = Some(2.0);
    let pool = pool(config).unwrap();
    let err = pool.call("remote", "t", json!({})).unwrap_err().to_string();
    assert_eq!(
        err,
        "mcp server 'remote': tools/call: no answer within 2.0s"
    );
    assert_eq!(
        pongs.load(Ordering::SeqCst),
        1,
        "pongs sent after the call's time was up"
    );
}

#[test]
fn a_piece_of_the_token_the_server_echoes_is_masked_too() {
    // A server that echoes the credential cut short (as logs and error
    // pages often do): any piece of 8 characters or more from its start is
    // masked, as for the model API key.
    let var = "BOARDROOM_TEST_MCP_CUT_TOKEN";
    set_env(var, "cut-secret-0123456789abcdef");
    let server = Server::start(|req: &Request| {
        let auth = req.header("authorization").unwrap_or("");
        let token = auth.strip_prefix("Bearer ").unwrap_or(auth);
        Reply::status(
            401,
            &format!("{{\"error\":\"unknown token {}...\"}}", &token[..14]),
        )
    });
    let config =
        McpServerConfig::http(url(&server)).header("Authorization", format!("Bearer ${{{var}}}"));
    let err = pool(config).unwrap_err().to_string();
    assert_eq!(
        err,
        "mcp server 'remote': http status 401: {\"error\":\"unknown token ***...\"}"
    );
}

#[test]
fn a_token_from_the_environment_in_the_url_is_masked_on_its_own() {
    let var = "BOARDROOM_TEST_MCP_URL_TOKEN";
    set_env(var, "url-secret-77aa88bb");
    let server = Server::start(|_: &Request| {
        Reply::status(403, "{\"error\":\"key url-secret-77aa88bb is revoked\"}")
    });
    let config = McpServerConfig::http(format!("{}?key=${{{var}}}", url(&server)));
    let err = pool(config).unwrap_err().to_string();
    assert_eq!(
        err,
        "mcp server 'remote': http status 403: {\"error\":\"key *** is revoked\"}"
    );
}

#[test]
fn a_header_that_cannot_be_sent_is_named_before_anything_is_sent() {
    let server = Server::start(|_: &Request| Reply::status(500, ""));
    let err = pool(McpServerConfig::http(url(&server)).header("Bad Header", "x"))
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "mcp server 'remote': header 'Bad Header': not a valid header name"
    );
    let var = "BOARDROOM_TEST_MCP_CRLF_TOKEN";
    set_env(var, "tok-1\r\nX-Injected: secret-tail-99");
    let config =
        McpServerConfig::http(url(&server)).header("Authorization", format!("Bearer ${{{var}}}"));
    let err = pool(config).unwrap_err().to_string();
    assert_eq!(
        err,
        "mcp server 'remote': header 'Authorization': the value holds a line break or \
         another control character"
    );
    assert!(server.seen().is_empty(), "a request was sent");

    let err = pool(McpServerConfig::http("http://[::1/mcp"))
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "mcp server 'remote': url 'http://[::1/mcp' is not a valid URL: invalid authority"
    );
}

#[test]
fn a_server_that_answers_each_pong_with_a_new_ping_cannot_nest_without_end() {
    // The POST of each answer to a ping comes back with an event stream
    // holding a new ping. Answering from inside that answer would nest one
    // exchange in another until the stack runs out; an answer's own
    // response is read, but requests in it are not answered.
    let pongs = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&pongs);
    let ping =
        |n: usize| format!("data: {{\"jsonrpc\":\"2.0\",\"id\":\"p{n}\",\"method\":\"ping\"}}\n\n");
    let server = Server::start(move |req: &Request| {
        let id = &req.body["id"];
        if req.body.get("result").is_some() {
            let n = seen.fetch_add(1, Ordering::SeqCst) + 1;
            return Reply::Sse(vec![ping(n)]);
        }
        match req.body["method"].as_str().unwrap_or("") {
            "initialize" => json_reply(
                id,
                json!({"protocolVersion": "2025-06-18", "capabilities": {},
                       "serverInfo": {"name": "nest"}}),
            ),
            "tools/list" => json_reply(id, json!({"tools": [{"name": "t"}]})),
            "tools/call" => Reply::Sse(vec![
                ping(0),
                format!(
                    "data: {}\n\n",
                    json!({"jsonrpc": "2.0", "id": id,
                           "result": {"content": [{"type": "text", "text": "done"}]}})
                ),
            ]),
            "" if req.body.is_null() => Reply::status(405, ""),
            _ => Reply::status(202, ""),
        }
    });
    let mut config = McpServerConfig::http(url(&server));
    config.timeout = Some(3.0);
    let pool = pool(config).unwrap();
    assert_eq!(pool.call("remote", "t", json!({})).unwrap(), "done");
    assert_eq!(
        pongs.load(Ordering::SeqCst),
        1,
        "pongs answered inside pongs"
    );
}

#[test]
fn a_json_answer_without_the_response_is_an_error_at_once() {
    // A request's JSON answer must be its response; one that is not (here
    // an empty object) is named, not waited on until the call's timeout.
    let server = calls_answered_with(|| Reply::status(200, "{}"));
    let mut config = McpServerConfig::http(url(&server));
    config.timeout = Some(600.0);
    let pool = pool(config).unwrap();
    let err = pool.call("remote", "t", json!({})).unwrap_err().to_string();
    assert_eq!(
        err,
        "mcp server 'remote': protocol error: tools/call: the server's JSON answer holds no \
         response to it"
    );
}

#[test]
fn a_redirect_is_named_not_followed_with_the_headers() {
    // Following it would send the headers (here an API key) to whatever
    // host the server names; like curl without -L, the client stops and
    // says where the server points.
    let elsewhere = Server::start(|_: &Request| Reply::status(500, ""));
    let target = format!("http://127.0.0.1:{}/mcp", elsewhere.port);
    let to = target.clone();
    let server =
        Server::start(move |_: &Request| Reply::status(307, "").with_header("Location", &to));
    let config = McpServerConfig::http(url(&server)).header("X-Api-Key", "literal-key-123456");
    let err = pool(config).unwrap_err().to_string();
    assert_eq!(
        err,
        format!(
            "mcp server 'remote': http status 307: the server redirects to '{target}'; \
             redirects are not followed (they would carry the headers there): set that url"
        )
    );
    assert!(elsewhere.seen().is_empty(), "the redirect was followed");
}

#[test]
fn an_error_page_is_shown_on_one_line_without_terminal_escapes() {
    let server = Server::start(|_: &Request| {
        Reply::status(
            500,
            "<html>\r\n  <p>oops</p>\n\x1b[2J\x1b]0;owned\x07</html>",
        )
        .with_header("Content-Type", "text/html")
    });
    let err = pool(McpServerConfig::http(url(&server)))
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "mcp server 'remote': http status 500: <html> <p>oops</p> [2J ]0;owned </html>"
    );
}

#[test]
fn a_retry_after_is_honoured_within_the_call_timeout() {
    // 429 with `Retry-After: 1` until a second has passed since the first
    // one: only a client that waits as asked gets through in 3 attempts.
    let first = Arc::new(parking_lot::Mutex::new(None::<std::time::Instant>));
    let server = calls_answered_with(move || {
        let mut first = first.lock();
        let since = first.get_or_insert_with(std::time::Instant::now).elapsed();
        if since < std::time::Duration::from_millis(950) {
            Reply::status(429, "slow down").with_header("Retry-After", "1")
        } else {
            json_reply(
                &json!(3),
                json!({"content": [{"type": "text", "text": "ok"}]}),
            )
        }
    });
    let pool = pool(McpServerConfig::http(url(&server))).unwrap();
    let err = pool.call("remote", "t", json!({}));
    assert_eq!(err.unwrap(), "ok");

    // Asked to wait longer than the call may take: said at once.
    let server =
        calls_answered_with(|| Reply::status(429, "slow down").with_header("Retry-After", "3600"));
    let pool = self::pool(McpServerConfig::http(url(&server))).unwrap();
    let err = pool.call("remote", "t", json!({})).unwrap_err().to_string();
    assert!(
        err.ends_with(
            "http status 429: the server asked to wait 3600 s, past the call's timeout of 60 s"
        ),
        "{err}"
    );
}
