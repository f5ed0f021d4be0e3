//! `boardroom chat`: a conversation with the team's partner, on a terminal
//! (rustyline: line editing and history) or through a pipe (one user line
//! per message, `y`/`n` at a consent prompt).
//!
//! Threads: the main thread runs the partner's turns and owns the output;
//! a reader thread reads lines (and Ctrl-C / Ctrl-D on a terminal); the
//! library runs a launched team on threads of its own. A Ctrl-C during a
//! partner turn cancels the turn; while a team runs, it asks whether to
//! stop the team (the run stays resumable); Ctrl-D ends the chat.

mod input;
mod io;

use std::io::{IsTerminal, Write as _};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use boardroom::chat::{Chat, ChatError, ChatEvent, ChatIo, ChatStore, TurnEnd};
use boardroom::{Cancel, Runtime};
use parking_lot::Mutex;

use self::io::{Input, Interrupts, Io, Out};
use super::exit::{CliError, Kind, Outcome};
use super::setup::{default_model, load_team, prepare};

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

pub(crate) fn chat(args: &ChatArgs) -> Result<Outcome, CliError> {
    let team = load_team(args.team.as_deref()).map_err(CliError::bad_input)?;
    let Some(partner) = team.partner().cloned() else {
        return Err(CliError::bad_input(ChatError::NoPartner {
            team: team.name().into(),
        }));
    };
    let model = default_model(&team, args.model.as_deref()).map_err(CliError::bad_input)?;
    team.check_models().map_err(CliError::bad_input)?;
    team.check_profiles().map_err(CliError::bad_input)?;
    let partner_model = match partner.model.as_deref().filter(|m| *m != "default") {
        Some(spec) => team.model(spec).map_err(|e| {
            CliError::context(Kind::BadInput, format!("the partner's model '{spec}'"), e)
        })?,
        None => Arc::clone(&model),
    };
    let (store, record, id) = match &args.resume {
        Some(id) => match ChatStore::open(&args.chats_dir, id) {
            Ok((store, record)) => (store, Some(record), id.clone()),
            // Another chat process has it: named as a run's holder is.
            Err(e @ ChatError::InUse { .. }) => return Err(CliError::bad_input(e)),
            Err(e) => {
                return Err(CliError::context(
                    Kind::BadInput,
                    format!("--resume {id}"),
                    e,
                ));
            }
        },
        None => {
            let (store, id) = ChatStore::create(&args.chats_dir).map_err(CliError::bad_input)?;
            (store, None, id)
        }
    };
    let runs_dir = record
        .as_ref()
        .map_or_else(|| args.runs_dir.clone(), |r| r.runs_dir.clone());
    let runtime = prepare(
        Runtime::with_shared_model(team, model),
        &runs_dir,
        args.no_memory,
        args.model.as_deref(),
    );
    let mut chat = Chat::new(runtime, partner_model, &runs_dir)
        .map_err(CliError::bad_input)?
        .saved_in(store, &id);
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
        input::start_editor(inputs_tx, Arc::clone(&interrupts))
            .map_err(|e| CliError::context(Kind::BadInput, "the terminal", e))?
    } else {
        let reader = std::thread::Builder::new()
            .name("boardroom-chat-stdin".into())
            .spawn(move || input::read_pipe(&inputs_tx));
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
    Ok(Outcome::Done)
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
