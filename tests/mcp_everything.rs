//! The MCP client and pool against the real reference server
//! `@modelcontextprotocol/server-everything` (issue 5), over both
//! transports (issue 10): every test body runs once over stdio and once
//! over Streamable HTTP (`server-everything streamableHttp` on a loopback
//! port).

mod mcp_support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use boardroom::ToolError;
use boardroom::mcp::{Elicitation, McpPool, McpServerConfig};
use boardroom::testing::McpProbe;
use mcp_support::{HttpEverything, alive, everything, kill};
use serde_json::json;

/// One transport under test: the pool, and for HTTP the server process
/// (for stdio the pool owns it).
struct Setup {
    pool: McpPool,
    http: Option<HttpEverything>,
}

#[derive(Clone, Copy, Debug)]
enum Transport {
    Stdio,
    Http,
}

fn setup_with(t: Transport, tweak: impl Fn(&mut McpServerConfig)) -> Setup {
    let (mut config, http) = match t {
        Transport::Stdio => (everything(), None),
        Transport::Http => {
            let server = HttpEverything::start();
            (McpServerConfig::http(server.url()), Some(server))
        }
    };
    tweak(&mut config);
    let mut servers = BTreeMap::new();
    servers.insert("everything".to_string(), config);
    let pool = McpPool::start(&servers, None).expect("start server-everything");
    Setup { pool, http }
}

fn setup(t: Transport) -> Setup {
    setup_with(t, |_| {})
}

impl Setup {
    /// The server's process id (the pool's child over stdio).
    fn pid(&self) -> u32 {
        match &self.http {
            Some(h) => h.pid(),
            None => self.pool.pid("everything").unwrap(),
        }
    }

    /// Kills the server (SIGKILL).
    fn kill(&self) {
        match &self.http {
            Some(h) => h.kill(),
            None => kill(self.pool.pid("everything").unwrap()),
        }
    }

    /// Over HTTP, starts the server again on the same port (over stdio the
    /// pool restarts it).
    fn revive(&self) {
        if let Some(h) = &self.http {
            h.revive();
        }
    }
}

