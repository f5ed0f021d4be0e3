//! `boardroom chat`: a conversation with the team's partner, on a terminal
//! (rustyline: line editing and history) or through a pipe (one user line
//! per message, `y`/`n` at a consent prompt).
//!
//! Threads: the main thread runs the partner's turns and owns the output;
//! a reader thread reads lines (and Ctrl-C / Ctrl-D on a terminal); the
//! library runs a launched team on threads of its own. A Ctrl-C during a
//! partner turn cancels the turn; while a team runs, it asks whether to
//! stop the team (the run stays resumable); Ctrl-D ends the chat.

use std::io::{BufRead, IsTerminal, Write as _};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use boardroom::chat::{Chat, ChatError, ChatEvent, ChatIo, ChatStore, TurnEnd};
use boardroom::{Cancel, Runtime};
use crossbeam_channel::{Receiver, Sender};
use parking_lot::Mutex;

use super::{EXIT_BAD_INPUT, EXIT_OK, default_model, load_team, runs};

#[derive(Debug, clap::Args)]
pub(crate) struct ChatArgs {
    /// The team directory (default: ./ if it has agents/, else the built-in team).
    #[arg(long)]
    team: Option<PathBuf>,
    /// The default model (as for `boardroom run`); the partner uses its own
    /// `model:` if it names one.
    #[arg(long, env = "BOARDROOM_MODEL")]
    model: Option<String>,
    /// Print the chat's and the runs' events as JSON lines on stdout.
    #[arg(long)]
    json: bool,
    /// Continue a saved chat (its id under --chats-dir).
    #[arg(long, value_name = "ID")]
    resume: Option<String>,
    /// Where runs are saved (one directory per run; default: runs/ in
    /// $BOARDROOM_HOME, else ~/.local/share/boardroom).
    #[arg(long, env = "BOARDROOM_RUNS_DIR", default_value_os_t = super::home::runs_dir(), hide_default_value = true)]
    runs_dir: PathBuf,
    /// Where chats are saved (one directory per chat; default: chats/
    /// in $BOARDROOM_HOME, else ~/.local/share/boardroom).
    #[arg(long, env = "BOARDROOM_CHATS_DIR", default_value_os_t = super::home::chats_dir(), hide_default_value = true)]
    chats_dir: PathBuf,
    /// Neither use nor update the master's memory of earlier runs.
    #[arg(long)]
    no_memory: bool,
}

/// What the reader thread hands the main thread.
enum Input {
    Line(String),
    Interrupt,
    Eof,
}

/// Routes a Ctrl-C: to the partner turn in progress (cancelling it), else
/// to the main loop.
struct Interrupts {
    turn: Mutex<Option<Cancel>>,
    inputs: Sender<Input>,
}

impl Interrupts {
    fn press(&self) {
        match &*self.turn.lock() {
            Some(cancel) => cancel.cancel(),
            None => {
                let _ = self.inputs.send(Input::Interrupt);
            }
        }
    }
}

/// Where the chat is shown.
enum Out {
    /// A terminal under rustyline: printed above the prompt.
    Terminal(Box<dyn rustyline::ExternalPrinter + Send>),
    /// A pipe or file: plain lines.
    Plain,
    /// JSON lines.
    Json,
}

struct Io {
    out: Out,
    partner: String,
    inputs: Receiver<Input>,
    /// The current turn's cancel flag (a Ctrl-C also ends a consent wait).
    cancel: Option<Cancel>,
    eof: bool,
    /// On a terminal a yes/no answer must be typed after its question: a
    /// line typed ahead (while the partner was still working) is no answer
    /// to a question the user had not seen yet; it is kept, as a message.
    fresh_answers: bool,
    /// Lines typed ahead of a question, said once it is answered.
    deferred: Vec<String>,
}

