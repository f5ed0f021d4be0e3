//! `boardroom show`: a saved run's answer and summary, and on request
//! its board, turns, plan and call graph.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use boardroom::Phase;
use boardroom::store::{Lines, RunPhase, Turn, load_run, read_events, read_turns, run_holder};

use super::{find_run, status_of, time_of};
use crate::cli::drive::message_hint;
use crate::cli::exit::{CliError, Outcome};
use crate::cli::text::{one_line, terminal_safe};

/// `println!` with the control characters of model text (terminal escape
/// sequences, carriage returns, bells) made visible instead of obeyed.
macro_rules! out {
    ($($arg:tt)*) => {
        println!("{}", terminal_safe(&format!($($arg)*)))
    };
}

#[derive(Debug, clap::Args)]
pub(crate) struct ShowArgs {
    /// The run: its id, a unique prefix of it, `last`, or its directory.
    run: String,
    /// Where runs are saved (default: runs/ in
    /// $BOARDROOM_HOME, else ~/.local/share/boardroom).
    #[arg(long, env = "BOARDROOM_RUNS_DIR", default_value_os_t = crate::cli::home::runs_dir(), hide_default_value = true)]
    runs_dir: PathBuf,
    /// The board, entry by entry.
    #[arg(long)]
    board: bool,
    /// Every model call with its usage and latency.
    #[arg(long)]
    turns: bool,
    /// The work modules and their statuses.
    #[arg(long)]
    plan: bool,
    /// The call graph: master → members → challengers, round by round.
    #[arg(long)]
    tree: bool,
    /// The whole run (run.json and its turns) as one JSON document.
    #[arg(long)]
    json: bool,
}

fn warn_all<T>(lines: &Lines<T>) {
    for w in &lines.warnings {
        eprintln!("warning: {w}");
    }
}

