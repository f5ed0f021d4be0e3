//! `boardroom resume`: a saved run goes on from its last saved phase, with
//! the user's reply or a follow-up (`--message`); a finished run or one
//! that waits for its user is printed as it ended.

use std::path::{Path, PathBuf};

use boardroom::store::{MasterMemory, RunPhase, RunRecord, StoreError, load_run, run_holder};
use std::io::IsTerminal;

use boardroom::{Decision, RunStatus, Runtime};

use super::{find_run, status_of};
use crate::cli::drive::{drive_and_report, message_hint};
use crate::cli::exit::{CliError, Kind, Outcome};
use crate::cli::observe::{Lingering, Observers};
use crate::cli::setup::{blackboard_flags, default_model, prepare};
use crate::cli::text::terminal_safe;

#[derive(Debug, clap::Args)]
pub(crate) struct ResumeArgs {
    /// The run: its id, a unique prefix of it, `last`, or its directory.
    run: String,
    /// Where runs are saved (default: runs/ in
    /// $BOARDROOM_HOME, else ~/.local/share/boardroom).
    #[arg(long, env = "BOARDROOM_RUNS_DIR", default_value_os_t = crate::cli::home::runs_dir(), hide_default_value = true)]
    runs_dir: PathBuf,
    /// The default model (default: the one the run was started with).
    #[arg(long)]
    model: Option<String>,
    /// Members that run at once (default: as the run was started;
    /// blackboard runs only).
    #[arg(long)]
    parallel: Option<usize>,
    /// What runs the members: auto, rayon or threads (default: team.yaml's
    /// `executor`, else auto).
    #[arg(long, value_name = "auto|rayon|threads")]
    executor: Option<boardroom::Executor>,
    /// End the resumed run with the best answer so far after this much
    /// wall-clock time: 90s, 10m, 1h (default: team.yaml's `timeout`).
    #[arg(long, value_name = "DUR", value_parser = boardroom::config::parse_timeout)]
    timeout: Option<std::time::Duration>,
    /// Print events as JSON lines on stdout instead of the live view.
    #[arg(long)]
    json: bool,
    /// Neither use nor update the master's memory.
    #[arg(long)]
    no_memory: bool,
    /// Serve the run's live page, as `run --view` does.
    #[arg(long)]
    view: bool,
    /// Send the resumed run's trace to this OTLP/HTTP collector, as `run
    /// --otlp` does.
    #[arg(long, value_name = "URL")]
    otlp: Option<String>,
    /// Put prompts, answers and tool arguments and results into the spans.
    #[arg(long)]
    otlp_content: bool,
    /// The user's reply to a run that waits for it (status
    /// awaiting_user), or a follow-up to a finished run.
    #[arg(long, value_name = "TEXT", conflicts_with_all = ["approve", "deny"])]
    message: Option<String>,
    /// Approve a tool call the run waits for (status awaiting_approval):
    /// its id, as `run` printed it (repeatable).
    #[arg(long, value_name = "CALL")]
    approve: Vec<String>,
    /// Deny a tool call the run waits for: it never runs, and the model
    /// is told so (repeatable).
    #[arg(long, value_name = "CALL")]
    deny: Vec<String>,
    /// Why the calls given with --deny are denied (the model reads it).
    #[arg(long, value_name = "TEXT", requires = "deny")]
    reason: Option<String>,
}

/// Resumes the run. A resumed run with `--view` leaves its page in
/// `lingering`, served after the outcome is reported.
pub(crate) fn resume(
    args: &ResumeArgs,
    lingering: &mut Option<Lingering>,
) -> Result<Outcome, CliError> {
    let dir = find_run(&args.runs_dir, &args.run).map_err(CliError::bad_input)?;
    let record = load_run(&dir).map_err(|e| match e {
        e @ StoreError::NewerVersion { .. } => CliError::bad_input(e),
        e => CliError::failed(e),
    })?;
    if let Some(pid) = run_holder(&dir) {
        let by = pid.map_or_else(String::new, |pid| format!(" (pid {pid})"));
        return Err(CliError::bad_input(format!(
            "run {}: in use by another boardroom{by}",
            record.state.run_id()
        )));
    }
    let message = args.message.as_deref().map(str::trim);
    if message == Some("") {
        return Err(CliError::bad_input("--message: the message is empty"));
    }
    let (process, name) = (record.team.config.process, record.team.name.as_str());
    blackboard_flags(process, name, None, args.parallel).map_err(CliError::bad_input)?;
    // Decisions name calls the saved run waits for, whatever its status:
    // one for a finished run is refused, never ignored.
    let decisions = decisions(args)?;
    let waiting = record.state.pending_approvals();
    if let Some((call, _)) = decisions
        .iter()
        .find(|(c, _)| !waiting.iter().any(|p| &p.call_id == c))
    {
        return Err(CliError::bad_input(format!(
            "run {}: no tool call '{}' waits for a decision",
            record.state.run_id(),
            terminal_safe(call)
        )));
    }
    // A call whose saved arguments are masked would run with `***`.
    if let Some((call, _)) = decisions.iter().find(|(c, d)| {
        matches!(d, Decision::Approve) && waiting.iter().any(|p| &p.call_id == c && p.masked)
    }) {
        return Err(CliError::bad_input(format!(
            "run {}: tool call '{}': its arguments held a secret and were saved masked; \
             deny it, or resume on a terminal and edit them (e)",
            record.state.run_id(),
            terminal_safe(call)
        )));
    }
    if record.state.status() == RunStatus::AwaitingUser && message.is_none() {
        eprintln!(
            "run {} waits for its user; reply with: {}",
            record.state.run_id(),
            message_hint(&runs_dir_of(&dir), record.state.run_id())
        );
        print_ended(&record, args.json);
        return Ok(Outcome::Waiting);
    }
    if record.state.phase() == RunPhase::Finished
        && message.is_none()
        && !memory_owed(&record, &dir, args.no_memory)
    {
        eprintln!(
            "run {} is already finished ({})",
            record.state.run_id(),
            status_of(&record, &dir)
        );
        print_ended(&record, args.json);
        return Ok(Outcome::Done);
    }
    let saved_team = |e| {
        CliError::context(
            Kind::BadInput,
            format!("{}: the saved team", dir.display()),
            e,
        )
    };
    let team = record.team.to_team().map_err(saved_team)?;
    let spec = args
        .model
        .as_deref()
        .or(record.settings.model_spec.as_deref());
    let model = default_model(&team, spec).map_err(CliError::bad_input)?;
    let runs_dir = runs_dir_of(&dir);
    // The library rebuilds the run's settings; the flags given now win.
    let mut runtime = Runtime::for_saved(&record, model).map_err(saved_team)?;
    if let Some(p) = args.parallel {
        runtime = runtime.max_parallel(p);
    }
    if let Some(x) = args.executor {
        runtime = runtime.executor(x);
    }
    let no_memory = args.no_memory || !record.settings.memory;
    runtime = prepare(runtime, &runs_dir, no_memory, spec);
    if let Some(t) = args.timeout {
        runtime = runtime.timeout(t);
    }
    let mut observers = Observers::start(
        args.view,
        args.otlp.as_deref(),
        args.otlp_content,
        &runs_dir,
    )?;
    // On a terminal, calls still undecided are asked about inline.
    let on_terminal = !args.json && std::io::stdin().is_terminal();
    let runtime = runtime.wait_for_approvals(on_terminal);
    let ended = drive_and_report(
        runtime,
        &mut observers,
        args.json,
        &runs_dir,
        on_terminal,
        |rt| match message {
            Some(m) => rt.start_resume_with_message(&dir, m),
            None if !decisions.is_empty() => rt.start_resume_deciding(&dir, decisions),
            None => rt.start_resume(&dir),
        },
    );
    *lingering = observers.finish();
    ended
}

