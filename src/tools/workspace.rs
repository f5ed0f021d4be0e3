//! `workspace_read`, `workspace_write`, `workspace_list`: files in the run's
//! workspace directory, and nowhere else.
//!
//! A path is relative to the workspace. Absolute paths and `..` are refused
//! outright; a path that reaches out through a symbolic link (the file
//! itself or any directory on the way) is refused after resolving it.

use std::path::{Component, Path, PathBuf};

use serde_json::{Value, json};

use super::{Tool, ToolContext, ToolError};

/// Bytes `workspace_read` returns at most.
const MAX_READ: usize = 100_000;
/// Entries `workspace_list` shows at most.
const MAX_LIST: usize = 500;

/// Reads a file of the workspace.
#[derive(Debug)]
pub(crate) struct WorkspaceRead;
/// Writes (or appends to) a file of the workspace.
#[derive(Debug)]
pub(crate) struct WorkspaceWrite;
/// Lists the files of the workspace.
#[derive(Debug)]
pub(crate) struct WorkspaceList;

pub(super) fn str_arg<'v>(tool: &str, args: &'v Value, key: &str) -> Result<&'v str, ToolError> {
    args.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| ToolError::BadArguments {
            tool: tool.to_string(),
            detail: format!("'{key}' must be a string"),
        })
}

fn refuse(path: &str, detail: &str) -> ToolError {
    ToolError::PathEscape {
        path: path.to_string(),
        detail: detail.to_string(),
    }
}

/// The absolute path for `rel` inside `root`, or why it is refused.
pub(crate) fn resolve(root: &Path, rel: &str) -> Result<PathBuf, ToolError> {
    let p = Path::new(rel);
    let mut clean = PathBuf::new();
    for c in p.components() {
        match c {
            Component::Normal(part) => clean.push(part),
            Component::CurDir => {}
            Component::ParentDir => {
                return Err(refuse(
                    rel,
                    "'..' is not allowed; give a path inside the workspace",
                ));
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(refuse(
                    rel,
                    "absolute paths are not allowed; give a path relative to the workspace",
                ));
            }
        }
    }
    std::fs::create_dir_all(root).map_err(|source| ToolError::Io {
        path: PathBuf::from("."),
        source,
    })?;
    let root_real = root.canonicalize().map_err(|source| ToolError::Io {
        path: PathBuf::from("."),
        source,
    })?;
    let full = root_real.join(&clean);
    // The deepest part of the path that exists (a dangling link counts)
    // must resolve to a place inside the workspace.
    let mut probe = full.clone();
    loop {
        if probe.symlink_metadata().is_ok() {
            let real = probe
                .canonicalize()
                .map_err(|_| refuse(rel, "it goes through a symbolic link that points nowhere"))?;
            if !real.starts_with(&root_real) {
                return Err(refuse(
                    rel,
                    "it leads out of the workspace through a symbolic link",
                ));
            }
            break;
        }
        if !probe.pop() || probe == root_real {
            break;
        }
    }
    Ok(full)
}

fn workspace<'c>(ctx: &'c ToolContext<'_>) -> Result<&'c Path, ToolError> {
    ctx.workspace().ok_or(ToolError::NoWorkspace)
}

fn io(rel: &str) -> impl FnOnce(std::io::Error) -> ToolError + '_ {
    move |source| ToolError::Io {
        path: PathBuf::from(rel),
        source,
    }
}

impl Tool for WorkspaceRead {
    fn name(&self) -> &str {
        "workspace_read"
    }

    fn description(&self) -> &str {
        "Read a text file from the team's shared workspace. The path is relative to the workspace."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {"path": {"type": "string", "description": "File path relative to the workspace"}},
            "required": ["path"]
        })
    }

    fn call(&self, args: Value, ctx: &ToolContext<'_>) -> Result<String, ToolError> {
        use std::io::Read as _;
        let rel = str_arg(self.name(), &args, "path")?;
        let root = workspace(ctx)?;
        // The check first, for a clear message; then the read itself,
        // which cannot be raced out of the workspace (`open_read`).
        let path = resolve(root, rel)?;
        let file = open_read(root, &path, rel, self.name())?;
        let size = file.metadata().map_err(io(rel))?.len();
        // Only what is shown is read: a huge file costs no memory.
        let mut bytes = Vec::new();
        file.take(MAX_READ as u64)
            .read_to_end(&mut bytes)
            .map_err(io(rel))?;
        let mut text = String::from_utf8_lossy(&bytes).into_owned();
        if size > MAX_READ as u64 {
            text.push_str(&format!(
                "\n[... cut: the file has {size} bytes, shown {MAX_READ}]"
            ));
        }
        Ok(text)
    }
}

