//! The commands that work on saved runs: `runs`, `show`, `resume`, and
//! `memory`. Everything they read comes from the library's run store;
//! broken files are reported, never a crash.

use std::path::{Path, PathBuf};

use boardroom::store::{
    MasterMemory, RunPhase, RunRecord, StoreError, list_runs, load_run, run_holder,
};
use boardroom::{RunStatus, Runtime};

use super::{EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK};

mod show;
pub(crate) use show::show;

#[derive(Debug, clap::Args)]
pub(crate) struct RunsArgs {
    /// Where runs are saved (default: runs/ in
    /// $BOARDROOM_HOME, else ~/.local/share/boardroom).
    #[arg(long, env = "BOARDROOM_RUNS_DIR", default_value_os_t = super::home::runs_dir(), hide_default_value = true)]
    runs_dir: PathBuf,
    /// Print the runs as one JSON array on stdout, oldest first.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, clap::Args)]
pub(crate) struct ShowArgs {
    /// The run: its id, a unique prefix of it, `last`, or its directory.
    run: String,
    /// Where runs are saved (default: runs/ in
    /// $BOARDROOM_HOME, else ~/.local/share/boardroom).
    #[arg(long, env = "BOARDROOM_RUNS_DIR", default_value_os_t = super::home::runs_dir(), hide_default_value = true)]
    runs_dir: PathBuf,
    /// The board, entry by entry.
    #[arg(long)]
    board: bool,
    /// Every model call with its usage and latency.
    #[arg(long)]
    turns: bool,
    /// The work modules and their statuses.
    #[arg(long)]
    plan: bool,
    /// The call graph: master → members → challengers, round by round.
    #[arg(long)]
    tree: bool,
    /// The whole run (run.json and its turns) as one JSON document.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, clap::Args)]
pub(crate) struct ResumeArgs {
    /// The run: its id, a unique prefix of it, `last`, or its directory.
    run: String,
    /// Where runs are saved (default: runs/ in
    /// $BOARDROOM_HOME, else ~/.local/share/boardroom).
    #[arg(long, env = "BOARDROOM_RUNS_DIR", default_value_os_t = super::home::runs_dir(), hide_default_value = true)]
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
    #[arg(long, value_name = "TEXT")]
    message: Option<String>,
}

#[derive(Debug, clap::Args)]
pub(crate) struct MemoryArgs {
    /// The team directory (default: ./ if it has agents/, else the built-in team).
    #[arg(long)]
    team: Option<PathBuf>,
    /// Where runs (and memory/) are saved (default: runs/ in
    /// $BOARDROOM_HOME, else ~/.local/share/boardroom).
    #[arg(long, env = "BOARDROOM_RUNS_DIR", default_value_os_t = super::home::runs_dir(), hide_default_value = true)]
    runs_dir: PathBuf,
    /// Forget everything.
    #[arg(long)]
    clear: bool,
}

/// Sets up saving and memory for `boardroom run`.
pub(crate) fn prepare(
    runtime: Runtime,
    runs_dir: &Path,
    no_memory: bool,
    model: Option<&str>,
) -> Runtime {
    let mut runtime = runtime.runs_dir(runs_dir);
    if let Some(spec) = model {
        runtime = runtime.model_spec(spec);
    }
    if !no_memory {
        let memory = MasterMemory::for_team(runs_dir, runtime.team().name());
        runtime = runtime.master_memory(memory);
    }
    runtime
}

/// Text saved from models (and folder names) as it may be shown on a
/// terminal: newlines and tabs stay, every other control character (the
/// ESC of an escape sequence, a carriage return, a bell, C1 controls) is
/// written as a visible `\u{..}` escape instead of being obeyed, and so is
/// a bidirectional override or isolate.
pub(crate) fn terminal_safe(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(unsafe_on_terminal) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if unsafe_on_terminal(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Control characters (but newline and tab), which a terminal obeys, and
/// the bidirectional overrides and isolates, which make it show text in an
/// order other than the one it has ("Trojan Source").
fn unsafe_on_terminal(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{61c}')
}

pub(crate) fn saved_note(runs_dir: &Path, run_id: &str) {
    eprintln!("saved in {}", runs_dir.join(run_id).display());
}

/// `YYYYMMDD-HHMMSS-...` → `YYYY-MM-DD HH:MM:SS`; `-` for a folder
/// name of another shape (any characters: never a slice inside one).
fn time_of(id: &str) -> String {
    let b = id.as_bytes();
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    if b.len() >= 15 && b[8] == b'-' && digits(0..8) && digits(9..15) {
        format!(
            "{}-{}-{} {}:{}:{}",
            &id[0..4],
            &id[4..6],
            &id[6..8],
            &id[9..11],
            &id[11..13],
            &id[13..15]
        )
    } else {
        "-".into()
    }
}

/// How a run stands: `running` while a process holds its directory's
/// lock (whatever its last snapshot says), else what `run.json` says, with
/// `interrupted` for a run that stopped mid-way without a word.
fn status_of(r: &RunRecord, dir: &Path) -> &'static str {
    if run_holder(dir).is_some() {
        return "running";
    }
    match (r.state.status(), r.state.phase()) {
        (RunStatus::Running, RunPhase::Finished) => "finished",
        (RunStatus::Running, _) => "interrupted",
        // Stopped by Ctrl-C: saved where it stood.
        (RunStatus::Cancelled, p) if p != RunPhase::Finished => "stopped",
        (s, _) => s.as_str(),
    }
}

/// The status as `runs` lists it: a run that `resume` can go on with says so.
fn listed_status(r: &RunRecord, dir: &Path) -> String {
    let status = status_of(r, dir);
    if r.state.status() == RunStatus::AwaitingUser && status != "running" {
        "waiting for the user (resume --message)".to_string()
    } else if r.state.phase() != RunPhase::Finished && status != "running" {
        format!("{status}, resumable")
    } else {
        status.to_string()
    }
}

pub(crate) fn list(args: &RunsArgs) -> u8 {
    let runs = match list_runs(&args.runs_dir) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_FAILED;
        }
    };
    old_runs_here_note(&args.runs_dir);
    if args.json {
        let listed: Vec<serde_json::Value> = runs.iter().map(run_json).collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&listed).unwrap_or_else(|_| "[]".into())
        );
        return EXIT_OK;
    }
    if runs.is_empty() {
        eprintln!("no runs in {}", args.runs_dir.display());
    }
    let count = runs.len();
    // Columns as wide as their longest value, so long statuses align.
    let statuses: Vec<Option<String>> = runs
        .iter()
        .map(|run| {
            run.record
                .as_ref()
                .ok()
                .map(|r| listed_status(r, &run.path))
        })
        .collect();
    let id_width = runs.iter().map(|r| r.id.chars().count()).max().unwrap_or(0);
    let status_width = statuses
        .iter()
        .flatten()
        .map(|s| s.chars().count())
        .max()
        .unwrap_or(0);
    for (run, status) in runs.into_iter().zip(statuses) {
        match (run.record, status) {
            (Ok(r), Some(status)) => println!(
                "{:<id_width$}  {}  {status:<status_width$}  {:>2} rounds  {:>7} tokens  {}",
                terminal_safe(&run.id),
                time_of(&run.id),
                r.state.round(),
                r.state.usage().total(),
                terminal_safe(&super::one_line(r.state.task(), 60))
            ),
            (Err(e), _) => println!(
                "{:<id_width$}  {}  unreadable: {}",
                terminal_safe(&run.id),
                time_of(&run.id),
                terminal_safe(&e.to_string())
            ),
            (Ok(_), None) => {}
        }
    }
    // Where it looked, under the listing (on stderr: stdout stays the
    // listing; after it: a reader that closed stdout ended us already).
    match count {
        0 => {}
        1 => eprintln!("(1 run in {})", args.runs_dir.display()),
        n => eprintln!("({n} runs in {})", args.runs_dir.display()),
    }
    EXIT_OK
}