/// The decisions `--approve` and `--deny` give, by call id.
fn decisions(args: &ResumeArgs) -> Result<Vec<(String, Decision)>, CliError> {
    let mut out: Vec<(String, Decision)> = Vec::new();
    let reason = args
        .reason
        .as_deref()
        .map(str::trim)
        .filter(|r| !r.is_empty());
    let approved = args.approve.iter().map(|c| (c, Decision::Approve));
    let denied = args.deny.iter().map(|c| {
        let reason = reason.map(str::to_string);
        (c, Decision::Deny { reason })
    });
    for (call, decision) in approved.chain(denied) {
        let call = call.trim();
        if call.is_empty() {
            return Err(CliError::bad_input(
                "--approve/--deny: the call id is empty",
            ));
        }
        if out.iter().any(|(c, _)| c == call) {
            return Err(CliError::bad_input(format!(
                "tool call '{call}' is given more than one decision"
            )));
        }
        out.push((call.to_string(), decision));
    }
    Ok(out)
}

/// What `resume` prints for a run it does not drive (finished, or waiting
/// for its user): the answer, or with `--json` the events a run ends with,
/// as JSON lines rebuilt from `run.json` (`awaiting_user` for a waiting
/// run, then `run_finished`).
fn print_ended(record: &RunRecord, json: bool) {
    let state = &record.state;
    let answer = state.answer().unwrap_or_default().to_string();
    if !json {
        println!("{}", terminal_safe(answer.trim_end()));
        return;
    }
    let (agent, rounds) = match &state.handoff() {
        Some(hs) => (hs.active.clone(), hs.steps.len() as u32),
        // The master: the first agent of the saved team.
        None => (
            record
                .team
                .agents
                .first()
                .map(|a| a.name.clone())
                .unwrap_or_default(),
            state.round(),
        ),
    };
    let event = |kind: boardroom::EventKind| {
        let mut event = boardroom::Event::now(state.run_id(), &agent, None, kind);
        event.time_ms = record.saved_ms;
        event
    };
    let mut events = Vec::new();
    if state.status() == RunStatus::AwaitingUser {
        events.push(event(boardroom::EventKind::AwaitingUser {
            question: answer.clone(),
        }));
    }
    events.push(event(boardroom::EventKind::RunFinished {
        status: state.status(),
        answer,
        rounds,
        usage: state.usage(),
    }));
    for e in events {
        if let Ok(line) = serde_json::to_string(&e) {
            println!("{line}");
        }
    }
}

/// The runs directory a run directory sits in.
fn runs_dir_of(dir: &Path) -> PathBuf {
    dir.parent().map_or_else(PathBuf::new, Path::to_path_buf)
}

/// Whether a finished run still owes the team its memory note: it was
/// killed after its last phase, before the note was written.
fn memory_owed(record: &RunRecord, dir: &Path, no_memory: bool) -> bool {
    // A handoff run leaves a note when it ended with an answer, not at
    // its deadline (as the library decides).
    let handoff_ended = matches!(
        record.state.status(),
        RunStatus::Done
            | RunStatus::TurnLimit
            | RunStatus::HandoffLimit
            | RunStatus::BudgetExhausted
    );
    if no_memory
        || !record.settings.memory
        || record.state.answer().is_none()
        || (record.team.config.process == boardroom::Process::Handoff && !handoff_ended)
    {
        return false;
    }
    let runs_dir = dir.parent().unwrap_or(Path::new("."));
    !MasterMemory::for_team(runs_dir, &record.team.name).remembers(record.state.run_id())
}