/// Waits (bounded) until a notification arrived.
fn wait_for_notification(pool: &McpPool, method: &str) -> bool {
    let until = Instant::now() + Duration::from_secs(20);
    while Instant::now() < until {
        if pool.notifications("everything").iter().any(|m| m == method) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

fn initialize_lists_tools_and_sees_the_unprompted_list_changed(t: Transport) {
    let s = setup(t);
    let pool = &s.pool;
    let (version, name) = pool.server_info("everything").unwrap();
    assert_eq!(version, "2025-06-18");
    assert_eq!(name, "mcp-servers/everything");
    let tools = pool.tools("everything").unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert!(names.contains(&"echo"), "{names:?}");
    assert!(names.contains(&"get-sum"), "{names:?}");
    let sum = tools.iter().find(|t| t.name == "get-sum").unwrap();
    assert_eq!(sum.input_schema["required"], json!(["a", "b"]));
    // The server announces its conditional tools right after
    // `notifications/initialized`, on its own: over stdio on the one
    // pipe, over HTTP on the GET stream.
    assert!(
        wait_for_notification(pool, "notifications/tools/list_changed"),
        "{:?}",
        pool.notifications("everything")
    );
}

fn echo_and_get_sum_answer(t: Transport) {
    let s = setup(t);
    assert_eq!(
        s.pool
            .call("everything", "echo", json!({"message": "hello"}))
            .unwrap(),
        "Echo: hello"
    );
    assert_eq!(
        s.pool
            .call("everything", "get-sum", json!({"a": 2, "b": 40}))
            .unwrap(),
        "The sum of 2 and 40 is 42."
    );
}

fn is_error_results_come_back_as_errors(t: Transport) {
    let s = setup(t);
    let pool = &s.pool;
    let err = pool
        .call("everything", "get-sum", json!({"a": "two", "b": 1}))
        .unwrap_err();
    assert!(matches!(err, ToolError::Failed { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.starts_with("tool 'everything.get-sum' failed: ") && text.contains("expected number"),
        "{text}"
    );
    let err = pool
        .call("everything", "no-such-tool", json!({}))
        .unwrap_err();
    assert!(err.to_string().contains("not found"), "{err}");
    // The session survives errors.
    assert_eq!(
        pool.call("everything", "echo", json!({"message": "still here"}))
            .unwrap(),
        "Echo: still here"
    );
}

fn thirty_two_parallel_callers_each_get_their_own_result(t: Transport) {
    let s = setup(t);
    let pool = &s.pool;
    let pid = s.pid();
    let results: Vec<String> = std::thread::scope(|sc| {
        let handles: Vec<_> = (0..32)
            .map(|i| {
                sc.spawn(move || {
                    pool.call(
                        "everything",
                        "echo",
                        json!({"message": format!("caller {i}")}),
                    )
                    .unwrap()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (i, r) in results.iter().enumerate() {
        assert_eq!(r, &format!("Echo: caller {i}"));
    }
    // One session served them all.
    assert_eq!(s.pid(), pid);
    assert_eq!(pool.restarts("everything"), 0);
}

fn a_killed_server_is_restarted_once(t: Transport) {
    let s = setup(t);
    let pool = &s.pool;
    let first = s.pid();
    s.kill();
    // The call that finds it dead may fail; the one after works on a new
    // process (stdio) or a new session with the server started again
    // (HTTP).
    let _ = pool.call("everything", "echo", json!({"message": "a"}));
    s.revive();
    assert_eq!(
        pool.call("everything", "echo", json!({"message": "b"}))
            .unwrap(),
        "Echo: b"
    );
    let second = s.pid();
    assert_ne!(first, second);
    assert_eq!(pool.restarts("everything"), 1);
    assert!(!alive(first), "the dead server {first} was not reaped");

    // A second death is final: calls fail with a clear error.
    s.kill();
    assert!(
        pool.call("everything", "echo", json!({"message": "c"}))
            .is_err()
    );
    s.revive();
    let err = pool
        .call("everything", "echo", json!({"message": "d"}))
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "mcp server 'everything': the server died again after 1 restart(s); not restarting it"
    );
    assert_eq!(pool.restarts("everything"), 1);
}

/// The server asks for input in the middle of a call (over HTTP on the
/// call's event stream); with `accept_defaults` the client answers at once
/// (this server's form has required fields without defaults: declined),
/// and the call completes instead of hanging.
fn an_elicitation_is_answered_with_the_defaults(t: Transport) {
    let s = setup_with(t, |c| c.elicitation = Some(Elicitation::AcceptDefaults));
    let text = s
        .pool
        .call("everything", "trigger-elicitation-request", json!({}))
        .unwrap();
    assert!(text.contains("\"action\": \"decline\""), "{text}");
}

macro_rules! both {
    ($($name:ident),* $(,)?) => {
        mod stdio {
            $(#[test] fn $name() { super::$name(super::Transport::Stdio) })*
        }
        mod http {
            $(#[test] fn $name() { super::$name(super::Transport::Http) })*
        }
    };
}

both!(
    initialize_lists_tools_and_sees_the_unprompted_list_changed,
    echo_and_get_sum_answer,
    is_error_results_come_back_as_errors,
    thirty_two_parallel_callers_each_get_their_own_result,
    a_killed_server_is_restarted_once,
    an_elicitation_is_answered_with_the_defaults,
);

#[test]
fn no_server_process_outlives_the_pool() {
    let mut servers = BTreeMap::new();
    servers.insert("one".to_string(), everything());
    servers.insert("two".to_string(), everything());
    let pool = McpPool::start(&servers, None).unwrap();
    let pids: Vec<u32> = ["one", "two"]
        .iter()
        .map(|s| pool.pid(s).unwrap())
        .collect();
    assert!(pids.iter().all(|p| alive(*p)));
    drop(pool);
    for pid in pids {
        assert!(!alive(pid), "server process {pid} outlived the pool");
    }
}

#[test]
fn a_server_that_cannot_start_is_named() {
    let mut servers = BTreeMap::new();
    servers.insert(
        "ghost".to_string(),
        McpServerConfig::new("/nonexistent/mcp-server", Vec::<String>::new()),
    );
    let err = McpPool::start(&servers, None).unwrap_err().to_string();
    assert!(
        err.starts_with("mcp server 'ghost': cannot start '/nonexistent/mcp-server': "),
        "{err}"
    );
}

/// A server restarted behind the client's back no longer knows the session
/// (the spec says 404; server-everything says 400 "No valid session ID"):
/// the client initializes again, once, and sends the call again, without
/// counting a restart.
#[test]
fn an_http_session_the_server_forgot_is_initialized_again() {
    let s = setup(Transport::Http);
    let h = s.http.as_ref().unwrap();
    h.kill();
    h.revive();
    assert_eq!(
        s.pool
            .call("everything", "echo", json!({"message": "again"}))
            .unwrap(),
        "Echo: again"
    );
    assert_eq!(s.pool.restarts("everything"), 0);
}

#[test]
fn an_http_session_is_deleted_when_the_pool_ends() {
    let s = setup(Transport::Http);
    assert_eq!(
        s.pool
            .call("everything", "echo", json!({"message": "x"}))
            .unwrap(),
        "Echo: x"
    );
    drop(s.pool);
    let out = s.http.as_ref().unwrap().output();
    assert!(
        out.contains("Received session termination request"),
        "no DELETE reached the server:\n{out}"
    );
}
