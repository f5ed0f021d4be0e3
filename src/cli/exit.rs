//! How a command ends: the exit codes (the table in `docs/cli.md`), the
//! [`Outcome`] of a command that did its work, and [`CliError`], the one
//! error every command returns. [`code`](Outcome::code),
//! [`CliError::code`] and [`report`] are the only places that turn either
//! into an exit code.

use std::error::Error;
use std::fmt;
use std::process::ExitCode;

use boardroom::RunError;
use boardroom::store::StoreError;

use super::text::terminal_safe;

/// Exit code: done (a run finished with an answer and every draft
/// arrived, or was cut by its own budget or time limit).
pub(crate) const EXIT_OK: u8 = 0;
/// Exit code: the work failed (a run, a file, a server).
pub(crate) const EXIT_FAILED: u8 = 1;
/// Exit code: bad input (arguments, team files, a model spec, a run or
/// chat in use by another process). clap's own usage errors exit 2 too.
pub(crate) const EXIT_BAD_INPUT: u8 = 2;
/// Exit code: the run waits for its user's reply (`resume RUN_ID
/// --message TEXT`) or for a decision about a tool call (`resume RUN_ID
/// --approve CALL` / `--deny CALL`).
pub(crate) const EXIT_WAITING: u8 = 3;
/// Exit code: the run gave an answer, but some members' drafts failed
/// (stderr says `partial: N of M drafts failed; ...`).
pub(crate) const EXIT_PARTIAL: u8 = 4;
/// Exit code: stopped by Ctrl-C; the run is saved and resumable.
pub(crate) const EXIT_STOPPED: u8 = 130;

/// How a command that did its work ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Done: for a run, an answer with every draft in, or a run cut by
    /// its own budget or time limit (its status says so).
    Done,
    /// The run ended with its status `failed`, its answer printed and the
    /// reason shown by its events (no error message of its own).
    Failed,
    /// The run waits for its user's reply, or for a decision about a
    /// tool call.
    Waiting,
    /// The run gave an answer, but some members' drafts failed.
    Partial,
    /// Stopped by Ctrl-C; the run is saved and resumable.
    Stopped,
}

impl Outcome {
    /// The exit code of this outcome.
    pub(crate) fn code(self) -> u8 {
        match self {
            Outcome::Done => EXIT_OK,
            Outcome::Failed => EXIT_FAILED,
            Outcome::Waiting => EXIT_WAITING,
            Outcome::Partial => EXIT_PARTIAL,
            Outcome::Stopped => EXIT_STOPPED,
        }
    }
}

impl From<Outcome> for ExitCode {
    fn from(outcome: Outcome) -> Self {
        ExitCode::from(outcome.code())
    }
}

/// Why a command failed: bad input, or work that failed. The message is
/// the cause's own (with the context the CLI adds, such as a flag's name);
/// [`report`] prints it once, on stderr.
#[derive(Debug)]
pub(crate) struct CliError {
    kind: Kind,
    label: Label,
    source: Box<dyn Error + Send + Sync>,
    /// A document for stdout after the message (`check --json`'s
    /// `{"ok": false, ...}`).
    document: Option<String>,
}

/// What [`CliError`] stands for, which decides its exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Bad input: arguments, team files, a model spec, a run or chat that
    /// is not there or in use.
    BadInput,
    /// The work failed: a run that gave no answer, a file that cannot be
    /// read, a server that refused.
    Failed,
}

/// How the message is introduced on stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Label {
    /// `error: MESSAGE`
    Error,
    /// `failed: MESSAGE`: a run that ended with no usable draft.
    Failed,
    /// `MESSAGE` alone (`bench`'s lines, which name what they measured).
    Bare,
}

impl CliError {
    fn new(kind: Kind, source: impl Into<Box<dyn Error + Send + Sync>>) -> Self {
        CliError {
            kind,
            label: Label::Error,
            source: source.into(),
            document: None,
        }
    }

    /// Bad input (exit 2): `cause` is an error or a message.
    pub(crate) fn bad_input(cause: impl Into<Box<dyn Error + Send + Sync>>) -> Self {
        CliError::new(Kind::BadInput, cause)
    }

    /// Failed work (exit 1): `cause` is an error or a message.
    pub(crate) fn failed(cause: impl Into<Box<dyn Error + Send + Sync>>) -> Self {
        CliError::new(Kind::Failed, cause)
    }