/// One run as `runs --json` lists it. The field names are part of the
/// CLI's interface (docs/notes-clihabits.md lists them): add, never rename.
fn run_json(run: &boardroom::store::RunListing) -> serde_json::Value {
    let mut v = serde_json::json!({
        "id": run.id,
        "dir": run.path.display().to_string(),
        "time": Some(time_of(&run.id)).filter(|t| t != "-"),
    });
    match &run.record {
        Ok(r) => {
            let usage = r.state.usage();
            let status = status_of(r, &run.path);
            let extra = serde_json::json!({
                "status": status,
                "resumable": r.state.phase() != RunPhase::Finished && status != "running",
                "awaiting_user": r.state.status() == RunStatus::AwaitingUser,
                "team": r.team.name,
                "rounds": r.state.round(),
                "tokens": {
                    "prompt": usage.prompt_tokens,
                    "completion": usage.completion_tokens,
                    "total": usage.total(),
                },
                "task": r.state.task(),
                "error": null,
            });
            if let (Some(v), serde_json::Value::Object(extra)) = (v.as_object_mut(), extra) {
                v.extend(extra);
            }
        }
        Err(e) => {
            v["status"] = "unreadable".into();
            v["error"] = e.to_string().into();
        }
    }
    v
}

/// Runs saved in `./runs` before boardroom had one home: say where they
/// are when the home is listed instead.
fn old_runs_here_note(listed: &Path) {
    let here = Path::new("runs");
    if listed == here || listed != super::home::runs_dir() {
        return;
    }
    let same = |a: &Path, b: &Path| matches!((a.canonicalize(), b.canonicalize()), (Ok(a), Ok(b)) if a == b);
    let count = list_runs(here).map_or(0, |r| r.len());
    if count > 0 && !same(here, listed) {
        eprintln!(
            "note: ./runs holds {count} more (saved before runs had one home): \
             boardroom runs --runs-dir runs"
        );
    }
}