impl Tool for WorkspaceWrite {
    fn name(&self) -> &str {
        "workspace_write"
    }

    fn description(&self) -> &str {
        "Write a text file in the team's shared workspace (creating folders as needed). \
         Replaces the file unless 'append' is true."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File path relative to the workspace"},
                "content": {"type": "string", "description": "The text to write"},
                "append": {"type": "boolean", "description": "Append instead of replacing"}
            },
            "required": ["path", "content"]
        })
    }

    fn call(&self, args: Value, ctx: &ToolContext<'_>) -> Result<String, ToolError> {
        let rel = str_arg(self.name(), &args, "path")?;
        let content = str_arg(self.name(), &args, "content")?;
        let append = args.get("append").and_then(Value::as_bool).unwrap_or(false);
        let root = workspace(ctx)?;
        // The check first, for a clear message; then the write itself,
        // which cannot be raced out of the workspace (`open_no_follow`).
        let path = resolve(root, rel)?;
        let mut file = open_no_follow(root, rel, append, self.name())?;
        {
            use std::io::Write as _;
            file.write_all(content.as_bytes()).map_err(io(rel))?;
        }
        let size = file.metadata().map(|m| m.len()).unwrap_or(0);
        let shown = display_rel(root, &path, rel);
        ctx.file_written(&shown, size);
        Ok(format!("wrote {} bytes to {shown}", content.len()))
    }
}

/// Opens `rel` for writing inside `root` the race-free way: directory by
/// directory, each opened relative to the one before (`openat`), never
/// through a symbolic link, and inside a capability-based directory handle
/// (`cap-std`) that cannot resolve a path outside the workspace even if a
/// link is swapped in between two steps. Missing folders are created.
fn open_no_follow(
    root: &Path,
    rel: &str,
    append: bool,
    tool: &str,
) -> Result<cap_std::fs::File, ToolError> {
    use cap_std::fs::{Dir, OpenOptions};
    let escape = |e| cap_error(rel, e);
    let parts: Vec<&std::ffi::OsStr> = Path::new(rel)
        .components()
        .filter_map(|c| match c {
            Component::Normal(part) => Some(part),
            _ => None,
        })
        .collect();
    let Some((name, dirs)) = parts.split_last() else {
        return Err(ToolError::BadArguments {
            tool: tool.into(),
            detail: format!("'{rel}' is a directory"),
        });
    };
    let mut dir = Dir::open_ambient_dir(root, cap_std::ambient_authority()).map_err(escape)?;
    let is_link = |dir: &Dir, part: &std::ffi::OsStr| {
        dir.symlink_metadata(part)
            .is_ok_and(|m| m.file_type().is_symlink())
    };
    for part in dirs {
        if is_link(&dir, part) {
            return Err(refuse(rel, "it goes through a symbolic link"));
        }
        match dir.create_dir(part) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(escape(e)),
        }
        dir = dir.open_dir(part).map_err(escape)?;
    }
    if is_link(&dir, name) {
        return Err(refuse(rel, "it is a symbolic link"));
    }
    if dir.symlink_metadata(name).is_ok_and(|m| m.is_dir()) {
        return Err(ToolError::BadArguments {
            tool: tool.into(),
            detail: format!("'{rel}' is a directory"),
        });
    }
    let mut options = OpenOptions::new();
    options.write(true).create(true);
    if append {
        options.append(true);
    } else {
        options.truncate(true);
    }
    dir.open_with(name, &options).map_err(escape)
}

/// An error of a `cap-std` open: a path that would leave the directory
/// handle (a symbolic link swapped in) is refused, anything else is I/O.
fn cap_error(rel: &str, e: std::io::Error) -> ToolError {
    if e.kind() == std::io::ErrorKind::PermissionDenied && e.to_string().contains("outside") {
        refuse(rel, "it leads out of the workspace through a symbolic link")
    } else {
        ToolError::Io {
            path: PathBuf::from(rel),
            source: e,
        }
    }
}