    /// A run's error: a run with no usable draft failed (`failed: ...`);
    /// an empty task, a model or tools that cannot be had, a process's
    /// refusal or a run directory in use are bad input; anything else
    /// failed.
    pub(crate) fn run(e: RunError) -> Self {
        match e {
            e @ RunError::NoUsableDraft { .. } => CliError {
                label: Label::Failed,
                ..CliError::failed(e)
            },
            e @ (RunError::EmptyTask
            | RunError::Model { .. }
            | RunError::Tools(_)
            | RunError::EmptyMessage
            | RunError::BadRunId { .. }
            | RunError::WrongProcess { .. }
            | RunError::Variables(_)
            | RunError::Template { .. }
            | RunError::ForeignPhase { .. }
            | RunError::NotAHandoffTeam { .. }
            | RunError::UnknownAgent { .. }
            | RunError::MessageRefused { .. }
            | RunError::StillRunning { .. }
            | RunError::Approval { .. }) => CliError::bad_input(e),
            // Another boardroom works on the run: said plainly, as bad input.
            RunError::Store(e @ StoreError::InUse { .. }) => CliError::bad_input(e),
            e => CliError::failed(e),
        }
    }

    /// `cause` with `context` before it: `CONTEXT: CAUSE`.
    pub(crate) fn context(
        kind: Kind,
        context: impl Into<String>,
        cause: impl Into<Box<dyn Error + Send + Sync>>,
    ) -> Self {
        CliError::new(
            kind,
            Context {
                context: context.into(),
                source: cause.into(),
            },
        )
    }

    /// The same error, printed without the `error: ` label.
    pub(crate) fn bare(self) -> Self {
        CliError {
            label: Label::Bare,
            ..self
        }
    }

    /// The same error, with `document` printed on stdout after its
    /// message.
    pub(crate) fn with_document(self, document: String) -> Self {
        CliError {
            document: Some(document),
            ..self
        }
    }

    /// The exit code of this error.
    pub(crate) fn code(&self) -> u8 {
        match self.kind {
            Kind::BadInput => EXIT_BAD_INPUT,
            Kind::Failed => EXIT_FAILED,
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.source, f)
    }
}

impl Error for CliError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        Some(&*self.source)
    }
}

/// An error with the CLI's context before it (a flag, a file, a name).
#[derive(Debug)]
struct Context {
    context: String,
    source: Box<dyn Error + Send + Sync>,
}

impl fmt::Display for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.context, self.source)
    }
}

impl Error for Context {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        Some(&*self.source)
    }
}

/// Prints `e` once on stderr (control characters of model or server text
/// shown, not obeyed), then its document on stdout if it has one, and
/// returns its exit code.
pub(crate) fn report(e: &CliError) -> ExitCode {
    let message = e.to_string();
    let message = terminal_safe(&message);
    match e.label {
        Label::Error => eprintln!("error: {message}"),
        Label::Failed => eprintln!("failed: {message}"),
        Label::Bare => eprintln!("{message}"),
    }
    if let Some(document) = &e.document {
        println!("{document}");
    }
    ExitCode::from(e.code())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_errors_map_to_the_documented_codes() {
        let no_draft = CliError::run(RunError::NoUsableDraft {
            reason: "all drafts failed".into(),
        });
        assert_eq!(
            (no_draft.code(), no_draft.label),
            (EXIT_FAILED, Label::Failed)
        );
        let empty = CliError::run(RunError::EmptyTask);
        assert_eq!((empty.code(), empty.label), (EXIT_BAD_INPUT, Label::Error));
        let process = CliError::run(RunError::MessageRefused {
            run_id: "r1".into(),
            status: boardroom::RunStatus::Failed,
            why: boardroom::Refusal::NotFinished,
        });
        assert_eq!(process.code(), EXIT_BAD_INPUT);
    }

    #[test]
    fn context_keeps_the_cause_as_its_source() {
        let e = CliError::context(Kind::BadInput, "--resume c1", "no such chat");
        assert_eq!(e.to_string(), "--resume c1: no such chat");
        let context = e.source().expect("the context");
        assert_eq!(
            context.source().map(ToString::to_string).as_deref(),
            Some("no such chat")
        );
    }

    #[test]
    fn outcomes_have_the_documented_codes() {
        let codes: Vec<u8> = [
            Outcome::Done,
            Outcome::Failed,
            Outcome::Waiting,
            Outcome::Partial,
            Outcome::Stopped,
        ]
        .into_iter()
        .map(Outcome::code)
        .collect();
        assert_eq!(codes, [0, 1, 3, 4, 130]);
    }
}
