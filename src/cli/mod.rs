//! The command line: parse, set up logging, call the library, render
//! events, map errors to exit codes. No orchestration lives here.

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

mod args;
mod bench;
mod chat;
mod check;
mod home;
mod logging;
mod observe;
mod out;
mod render;
mod runs;
mod shell;
mod team_info;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use boardroom::{RunError, RunHandle, RunStatus, Runtime, SharedModel, Team, ThreadError};
use clap::Parser;

use args::{Cli, Command, RunArgs};

/// Exit code: the run finished with an answer.
const EXIT_OK: u8 = 0;
/// Exit code: the run failed.
const EXIT_FAILED: u8 = 1;
/// Exit code: bad input (arguments, team files, model spec).
const EXIT_BAD_INPUT: u8 = 2;
/// Exit code: stopped by Ctrl-C; the run is saved and resumable.
const EXIT_STOPPED: u8 = 130;
/// The run waits for its user's reply (`resume RUN_ID --message TEXT`).
pub(crate) const EXIT_WAITING: u8 = 3;
/// Exit code: the run gave an answer, but some members' drafts failed
/// (the master answered from what arrived; stderr says `N of M drafts
/// failed: ...`).
const EXIT_PARTIAL: u8 = 4;

/// How long calls in flight may take to return after the first Ctrl-C
/// before they are abandoned (the run is then resumed from its last saved
/// phase, and the drafts that landed).
const STOP_GRACE: Duration = Duration::from_secs(5);

pub(crate) fn main() -> ExitCode {
    // The API key must never reach the log, whatever RUST_LOG says; log
    // lines print above the live view, never through it.
    logging::init();
    quiet_panics();
    let cli = Cli::parse();
    let code = match cli.command {
        Command::Run(args) => run(args),
        Command::Check(args) => check::check(&args),
        Command::Runs(args) => runs::list(&args),
        Command::Show(args) => runs::show(&args),
        Command::Resume(args) => runs::resume(&args),
        Command::Memory(args) => runs::memory(&args),
        Command::View(args) => observe::view(&args),
        Command::Export(args) => observe::export(&args),
        Command::Chat(args) => chat::chat(&args),
        Command::Bench(args) => bench::main(&args),
        Command::Completions(args) => shell::completions(&args),
        Command::Man(args) => shell::man(&args),
    };
    ExitCode::from(code)
}

/// One panic is an expected event here, not a crash to report: a member or
/// challenger thread that panics is caught at the pool and becomes an
/// `error` entry on the board; its message goes to the log
/// (`RUST_LOG=debug`) instead of tearing through the live view. (stdout
/// closed by its reader is no panic at all: see [`out`].)
fn quiet_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let thread = std::thread::current();
        let name = thread.name().unwrap_or("");
        let pooled = ["boardroom-member-", "boardroom-rayon-"];
        if pooled.iter().any(|prefix| name.starts_with(prefix)) {
            log::debug!("{name} panicked (kept on the board as an error entry): {info}");
            return;
        }
        default(info);
    }));
}

/// The team: `--team DIR`, else `./` when it has `agents/`, else the
/// built-in default team.
fn load_team(dir: Option<&Path>) -> Result<Team, boardroom::TeamError> {
    match dir {
        Some(dir) => Team::load(dir),
        None if Path::new("agents").is_dir() => Team::load("."),
        None => Team::builtin(),
    }
}

fn default_model(team: &Team, spec: Option<&str>) -> Result<SharedModel, String> {
    // The spec's own errors first (a bad option says more than the env).
    let model = default_model_of(team, spec).map_err(|e| e.to_string())?;
    if let Some(spec) = spec {
        openai_env_check(team, spec, &model)?;
    }
    Ok(model)
}

/// `--model openai` with neither a key nor a server: say so before the
/// first request, instead of trying api.openai.com with no key (or DNS
/// five times on a machine with no network).
fn openai_env_check(team: &Team, spec: &str, model: &SharedModel) -> Result<(), String> {
    let resolved = match team.config().models.get(spec) {
        Some(boardroom::config::ModelConfig::Spec(s)) => s.as_str(),
        // An endpoint (or any other kind of model config) names its own server.
        Some(_) => return Ok(()),
        None => spec,
    };
    // `openai`, `openai:NAME`, `openai/NAME` and a bare OpenAI model name
    // all become the model `openai:NAME`.
    let is_openai = model.name().starts_with("openai:");
    let set = |name: &str| std::env::var(name).is_ok_and(|v| !v.trim().is_empty());
    if is_openai
        && !resolved.contains("key_env=")
        && !set("OPENAI_API_KEY")
        && !set("OPENAI_BASE_URL")
    {
        return Err(format!(
            "--model {spec}: OPENAI_API_KEY and OPENAI_BASE_URL are unset: set OPENAI_API_KEY \
             for the OpenAI API, or OPENAI_BASE_URL for another OpenAI-compatible server \
             (e.g. http://127.0.0.1:8080/v1), or use --model sim to try boardroom offline"
        ));
    }
    // The same for Anthropic's API with no key (issue 26).
    if let Some(e) = model.endpoint().filter(|e| {
        e.provider == "anthropic"
            && !e.key_set
            && e.url
                .starts_with(boardroom::anthropic::ANTHROPIC_DEFAULT_BASE_URL)
    }) {
        return Err(format!(
            "--model {spec}: {} is unset: set it to your Anthropic API key, or use --model sim \
             to try boardroom offline",
            e.key_env
        ));
    }
    Ok(())
}

