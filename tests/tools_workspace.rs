//! The workspace tools on a real file system: confined to the workspace,
//! escapes refused with a clear error (issue 5).

use std::sync::Mutex;

use boardroom::ToolContext;
use boardroom::tools::ToolRegistry;
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

#[cfg(unix)]
#[test]
fn workspace_write_never_writes_through_a_symbolic_link() {
    // Issue 8: the write opens folder by folder without following links,
    // so even a link that points inside the workspace is refused (a link
    // is what a race would swap in).
    use std::os::unix::fs::symlink;
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(ws.join("real")).unwrap();
    std::fs::write(ws.join("inside.txt"), "ok").unwrap();
    symlink(ws.join("real"), ws.join("link")).unwrap();
    symlink(ws.join("inside.txt"), ws.join("alias")).unwrap();
    let ctx = ToolContext::new("writer").with_workspace(&ws);
    assert_eq!(
        call(
            "workspace_write",
            json!({"path": "link/new.txt", "content": "x"}),
            &ctx
        )
        .unwrap_err(),
        "workspace: path 'link/new.txt' refused: it goes through a symbolic link"
    );
    assert_eq!(
        call(
            "workspace_write",
            json!({"path": "alias", "content": "x"}),
            &ctx
        )
        .unwrap_err(),
        "workspace: path 'alias' refused: it is a symbolic link"
    );
    assert!(!ws.join("real/new.txt").exists());
    assert_eq!(
        std::fs::read_to_string(ws.join("inside.txt")).unwrap(),
        "ok"
    );
    // Real folders are still created and written through.
    call(
        "workspace_write",
        json!({"path": "real/a/b.txt", "content": "deep"}),
        &ctx,
    )
    .unwrap();
    assert_eq!(
        std::fs::read_to_string(ws.join("real/a/b.txt")).unwrap(),
        "deep"
    );
}

#[cfg(unix)]
#[test]
fn a_symbolic_link_swapped_in_during_writes_never_lets_one_out() {
    // Issue 8: the path was checked, then written: a link swapped in
    // between let the write land outside. Here a thread keeps swapping
    // `d` between a folder and a link to a folder outside while the tool
    // writes `d/f.txt` again and again.
    use std::os::unix::fs::symlink;
    use std::sync::atomic::{AtomicBool, Ordering};
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(ws.join("d")).unwrap();
    std::fs::create_dir(&outside).unwrap();
    let stop = AtomicBool::new(false);
    let ctx = ToolContext::new("writer").with_workspace(&ws);
    let (mut ok, mut refused) = (0, 0);
    std::thread::scope(|s| {
        s.spawn(|| {
            let d = ws.join("d");
            while !stop.load(Ordering::Relaxed) {
                let _ = std::fs::remove_dir_all(&d);
                let _ = symlink(&outside, &d);
                std::thread::yield_now();
                let _ = std::fs::remove_file(&d);
                let _ = std::fs::create_dir(&d);
                std::thread::yield_now();
            }
        });
        for _ in 0..3000 {
            match call(
                "workspace_write",
                json!({"path": "d/f.txt", "content": "x"}),
                &ctx,
            ) {
                Ok(_) => ok += 1,
                Err(_) => refused += 1,
            }
        }
        stop.store(true, Ordering::Relaxed);
    });
    let escaped: Vec<_> = std::fs::read_dir(&outside).unwrap().collect();
    assert!(
        escaped.is_empty(),
        "{} files landed outside ({ok} writes, {refused} refused)",
        escaped.len()
    );
    assert!(ok + refused == 3000);
}

#[test]
fn a_symbolic_link_swapped_in_during_reads_never_lets_one_out() {
    // Issue 8's write race, on the read side: `workspace_read` checked the
    // path, then read it: a link swapped in between read a file outside
    // (a secret sent on to the model). A thread keeps swapping `d` between
    // a folder and a link to a folder outside while the tool reads `d/f.txt`.
    use std::os::unix::fs::symlink;
    use std::sync::atomic::{AtomicBool, Ordering};
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("f.txt"), "SECRET").unwrap();
    let stop = AtomicBool::new(false);
    let ctx = ToolContext::new("writer").with_workspace(&ws);
    let (mut inside, mut refused, mut leaked) = (0, 0, 0);
    std::thread::scope(|s| {
        s.spawn(|| {
            let d = ws.join("d");
            while !stop.load(Ordering::Relaxed) {
                let _ = std::fs::remove_dir_all(&d);
                let _ = symlink(&outside, &d);
                std::thread::yield_now();
                let _ = std::fs::remove_file(&d);
                let _ = std::fs::create_dir(&d);
                let _ = std::fs::write(d.join("f.txt"), "inside");
                std::thread::yield_now();
            }
        });
        for _ in 0..20_000 {
            match call("workspace_read", json!({"path": "d/f.txt"}), &ctx) {
                Ok(text) if text.contains("SECRET") => leaked += 1,
                Ok(_) => inside += 1,
                Err(_) => refused += 1,
            }
        }
        stop.store(true, Ordering::Relaxed);
    });
    assert_eq!(
        leaked, 0,
        "{leaked} reads got the file outside ({inside} inside, {refused} refused)"
    );
}

#[test]
fn workspace_read_of_a_named_pipe_or_a_huge_file_is_bounded() {
    // A named pipe with no writer blocked the read forever; a huge file was
    // read whole into memory to show its first 100,000 bytes.
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let status = std::process::Command::new("mkfifo")
        .arg(ws.join("pipe"))
        .status()
        .expect("mkfifo runs");
    assert!(status.success());
    let (tx, rx) = std::sync::mpsc::channel();
    let ws2 = ws.clone();
    std::thread::spawn(move || {
        let ctx = ToolContext::new("writer").with_workspace(&ws2);
        let _ = tx.send(call("workspace_read", json!({"path": "pipe"}), &ctx));
    });
    let result = rx
        .recv_timeout(std::time::Duration::from_secs(20))
        .expect("workspace_read of a named pipe returns");
    let err = result.unwrap_err();
    assert!(err.contains("'pipe' is not a regular file"), "{err}");

    // A sparse 1 GiB file: only what is shown is read.
    let big = std::fs::File::create(ws.join("big.bin")).unwrap();
    big.set_len(1 << 30).unwrap();
    let ctx = ToolContext::new("writer").with_workspace(&ws);
    let text = call("workspace_read", json!({"path": "big.bin"}), &ctx).unwrap();
    assert!(
        text.ends_with("[... cut: the file has 1073741824 bytes, shown 100000]"),
        "{}",
        &text[text.len() - 80..]
    );
    assert_eq!(
        text.len(),
        100_000 + "\n[... cut: the file has 1073741824 bytes, shown 100000]".len()
    );
}
