//! The four collaboration patterns (AgentX §1.2, issue 11 §3) that ship in
//! examples/teams: each checks, and each runs offline on `sim` end to end
//! with `boardroom run --team examples/teams/NAME "..."`: the blackboard
//! ones as rounds on a board, the handoff ones as chains of handoffs.

use std::process::Output;

mod support;

use support::cli::{repo, text};

const PATTERNS: &[&str] = &["sequential", "iterative", "parallel", "consensus"];

const TASK: &str = "Write a short guide to brewing green tea: water temperature, steeping time, and two common mistakes.";

/// `boardroom ARGS` in the checkout.
fn boardroom(args: &[&str]) -> Output {
    support::cli::boardroom(args, repo())
}

/// `boardroom run --team examples/teams/PATTERN FLAGS... TASK`, which must
/// exit 0: its stdout and stderr.
fn run_ok(pattern: &str, flags: &[&str], task: &str) -> (String, String) {
    let dir = format!("examples/teams/{pattern}");
    let mut args = vec!["run", "--team", &dir];
    args.extend_from_slice(flags);
    args.push(task);
    let out = boardroom(&args);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    (stdout, stderr)
}

#[test]
fn every_pattern_team_checks() {
    for name in PATTERNS {
        let dir = format!("examples/teams/{name}");
        let out = boardroom(&["check", "--team", &dir]);
        let stdout = text(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{name}: {}", text(&out.stderr));
        assert!(
            stdout.starts_with(&format!("team '{name}' ({dir}): ")),
            "{stdout}"
        );
        assert!(stdout.ends_with("\nok\n"), "{stdout}");
        let handoff = stdout
            .lines()
            .next()
            .unwrap()
            .ends_with(", handoff process");
        assert_eq!(
            handoff,
            matches!(*name, "sequential" | "iterative"),
            "{name}: {stdout}"
        );
    }
}

#[test]
fn parallel_runs_three_researchers_in_one_round_then_the_writer() {
    let (stdout, stderr) = run_ok("parallel", &["--no-memory"], TASK);
    assert!(
        stderr.contains("writer split the task into 3 assignments"),
        "{stderr}"
    );
    assert!(
        stderr.contains("round 1 · 3 assignments on 3 threads"),
        "{stderr}"
    );
    assert!(!stderr.contains("round 2"), "one round only: {stderr}");
    assert!(stderr.contains("writer reviewed round 1: DONE"), "{stderr}");
    // The writer's answer merges every researcher's notes.
    assert!(
        stdout.starts_with("# Write a short guide to brewing green tea"),
        "{stdout}"
    );
    for r in ["researcher_a", "researcher_b", "researcher_c"] {
        assert!(stdout.contains(&format!("## From {r}")), "{r}: {stdout}");
    }
}

#[test]
fn consensus_experts_answer_in_parallel_challenge_and_the_synthesizer_decides() {
    // challenge=1: every expert challenges another's answer in round 1, so
    // the synthesizer sends the work back once before it decides.
    let (stdout, stderr) = run_ok(
        "consensus",
        &["--model", "sim:challenge=1", "--no-memory"],
        "Should a ten-person company move its servers to the cloud?",
    );
    assert!(
        stderr.contains("synthesizer split the task into 3 assignments"),
        "{stderr}"
    );
    assert!(
        stderr.contains("round 1 · 3 assignments on 3 threads"),
        "{stderr}"
    );
    assert_eq!(stderr.matches(" challenges: ").count(), 3, "{stderr}");
    assert!(
        stderr.contains("synthesizer reviewed round 2: DONE"),
        "{stderr}"
    );
    assert!(
        stdout.starts_with("# Should a ten-person company move its servers to the cloud?"),
        "{stdout}"
    );
    for e in ["cost_expert", "risk_expert", "people_expert"] {
        assert!(stdout.contains(&format!("## From {e}")), "{e}: {stdout}");
    }
}

/// The handoff lines the live view printed: `from → to (how)`.
fn handoffs(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("⇢ "))
        .map(|l| l.split_once("):").map_or(l, |(head, _)| head).to_string() + ")")
        .collect()
}

#[test]
fn sequential_hands_off_from_researcher_to_writer_to_reviewer_to_publisher() {
    let (stdout, stderr) = run_ok("sequential", &["--no-memory"], TASK);
    assert_eq!(
        handoffs(&stderr),
        vec![
            "researcher → writer (tool)",
            "writer → reviewer (tool)",
            "reviewer → publisher (tool)",
        ],
        "{stderr}"
    );
    // The publisher's text is the answer, built on the writer's draft.
    assert!(
        stdout.starts_with("Published: Write a short guide to brewing green tea"),
        "{stdout}"
    );
    assert!(stdout.contains("Draft: "), "{stdout}");
    assert!(!stdout.contains("HANDOFF"), "{stdout}");
    // The same chain by HANDOFF: lines for models without tools.
    let (_, stderr) = run_ok("sequential", &["--protocol", "line", "--no-memory"], TASK);
    assert_eq!(
        handoffs(&stderr),
        vec![
            "researcher → writer (line)",
            "writer → reviewer (line)",
            "reviewer → publisher (line)",
        ],
        "{stderr}"
    );
}

#[test]
fn iterative_cycles_writer_and_reviewer_until_approved_then_publishes() {
    let (stdout, stderr) = run_ok("iterative", &["--no-memory"], TASK);
    // A handoff run counts agents, turns and steps, not members and rounds.
    assert!(
        stderr.contains("· 3 agents · model sim · up to 12 turns"),
        "{stderr}"
    );
    assert!(stderr.contains("done after 5 step(s)"), "{stderr}");
    assert_eq!(
        handoffs(&stderr),
        vec![
            "writer → reviewer (tool)",
            "reviewer → writer (tool)",
            "writer → reviewer (tool)",
            "reviewer → publisher (tool)",
        ],
        "{stderr}"
    );
    assert!(
        stdout.starts_with("Published: Write a short guide to brewing green tea"),
        "{stdout}"
    );
    assert!(
        stdout.contains("Draft (revised"),
        "the published text is the revision: {stdout}"
    );

    // --var max_revisions=0: the reviewer approves the first draft.
    let (stdout, stderr) = run_ok(
        "iterative",
        &["--var", "max_revisions=0", "--no-memory"],
        TASK,
    );
    assert_eq!(
        handoffs(&stderr),
        vec!["writer → reviewer (tool)", "reviewer → publisher (tool)"],
        "{stderr}"
    );
    assert!(!stdout.contains("revised"), "{stdout}");

    // A variable the team does not declare is bad input.
    let out = boardroom(&[
        "run",
        "--team",
        "examples/teams/iterative",
        "--var",
        "max_revision=1",
        TASK,
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("max_revisions, audience"), "{stderr}");
}
