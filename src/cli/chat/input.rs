//! The chat's reader thread: lines from a pipe, or the line editor on a
//! terminal (history, Ctrl-C, Ctrl-D).

use std::io::BufRead;
use std::sync::Arc;

use crossbeam_channel::Sender;

use super::io::{Input, Interrupts, Out};

/// One user line per message from a pipe or file.
pub(super) fn read_pipe(inputs: &Sender<Input>) {
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
pub(super) fn start_editor(
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