/// Opens `path` (what [`resolve`] made of `rel`) for reading through a
/// capability-based handle on the workspace (`cap-std`): a link swapped in
/// after the check cannot lead the read out of the workspace. A link that
/// stays inside is followed as the check found it (its real path, inside
/// the workspace). Only a regular file is opened: a named pipe would block
/// the read forever, a device could be endless.
fn open_read(
    root: &Path,
    path: &Path,
    rel: &str,
    tool: &str,
) -> Result<cap_std::fs::File, ToolError> {
    use cap_std::fs::Dir;
    let escape = |e| cap_error(rel, e);
    let root_real = root.canonicalize().map_err(escape)?;
    let real = path.canonicalize().map_err(escape)?;
    let clean = real
        .strip_prefix(&root_real)
        .map_err(|_| refuse(rel, "it leads out of the workspace through a symbolic link"))?;
    let dir = Dir::open_ambient_dir(&root_real, cap_std::ambient_authority()).map_err(escape)?;
    let meta = dir.metadata(clean).map_err(escape)?;
    if !meta.is_file() {
        return Err(ToolError::BadArguments {
            tool: tool.into(),
            detail: format!("'{rel}' is not a regular file"),
        });
    }
    let file = dir.open(clean).map_err(escape)?;
    // Swapped for something else between the two looks: refuse it too.
    // (A named pipe swapped in would block `open` itself; only a process
    // with its own access to the workspace could do that, none of our
    // tools makes one.)
    if !file.metadata().map_err(escape)?.is_file() {
        return Err(ToolError::BadArguments {
            tool: tool.into(),
            detail: format!("'{rel}' is not a regular file"),
        });
    }
    Ok(file)
}

/// The path relative to the workspace, with `/` separators.
fn display_rel(root: &Path, full: &Path, fallback: &str) -> String {
    root.canonicalize()
        .ok()
        .and_then(|r| full.strip_prefix(r).ok().map(Path::to_path_buf))
        .map_or_else(
            || fallback.to_string(),
            |p| {
                p.components()
                    .map(|c| c.as_os_str().to_string_lossy())
                    .collect::<Vec<_>>()
                    .join("/")
            },
        )
}

impl Tool for WorkspaceList {
    fn name(&self) -> &str {
        "workspace_list"
    }

    fn description(&self) -> &str {
        "List the files in the team's shared workspace (or in one folder of it), with sizes."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {"path": {"type": "string", "description": "Folder relative to the workspace (default: all of it)"}}
        })
    }

    fn call(&self, args: Value, ctx: &ToolContext<'_>) -> Result<String, ToolError> {
        let rel = args.get("path").and_then(Value::as_str).unwrap_or(".");
        let root = workspace(ctx)?;
        let dir = resolve(root, rel)?;
        let mut out = Vec::new();
        walk(&dir, &dir, &mut out).map_err(io(rel))?;
        out.sort();
        if out.is_empty() {
            return Ok("(empty)".into());
        }
        let total = out.len();
        out.truncate(MAX_LIST);
        let mut text = out.join("\n");
        if total > MAX_LIST {
            text.push_str(&format!("\n[... {} more]", total - MAX_LIST));
        }
        Ok(text)
    }
}

/// Every entry under `dir`; links are shown, never followed.
fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        let meta = entry.path().symlink_metadata()?;
        let name = path
            .strip_prefix(base)
            .map_or_else(|_| path.clone(), Path::to_path_buf)
            .to_string_lossy()
            .replace('\\', "/");
        if meta.file_type().is_symlink() {
            out.push(format!("{name} (symbolic link)"));
        } else if meta.is_dir() {
            out.push(format!("{name}/"));
            if out.len() <= MAX_LIST {
                walk(base, &path, out)?;
            }
        } else {
            out.push(format!("{name} ({} bytes)", meta.len()));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_inside_resolve_and_escapes_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        assert!(resolve(root, "a/b.txt").unwrap().ends_with("a/b.txt"));
        assert_eq!(
            resolve(root, "../x").unwrap_err().to_string(),
            "workspace: path '../x' refused: '..' is not allowed; give a path inside the workspace"
        );
        assert_eq!(
            resolve(root, "/etc/passwd").unwrap_err().to_string(),
            "workspace: path '/etc/passwd' refused: absolute paths are not allowed; \
             give a path relative to the workspace"
        );
        assert!(resolve(root, "a/../../x").is_err());
    }
}
