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
    // The writer's answer weaves every researcher's notes into one text, a
    // section a topic, without naming the researchers (issue 21).
    assert!(
        stdout.starts_with(
            "# A short guide to brewing green tea\n\n> Simulated answer: boardroom's offline"
        ),
        "{stdout}"
    );
    assert!(!stdout.contains("## From "), "{stdout}");
    let sections = sections(&stdout);
    let names: Vec<&str> = sections.iter().map(|(h, _)| h.as_str()).collect();
    assert_eq!(names, ["Background", "Evidence", "Practice"], "{stdout}");
    for point in ["Water temperature", "Steeping time", "Two common mistakes"] {
        assert!(
            sections.iter().all(|(_, t)| t.contains(point)),
            "{point}: {stdout}"
        );
    }
}

/// `## Heading` sections of an answer, with the text under each.
fn sections(answer: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for line in answer.lines() {
        if let Some(h) = line.strip_prefix("## ") {
            out.push((h.to_string(), String::new()));
        } else if let Some((_, t)) = out.last_mut() {
            t.push_str(line);
            t.push('\n');
        }
    }
    out
}

#[test]
fn parallel_researchers_write_different_notes() {
    // Issue 21: on sim the three researchers returned the same text.
    use boardroom::board::EntryKind;
    use boardroom::testing::Sim;
    use boardroom::{Runtime, Team};
    let team = Team::load(repo().join("examples/teams/parallel")).unwrap();
    for task in [TASK, "Write a short guide to brewing green tea"] {
        let run = Runtime::new(team.clone(), Sim::new()).run(task).unwrap();
        let mut notes: Vec<(&str, &str)> = run
            .board
            .iter()
            .filter(|e| e.kind == EntryKind::Draft)
            .map(|e| (e.author.as_str(), e.text.as_str()))
            .collect();
        notes.sort();
        assert_eq!(notes.len(), 3, "{notes:?}");
        for (i, (a, text)) in notes.iter().enumerate() {
            for (b, other) in &notes[i + 1..] {
                // No line of notes is shared but the list's point names.
                let shared: Vec<&str> = text
                    .lines()
                    .filter(|l| !l.trim().is_empty() && other.lines().any(|o| o == *l))
                    .collect();
                assert!(shared.is_empty(), "{a} and {b} share {shared:?}");
            }
        }
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
    // Issue 21: the decision, first, then how the views weigh up.
    let after_title = stdout.split("\n\n").nth(2).unwrap_or("");
    assert!(
        after_title.starts_with("**Recommendation:** "),
        "{after_title}: {stdout}"
    );
    let names: Vec<String> = sections(&stdout).into_iter().map(|(h, _)| h).collect();
    assert_eq!(
        names,
        [
            "Where the views agree",
            "Where they differ",
            "What would change the decision"
        ],
        "{stdout}"
    );
    assert!(!stdout.contains("## From "), "{stdout}");
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
    // The publisher's text is the answer, and every step shows in it: the
    // researcher's facts, the writer's advice, the reviewer's added check
    // (issue 21).
    assert!(
        stdout.starts_with("# A short guide to brewing green tea\n\n> Simulated answer: "),
        "{stdout}"
    );
    let sections = sections(&stdout);
    let names: Vec<&str> = sections.iter().map(|(h, _)| h.as_str()).collect();
    assert_eq!(
        names,
        ["Water temperature", "Steeping time", "Two common mistakes"],
        "{stdout}"
    );
    assert!(
        sections[0].1.contains("the established figures")
            || sections[0].1.contains("least worth improvising"),
        "the researcher's facts: {stdout}"
    );
    assert!(
        sections[2].1.contains("Check the result at the end"),
        "the reviewer's correction: {stdout}"
    );
    assert!(
        !stdout.contains("HANDOFF") && !stdout.contains("Draft") && !stdout.contains("VERDICT"),
        "{stdout}"
    );
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
        stdout.starts_with("# A short guide to brewing green tea\n\n> Simulated answer: "),
        "{stdout}"
    );
    // The published text is the revision: each point gives its reason, as
    // the reviewer asked.
    assert_eq!(stdout.matches(" Why: ").count(), 3, "{stdout}");

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
    assert!(!stdout.contains(" Why: "), "{stdout}");

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

#[test]
fn a_follow_up_on_a_handoff_run_changes_its_answer() {
    // Issue 21: a follow-up came back as the same answer, byte for byte.
    let runs = tempfile::tempdir().unwrap();
    let team = repo().join("examples/teams/sequential");
    let team = team.to_str().unwrap();
    let first = support::cli::with_runs_dir(&["run", "--team", team, TASK], runs.path());
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
    let id = boardroom::store::list_runs(runs.path()).unwrap()[0]
        .path
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let out = support::cli::with_runs_dir(
        &["resume", &id, "--message", "make it shorter"],
        runs.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let (before, after) = (text(&first.stdout), text(&out.stdout));
    assert!(after.contains("> Simulated answer: "), "{after}");
    assert!(after.len() * 3 < before.len() * 2, "{after}\n---\n{before}");
}
