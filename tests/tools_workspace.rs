//! The workspace tools on a real file system: confined to the workspace,
//! escapes refused with a clear error (issue 5).

use std::sync::Mutex;

use boardroom::{ToolContext, ToolRegistry};
use serde_json::{Value, json};

fn call(tool: &str, args: Value, ctx: &ToolContext<'_>) -> Result<String, String> {
    let registry = ToolRegistry::builtin();
    registry
        .get(tool)
        .expect("a built-in tool")
        .call(args, ctx)
        .map_err(|e| e.to_string())
}

#[test]
fn write_read_list_inside_the_workspace() {
    let dir = tempfile::tempdir().unwrap();
    let written = Mutex::new(Vec::new());
    let hook = |path: &str, bytes: u64| written.lock().unwrap().push((path.to_string(), bytes));
    let ctx = ToolContext::new("writer")
        .with_workspace(dir.path())
        .on_file(&hook);
    assert_eq!(
        call(
            "workspace_write",
            json!({"path": "notes/a.md", "content": "hello"}),
            &ctx
        )
        .unwrap(),
        "wrote 5 bytes to notes/a.md"
    );
    call(
        "workspace_write",
        json!({"path": "notes/a.md", "content": " world", "append": true}),
        &ctx,
    )
    .unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes/a.md")).unwrap(),
        "hello world"
    );
    assert_eq!(
        call("workspace_read", json!({"path": "./notes/a.md"}), &ctx).unwrap(),
        "hello world"
    );
    assert_eq!(
        call("workspace_list", json!({}), &ctx).unwrap(),
        "notes/\nnotes/a.md (11 bytes)"
    );
    assert_eq!(
        *written.lock().unwrap(),
        vec![
            ("notes/a.md".to_string(), 5),
            ("notes/a.md".to_string(), 11)
        ]
    );
    let missing = call("workspace_read", json!({"path": "nope.txt"}), &ctx).unwrap_err();
    assert!(missing.starts_with("workspace: nope.txt: "), "{missing}");
    assert_eq!(
        call("workspace_write", json!({"path": "x"}), &ctx).unwrap_err(),
        "tool 'workspace_write': bad arguments: 'content' must be a string"
    );
}

#[test]
fn parent_dirs_and_absolute_paths_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let ctx = ToolContext::new("writer").with_workspace(&ws);
    assert_eq!(
        call(
            "workspace_write",
            json!({"path": "../x", "content": "no"}),
            &ctx
        )
        .unwrap_err(),
        "workspace: path '../x' refused: '..' is not allowed; give a path inside the workspace"
    );
    assert!(!dir.path().join("x").exists());
    assert_eq!(
        call("workspace_read", json!({"path": "/etc/passwd"}), &ctx).unwrap_err(),
        "workspace: path '/etc/passwd' refused: absolute paths are not allowed; \
         give a path relative to the workspace"
    );
    assert_eq!(
        call("workspace_list", json!({"path": "a/../../"}), &ctx).unwrap_err(),
        "workspace: path 'a/../../' refused: '..' is not allowed; give a path inside the workspace"
    );
}

#[cfg(unix)]
#[test]
fn symlinks_that_lead_out_are_refused() {
    use std::os::unix::fs::symlink;
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let outside = dir.path().join("outside");
    std::fs::create_dir(&ws).unwrap();
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), "secret").unwrap();
    symlink(&outside, ws.join("door")).unwrap();
    symlink("/etc/passwd", ws.join("passwd")).unwrap();
    symlink(outside.join("new.txt"), ws.join("dangling")).unwrap();
    std::fs::write(ws.join("inside.txt"), "ok").unwrap();
    symlink(ws.join("inside.txt"), ws.join("alias")).unwrap();
    let ctx = ToolContext::new("writer").with_workspace(&ws);

    let through_dir = "workspace: path 'door/secret.txt' refused: \
                       it leads out of the workspace through a symbolic link";
    assert_eq!(
        call("workspace_read", json!({"path": "door/secret.txt"}), &ctx).unwrap_err(),
        through_dir
    );
    assert_eq!(
        call(
            "workspace_write",
            json!({"path": "door/secret.txt", "content": "x"}),
            &ctx
        )
        .unwrap_err(),
        "workspace: path 'door/secret.txt' refused: \
         it leads out of the workspace through a symbolic link"
    );
    assert_eq!(
        call(
            "workspace_write",
            json!({"path": "door/sub/new.txt", "content": "x"}),
            &ctx
        )
        .unwrap_err(),
        "workspace: path 'door/sub/new.txt' refused: \
         it leads out of the workspace through a symbolic link"
    );
    assert_eq!(
        call("workspace_read", json!({"path": "passwd"}), &ctx).unwrap_err(),
        "workspace: path 'passwd' refused: it leads out of the workspace through a symbolic link"
    );
    assert_eq!(
        call(
            "workspace_write",
            json!({"path": "dangling", "content": "x"}),
            &ctx
        )
        .unwrap_err(),
        "workspace: path 'dangling' refused: it goes through a symbolic link that points nowhere"
    );
    assert_eq!(
        std::fs::read_to_string(outside.join("secret.txt")).unwrap(),
        "secret"
    );
    assert!(!outside.join("new.txt").exists());
    assert!(!outside.join("sub").exists());
    // A link that stays inside is fine, and listing shows links without
    // following them.
    assert_eq!(
        call("workspace_read", json!({"path": "alias"}), &ctx).unwrap(),
        "ok"
    );
    let listing = call("workspace_list", json!({}), &ctx).unwrap();
    assert!(listing.contains("door (symbolic link)"), "{listing}");
    assert!(!listing.contains("secret"), "{listing}");
}

#[test]
fn without_a_workspace_the_tools_refuse() {
    let ctx = ToolContext::new("writer");
    assert_eq!(
        call("workspace_list", json!({}), &ctx).unwrap_err(),
        "workspace: this run has no workspace directory"
    );
}
