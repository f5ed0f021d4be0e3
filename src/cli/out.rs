//! Standard output that a closed reader ends quietly.
//!
//! `boardroom runs | head -n1` closes the pipe while boardroom still
//! writes: std's `println!` would panic on the broken pipe. Every line the
//! CLI prints goes through [`print`] instead (`println!` and `print!` are
//! shadowed for the whole `cli` module in `cli/mod.rs`), which looks at the
//! write's [`std::io::ErrorKind`]: a broken pipe ends the program with
//! exit 0, as Unix tools do; any other write error is reported once on
//! stderr and ends it with exit 1.

use std::io::{ErrorKind, Write};

/// Writes `args` (and a newline when `newline`) to stdout and flushes.
pub(crate) fn print(args: std::fmt::Arguments<'_>, newline: bool) {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let written = out
        .write_fmt(args)
        .and_then(|()| {
            if newline {
                out.write_all(b"\n")
            } else {
                Ok(())
            }
        })
        .and_then(|()| out.flush());
    if let Err(e) = written {
        end_on_write_error(&e);
    }
}

/// Ends the program after a failed write to stdout.
fn end_on_write_error(e: &std::io::Error) -> ! {
    if e.kind() == ErrorKind::BrokenPipe {
        std::process::exit(super::exit::EXIT_OK.into());
    }
    eprintln!("boardroom: cannot write to stdout: {e}");
    std::process::exit(super::exit::EXIT_FAILED.into());
}
