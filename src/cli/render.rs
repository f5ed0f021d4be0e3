//! The one thread that owns the terminal: it turns events into a live view
//! on stderr (one line per model call in flight, in every phase: agent,
//! what it does, elapsed time, characters so far and the end of the text as
//! it streams) or JSON lines on stdout, so parallel members never tear each
//! other's output. Log lines print above the live lines ([`print_above`]).

use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::sync::OnceLock;
use std::time::Duration;

use super::text::one_line;
use boardroom::board::EntryKind;
use boardroom::{Event, EventKind, Phase, ReviewVerdict, RunStatus};
use crossbeam_channel::Receiver;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How events are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// JSON lines on stdout.
    Json,
    /// Human lines on stderr; live bars when stderr is a terminal.
    Human,
}

/// Renders events until every sender is dropped.
pub(crate) fn render(rx: Receiver<Event>, mode: Mode) {
    match mode {
        Mode::Json => {
            // Buffered, and flushed whenever no further event is waiting:
            // a reader sees each line as soon as the run is quiet, and a
            // burst (a 1024-member round) goes out in a few writes instead
            // of a write a line.
            let mut out = std::io::BufWriter::with_capacity(64 * 1024, std::io::stdout().lock());
            while let Ok(event) = rx.recv() {
                let mut next = Some(event);
                while let Some(event) = next.take() {
                    // Whole lines only: serialised before anything is written.
                    if let Ok(mut line) = serde_json::to_vec(&event) {
                        line.push(b'\n');
                        let _ = out.write_all(&line);
                    }
                    next = rx.try_recv().ok();
                }
                let _ = out.flush();
            }
        }
        Mode::Human => Human::new().run(rx),
    }
}

/// The live view while it is on screen: log lines and the CLI's own notes
/// print above it through [`print_above`], never through it.
static VIEW: OnceLock<MultiProgress> = OnceLock::new();

/// Prints a whole line on stderr above the live lines (or plainly when
/// there is no live view), so it never tears them. A log line can carry a
/// server's text: escape sequences in it are shown, not obeyed.
pub(crate) fn print_above(line: &str) {
    let line = super::text::terminal_safe(line);
    let line = line.as_ref();
    match VIEW.get() {
        Some(multi) if !multi.is_hidden() => {
            let _ = multi.println(line);
        }
        _ => eprintln!("{line}"),
    }
}

/// Whether the live view is on screen.
pub(crate) fn is_live() -> bool {
    VIEW.get().is_some_and(|m| !m.is_hidden())
}

/// Runs `print` with the live lines off the screen and draws them again
/// after it: for output printed past the view while the run goes on (the
/// answer and its usage table, while the memory notes are taken). The view
/// waits meanwhile, so a live line drawn as the table prints cannot end up
/// between its lines, left there when the view later clears what it
/// counts as its own.
pub(crate) fn suspended(print: impl FnOnce()) {
    match VIEW.get() {
        Some(multi) if !multi.is_hidden() => multi.suspend(print),
        _ => print(),
    }
}

/// Takes the live lines off the screen (before the process exits at once).
pub(crate) fn clear_view() {
    if let Some(multi) = VIEW.get() {
        let _ = multi.clear();
    }
}

/// How many characters of an error a `✗` line shows: all of any real one.
const ERROR_CHARS: usize = 1000;

/// How many characters of an answer's end a live line shows.
const TAIL_CHARS: usize = 48;

/// One model call on screen.
struct CallLine {
    bar: ProgressBar,
    chars: usize,
    tail: String,
}

struct Human {
    multi: MultiProgress,
    live: bool,
    /// The calls in flight, by their number in the run.
    calls: HashMap<u64, CallLine>,
    /// A handoff run counts steps (turns), not rounds.
    handoff: bool,
    /// Lines not yet written, when stderr is not a terminal: written
    /// whenever no event waits (a 1024-member round is three thousand
    /// lines, a write each on unbuffered stderr).
    pending: std::cell::RefCell<String>,
}