impl Io {
    fn print(&mut self, text: &str) {
        let text = runs::terminal_safe(text).into_owned();
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

pub(crate) fn chat(args: &ChatArgs) -> u8 {
    let team = match load_team(args.team.as_deref()) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    let Some(partner) = team.partner().cloned() else {
        eprintln!(
            "error: {}",
            boardroom::chat::ChatError::NoPartner {
                team: team.name().into()
            }
        );
        return EXIT_BAD_INPUT;
    };
    let model = match default_model(&team, args.model.as_deref()) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    if let Err(e) = team.check_models() {
        eprintln!("error: {e}");
        return EXIT_BAD_INPUT;
    }
    let partner_model = match partner.model.as_deref().filter(|m| *m != "default") {
        Some(spec) => match team.model(spec) {
            Ok(m) => m,
            Err(e) => {
                eprintln!("error: the partner's model '{spec}': {e}");
                return EXIT_BAD_INPUT;
            }
        },
        None => Arc::clone(&model),
    };
    let (store, record, id) = match &args.resume {
        Some(id) => match ChatStore::open(&args.chats_dir, id) {
            Ok((store, record)) => (store, Some(record), id.clone()),
            // Another chat process has it: named as a run's holder is.
            Err(e @ ChatError::InUse { .. }) => {
                eprintln!("error: {e}");
                return EXIT_BAD_INPUT;
            }
            Err(e) => {
                eprintln!("error: --resume {id}: {e}");
                return EXIT_BAD_INPUT;
            }
        },
        None => match ChatStore::create(&args.chats_dir) {
            Ok((store, id)) => (store, None, id),
            Err(e) => {
                eprintln!("error: {e}");
                return EXIT_BAD_INPUT;
            }
        },
    };
    let runs_dir = record
        .as_ref()
        .map_or_else(|| args.runs_dir.clone(), |r| r.runs_dir.clone());
    let runtime = runs::prepare(
        Runtime::with_shared_model(team, model),
        &runs_dir,
        args.no_memory,
        args.model.as_deref(),
    );
    let mut chat = match Chat::new(runtime, partner_model, &runs_dir) {
        Ok(c) => c.saved_in(store, &id),
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    if let Some(record) = record {
        chat = chat.restore(record);
    }
    let (events_tx, events_rx) = crossbeam_channel::unbounded();
    if args.json {
        chat = chat.run_events(events_tx);
    } else {
        drop(events_tx);
    }
    let terminal = std::io::stdin().is_terminal() && !args.json;
    let (inputs_tx, inputs) = crossbeam_channel::unbounded();
    let interrupts = Arc::new(Interrupts {
        turn: Mutex::new(None),
        inputs: inputs_tx.clone(),
    });
    let (out, reader) = if terminal {
        match start_editor(inputs_tx, Arc::clone(&interrupts)) {
            Ok(pair) => pair,
            Err(e) => {
                eprintln!("error: the terminal: {e}");
                return EXIT_BAD_INPUT;
            }
        }
    } else {
        let reader = std::thread::Builder::new()
            .name("boardroom-chat-stdin".into())
            .spawn(move || read_pipe(&inputs_tx));
        let out = if args.json { Out::Json } else { Out::Plain };
        (out, reader.ok())
    };
    let mut io = Io {
        out,
        partner: partner.name.clone(),
        inputs: inputs.clone(),
        cancel: None,
        eof: false,
        fresh_answers: terminal,
        deferred: Vec::new(),
    };
    // Ctrl-C as a signal (a pipe, or between two reads on a terminal).
    let (stop_tx, stop_rx) = crossbeam_channel::bounded::<()>(0);
    let sigint = super::observe::ctrl_c().map(|presses| {
        let interrupts = Arc::clone(&interrupts);
        std::thread::Builder::new()
            .name("boardroom-chat-sigint".into())
            .spawn(move || {
                loop {
                    crossbeam_channel::select! {
                        recv(presses) -> p => match p {
                            Ok(()) => interrupts.press(),
                            Err(_) => break,
                        },
                        recv(stop_rx) -> _ => break,
                    }
                }
            })
    });
    // A JSON printer for the runs' events.
    let json_printer = args.json.then(|| {
        std::thread::Builder::new()
            .name("boardroom-chat-json".into())
            .spawn(move || {
                for e in events_rx {
                    if let Ok(line) = serde_json::to_string(&e) {
                        let mut stdout = std::io::stdout().lock();
                        let _ = writeln!(stdout, "{line}");
                        let _ = stdout.flush();
                    }
                }
            })
    });

    if args.resume.is_some() {
        greet_resumed(&mut chat, &mut io, &id);
    } else {
        chat.show(
            &mut io,
            ChatEvent::Notice {
                text: format!(
                    "chat {id} with the team's {} (Ctrl-D ends it; boardroom chat --resume {id} continues it)",
                    partner.name
                ),
            },
        );
    }
    main_loop(&mut chat, &mut io, &interrupts, terminal);

    let queued = chat.queued_follow_ups().to_vec();
    let last_run = chat.runs().last().cloned();
    let stopped = chat.close();
    if let Some(run_id) = &stopped {
        io.emit(&ChatEvent::Notice {
            text: format!(
                "the team was stopped; run {run_id} is saved: boardroom chat --resume {id} \
                 (or boardroom resume {run_id}) continues it"
            ),
        });
    }
    // Queued follow-ups live in this process: say which were not sent,
    // whether or not closing stopped the run (it may have just ended).
    if let Some(run_id) = stopped.or(last_run) {
        for message in queued {
            io.emit(&ChatEvent::Notice {
                text: format!(
                    "not sent: the follow-up you asked for while it worked: {message} \
                     (boardroom resume {run_id} --message sends it)"
                ),
            });
        }
    }
    drop(stop_tx);
    if let Some(Ok(t)) = sigint {
        let _ = t.join();
    }
    if let Some(Ok(t)) = json_printer {
        let _ = t.join();
    }
    // The reader has seen the end of its input (the only way out of the
    // loop), so it has ended.
    if let Some(t) = reader {
        let _ = t.join();
    }
    EXIT_OK
}

/// The conversation: a partner turn whenever its inbox holds something,
/// else wait for the user or the team.
fn main_loop(chat: &mut Chat, io: &mut Io, interrupts: &Interrupts, terminal: bool) {
    let wake = chat.wakeups();
    loop {
        // Lines typed ahead of a yes/no question, in the order typed.
        for line in std::mem::take(&mut io.deferred) {
            if !line.trim().is_empty() {
                chat.user_says(line.trim(), io);
            }
        }
        if !chat.inbox().is_empty() {
            let cancel = Cancel::new();
            *interrupts.turn.lock() = Some(cancel.clone());
            io.cancel = Some(cancel.clone());
            let r = chat.turn(io, &cancel);
            *interrupts.turn.lock() = None;
            io.cancel = None;
            match r {
                Ok(TurnEnd::Cancelled) => chat.show(
                    io,
                    ChatEvent::Notice {
                        text: "the partner's turn was cancelled".into(),
                    },
                ),
                Ok(_) => {}
                Err(e) => chat.show(
                    io,
                    ChatEvent::Notice {
                        text: format!("error: {e}"),
                    },
                ),
            }
            continue;
        }
        if io.eof {
            // A pipe ends when the team has: its report is the end of the
            // conversation.
            // A Ctrl-C then has nobody to ask: it stops the team (resumable).
            if let Some(run_id) = chat.running().map(str::to_string).filter(|_| !terminal) {
                crossbeam_channel::select! {
                    recv(io.inputs.clone()) -> input => {
                        if let Ok(Input::Interrupt) = input {
                            stop_team(chat, io, &run_id);
                        }
                    },
                    recv(wake) -> _ => {},
                    default(Duration::from_millis(200)) => {},
                }
                continue;
            }
            // The run's last news may have landed after the check above.
            if !chat.inbox().is_empty() {
                continue;
            }
            return;
        }
        crossbeam_channel::select! {
            recv(io.inputs.clone()) -> input => match input {
                Ok(Input::Line(line)) => {
                    if !line.trim().is_empty() {
                        chat.user_says(line.trim(), io);
                    }
                }
                Ok(Input::Interrupt) => on_interrupt(chat, io),
                Ok(Input::Eof) | Err(_) => io.eof = true,
            },
            recv(wake) -> _ => {}
        }
    }
}

/// Ctrl-C between turns: with a team at work, ask whether to stop it.
fn on_interrupt(chat: &mut Chat, io: &mut Io) {
    let Some(run_id) = chat.running().map(str::to_string) else {
        chat.show(
            io,
            ChatEvent::Notice {
                text: "Ctrl-D ends the chat".into(),
            },
        );
        return;
    };
    if chat.ask(
        io,
        &format!("Stop the team? Run {run_id} is saved and can be resumed. [y/N]"),
    ) {
        stop_team(chat, io, &run_id);
    }
}

fn stop_team(chat: &mut Chat, io: &mut Io, run_id: &str) {
    chat.show(
        io,
        ChatEvent::Notice {
            text: format!("stopping run {run_id} (after the calls in flight)"),
        },
    );
    chat.stop_run();
}

/// A report as the chat shows it: each line inside a frame, marked `│ `,
/// so that none can pass for one of boardroom's own lines (a question,
/// a notice, `you:`).
fn report_lines(path: &str, text: &str) -> String {
    let body: Vec<String> = text.trim_end().lines().map(|l| format!("│ {l}")).collect();
    format!("──── report ({path}) ────\n{}\n────", body.join("\n"))
}

fn greet_resumed(chat: &mut Chat, io: &mut Io, id: &str) {
    let said = chat
        .messages()
        .iter()
        .filter(|m| m.role == boardroom::Role::User)
        .count();
    chat.show(
        io,
        ChatEvent::Notice {
            text: format!(
                "chat {id} resumed ({said} messages so far; runs: {})",
                if chat.runs().is_empty() {
                    "none".to_string()
                } else {
                    chat.runs().join(", ")
                }
            ),
        },
    );
    // A run that ended while the chat was away (killed between the run's
    // end and its report): its report is shown, its memory note taken.
    if let Some(run_id) = chat.unreported_runs().into_iter().last() {
        chat.show(
            io,
            ChatEvent::Notice {
                text: format!("run {run_id} finished while the chat was away; its report follows"),
            },
        );
        if let Err(e) = chat.resume_run(&run_id, io) {
            chat.show(
                io,
                ChatEvent::Notice {
                    text: format!("error: {e}"),
                },
            );
        }
    }
    for (run_id, how) in chat.interrupted_runs() {
        chat.show(
            io,
            ChatEvent::Notice {
                text: format!("run {run_id} was {how} (its last saved phase is kept)"),
            },
        );
        if chat.ask(io, &format!("Resume run {run_id}? [y/N]"))
            && let Err(e) = chat.resume_run(&run_id, io)
        {
            chat.show(
                io,
                ChatEvent::Notice {
                    text: format!("error: {e}"),
                },
            );
        }
    }
}

/// One user line per message from a pipe or file.
fn read_pipe(inputs: &Sender<Input>) {
    for line in std::io::stdin().lock().lines() {
        match line {
            Ok(l) => {
                if inputs.send(Input::Line(l)).is_err() {
                    return;
                }
            }
            Err(_) => break,
        }
    }
    let _ = inputs.send(Input::Eof);
}

/// The line editor on its own thread; the printer that writes above its
/// prompt.
#[allow(clippy::type_complexity)]
fn start_editor(
    inputs: Sender<Input>,
    interrupts: Arc<Interrupts>,
) -> Result<(Out, Option<std::thread::JoinHandle<()>>), String> {
    use rustyline::error::ReadlineError;
    let mut editor = rustyline::DefaultEditor::new().map_err(|e| e.to_string())?;
    let printer = editor
        .create_external_printer()
        .map_err(|e| e.to_string())?;
    let thread = std::thread::Builder::new()
        .name("boardroom-chat-editor".into())
        .spawn(move || {
            loop {
                match editor.readline("you> ") {
                    Ok(line) => {
                        if !line.trim().is_empty() {
                            let _ = editor.add_history_entry(line.as_str());
                        }
                        if inputs.send(Input::Line(line)).is_err() {
                            break;
                        }
                    }
                    Err(ReadlineError::Interrupted) => interrupts.press(),
                    Err(_) => {
                        let _ = inputs.send(Input::Eof);
                        break;
                    }
                }
            }
        })
        .map_err(|e| e.to_string())?;
    Ok((Out::Terminal(Box::new(printer)), Some(thread)))
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