fn default_model_of(
    team: &Team,
    spec: Option<&str>,
) -> Result<SharedModel, boardroom::openai::ModelSpecError> {
    match spec {
        Some(spec) => team.model(spec),
        None if team.config().models.contains_key("default") => team.model("default"),
        // OPENAI_BASE_URL names a server: use it, as the official SDKs would.
        None if std::env::var("OPENAI_BASE_URL").is_ok_and(|u| !u.trim().is_empty()) => {
            team.model("openai")
        }
        None => {
            eprintln!(
                "boardroom: no model configured, using the offline 'sim' model (set --model or BOARDROOM_MODEL)"
            );
            team.model("sim")
        }
    }
}

fn run(args: RunArgs) -> u8 {
    let team = match load_team(args.team.as_deref()) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    let task = match read_task(args.task.as_deref(), args.task_file.as_deref()) {
        Ok(task) => task,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    if task.trim().is_empty() {
        eprintln!("error: the task is empty");
        return EXIT_BAD_INPUT;
    }
    // Every model an agent can use is built now, before a run directory
    // exists: a bad spec is bad input, not a failed run.
    if let Err(e) = team.check_models() {
        eprintln!("error: {e}");
        return EXIT_BAD_INPUT;
    }
    if let Err(e) = runs::blackboard_flags(
        team.config().process,
        team.name(),
        args.rounds,
        args.parallel,
    ) {
        eprintln!("error: {e}");
        return EXIT_BAD_INPUT;
    }
    // Checked now, naming the flag: an undeclared variable is bad input.
    if let Err(e) = boardroom::template::apply_var_flags(team.variables(), &args.vars) {
        eprintln!("error: {e}");
        return EXIT_BAD_INPUT;
    }
    // The model last: its "no model configured" note comes after the
    // input is known to be good (issue 21).
    let model = match default_model(&team, args.model.as_deref()) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    let mut runtime = Runtime::with_shared_model(team, model);
    if let Some(r) = args.rounds {
        runtime = runtime.max_rounds(r);
    }
    if let Some(p) = args.parallel {
        runtime = runtime.max_parallel(p);
    }
    if let Some(x) = args.executor {
        runtime = runtime.executor(x);
    }
    if let Some(n) = args.token_budget {
        runtime = runtime.token_budget(n);
    }
    if let Some(t) = args.timeout {
        runtime = runtime.timeout(t);
    }
    if let Some(p) = args.protocol {
        runtime = runtime.protocol(p);
    }
    for flag in &args.vars {
        if let Ok((name, value)) = boardroom::template::parse_var_flag(flag) {
            runtime = runtime.var(name, value);
        }
    }
    runtime = runs::prepare(
        runtime,
        &args.runs_dir,
        args.no_memory,
        args.model.as_deref(),
    );
    let mut observers = match observe::Observers::start(
        args.view,
        args.otlp.as_deref(),
        args.otlp_content,
        &args.runs_dir,
    ) {
        Ok(o) => o,
        Err(code) => return code,
    };
    // On a terminal, a run that asks its user (the master's ASK:) asks
    // inline and goes on with the answer; elsewhere it exits 3.
    let mut answer: Option<(PathBuf, String)> = None;
    loop {
        let (tx, rx) = crossbeam_channel::unbounded();
        let rx = observers.tee(rx);
        let run_id = std::cell::RefCell::new(None::<String>);
        let code = drive_and_report(
            runtime.clone().events(tx),
            rx,
            args.json,
            &args.runs_dir,
            |rt| {
                let handle = match answer.take() {
                    Some((dir, message)) => rt.start_resume_with_message(dir, &message),
                    None => rt.start(&task),
                }?;
                *run_id.borrow_mut() = Some(handle.run_id().to_string());
                Ok(handle)
            },
        );
        let asked = code == EXIT_WAITING && !args.json && std::io::stdin().is_terminal();
        if let (true, Some(id)) = (asked, run_id.into_inner())
            && let Some(reply) = ask_inline()
        {
            answer = Some((args.runs_dir.join(id), reply));
            continue;
        }
        observers.finish();
        return code;
    }
}

/// Reads the user's answer to a run's question from the terminal (the
/// question was printed as the run's answer); `None` on an empty line or
/// the end of input (the run stays waiting, exit 3).
fn ask_inline() -> Option<String> {
    use std::io::Write as _;
    eprint!("your answer (empty: answer later with resume --message)> ");
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    match std::io::stdin().read_line(&mut line) {
        Ok(n) if n > 0 && !line.trim().is_empty() => Some(line.trim().to_string()),
        _ => None,
    }
}

/// The task from the argument, `--task-file PATH`, or stdin (`-`).
fn read_task(arg: Option<&str>, file: Option<&Path>) -> Result<String, String> {
    /// A task larger than this is a mistake (it would not fit a prompt).
    const MAX_TASK: u64 = 64 * 1024 * 1024;
    use std::io::Read as _;
    let from_stdin = |what: &str| {
        let mut buf = Vec::new();
        std::io::stdin()
            .lock()
            .take(MAX_TASK + 1)
            .read_to_end(&mut buf)
            .map_err(|e| format!("{what}: reading stdin: {e}"))?;
        if buf.len() as u64 > MAX_TASK {
            return Err(format!("{what}: the task on stdin is larger than 64 MiB"));
        }
        String::from_utf8(buf).map_err(|_| format!("{what}: the task on stdin is not UTF-8 text"))
    };
    match (arg, file) {
        (Some("-"), _) => from_stdin("task '-'"),
        (Some(task), _) => Ok(task.to_string()),
        (None, Some(path)) if path == Path::new("-") => from_stdin("--task-file -"),
        (None, Some(path)) => {
            let shown = path.display();
            if std::fs::metadata(path).is_ok_and(|m| m.is_dir()) {
                return Err(format!("--task-file {shown}: is a directory, not a file"));
            }
            // Counted while reading: a pipe or a device (`<(cmd)`) has no
            // size to check first.
            let mut bytes = Vec::new();
            std::fs::File::open(path)
                .and_then(|f| f.take(MAX_TASK + 1).read_to_end(&mut bytes))
                .map_err(|e| format!("--task-file {shown}: {e}"))?;
            if bytes.len() as u64 > MAX_TASK {
                return Err(format!("--task-file {shown}: larger than 64 MiB"));
            }
            String::from_utf8(bytes).map_err(|e| {
                format!(
                    "--task-file {shown}: not UTF-8 text (bad byte at offset {})",
                    e.utf8_error().valid_up_to()
                )
            })
        }
        (None, None) => Err("no task: give it as an argument or with --task-file PATH".into()),
    }
}

/// The command that goes on with a run.
fn resume_hint(runs_dir: &Path, run_id: &str) -> String {
    if home::is_implied_runs_dir(runs_dir) {
        format!("boardroom resume {run_id}")
    } else {
        format!(
            "boardroom resume {run_id} --runs-dir {}",
            runs_dir.display()
        )
    }
}

/// The command that answers a run waiting for its user.
pub(crate) fn message_hint(runs_dir: &Path, run_id: &str) -> String {
    format!("{} --message \"...\"", resume_hint(runs_dir, run_id))
}

/// Waits for the run while watching Ctrl-C: the first press stops the run
/// gracefully (no new calls; calls in flight get [`STOP_GRACE`] to
/// return); a second press, or the grace running out, ends the program at
/// once with the run resumable from its last saved phase.
fn wait_watching_ctrl_c(
    handle: RunHandle,
    runs_dir: &Path,
) -> Result<boardroom::RunOutcome, RunError> {
    let Some(presses) = observe::ctrl_c() else {
        return handle.wait();
    };
    let cancel = handle.canceller();
    let run_id = handle.run_id().to_string();
    let (done_tx, done) = crossbeam_channel::bounded(1);
    std::thread::scope(|s| {
        let waiter = std::thread::Builder::new()
            .name("boardroom-wait".into())
            .spawn_scoped(s, move || {
                let _ = done_tx.send(handle.wait());
            });
        if let Err(source) = waiter {
            return Err(RunError::Pool(ThreadError::Spawn {
                thread: "a thread",
                source,
            }));
        }
        crossbeam_channel::select! {
            recv(done) -> r => return r.unwrap_or(Err(RunError::Pool(ThreadError::Ended { thread: "the run thread" }))),
            recv(presses) -> _ => {}
        }
        cancel.cancel();
        render::print_above(&format!(
            "stopping: waiting up to {}s for the calls in flight (Ctrl-C again to quit now)",
            STOP_GRACE.as_secs()
        ));
        let how = crossbeam_channel::select! {
            recv(done) -> r => return r.unwrap_or(Err(RunError::Pool(ThreadError::Ended { thread: "the run thread" }))),
            recv(presses) -> _ => "stopped at once",
            default(STOP_GRACE) => "stopped; calls in flight abandoned",
        };
        render::clear_view();
        eprintln!(
            "{how}; {} continues it from its last saved phase",
            resume_hint(runs_dir, &run_id)
        );
        std::process::exit(EXIT_STOPPED.into());
    })
}

/// Runs `go` while the renderer thread shows the events from `rx`, then
/// prints the answer, the usage per agent and where the run was saved, and
/// maps the outcome to an exit code. Shared by `run` and `resume`.
pub(crate) fn drive_and_report(
    runtime: Runtime,
    rx: crossbeam_channel::Receiver<boardroom::Event>,
    json: bool,
    runs_dir: &Path,
    start: impl FnOnce(&Runtime) -> Result<RunHandle, RunError>,
) -> u8 {
    let mode = if json {
        render::Mode::Json
    } else {
        render::Mode::Human
    };
    let outcome = std::thread::scope(|s| {
        let renderer = std::thread::Builder::new()
            .name("boardroom-render".into())
            .spawn_scoped(s, move || render::render(rx, mode));
        let handle = start(&runtime);
        // Dropping the runtime drops this sender: the renderer drains and
        // ends when the run drops its own.
        drop(runtime);
        let outcome = handle.and_then(|h| wait_watching_ctrl_c(h, runs_dir));
        if let Ok(handle) = renderer {
            let _ = handle.join();
        }
        outcome
    });
    match outcome {
        Ok(outcome) => {
            if outcome.status == RunStatus::Cancelled {
                eprintln!(
                    "stopped; {} continues it",
                    resume_hint(runs_dir, &outcome.run_id)
                );
                return EXIT_STOPPED;
            }
            if !json {
                // Exact into a file or a pipe; on a terminal, escape
                // sequences in the model's text are shown, not obeyed.
                let answer = outcome.answer.trim_end();
                if std::io::stdout().is_terminal() {
                    println!("{}", runs::terminal_safe(answer));
                } else {
                    println!("{answer}");
                }
                render::usage_by_agent(&outcome.usage_by_agent);
                runs::saved_note(runs_dir, &outcome.run_id);
            }
            if outcome.status == RunStatus::AwaitingUser {
                eprintln!(
                    "waiting for your reply: {}",
                    message_hint(runs_dir, &outcome.run_id)
                );
            }
            match outcome.status {
                RunStatus::Failed => EXIT_FAILED,
                RunStatus::AwaitingUser => EXIT_WAITING,
                // A run cut by its own limit says so in its status; the
                // drafts the limit refused are not members failing.
                RunStatus::BudgetExhausted | RunStatus::TimedOut => EXIT_OK,
                _ => match outcome.draft_failures() {
                    // No silent partial success: the count, once; each
                    // failure's own text is its ✗ line (or its event).
                    Some(failures) => {
                        eprintln!(
                            "partial: {} of {} drafts failed; the answer was made from the rest",
                            failures.failed, failures.total
                        );
                        EXIT_PARTIAL
                    }
                    None => EXIT_OK,
                },
            }
        }
        Err(e @ RunError::NoUsableDraft { .. }) => {
            eprintln!("failed: {}", runs::terminal_safe(&e.to_string()));
            EXIT_FAILED
        }
        Err(
            e @ (RunError::EmptyTask
            | RunError::Model { .. }
            | RunError::Tools(_)
            | RunError::Process(_)),
        ) => {
            eprintln!("error: {}", runs::terminal_safe(&e.to_string()));
            EXIT_BAD_INPUT
        }
        // Another boardroom works on the run: say so plainly, as bad input.
        Err(RunError::Store(e @ boardroom::store::StoreError::InUse { .. })) => {
            eprintln!("error: {}", runs::terminal_safe(&e.to_string()));
            EXIT_BAD_INPUT
        }
        Err(e) => {
            eprintln!("error: {}", runs::terminal_safe(&e.to_string()));
            EXIT_FAILED
        }
    }
}

/// The 1-based line of `key:` in a file's front matter (1 if not found).
fn key_line(path: &Path, key: &str) -> usize {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|text| {
            text.lines().position(|l| {
                l.trim_start()
                    .strip_prefix(key)
                    .is_some_and(|r| r.trim_start().starts_with(':'))
            })
        })
        .map_or(1, |i| i + 1)
}

/// The first line of `s`, cut to `max` characters with an ellipsis, safe
/// to print on a terminal: model and server text can hold escape sequences
/// and bidirectional overrides, shown escaped instead of obeyed.
pub(crate) fn one_line(s: &str, max: usize) -> String {
    let line = s.trim().lines().next().unwrap_or("").trim();
    let line = if line.chars().count() > max {
        let cut: String = line.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    } else {
        line.to_string()
    };
    runs::terminal_safe(&line).into_owned()
}
