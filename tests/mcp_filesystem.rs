//! The MCP pool against the real `@modelcontextprotocol/server-filesystem`
//! on a temporary directory (issue 5).

mod mcp_support;

use std::collections::BTreeMap;

use boardroom::ToolError;
use boardroom::mcp::McpPool;
use mcp_support::filesystem;
use serde_json::json;

#[test]
fn reads_and_writes_inside_its_directory_and_refuses_outside() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join("hello.txt"), "hi there\n").unwrap();
    let mut servers = BTreeMap::new();
    servers.insert("fs".to_string(), filesystem(&root));
    let pool = McpPool::start(&servers, None).unwrap();

    let names: Vec<String> = pool
        .tools("fs")
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    for expected in ["read_text_file", "write_file", "list_directory"] {
        assert!(names.iter().any(|n| n == expected), "{names:?}");
    }

    let file = root.join("hello.txt");
    assert_eq!(
        pool.call("fs", "read_text_file", json!({"path": file}))
            .unwrap(),
        "hi there\n"
    );
    let out = root.join("out.md");
    pool.call(
        "fs",
        "write_file",
        json!({"path": out, "content": "# written by mcp"}),
    )
    .unwrap();
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "# written by mcp");
    let listing = pool
        .call("fs", "list_directory", json!({"path": root}))
        .unwrap();
    assert!(listing.contains("[FILE] out.md"), "{listing}");

    let err = pool
        .call("fs", "read_text_file", json!({"path": "/etc/passwd"}))
        .unwrap_err();
    assert!(matches!(err, ToolError::Failed { .. }), "{err:?}");
    assert!(err.to_string().contains("Access denied"), "{err}");
}