pub(crate) fn show(args: &ShowArgs) -> Result<Outcome, CliError> {
    let dir = find_run(&args.runs_dir, &args.run).map_err(CliError::bad_input)?;
    let record = load_run(&dir).map_err(CliError::failed)?;
    let events = read_events(&dir).unwrap_or_else(|e| {
        eprintln!("warning: {e}");
        Lines {
            items: Vec::new(),
            warnings: Vec::new(),
        }
    });
    warn_all(&events);
    let turns = read_turns(&dir).unwrap_or_else(|e| {
        eprintln!("warning: {e}");
        Lines {
            items: Vec::new(),
            warnings: Vec::new(),
        }
    });
    warn_all(&turns);
    if args.json {
        // The whole run as one JSON document: run.json and the turns.
        let doc = serde_json::json!({ "run": &record, "turns": &turns.items });
        let text = serde_json::to_string_pretty(&doc).map_err(CliError::failed)?;
        println!("{text}");
        return Ok(Outcome::Done);
    }
    let s = &record.state;
    out!(
        "run {} · {} · team '{}' · model {} · {} · {} round(s) · {} tokens ({} prompt, {} completion)",
        s.run_id(),
        time_of(s.run_id()),
        record.team.name,
        record
            .settings
            .model_spec
            .as_deref()
            .unwrap_or(&record.settings.model),
        status_of(&record, &dir),
        s.round(),
        s.usage().total(),
        s.usage().prompt_tokens,
        s.usage().completion_tokens,
    );
    match &s.handoff() {
        Some(h) => out!(
            "handoff · {} steps · {} handoffs · {} turns · {} events",
            h.steps.len(),
            h.steps
                .iter()
                .filter(|st| st.agent != "user" && st.handoff_target.is_some())
                .count(),
            turns.items.len(),
            events.items.len()
        ),
        None => out!(
            "{} board entries · {} work modules · {} turns · {} events",
            s.board().len(),
            s.plan().tasks.len(),
            turns.items.len(),
            events.items.len()
        ),
    }
    let ran: Vec<String> = boardroom::Event::executors_of(&events.items)
        .iter()
        .map(ToString::to_string)
        .collect();
    if !ran.is_empty() {
        out!("members ran on {}", ran.join(", then "));
    }
    out!("task: {}", s.task().trim());
    if let Some(e) = &s.error() {
        out!("error: {e}");
    }
    if s.status() == boardroom::RunStatus::AwaitingUser {
        let runs_dir = dir.parent().unwrap_or(std::path::Path::new("."));
        out!(
            "waiting for the user; reply with: {}",
            message_hint(runs_dir, s.run_id())
        );
    }
    // Calls that wait for a decision (a run stopped awaiting_approval, or
    // one stopped while a call waited).
    for p in s.pending_approvals() {
        out!(
            "waiting for approval: call {} · {} → {} {}",
            p.call_id,
            p.agent,
            p.tool,
            one_line(&p.arguments, 100)
        );
    }
    // A handoff run's messages are steps of the user's (below).
    if s.handoff().is_none() && !s.user_notes().is_empty() {
        out!("\n== from the user");
        for note in s.user_notes() {
            if let Some(q) = &note.question {
                out!("asked: {}", one_line(q, 100));
            }
            out!("user: {}", one_line(&note.message, 100));
        }
    }
    if let Some(h) = &s.handoff() {
        out!("\n== steps");
        for step in &h.steps {
            out!("{}", step_line(step));
        }
    }
    if args.board {
        out!("\n== board");
        for e in s.board() {
            let task = e
                .task
                .as_deref()
                .map(|t| format!(" · task: {}", one_line(t, 60)));
            out!(
                "#{} round {} · {} · {}{}",
                e.seq,
                e.round,
                e.kind.as_str(),
                e.author,
                task.unwrap_or_default()
            );
            for line in e.text.trim_end().lines() {
                out!("    {line}");
            }
        }
    }
    if args.plan {
        out!("\n== plan");
        for m in &s.plan().tasks {
            out!(
                "{} {:<14} {:<12} {} ({} archived messages)",
                m.task_id,
                m.status.as_str(),
                m.assigned_agent.as_deref().unwrap_or("-"),
                one_line(&m.description, 60),
                m.context_archive.len()
            );
        }
    }
    if args.turns {
        out!("\n== turns");
        for t in &turns.items {
            out!("{}", turn_line(t, true));
        }
    }
    if let (true, Some(h)) = (args.tree, &s.handoff()) {
        out!("\n== call graph");
        print!("{}", terminal_safe(&handoff_tree(&h.steps, &turns.items)));
    } else if args.tree {
        out!("\n== call graph");
        print!(
            "{}",
            terminal_safe(&tree(
                &record
                    .team
                    .agents
                    .first()
                    .map(|a| a.name.clone())
                    .unwrap_or_default(),
                &turns.items
            ))
        );
    }
    // The answer last: after the board and the other sections asked for,
    // so they do not scroll away behind it.
    let heading = if args.board || args.plan || args.turns || args.tree {
        "== answer\n"
    } else {
        ""
    };
    let holder = run_holder(&dir);
    match &s.answer() {
        Some(a) if s.phase() == RunPhase::Finished => out!("\n{heading}{}", a.trim_end()),
        _ if holder.is_some() => out!(
            "\n(no answer yet: running now{})",
            holder
                .flatten()
                .map_or_else(String::new, |pid| format!(" in boardroom pid {pid}"))
        ),
        _ => out!(
            "\n(no answer yet: stopped before phase '{}'; `boardroom resume {}` continues it)",
            serde_json::to_value(s.phase())
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            s.run_id()
        ),
    }
    Ok(Outcome::Done)
}

