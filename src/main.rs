//! The `boardroom` command: see `boardroom --help`.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
