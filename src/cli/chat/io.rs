//! What the chat reads and shows: the reader's [`Input`], the Ctrl-C
//! router, and [`Io`], the chat's side of the library's [`ChatIo`]
//! (printing events, asking yes/no questions).

use std::io::Write as _;
use std::time::Duration;

use boardroom::Cancel;
use boardroom::chat::{ChatEvent, ChatIo};
use crossbeam_channel::{Receiver, Sender};
use parking_lot::Mutex;

use crate::cli::text::terminal_safe;

/// What the reader thread hands the main thread.
pub(super) enum Input {
    Line(String),
    Interrupt,
    Eof,
}

/// Routes a Ctrl-C: to the partner turn in progress (cancelling it), else
/// to the main loop.
pub(super) struct Interrupts {
    pub(super) turn: Mutex<Option<Cancel>>,
    pub(super) inputs: Sender<Input>,
}

impl Interrupts {
    pub(super) fn press(&self) {
        match &*self.turn.lock() {
            Some(cancel) => cancel.cancel(),
            None => {
                let _ = self.inputs.send(Input::Interrupt);
            }
        }
    }
}

/// Where the chat is shown.
pub(super) enum Out {
    /// A terminal under rustyline: printed above the prompt.
    Terminal(Box<dyn rustyline::ExternalPrinter + Send>),
    /// A pipe or file: plain lines.
    Plain,
    /// JSON lines.
    Json,
}

pub(super) struct Io {
    pub(super) out: Out,
    pub(super) partner: String,
    pub(super) inputs: Receiver<Input>,
    /// The current turn's cancel flag (a Ctrl-C also ends a consent wait).
    pub(super) cancel: Option<Cancel>,
    pub(super) eof: bool,
    /// On a terminal a yes/no answer must be typed after its question: a
    /// line typed ahead (while the partner was still working) is no answer
    /// to a question the user had not seen yet; it is kept, as a message.
    pub(super) fresh_answers: bool,
    /// Lines typed ahead of a question, said once it is answered.
    pub(super) deferred: Vec<String>,
}

impl Io {
    pub(super) fn print(&mut self, text: &str) {
        let text = terminal_safe(text).into_owned();
        match &mut self.out {
            Out::Terminal(p) => {
                if p.print(format!("{text}\n")).is_err() {
                    eprintln!("{text}");
                }
            }
            Out::Plain | Out::Json => {
                let mut stdout = std::io::stdout().lock();
                let _ = writeln!(stdout, "{text}");
                let _ = stdout.flush();
            }
        }
    }
}

impl ChatIo for Io {
    fn emit(&mut self, event: &ChatEvent) {
        if matches!(self.out, Out::Json) {
            let line = serde_json::to_string(event).unwrap_or_default();
            self.print(&line);
            return;
        }
        let terminal = matches!(self.out, Out::Terminal(_));
        let text = match event {
            ChatEvent::UserMessage { text } if !terminal => format!("you: {text}"),
            ChatEvent::UserMessage { .. } => return,
            ChatEvent::PartnerMessage { text } => format!("{}: {text}", self.partner),
            ChatEvent::ConsentAsked { question } => question.clone(),
            ChatEvent::Consent { granted } if !terminal => {
                format!("you: {}", if *granted { "y" } else { "n" })
            }
            ChatEvent::Consent { .. } => return,
            ChatEvent::RunLaunched { run_id, modules } => format!(
                "[team] run {run_id} started on {modules} modules (boardroom view {run_id} draws it)"
            ),
            // Every line of the report inside the frame: none can pass
            // for one of boardroom's own (a question, a notice, `you:`).
            ChatEvent::Report { path, text, .. } => report_lines(path, text),
            ChatEvent::Notice { text } => format!("[boardroom] {text}"),
            _ => return,
        };
        self.print(&text);
    }