/// The run directory for an id, a unique prefix, `last`, or a path.
pub(crate) fn find_run(runs_dir: &Path, run: &str) -> Result<PathBuf, String> {
    let as_path = Path::new(run);
    if as_path.join("run.json").is_file() {
        return Ok(as_path.to_path_buf());
    }
    let ids: Vec<PathBuf> = list_runs(runs_dir)
        .map_err(|e| e.to_string())?
        .into_iter()
        .map(|r| r.path)
        .collect();
    let name = |p: &PathBuf| p.file_name().map(|n| n.to_string_lossy().into_owned());
    if run == "last" {
        return ids
            .last()
            .cloned()
            .ok_or_else(|| format!("no runs in {}", runs_dir.display()));
    }
    let matches: Vec<&PathBuf> = ids
        .iter()
        .filter(|p| name(p).is_some_and(|n| n.starts_with(run)))
        .collect();
    match matches.as_slice() {
        [one] => Ok((*one).clone()),
        [] => Err(format!("run '{run}': not found in {}", runs_dir.display())),
        many => Err(format!(
            "run '{run}': {} runs start with it; give more of the id",
            many.len()
        )),
    }
}

pub(crate) fn resume(args: &ResumeArgs) -> u8 {
    let dir = match find_run(&args.runs_dir, &args.run) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    let record = match load_run(&dir) {
        Ok(r) => r,
        Err(e @ StoreError::NewerVersion { .. }) => {
            eprintln!("error: {e}");
            return EXIT_BAD_INPUT;
        }
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_FAILED;
        }
    };
    if let Some(pid) = run_holder(&dir) {
        let by = pid.map_or_else(String::new, |pid| format!(" (pid {pid})"));
        eprintln!(
            "error: run {}: in use by another boardroom{by}",
            record.state.run_id()
        );
        return EXIT_BAD_INPUT;
    }
    let message = args.message.as_deref().map(str::trim);
    if message == Some("") {
        eprintln!("error: --message: the message is empty");
        return EXIT_BAD_INPUT;
    }
    let (process, name) = (record.team.config.process, record.team.name.as_str());
    if let Err(e) = blackboard_flags(process, name, None, args.parallel) {
        eprintln!("error: {e}");
        return EXIT_BAD_INPUT;
    }
    if record.state.status() == RunStatus::AwaitingUser && message.is_none() {
        eprintln!(
            "run {} waits for its user; reply with: {}",
            record.state.run_id(),
            super::message_hint(&runs_dir_of(&dir), record.state.run_id())
        );
        print_ended(&record, args.json);
        return super::EXIT_WAITING;
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
        return EXIT_OK;
    }
    let team = match record.team.to_team() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {}: the saved team: {e}", dir.display());
            return EXIT_BAD_INPUT;
        }
    };
    let spec = args
        .model
        .as_deref()
        .or(record.settings.model_spec.as_deref());
    let model = match super::default_model(&team, spec) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    let runs_dir = dir.parent().map_or_else(PathBuf::new, Path::to_path_buf);
    let (tx, rx) = crossbeam_channel::unbounded();
    // The library rebuilds the run's settings; the flags given now win.
    let mut runtime = match Runtime::for_saved(&record, model) {
        Ok(rt) => rt.events(tx),
        Err(e) => {
            eprintln!("error: {}: the saved team: {e}", dir.display());
            return EXIT_BAD_INPUT;
        }
    };
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
    let mut observers = match super::observe::Observers::start(
        args.view,
        args.otlp.as_deref(),
        args.otlp_content,
        &runs_dir,
    ) {
        Ok(o) => o,
        Err(code) => return code,
    };
    let rx = observers.tee(rx);
    let code = super::drive_and_report(runtime, rx, args.json, &runs_dir, |rt| match message {
        Some(m) => rt.start_resume_with_message(&dir, m),
        None => rt.start_resume(&dir),
    });
    observers.finish();
    code
}

