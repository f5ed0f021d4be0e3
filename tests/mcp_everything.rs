//! The MCP client and pool against the real reference server
//! `@modelcontextprotocol/server-everything` (issue 5).

mod mcp_support;

use std::collections::BTreeMap;

use boardroom::{McpPool, ToolError};
use mcp_support::{alive, everything, kill};
use serde_json::json;

fn pool() -> McpPool {
    let mut servers = BTreeMap::new();
    servers.insert("everything".to_string(), everything());
    McpPool::start(&servers, None).expect("start server-everything")
}

#[test]
fn initialize_lists_tools_and_sees_the_unprompted_list_changed() {
    let pool = pool();
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
    // `notifications/initialized`, before it answers the tools/list.
    assert!(
        pool.notifications("everything")
            .iter()
            .any(|m| m == "notifications/tools/list_changed"),
        "{:?}",
        pool.notifications("everything")
    );
}

#[test]
fn echo_and_get_sum_answer() {
    let pool = pool();
    assert_eq!(
        pool.call("everything", "echo", json!({"message": "hello"}))
            .unwrap(),
        "Echo: hello"
    );
    assert_eq!(
        pool.call("everything", "get-sum", json!({"a": 2, "b": 40}))
            .unwrap(),
        "The sum of 2 and 40 is 42."
    );
}

#[test]
fn is_error_results_come_back_as_errors() {
    let pool = pool();
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

#[test]
fn thirty_two_parallel_callers_each_get_their_own_result() {
    let pool = pool();
    let pid = pool.pid("everything").unwrap();
    let results: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..32)
            .map(|i| {
                let pool = &pool;
                s.spawn(move || {
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
    assert_eq!(pool.pid("everything"), Some(pid));
    assert_eq!(pool.restarts("everything"), 0);
}

#[test]
fn a_killed_server_is_restarted_once() {
    let pool = pool();
    let first = pool.pid("everything").unwrap();
    kill(first);
    // The call that finds it dead may fail; the one after works on a new
    // process.
    let _ = pool.call("everything", "echo", json!({"message": "a"}));
    assert_eq!(
        pool.call("everything", "echo", json!({"message": "b"}))
            .unwrap(),
        "Echo: b"
    );
    let second = pool.pid("everything").unwrap();
    assert_ne!(first, second);
    assert_eq!(pool.restarts("everything"), 1);
    assert!(!alive(first), "the dead server {first} was not reaped");

    // A second death is final: calls fail with a clear error.
    kill(second);
    assert!(
        pool.call("everything", "echo", json!({"message": "c"}))
            .is_err()
    );
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
        boardroom::McpServerConfig::new("/nonexistent/mcp-server", Vec::<String>::new()),
    );
    let err = McpPool::start(&servers, None).unwrap_err().to_string();
    assert!(
        err.starts_with("mcp server 'ghost': cannot start '/nonexistent/mcp-server': "),
        "{err}"
    );
}