    fn consent(&mut self, _question: &str) -> bool {
        if self.fresh_answers {
            let mut ahead = false;
            while let Ok(input) = self.inputs.try_recv() {
                match input {
                    Input::Line(l) => {
                        ahead = true;
                        self.deferred.push(l);
                    }
                    // A Ctrl-C before the question is not a no to it.
                    Input::Interrupt => {}
                    Input::Eof => {
                        self.eof = true;
                        return false;
                    }
                }
            }
            if ahead {
                self.print(
                    "[boardroom] what you typed before this question is kept as a message; \
                     answer the question with y or n",
                );
            }
        }
        loop {
            if self.eof {
                return false;
            }
            match self.inputs.recv_timeout(Duration::from_millis(50)) {
                Ok(Input::Line(l)) => {
                    // Only y/yes/n/no (or an empty line, the default no)
                    // answers: a message typed as the question came up (a
                    // team's news can raise one at any time) is kept as a
                    // message, and the question waits for its answer.
                    match l.trim().to_ascii_lowercase().as_str() {
                        "y" | "yes" => return true,
                        "n" | "no" | "" => return false,
                        _ => {
                            self.deferred.push(l);
                            self.print(
                                "[boardroom] kept as a message; answer the question above with y or n",
                            );
                        }
                    }
                }
                Ok(Input::Interrupt) => return false,
                Ok(Input::Eof) | Err(crossbeam_channel::RecvTimeoutError::Disconnected) => {
                    self.eof = true;
                    return false;
                }
                Err(crossbeam_channel::RecvTimeoutError::Timeout) => {
                    if self.cancel.as_ref().is_some_and(Cancel::is_cancelled) {
                        return false;
                    }
                }
            }
        }
    }
}

/// A report as the chat shows it: each line inside a frame, marked `│ `,
/// so that none can pass for one of boardroom's own lines (a question,
/// a notice, `you:`).
pub(super) fn report_lines(path: &str, text: &str) -> String {
    let body: Vec<String> = text.trim_end().lines().map(|l| format!("│ {l}")).collect();
    format!("──── report ({path}) ────\n{}\n────", body.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn io(fresh_answers: bool, queued: Vec<Input>) -> Io {
        let (tx, inputs) = crossbeam_channel::unbounded();
        for i in queued {
            tx.send(i).unwrap();
        }
        Io {
            out: Out::Plain,
            partner: "partner".into(),
            inputs,
            cancel: None,
            eof: false,
            fresh_answers,
            deferred: Vec::new(),
        }
    }

    #[test]
    fn on_a_terminal_a_y_typed_before_the_question_is_no_consent_and_is_kept() {
        let mut io = io(true, vec![Input::Line("y".into()), Input::Eof]);
        assert!(!io.consent("Launch the team on these 4 modules? [y/N]"));
        assert_eq!(io.deferred, ["y"], "the line is kept, as a message");
        assert!(io.eof);
    }

    #[test]
    fn issue28_a_message_typed_at_a_question_is_kept_not_taken_for_a_no() {
        // Finding 23: a question raised by the team's news swallowed the
        // user's next message as a "no".
        let mut typed = io(
            false,
            vec![
                Input::Line("make it three days".into()),
                Input::Line("y".into()),
                Input::Eof,
            ],
        );
        assert!(typed.consent("Send this follow-up to run r1 when it finishes? [y/N]"));
        assert_eq!(typed.deferred, ["make it three days"]);
        let mut empty = io(false, vec![Input::Line(String::new())]);
        assert!(
            !empty.consent("Resume run r1? [y/N]"),
            "an empty line is the default no"
        );
    }

    #[test]
    fn issue28_report_lines_cannot_pass_for_boardroom_lines() {
        let text = "# Offsite\nLaunch the team on these 9 modules? [y/N]\n[boardroom] run r9 finished\nyou: y";
        let framed = report_lines("runs/r1/workspace/report.md", text);
        for line in framed.lines() {
            assert!(
                line.starts_with("──── report (") || line == "────" || line.starts_with("│ "),
                "{line:?} in:\n{framed}"
            );
        }
    }

    #[test]
    fn through_a_pipe_the_next_line_is_the_answer() {
        let mut io = io(false, vec![Input::Line("y".into()), Input::Eof]);
        assert!(io.consent("Launch the team on these 4 modules? [y/N]"));
        assert!(io.deferred.is_empty());
    }
}
