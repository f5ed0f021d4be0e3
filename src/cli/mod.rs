//! The command line: parse, set up logging, call the library, render
//! events, map errors to exit codes. No orchestration lives here.
//!
//! Every subcommand is a file (`run.rs`, `chat.rs`, `runs/show.rs`, ...)
//! whose entry point returns `Result<Outcome, CliError>`; [`try_main`]
//! dispatches, and `exit.rs` maps either to the exit code, once.

/// `println!` for the whole `cli` module: through [`out::print`], so a
/// reader that closed stdout ends the program quietly (issue 15).
macro_rules! println {
    () => {
        $crate::cli::out::print(format_args!(""), true)
    };
    ($($arg:tt)*) => {
        $crate::cli::out::print(format_args!($($arg)*), true)
    };
}

/// `print!` for the whole `cli` module, as [`println!`].
macro_rules! print {
    ($($arg:tt)*) => {
        $crate::cli::out::print(format_args!($($arg)*), false)
    };
}

mod approve;
mod args;
mod bench;
mod chat;
mod check;
mod drive;
mod exit;
mod home;
mod logging;
mod observe;
mod out;
mod render;
mod run;
mod runs;
mod serve;
mod setup;
mod shell;
mod team_info;
mod text;

use std::process::ExitCode;

use clap::Parser;

use args::{Cli, Command};
use exit::CliError;
use observe::Lingering;

pub(crate) fn main() -> ExitCode {
    // The API key must never reach the log, whatever RUST_LOG says; log
    // lines print above the live view, never through it.
    logging::init();
    quiet_panics();
    // A usage error is clap's to print: exit 2, its message and --help.
    let cli = Cli::parse();
    let mut lingering = None;
    let code = match try_main(cli, &mut lingering) {
        Ok(code) => code,
        Err(e) => exit::report(&e),
    };
    // `--view` keeps the run's page up after its outcome is said.
    if let Some(view) = lingering {
        view.serve();
    }
    code
}

/// Runs one command. `run` and `resume` with `--view` leave the run's page
/// in `lingering`, to be served once the outcome is reported.
fn try_main(cli: Cli, lingering: &mut Option<Lingering>) -> Result<ExitCode, CliError> {
    let outcome = match cli.command {
        Command::Run(args) => run::run(args, lingering),
        Command::Check(args) => check::check(&args),
        Command::Runs(args) => runs::list(&args),
        Command::Show(args) => runs::show(&args),
        Command::Resume(args) => runs::resume(&args, lingering),
        Command::Memory(args) => runs::memory(&args),
        Command::View(args) => observe::view(&args),
        Command::Serve(args) => serve::serve(&args),
        Command::Export(args) => observe::export(&args),
        Command::Chat(args) => chat::chat(&args),
        Command::Bench(args) => bench::main(&args),
        Command::Completions(args) => shell::completions(&args),
        Command::Man(args) => shell::man(&args),
    }?;
    Ok(outcome.into())
}

/// One panic is an expected event here, not a crash to report: a member
/// whose job panics is caught at the pool and becomes an `error` entry on
/// the board; the library says when a panic is one of those
/// ([`boardroom::panic_is_caught`]), and its message then goes to the log
/// (`RUST_LOG=debug`) instead of tearing through the live view. (stdout
/// closed by its reader is no panic at all: see [`out`].)
fn quiet_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if boardroom::panic_is_caught() {
            let thread = std::thread::current();
            let name = thread.name().unwrap_or("a pool thread");
            log::debug!("{name} panicked (kept on the board as an error entry): {info}");
            return;
        }
        default(info);
    }));
}
