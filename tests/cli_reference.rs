//! docs/cli.md is the binary's own `--help`, for every command (issue 21):
//! the part below the marker is generated, so the CLI reference cannot
//! drift from the flags the binary takes. `BLESS=1 cargo test --test
//! cli_reference` rewrites it.

use std::path::Path;
use std::process::Command;

const MARKER: &str = "<!-- Generated from `boardroom --help` by tests/cli_reference.rs; do not edit below this line. -->";

/// `boardroom ARGS... --help`, as a user with no settings sees it (a set
/// `BOARDROOM_RUNS_DIR` would show up in `[env: ...]`), with the same home
/// directory on every machine (a default under it is shown as
/// `/home/you/...`), without colour.
fn help(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_boardroom"))
        .args(args)
        .arg("--help")
        .env_clear()
        .env("HOME", "/home/you")
        .env("NO_COLOR", "1")
        .env("COLUMNS", "100")
        .output()
        .expect("the binary runs");
    assert!(
        out.status.success(),
        "boardroom {} --help failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("help is UTF-8")
}

/// The subcommands a help text lists under `Commands:` (not `help`).
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| l.trim_end() != "Commands:")
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

/// A section for `boardroom PATH...` and for each of its subcommands.
fn render(path: &mut Vec<String>, out: &mut String) {
    let args: Vec<&str> = path.iter().map(String::as_str).collect();
    let text = help(&args);
    let title = if path.is_empty() {
        "boardroom".to_string()
    } else {
        format!("boardroom {}", path.join(" "))
    };
    out.push_str(&format!(
        "\n## `{title}`\n\n```text\n{}\n```\n",
        text.trim_end()
    ));
    for sub in subcommands(&text) {
        path.push(sub);
        render(path, out);
        path.pop();
    }
}

#[test]
fn docs_cli_md_is_the_binary_help() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/cli.md");
    let current = std::fs::read_to_string(&file).expect("docs/cli.md exists");
    let Some(at) = current.find(MARKER) else {
        panic!("docs/cli.md has lost its marker line:\n{MARKER}");
    };
    let head = &current[..at + MARKER.len()];
    let mut generated = String::new();
    render(&mut Vec::new(), &mut generated);
    let expected = format!("{head}\n{generated}");
    if current == expected {
        return;
    }
    if std::env::var_os("BLESS").is_some() {
        std::fs::write(&file, &expected).expect("write docs/cli.md");
        return;
    }
    let first_difference = current
        .lines()
        .zip(expected.lines())
        .position(|(a, b)| a != b)
        .map_or_else(
            || "one is a prefix of the other".to_string(),
            |i| {
                format!(
                    "line {}: file has {:?}, --help gives {:?}",
                    i + 1,
                    current.lines().nth(i).unwrap_or(""),
                    expected.lines().nth(i).unwrap_or("")
                )
            },
        );
    panic!(
        "docs/cli.md does not match the binary's --help ({first_difference}).\n\
         Regenerate it: BLESS=1 cargo test --test cli_reference"
    );
}
