//! `boardroom completions SHELL` and `boardroom man [COMMAND]`: shell
//! completions and roff man pages generated from the same clap
//! definitions that parse the arguments, so they cannot drift from them.

use std::io::Write as _;

use clap::CommandFactory;

use super::args::Cli;
use super::exit::{CliError, Kind, Outcome};

#[derive(Debug, clap::Args)]
pub(crate) struct CompletionsArgs {
    /// The shell: bash, zsh, fish, powershell or elvish.
    #[arg(value_name = "SHELL")]
    shell: clap_complete::Shell,
}

#[derive(Debug, clap::Args)]
pub(crate) struct ManArgs {
    /// A subcommand, for its own page (`boardroom man run` is
    /// boardroom-run(1)); without it, boardroom(1).
    #[arg(value_name = "COMMAND")]
    command: Option<String>,
}

/// Prints the completion script for a shell on stdout.
pub(crate) fn completions(args: &CompletionsArgs) -> Result<Outcome, CliError> {
    let mut cmd = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "boardroom", &mut script);
    Ok(emit(&script))
}

/// Prints a man page (roff) on stdout: `man -l <(boardroom man)` reads it.
pub(crate) fn man(args: &ManArgs) -> Result<Outcome, CliError> {
    let mut cmd = Cli::command();
    // Gives each subcommand its page name (`boardroom-run`).
    cmd.build();
    let page = match args.command.as_deref() {
        None => cmd,
        Some(name) => match cmd.find_subcommand(name) {
            Some(sub) => sub.clone(),
            None => {
                let known: Vec<&str> = cmd.get_subcommands().map(clap::Command::get_name).collect();
                return Err(CliError::bad_input(format!(
                    "man: no command '{name}' (known: {})",
                    known.join(", ")
                )));
            }
        },
    };
    let mut roff = Vec::new();
    clap_mangen::Man::new(page)
        .render(&mut roff)
        .map_err(|e| CliError::context(Kind::Failed, "man", e))?;
    Ok(emit(&roff))
}

/// Generated text to stdout, through the CLI's printer (a closed reader
/// ends the program quietly).
fn emit(bytes: &[u8]) -> Outcome {
    let text = String::from_utf8_lossy(bytes);
    print!("{text}");
    let _ = std::io::stdout().flush();
    Outcome::Done
}
