//! `boardroom run`: a team on a task; the answer goes to stdout, progress
//! to stderr.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use boardroom::Runtime;

use super::drive::drive_and_report;
use super::exit::{CliError, Outcome};
use super::observe::{Lingering, Observers};
use super::setup::{blackboard_flags, default_model, load_team, prepare};

#[derive(Debug, clap::Args)]
pub(crate) struct RunArgs {
    /// The task (`-`: read it from stdin).
    #[arg(required_unless_present = "task_file", conflicts_with = "task_file")]
    task: Option<String>,
    /// Read the task from this file (`-`: from stdin), for tasks too long
    /// for the command line.
    #[arg(long, value_name = "PATH")]
    task_file: Option<PathBuf>,
    /// The team directory (default: ./ if it has agents/, else the built-in team).
    #[arg(long)]
    team: Option<PathBuf>,
    /// The default model: `sim`, `sim:latency=50ms,challenge=1`, `openai:gpt-4o-mini`,
    /// `http://127.0.0.1:8080/v1#model`, or a name from team.yaml (default: team.yaml's
    /// `default`, else `openai` when OPENAI_BASE_URL is set, else `sim`).
    #[arg(long, env = "BOARDROOM_MODEL")]
    model: Option<String>,
    /// Rounds of members before the master must answer (at least 1;
    /// blackboard teams only: a handoff team's caps are in team.yaml).
    #[arg(long, value_parser = at_least_one::<u32>)]
    rounds: Option<u32>,
    /// Members that run at once (at least 1; blackboard teams only).
    #[arg(long, value_parser = at_least_one::<usize>)]
    parallel: Option<usize>,
    /// What runs the members: `auto` (rayon for narrow rounds, the own
    /// pool for wide ones), `rayon` or `threads` (default: team.yaml's
    /// `executor`, else auto).
    #[arg(long, value_name = "auto|rayon|threads")]
    executor: Option<boardroom::Executor>,
    /// End the run with the best answer so far once it has used this many
    /// tokens, all calls together (not a per-reply limit; at least 1).
    #[arg(long = "token-budget", alias = "max-tokens", value_name = "N", value_parser = at_least_one::<u64>)]
    token_budget: Option<u64>,
    /// End the run with the best answer so far after this much wall-clock
    /// time: 90s, 10m, 1h (default: team.yaml's `timeout`, else none).
    #[arg(long, value_name = "DUR", value_parser = boardroom::config::parse_timeout)]
    timeout: Option<std::time::Duration>,
    /// How the master and challengers write decisions: `line` (default) or `json`.
    #[arg(long, value_name = "line|json")]
    protocol: Option<boardroom::protocol::Protocol>,
    /// Print events as JSON lines on stdout instead of the live view.
    #[arg(long)]
    json: bool,
    /// Where runs are saved (one directory per run; default: runs/ in
    /// $BOARDROOM_HOME, else ~/.local/share/boardroom).
    #[arg(long, env = "BOARDROOM_RUNS_DIR", default_value_os_t = super::home::runs_dir(), hide_default_value = true)]
    runs_dir: PathBuf,
    /// Neither use nor update the master's memory of earlier runs.
    #[arg(long)]
    no_memory: bool,
    /// Serve the run's live page on 127.0.0.1 (a free port; the URL is
    /// printed) and keep serving after the run until Ctrl-C (then exit
    /// with the run's code).
    #[arg(long)]
    view: bool,
    /// Send the run's trace to this OTLP/HTTP collector (default:
    /// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else OTEL_EXPORTER_OTLP_ENDPOINT).
    #[arg(long, value_name = "URL")]
    otlp: Option<String>,
    /// Put prompts, answers and tool arguments and results into the spans.
    #[arg(long)]
    otlp_content: bool,
    /// Set a context variable of the team for this run, over its
    /// default in team.yaml: `--var max_revisions=3` (repeatable).
    #[arg(long = "var", value_name = "NAME=VALUE")]
    vars: Vec<String>,
}