impl Human {
    fn new() -> Self {
        let live = std::io::stderr().is_terminal();
        let target = if live {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        let multi = MultiProgress::with_draw_target(target);
        if live {
            let _ = VIEW.set(multi.clone());
        }
        Human {
            multi,
            live,
            calls: HashMap::new(),
            handoff: false,
            pending: std::cell::RefCell::default(),
        }
    }

    fn line(&self, text: String) {
        if self.live {
            let _ = self.multi.println(text);
        } else {
            let full = {
                let mut pending = self.pending.borrow_mut();
                pending.push_str(&text);
                pending.push('\n');
                pending.len() >= 64 * 1024
            };
            if full {
                self.flush();
            }
        }
    }

    /// Writes the lines not yet written, at once.
    fn flush(&self) {
        let mut pending = self.pending.borrow_mut();
        if !pending.is_empty() {
            let _ = std::io::stderr().lock().write_all(pending.as_bytes());
            pending.clear();
        }
    }

    fn run(mut self, rx: Receiver<Event>) {
        while let Ok(event) = rx.recv() {
            let mut next = Some(event);
            while let Some(event) = next.take() {
                self.show(event);
                next = rx.try_recv().ok();
            }
            self.flush();
        }
        for (_, call) in self.calls.drain() {
            call.bar.finish_and_clear();
        }
    }

    /// A live line for a call that starts: agent, what it does, elapsed
    /// time; the characters so far and the end of the text as it streams.
    fn call_started(&mut self, agent: &str, what: String, call: u64) {
        if !self.live {
            return;
        }
        let bar = self.multi.add(ProgressBar::new_spinner());
        bar.set_style(
            ProgressStyle::with_template("  {spinner} {msg} {elapsed:.dim} {prefix:.dim}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        bar.enable_steady_tick(Duration::from_millis(120));
        bar.set_message(format!("{agent} · {what}"));
        let line = CallLine {
            bar,
            chars: 0,
            tail: String::new(),
        };
        if let Some(old) = self.calls.insert(call, line) {
            old.bar.finish_and_clear();
        }
    }

    fn delta(&mut self, call: u64, delta: &str) {
        let Some(line) = self.calls.get_mut(&call) else {
            return;
        };
        line.chars += delta.chars().count();
        line.tail.push_str(delta);
        let mut tail: String = line
            .tail
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .chars()
            .filter(|c| !c.is_control())
            .collect();
        let n = tail.chars().count();
        if n > TAIL_CHARS {
            tail = tail.chars().skip(n - TAIL_CHARS).collect();
        }
        line.tail.clone_from(&tail);
        line.bar.set_prefix(format!(
            "{} chars · …{}",
            line.chars,
            super::text::terminal_safe(&tail)
        ));
    }

    fn show(&mut self, event: Event) {
        let agent = event.agent;
        match event.kind {
            EventKind::RunStarted {
                team,
                model,
                members,
                max_rounds,
                process,
                ..
            } => {
                self.handoff = process == "handoff";
                let (who, cap) = if self.handoff {
                    ("agents", "turns")
                } else {
                    ("members", "rounds")
                };
                self.line(format!(
                    "boardroom · team '{team}' · {members} {who} · model {model} · up to {max_rounds} {cap}"
                ));
            }
            // A resumed round whose drafts all landed before the stop.
            EventKind::RoundStarted {
                round,
                assignments: 0,
                ..
            } => self.line(format!(
                "round {round} · resumed with every draft already on the board"
            )),
            EventKind::RoundStarted {
                round,
                assignments,
                threads,
            } => self.line(format!(
                "round {round} · {assignments} assignments on {threads} threads"
            )),
            EventKind::Rerun {
                round,
                members,
                reason,
            } => self.line(format!(
                "round {round} · running again ({reason}): {}",
                members.join(", ")
            )),
            // Live, the assignment shows as its call's line instead.
            EventKind::TaskAssigned {
                round,
                member,
                task,
            } if !self.live => {
                self.line(format!("  → r{round} {member}: {}", one_line(&task, 60)));
            }
            EventKind::CallStarted {
                round,
                phase,
                call,
                attempt,
                task,
            } => {
                let mut what = match phase {
                    Phase::Plan => "planning the work".to_string(),
                    Phase::Draft => format!(
                        "r{round} drafting: {}",
                        one_line(task.as_deref().unwrap_or(""), 50)
                    ),
                    Phase::Challenge => format!("reading the board of round {round}"),
                    Phase::Review => format!("reviewing round {round}"),
                    Phase::Final => "writing the final answer".to_string(),
                    Phase::Memory => "noting what to remember".to_string(),
                    Phase::Converse => "taking its turn".to_string(),
                    Phase::Route => "choosing who acts next".to_string(),
                    _ => "working".to_string(),
                };
                if attempt > 0 {
                    what.push_str(&format!(" (asked again, {attempt})"));
                }
                self.call_started(&agent, what, call);
            }
            EventKind::AgentDelta { call, delta, .. } => self.delta(call, &delta),
            EventKind::CallEnded { call, .. } => {
                if let Some(line) = self.calls.remove(&call) {
                    line.bar.finish_and_clear();
                }
            }
            EventKind::BoardEntry {
                kind: EntryKind::Draft,
                ..
            } => self.line(format!("  ✓ {agent} put a draft on the board")),
            EventKind::Error { message, .. } => {
                // "writer failed: ..." names its agent already. The whole
                // message: with the log line gone, this is the only place
                // it is printed (its advice is at its end).
                let line = match message.strip_prefix(agent.as_str()) {
                    Some(rest)
                        if rest.starts_with(" failed: ") || rest.starts_with(" panicked: ") =>
                    {
                        format!("  ✗ {agent} {}", one_line(rest, ERROR_CHARS))
                    }
                    _ => format!("  ✗ {agent}: {}", one_line(&message, ERROR_CHARS)),
                };
                self.line(line);
            }
            EventKind::Challenge { text, .. } => {
                self.line(format!("  ⚑ {agent} challenges: {}", one_line(&text, 90)));
            }
            EventKind::Agree { .. } => self.line(format!("  ✓ {agent} agrees")),
            EventKind::ToolResult {
                tool,
                is_error,
                text,
                ..
            } => {
                let mark = if is_error { "✗" } else { "→" };
                self.line(format!(
                    "    {agent} {mark} {tool}: {}",
                    one_line(&text, 80)
                ));
            }
            EventKind::WorkspaceFile { path, bytes } => {
                self.line(format!("    {agent} wrote {path} ({bytes} bytes)"));
            }
            EventKind::ReviewDecision {
                round,
                decision,
                assignments,
                rejected,
            } => {
                for r in rejected {
                    self.line(format!("  ! {agent}: rejected directive: {r}"));
                }
                let what = match (round, decision) {
                    (0, ReviewVerdict::Assign) => {
                        format!("{agent} split the task into {assignments} assignments")
                    }
                    (_, ReviewVerdict::Assign) => format!(
                        "{agent} reviewed round {round}: {assignments} assignments for another round"
                    ),
                    (_, ReviewVerdict::Done) => format!("{agent} reviewed round {round}: DONE"),
                    (_, ReviewVerdict::Ask) => format!("{agent} has a question for you"),
                    _ => format!("{agent}: no usable decision"),
                };
                self.line(what);
            }
            EventKind::Handoff {
                from,
                to,
                reason,
                how,
            } => self.line(format!(
                "  ⇢ {from} → {to} ({how}): {}",
                one_line(&reason, 80)
            )),
            EventKind::UserMessage { text } => {
                self.line(format!("  » user: {}", one_line(&text, 90)));
            }
            EventKind::ApprovalRequested {
                id,
                tool,
                arguments,
                ..
            } => self.line(format!(
                "  ? {agent} waits for approval: {tool} {} (call {id})",
                one_line(&arguments, 80)
            )),
            EventKind::ApprovalDecided {
                id,
                tool,
                decision,
                reason,
                ..
            } => self.line(match reason {
                Some(why) => format!("  · call {id} ({tool}) {decision}: {}", one_line(&why, 80)),
                None => format!("  · call {id} ({tool}) {decision}"),
            }),
            EventKind::AwaitingUser { question } => {
                self.line(format!("  ? {agent} asks you: {}", one_line(&question, 90)));
            }
            EventKind::RunFinished {
                status,
                rounds,
                usage,
                ..
            } => {
                for (_, call) in self.calls.drain() {
                    call.bar.finish_and_clear();
                }
                let how = match status {
                    RunStatus::Done => "done".to_string(),
                    RunStatus::Cancelled => "stopped".to_string(),
                    RunStatus::AwaitingUser => "waiting for the user".to_string(),
                    RunStatus::AwaitingApproval => "waiting for approval".to_string(),
                    other => other.as_str().replace('_', " "),
                };
                let unit = if self.handoff { "step(s)" } else { "round(s)" };
                self.line(format!(
                    "{how} after {rounds} {unit} · {} tokens ({} prompt, {} completion)",
                    usage.total(),
                    usage.prompt_tokens,
                    usage.completion_tokens
                ));
            }
            EventKind::LimitChanged {
                endpoint,
                from,
                to,
                in_flight,
                reason,
            } => self.line(format!(
                "{endpoint}: in-flight limit {from} → {to} ({}, {in_flight} in flight)",
                reason.as_str().replace('_', " ")
            )),
            _ => {}
        }
    }
}

/// The most agents the usage table lists one by one; a larger team shows
/// the ones that used the most tokens and one line for the rest.
const USAGE_ROWS: usize = 16;

/// Tokens per agent, on stderr, after the answer, in one write (stderr is
/// unbuffered: a line a write, a write a piece, was 15,000 system calls for
/// a 1024-member team).
pub(crate) fn usage_by_agent(usage: &std::collections::BTreeMap<String, boardroom::Usage>) {
    let table = usage_table(usage);
    if !table.is_empty() {
        let _ = std::io::stderr().lock().write_all(table.as_bytes());
    }
}

/// The usage table: every agent by name when there are at most
/// [`USAGE_ROWS`], else the `USAGE_ROWS - 1` that used the most (by name)
/// and the others summed on one line.
fn usage_table(usage: &std::collections::BTreeMap<String, boardroom::Usage>) -> String {
    use std::fmt::Write as _;
    if usage.is_empty() {
        return String::new();
    }
    let mut shown: Vec<(&String, &boardroom::Usage)> = usage.iter().collect();
    let mut rest = None;
    if shown.len() > USAGE_ROWS {
        shown.sort_by(|a, b| b.1.total().cmp(&a.1.total()).then(a.0.cmp(b.0)));
        let others = shown.split_off(USAGE_ROWS - 1);
        let mut sum = boardroom::Usage::default();
        for (_, u) in &others {
            sum.prompt_tokens += u.prompt_tokens;
            sum.completion_tokens += u.completion_tokens;
        }
        rest = Some((format!("{} others", others.len()), sum));
        shown.sort_by(|a, b| a.0.cmp(b.0));
    }
    let width = shown
        .iter()
        .map(|(a, _)| a.len())
        .chain(rest.as_ref().map(|(l, _)| l.len()))
        .max()
        .unwrap_or(0);
    let mut out = String::from("tokens by agent:\n");
    let rows = shown
        .into_iter()
        .map(|(a, u)| (a.as_str(), *u))
        .chain(rest.as_ref().map(|(l, u)| (l.as_str(), *u)));
    for (agent, u) in rows {
        let _ = writeln!(
            out,
            "  {agent:<width$}  {:>8} ({} prompt, {} completion)",
            u.total(),
            u.prompt_tokens,
            u.completion_tokens
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(n: usize) -> std::collections::BTreeMap<String, boardroom::Usage> {
        (0..n)
            .map(|i| {
                let u = boardroom::Usage {
                    prompt_tokens: 100 + i as u64,
                    completion_tokens: 1,
                    ..boardroom::Usage::default()
                };
                (format!("m{i:04}"), u)
            })
            .collect()
    }

    #[test]
    fn a_small_team_lists_every_agent_by_name() {
        let t = usage_table(&usage(3));
        assert_eq!(
            t,
            "tokens by agent:\n  m0000       101 (100 prompt, 1 completion)\n  \
             m0001       102 (101 prompt, 1 completion)\n  m0002       103 (102 prompt, 1 completion)\n"
        );
    }

    #[test]
    fn a_large_team_shows_the_biggest_and_sums_the_rest() {
        let t = usage_table(&usage(1024));
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 1 + USAGE_ROWS, "{t}");
        // The biggest users, by name; the rest summed, nothing lost.
        assert!(lines[1].trim_start().starts_with("m1009"), "{t}");
        assert!(
            lines[USAGE_ROWS - 1].trim_start().starts_with("m1023"),
            "{t}"
        );
        let others: u64 = (0..1009).map(|i| 101 + i as u64).sum();
        assert!(
            lines[USAGE_ROWS].contains(&format!("1009 others  {others:>8}")),
            "{t}"
        );
    }
}
