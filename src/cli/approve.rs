//! Tool-call approvals on the terminal: while a run goes on, each call
//! that waits for a decision (`approve:` in the team) is asked about
//! inline (approve / deny with a reason / edit the arguments); an empty
//! line or the end of input leaves the decision for later (the run saves
//! and exits 3). Without a terminal the run stops at such a call and
//! `resume --approve CALL` / `--deny CALL` decides.

use std::path::Path;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use boardroom::{Approvals, Decision, PendingApproval};
use crossbeam_channel::{Receiver, RecvTimeoutError};

use super::render;
use super::text::terminal_safe;

/// Lines from stdin, read on one thread for the whole process: the
/// approval prompts and the answer to a master's question share it. The
/// thread ends at the end of input; it may be left waiting for a line
/// when the program exits (a read of a terminal cannot be interrupted).
fn lines() -> &'static Receiver<Option<String>> {
    static LINES: OnceLock<Receiver<Option<String>>> = OnceLock::new();
    LINES.get_or_init(|| {
        let (tx, rx) = crossbeam_channel::unbounded();
        let reader = std::thread::Builder::new()
            .name("boardroom-stdin".into())
            .spawn(move || {
                loop {
                    let mut line = String::new();
                    match std::io::stdin().read_line(&mut line) {
                        Ok(n) if n > 0 => {
                            if tx.send(Some(line)).is_err() {
                                return;
                            }
                        }
                        _ => {
                            let _ = tx.send(None);
                            return;
                        }
                    }
                }
            });
        if reader.is_err() {
            // No thread: every read sees the end of input.
            let (tx, rx) = crossbeam_channel::bounded(1);
            let _ = tx.send(None);
            return rx;
        }
        rx
    })
}

/// The next line typed (without its line end); `None` at the end of input.
pub(crate) fn read_line() -> Option<String> {
    lines()
        .recv()
        .ok()
        .flatten()
        .map(|l| l.trim_end_matches(['\n', '\r']).to_string())
}

/// The next line typed, or `Err(())` once `done` is set (the run ended
/// while the question was open).
fn read_line_until(done: &AtomicBool) -> Result<Option<String>, ()> {
    loop {
        match lines().recv_timeout(Duration::from_millis(200)) {
            Ok(line) => return Ok(line.map(|l| l.trim_end_matches(['\n', '\r']).to_string())),
            Err(RecvTimeoutError::Disconnected) => return Ok(None),
            Err(RecvTimeoutError::Timeout) if done.load(Ordering::Relaxed) => return Err(()),
            Err(RecvTimeoutError::Timeout) => {}
        }
    }
}

/// Asks about every call that waits, until `done` is set.
pub(crate) fn ask_on_terminal(approvals: &Approvals, done: &AtomicBool) {
    while !done.load(Ordering::Relaxed) {
        for call in approvals.wait_pending(Duration::from_millis(200)) {
            if done.load(Ordering::Relaxed) {
                return;
            }
            match ask_one(&call, done) {
                Asked::Decided(decision) => {
                    if let Err(e) = approvals.decide(&call.call_id, decision) {
                        render::print_above(&format!("  ! {e}"));
                    }
                }
                Asked::Later => {
                    approvals.stop_waiting();
                    return;
                }
                Asked::Ended => return,
            }
        }
    }
}

/// What came of one question.
enum Asked {
    Decided(Decision),
    /// Decide later: the run saves and ends waiting.
    Later,
    /// The run ended while asking.
    Ended,
}