/// A whole number of at least 1: clap reports an error with the flag's
/// name and exit code 2.
fn at_least_one<T>(value: &str) -> Result<T, String>
where
    T: std::str::FromStr + TryFrom<u64>,
{
    let n: u64 = value
        .trim()
        .parse()
        .map_err(|_| format!("'{value}' is not a whole number (allowed 1 or more)"))?;
    if n == 0 {
        return Err("0 is not allowed (allowed 1 or more)".into());
    }
    T::try_from(n).map_err(|_| format!("{n} is too large"))
}

/// Runs the team on the task. A run with `--view` leaves its page in
/// `lingering`, served after the outcome is reported.
pub(crate) fn run(args: RunArgs, lingering: &mut Option<Lingering>) -> Result<Outcome, CliError> {
    let team = load_team(args.team.as_deref()).map_err(CliError::bad_input)?;
    let task =
        read_task(args.task.as_deref(), args.task_file.as_deref()).map_err(CliError::bad_input)?;
    if task.trim().is_empty() {
        return Err(CliError::bad_input("the task is empty"));
    }
    // Every model an agent can use is built now, before a run directory
    // exists: a bad spec is bad input, not a failed run.
    team.check_models().map_err(CliError::bad_input)?;
    team.check_profiles().map_err(CliError::bad_input)?;
    blackboard_flags(
        team.config().process,
        team.name(),
        args.rounds,
        args.parallel,
    )
    .map_err(CliError::bad_input)?;
    // Checked now, naming the flag: an undeclared variable is bad input.
    boardroom::template::apply_var_flags(team.variables(), &args.vars)
        .map_err(CliError::bad_input)?;
    // The model last: its "no model configured" note comes after the
    // input is known to be good (issue 21).
    let model = default_model(&team, args.model.as_deref()).map_err(CliError::bad_input)?;
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
    runtime = prepare(
        runtime,
        &args.runs_dir,
        args.no_memory,
        args.model.as_deref(),
    );
    let mut observers = Observers::start(
        args.view,
        args.otlp.as_deref(),
        args.otlp_content,
        &args.runs_dir,
    )?;
    // On a terminal, a run that asks its user (the master's ASK:) asks
    // inline and goes on with the answer, and a tool call that waits for
    // approval is asked about while the run goes on; elsewhere both exit 3.
    let on_terminal = !args.json && std::io::stdin().is_terminal();
    runtime = runtime.wait_for_approvals(on_terminal);
    let mut answer: Option<(PathBuf, String)> = None;
    loop {
        let run_id = std::cell::RefCell::new(None::<String>);
        let ended = drive_and_report(
            runtime.clone(),
            &mut observers,
            args.json,
            &args.runs_dir,
            on_terminal,
            |rt| {
                let handle = match answer.take() {
                    Some((dir, message)) => rt.start_resume_with_message(dir, &message),
                    None => rt.start(&task),
                }?;
                *run_id.borrow_mut() = Some(handle.run_id().to_string());
                Ok(handle)
            },
        );
        let id = run_id.into_inner();
        // Only a run that waits is read back (a 1024-member run's directory
        // took a tenth of a second to load, after its answer was printed).
        let awaits_user = || {
            id.as_ref().is_some_and(|id| {
                boardroom::store::load_run(&args.runs_dir.join(id))
                    .is_ok_and(|r| r.state.status() == boardroom::RunStatus::AwaitingUser)
            })
        };
        let asked = matches!(ended, Ok(Outcome::Waiting)) && on_terminal && awaits_user();
        if let (true, Some(id)) = (asked, id)
            && let Some(reply) = ask_inline()
        {
            answer = Some((args.runs_dir.join(id), reply));
            continue;
        }
        *lingering = observers.finish();
        return ended;
    }
}

/// Reads the user's answer to a run's question from the terminal (the
/// question was printed as the run's answer); `None` on an empty line or
/// the end of input (the run stays waiting, exit 3).
fn ask_inline() -> Option<String> {
    use std::io::Write as _;
    eprint!("your answer (empty: answer later with resume --message)> ");
    let _ = std::io::stderr().flush();
    super::approve::read_line()
        .map(|line| line.trim().to_string())
        .filter(|line| !line.is_empty())
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