/// One step of a handoff run: who acted, where control went and how, and
/// the first line of what it wrote.
fn step_line(step: &boardroom::store::HandoffStep) -> String {
    let mut s = format!("{} {}", step.step_id, step.agent);
    match (&step.handoff_target, &step.how) {
        (Some(to), Some(how)) => {
            let _ = write!(s, " → {to} ({how})");
        }
        (Some(to), None) => {
            let _ = write!(s, " → {to}");
        }
        (None, _) => {}
    }
    if let Some(reason) = step.reason.as_deref().filter(|r| !r.trim().is_empty()) {
        let _ = write!(s, " · {}", one_line(reason, 60));
    }
    if !step.tool_calls.is_empty() {
        let _ = write!(s, " · tools: {}", step.tool_calls.join(", "));
    }
    if !step.artifacts.is_empty() {
        let _ = write!(s, " · wrote: {}", step.artifacts.join(", "));
    }
    let _ = write!(s, "\n    {}", one_line(&step.text, 100));
    s
}

/// The call graph of a handoff run: each step with its model calls (the
/// agent's turn, then the routing calls that chose the next agent).
fn handoff_tree(steps: &[boardroom::store::HandoffStep], turns: &[Turn]) -> String {
    let mut out = String::new();
    for (i, step) in steps.iter().enumerate() {
        let round = i as u32;
        let _ = writeln!(
            out,
            "{}",
            step_line(step).lines().next().unwrap_or_default()
        );
        for t in turns
            .iter()
            .filter(|t| t.round == round && t.phase != Phase::Route)
        {
            let _ = writeln!(out, "  {}", turn_line(t, false));
        }
        for t in turns
            .iter()
            .filter(|t| t.round == round + 1 && t.phase == Phase::Route)
        {
            let _ = writeln!(out, "  routing: {}", turn_line(t, false));
        }
    }
    out
}

fn turn_line(t: &Turn, parents: bool) -> String {
    let mut s = format!(
        "{} round {} · {} · {} · {} tokens ({}+{}) · {} ms",
        t.turn_id,
        t.round,
        t.phase.as_str(),
        t.agent,
        t.usage.total(),
        t.usage.prompt_tokens,
        t.usage.completion_tokens,
        t.latency_ms
    );
    if t.retries > 0 {
        let _ = write!(s, " · {} retries", t.retries);
    }
    if parents && !t.parents.is_empty() {
        let parents: Vec<String> = t.parents.iter().map(ToString::to_string).collect();
        let _ = write!(s, " · based on {}", parents.join(" "));
    }
    if let Some(e) = &t.error {
        let _ = write!(s, " · error: {}", one_line(e, 80));
    }
    s
}

fn phase_order(p: Phase) -> u8 {
    match p {
        Phase::Plan => 0,
        Phase::Draft => 1,
        Phase::Challenge => 2,
        Phase::Review => 3,
        Phase::Final => 4,
        Phase::Memory => 5,
        _ => 6,
    }
}

/// The call graph as indented text: each round under the master turn
/// that opened it, members under it, challengers under the members.
fn tree(master: &str, turns: &[Turn]) -> String {
    let mut rounds: BTreeMap<u32, Vec<&Turn>> = BTreeMap::new();
    for t in turns {
        rounds.entry(t.round).or_default().push(t);
    }
    let mut out = String::new();
    for (round, mut ts) in rounds {
        ts.sort_by_key(|t| (phase_order(t.phase), t.turn_id));
        let _ = writeln!(out, "round {round}");
        let mut members_header = false;
        let mut challengers_header = false;
        for t in ts {
            let depth = match t.phase {
                Phase::Draft => {
                    if !members_header {
                        members_header = true;
                        let _ = writeln!(out, "  {master} → members");
                    }
                    2
                }
                Phase::Challenge => {
                    if !challengers_header {
                        challengers_header = true;
                        let _ = writeln!(out, "    members → challengers");
                    }
                    3
                }
                _ => 1,
            };
            let _ = writeln!(out, "{}{}", "  ".repeat(depth), turn_line(t, false));
        }
    }
    out
}
