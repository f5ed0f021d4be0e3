//! The one thread that owns the terminal: it turns events into a live view
//! on stderr (one line per member while a round runs) or JSON lines on
//! stdout, so parallel members never tear each other's output.

use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::time::Duration;

use super::one_line;
use boardroom::{EntryKind, Event, EventKind, Phase, RunStatus};
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
            let stdout = std::io::stdout();
            let mut out = stdout.lock();
            for event in rx {
                if let Ok(line) = serde_json::to_string(&event) {
                    let _ = writeln!(out, "{line}");
                    let _ = out.flush();
                }
            }
        }
        Mode::Human => Human::new().run(rx),
    }
}

struct Human {
    multi: MultiProgress,
    live: bool,
    bars: HashMap<String, ProgressBar>,
    written: HashMap<String, usize>,
}

impl Human {
    fn new() -> Self {
        let live = std::io::stderr().is_terminal();
        let target = if live {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        Human {
            multi: MultiProgress::with_draw_target(target),
            live,
            bars: HashMap::new(),
            written: HashMap::new(),
        }
    }

    fn line(&self, text: String) {
        if self.live {
            let _ = self.multi.println(text);
        } else {
            eprintln!("{text}");
        }
    }

    fn run(mut self, rx: Receiver<Event>) {
        for event in rx {
            self.show(event);
        }
        for (_, bar) in self.bars.drain() {
            bar.finish_and_clear();
        }
    }

    fn show(&mut self, event: Event) {
        let agent = event.agent;
        match event.kind {
            EventKind::RunStarted {
                team,
                model,
                members,
                max_rounds,
                ..
            } => self.line(format!(
                "boardroom · team '{team}' · {members} members · model {model} · up to {max_rounds} rounds"
            )),
            EventKind::RoundStarted {
                round,
                assignments,
                threads,
            } => self.line(format!("round {round} · {assignments} assignments on {threads} threads")),
            EventKind::Rerun {
                round,
                members,
                reason,
            } => self.line(format!(
                "round {round} · running again ({reason}): {}",
                members.join(", ")
            )),
            EventKind::TaskAssigned { round, member, task } => {
                let text = format!("r{round} {member}: {}", one_line(&task, 60));
                if self.live {
                    let bar = self.multi.add(ProgressBar::new_spinner());
                    bar.set_style(
                        ProgressStyle::with_template("  {spinner} {msg} {prefix:.dim} {elapsed:.dim}")
                            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                    );
                    bar.enable_steady_tick(Duration::from_millis(120));
                    bar.set_message(text);
                    if let Some(old) = self.bars.insert(member, bar) {
                        old.finish_and_clear();
                    }
                } else {
                    self.line(format!("  → {text}"));
                }
            }
            EventKind::AgentDelta { phase: Phase::Draft, delta, .. } => {
                let n = self.written.entry(agent.clone()).or_default();
                *n += delta.chars().count();
                if let Some(bar) = self.bars.get(&agent) {
                    bar.set_prefix(format!("{n} chars"));
                }
            }
            EventKind::BoardEntry {
                kind: EntryKind::Draft,
                ..
            } => {
                self.written.remove(&agent);
                if let Some(bar) = self.bars.remove(&agent) {
                    bar.finish_and_clear();
                }
                self.line(format!("  ✓ {agent} put a draft on the board"));
            }
            EventKind::Error { message, .. } => {
                if let Some(bar) = self.bars.remove(&agent) {
                    bar.finish_and_clear();
                }
                self.line(format!("  ✗ {agent}: {}", one_line(&message, 100)));
            }
            EventKind::Challenge { text, .. } => {
                self.line(format!("  ⚑ {agent} challenges: {}", one_line(&text, 90)));
            }
            EventKind::Agree { .. } => self.line(format!("  ✓ {agent} agrees")),
            EventKind::ToolResult {
                tool, is_error, text, ..
            } => {
                let mark = if is_error { "✗" } else { "→" };
                self.line(format!("    {agent} {mark} {tool}: {}", one_line(&text, 80)));
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
                let what = match (round, decision.as_str()) {
                    (0, "assign") => format!("{agent} split the task into {assignments} assignments"),
                    (_, "assign") => format!("{agent} reviewed round {round}: {assignments} assignments for another round"),
                    (_, "done") => format!("{agent} reviewed round {round}: DONE"),
                    _ => format!("{agent}: no usable decision"),
                };
                self.line(what);
            }
            EventKind::RunFinished {
                status, rounds, usage, ..
            } => {
                let how = match status {
                    RunStatus::Done => "done".to_string(),
                    other => other.as_str().replace('_', " "),
                };
                self.line(format!(
                    "{how} after {rounds} round(s) · {} tokens ({} prompt, {} completion)",
                    usage.total(),
                    usage.prompt_tokens,
                    usage.completion_tokens
                ));
            }
            _ => {}
        }
    }
}

/// Tokens per agent, on stderr, after the answer.
pub(crate) fn usage_by_agent(usage: &std::collections::BTreeMap<String, boardroom::Usage>) {
    if usage.is_empty() {
        return;
    }
    let width = usage.keys().map(String::len).max().unwrap_or(0);
    eprintln!("tokens by agent:");
    for (agent, u) in usage {
        eprintln!(
            "  {agent:<width$}  {:>8} ({} prompt, {} completion)",
            u.total(),
            u.prompt_tokens,
            u.completion_tokens
        );
    }
}