/// Refuses `--rounds` and `--parallel` for a team whose process has no
/// rounds of parallel members (a handoff team), naming the flag and the
/// caps that team does have, rather than ignoring them.
pub(crate) fn blackboard_flags(
    process: boardroom::Process,
    team: &str,
    rounds: Option<u32>,
    parallel: Option<usize>,
) -> Result<(), String> {
    if process == boardroom::Process::Blackboard {
        return Ok(());
    }
    let flag = match (rounds, parallel) {
        (Some(_), _) => "--rounds",
        (None, Some(_)) => "--parallel",
        (None, None) => return Ok(()),
    };
    Err(format!(
        "{flag}: team '{team}' runs the handoff process, which has no rounds of parallel members: its caps are max_turns and max_handoffs in team.yaml"
    ))
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

pub(crate) fn memory(args: &MemoryArgs) -> u8 {
    let team = match super::load_team(args.team.as_deref()) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    let memory = MasterMemory::for_team(&args.runs_dir, team.name());
    if args.clear {
        return match memory.clear() {
            Ok(true) => {
                eprintln!("cleared {}", memory.path().display());
                EXIT_OK
            }
            Ok(false) => {
                eprintln!(
                    "nothing to clear ({} does not exist)",
                    memory.path().display()
                );
                EXIT_OK
            }
            Err(e) => {
                eprintln!("error: {e}");
                EXIT_FAILED
            }
        };
    }
    match memory.load() {
        Ok(text) if text.trim().is_empty() => {
            eprintln!(
                "team '{}' remembers nothing yet ({})",
                team.name(),
                memory.path().display()
            );
            EXIT_OK
        }
        Ok(text) => {
            eprintln!(
                "what the master of team '{}' remembers from earlier runs ({} lines, {} of at most {} characters; `boardroom memory --clear` forgets it), in {}:",
                team.name(),
                text.lines().count(),
                text.chars().count(),
                boardroom::store::DEFAULT_MEMORY_CHARS,
                memory.path().display()
            );
            print!("{}", terminal_safe(&text));
            EXIT_OK
        }
        Err(e) => {
            eprintln!("error: {e}");
            EXIT_FAILED
        }
    }
}
