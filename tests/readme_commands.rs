//! CI runs the README's set-up commands as written (issue 21):
//! `.ci/readme-commands` takes them from the README's "Set up" block, and
//! fails loudly when that block is missing or does not hold two commands.

use std::path::Path;
use std::process::{Command, Output};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn extract(readme: &Path) -> Output {
    Command::new("bash")
        .arg(Path::new(ROOT).join(".ci/readme-commands"))
        .arg(readme)
        .output()
        .expect("bash runs")
}

fn extract_text(text: &str) -> Output {
    let dir = tempfile::tempdir().expect("a temp dir");
    let readme = dir.path().join("README.md");
    std::fs::write(&readme, text).expect("write README");
    extract(&readme)
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn the_readme_set_up_block_gives_the_first_run_and_the_test_command() {
    let out = extract(&Path::new(ROOT).join("README.md"));
    assert!(out.status.success(), "{}", stderr(&out));
    let stdout = String::from_utf8(out.stdout).expect("UTF-8");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines,
        [
            "cargo run --release -- run \"Write a short guide to brewing green tea\"",
            "scripts/test.sh"
        ]
    );
}

const GOOD: &str = "# x\n\n## Set up\n\nSome words.\n\n```sh\n# a comment\ncargo run --release -- run \"a task\"\n\nscripts/test.sh\n```\n\n```sh\nnot this\n```\n";

#[test]
fn a_good_block_is_read_without_comments_or_blank_lines() {
    let out = extract_text(GOOD);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "cargo run --release -- run \"a task\"\nscripts/test.sh\n"
    );
}

#[test]
fn a_broken_block_fails_and_says_why() {
    let cases = [
        (
            GOOD.replace("## Set up", "## Setup"),
            "no \"Set up\" heading",
        ),
        (
            GOOD.replace("```sh\n# a", "```text\n# a")
                .replace("```sh\nnot", "## Next\n```sh\nnot"),
            "no ```sh block under the \"Set up\" heading (line 3) before the next heading",
        ),
        (
            GOOD.replace("scripts/test.sh\n", ""),
            "has 1 command, not 2",
        ),
        (
            GOOD.replace("scripts/test.sh\n", "scripts/test.sh\necho three\n"),
            "has 3 commands, not 2",
        ),
        (
            GOOD.replace("\"a task\"\n", "\\\n  \"a task\"\n"),
            "a command continued on the next line",
        ),
        (
            "## Set up\n\n```sh\ncargo run\nscripts/test.sh\n".to_string(),
            "is never closed",
        ),
    ];
    for (text, why) in cases {
        let out = extract_text(&text);
        assert!(
            !out.status.success(),
            "accepted a broken README:\n{text}\nprinted: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        assert!(
            stderr(&out).contains(why),
            "for:\n{text}\nexpected '{why}' in: {}",
            stderr(&out)
        );
        assert!(out.stdout.is_empty(), "printed commands for:\n{text}");
    }
}