fn ask_one(call: &PendingApproval, done: &AtomicBool) -> Asked {
    use std::io::Write as _;
    // A line typed while nothing was asked is no answer to this.
    while lines().try_recv().is_ok() {}
    // The question is a whole line above the live view (a prompt left on
    // the view's own line would be drawn over).
    let (shown, cut) = shown_arguments(&call.arguments, MAX_SHOWN);
    let view = if cut { ", [v]iew all" } else { "" };
    if call.masked {
        render::print_above(
            "  ! these arguments held a secret, shown as ***: after a resume the saved copy \
             is masked, so edit them (with the secret) or deny",
        );
    }
    render::print_above(&format!(
        "  ? {} asks to run {} with\n{shown}\n  {}: [a]pprove, [d]eny [REASON], [e]dit [JSON]{view}, empty: decide later",
        terminal_safe(&call.agent),
        terminal_safe(&call.tool),
        terminal_safe(&call.call_id)
    ));
    loop {
        eprint!("> ");
        let _ = std::io::stderr().flush();
        let line = match read_line_until(done) {
            Err(()) => return Asked::Ended,
            Ok(None) => return Asked::Later,
            Ok(Some(line)) => line,
        };
        let line = line.trim();
        let (word, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        let rest = rest.trim();
        match word.to_ascii_lowercase().as_str() {
            "" => return Asked::Later,
            "a" | "approve" | "y" | "yes" => return Asked::Decided(Decision::Approve),
            "d" | "deny" | "n" | "no" => {
                return Asked::Decided(Decision::Deny {
                    reason: (!rest.is_empty()).then(|| rest.to_string()),
                });
            }
            "e" | "edit" => {
                let arguments = if rest.is_empty() {
                    render::print_above(&format!("  the arguments for {} (JSON):", call.tool));
                    eprint!("> ");
                    let _ = std::io::stderr().flush();
                    match read_line_until(done) {
                        Err(()) => return Asked::Ended,
                        Ok(None) => return Asked::Later,
                        Ok(Some(line)) => line.trim().to_string(),
                    }
                } else {
                    rest.to_string()
                };
                match serde_json::from_str::<serde_json::Value>(&arguments) {
                    Ok(v) if v.is_object() => return Asked::Decided(Decision::Edit { arguments }),
                    _ => render::print_above(&format!("  not a JSON object: {arguments}")),
                }
            }
            "v" | "view" => render::print_above(&shown_arguments(&call.arguments, usize::MAX).0),
            other => render::print_above(&format!(
                "  '{other}': type a, d or e (or nothing to decide later)"
            )),
        }
    }
}

/// Characters of a call's arguments the question shows before `v`.
const MAX_SHOWN: usize = 4096;
/// Columns the arguments are wrapped at.
const WRAP: usize = 100;

/// A call's arguments as the question shows them: compact JSON (the
/// text as written when it is not JSON), made safe for the terminal,
/// wrapped at [`WRAP`] columns and indented, at most `max` characters
/// with a note when cut; and whether it was cut.
fn shown_arguments(arguments: &str, max: usize) -> (String, bool) {
    let compact = serde_json::from_str::<serde_json::Value>(arguments)
        .ok()
        .and_then(|v| serde_json::to_string(&v).ok())
        .unwrap_or_else(|| arguments.trim().to_string());
    let safe = terminal_safe(&compact).into_owned();
    let total = safe.chars().count();
    let kept: Vec<char> = safe.chars().take(max).collect();
    let mut out: Vec<String> = kept
        .chunks(WRAP)
        .map(|line| format!("    {}", line.iter().collect::<String>()))
        .collect();
    let cut = total > max;
    if cut {
        out.push(format!(
            "    [... cut: {total} characters; type v to see them all]"
        ));
    }
    (out.join("\n"), cut)
}

/// After a run that stopped at calls waiting for a decision: which, and
/// the commands that decide.
pub(crate) fn waiting_note(runs_dir: &Path, run_id: &str, resume: &str) {
    let pending = boardroom::store::load_run(&runs_dir.join(run_id))
        .map(|r| r.state.pending_approvals())
        .unwrap_or_default();
    if pending.is_empty() {
        // The saved run could not be read to list them.
        eprintln!(
            "waiting for approval of tool calls: `boardroom show {}` lists them",
            terminal_safe(run_id)
        );
        eprintln!("decide with: {resume} --approve <call id>  (or --deny <call id>)");
        return;
    }
    eprintln!("waiting for approval of {} tool call(s):", pending.len());
    for p in &pending {
        eprintln!(
            "  {}: {} → {} {}",
            terminal_safe(&p.call_id),
            p.agent,
            p.tool,
            terminal_safe(&super::text::one_line(&p.arguments, 120))
        );
    }
    let call = terminal_safe(&pending[0].call_id);
    eprintln!("decide with: {resume} --approve {call}  (or --deny {call} --reason \"...\")");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_arguments_are_shown_whole_and_wrapped() {
        let content = "x".repeat(250);
        let args = format!("{{\"path\": \"a.txt\",\n \"content\": \"{content}\"}}");
        let (shown, cut) = shown_arguments(&args, MAX_SHOWN);
        assert!(!cut);
        let lines: Vec<&str> = shown.lines().collect();
        assert_eq!(lines.len(), 3, "{shown}");
        assert!(
            lines
                .iter()
                .all(|l| l.starts_with("    ") && l.len() <= WRAP + 4)
        );
        let joined: String = lines.iter().map(|l| &l[4..]).collect();
        assert_eq!(
            joined,
            format!("{{\"content\":\"{content}\",\"path\":\"a.txt\"}}")
        );
    }

    #[test]
    fn long_arguments_are_cut_with_a_note() {
        let args = format!("{{\"content\": \"{}\"}}", "y".repeat(5000));
        let (shown, cut) = shown_arguments(&args, MAX_SHOWN);
        assert!(cut);
        assert!(
            shown.ends_with("    [... cut: 5014 characters; type v to see them all]"),
            "{shown}"
        );
        let (all, cut) = shown_arguments(&args, usize::MAX);
        assert!(!cut);
        assert_eq!(all.lines().map(|l| l.len() - 4).sum::<usize>(), 5014);
    }
}
