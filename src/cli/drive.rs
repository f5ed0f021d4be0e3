//! Driving a run on the terminal, shared by `run` and `resume`: the
//! renderer thread shows its events, the first Ctrl-C stops it gracefully,
//! and its outcome becomes the answer on stdout and an [`Outcome`].

use std::io::IsTerminal;
use std::path::Path;
use std::time::Duration;

use boardroom::{RunError, RunHandle, RunStatus, Runtime, ThreadError};

use super::exit::{CliError, EXIT_STOPPED, Outcome};
use super::observe::Observers;
use super::text::terminal_safe;
use super::{approve, home, observe, render};

/// How long calls in flight may take to return after the first Ctrl-C
/// before they are abandoned (the run is then resumed from its last saved
/// phase, and the drafts that landed).
const STOP_GRACE: Duration = Duration::from_secs(5);

/// The command that goes on with a run.
pub(crate) fn resume_hint(runs_dir: &Path, run_id: &str) -> String {
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
/// once with the run resumable from its last saved phase. `reported` sees
/// the outcome as soon as the run is reported done, before its memory
/// notes are taken.
fn wait_watching_ctrl_c(
    handle: RunHandle,
    runs_dir: &Path,
    reported: &mut dyn FnMut(&boardroom::RunOutcome),
) -> Result<boardroom::RunOutcome, RunError> {
    let Some(presses) = observe::ctrl_c() else {
        if let Some(outcome) = handle.wait_reported() {
            reported(&outcome);
        }
        return handle.wait();
    };
    let cancel = handle.canceller();
    let run_id = handle.run_id().to_string();
    let (done_tx, done) = crossbeam_channel::bounded(1);
    let (early_tx, early) = crossbeam_channel::bounded(1);
    let ended = || {
        Err(RunError::Pool(ThreadError::Ended {
            thread: "the run thread",
        }))
    };
    // Not joined: its end (unmapping its stack) waited up to 50 ms behind
    // a thousand member threads ending; what it sends is all that counts.
    let waiter = std::thread::Builder::new()
        .name("boardroom-wait".into())
        .spawn(move || {
            if let Some(outcome) = handle.wait_reported() {
                let _ = early_tx.send(outcome);
            }
            let _ = done_tx.send(handle.wait());
        });
    if let Err(source) = waiter {
        return Err(RunError::Pool(ThreadError::Spawn {
            thread: "a thread",
            source,
        }));
    }
    let mut early = Some(early);
    loop {
        let told = early.clone().unwrap_or_else(crossbeam_channel::never);
        crossbeam_channel::select! {
            recv(told) -> r => {
                if let Ok(outcome) = r {
                    reported(&outcome);
                }
                early = None;
            }
            recv(done) -> r => return r.unwrap_or_else(|_| ended()),
            recv(presses) -> _ => break,
        }
    }
    cancel.cancel();
    render::print_above(&format!(
        "stopping: waiting up to {}s for the calls in flight (Ctrl-C again to quit now)",
        STOP_GRACE.as_secs()
    ));
    let how = crossbeam_channel::select! {
        recv(done) -> r => return r.unwrap_or_else(|_| ended()),
        recv(presses) -> _ => "stopped at once",
        default(STOP_GRACE) => "stopped; calls in flight abandoned",
    };
    render::clear_view();
    eprintln!(
        "{how}; {} continues it from its last saved phase",
        resume_hint(runs_dir, &run_id)
    );
    // The calls in flight are abandoned with their threads.
    std::process::exit(EXIT_STOPPED.into());
}

/// The answer on stdout, the usage per agent and where the run was saved.
fn print_answer(outcome: &boardroom::RunOutcome, runs_dir: &Path) {
    // Exact into a file or a pipe; on a terminal, escape sequences in
    // the model's text are shown, not obeyed.
    let answer = outcome.answer.trim_end();
    if std::io::stdout().is_terminal() {
        println!("{}", terminal_safe(answer));
    } else {
        println!("{answer}");
    }
    render::usage_by_agent(&outcome.usage_by_agent);
    super::runs::saved_note(runs_dir, &outcome.run_id);
}

/// Runs `start` while the renderer thread shows the run's own events
/// (through `observers`' tee, when a view or traces are on), then prints
/// the answer, the usage per agent and where the run was saved, and says
/// how the run ended. Shared by `run` and `resume`. With `ask`, tool calls
/// that wait for approval are asked about on the terminal while the run
/// goes on (the runtime must wait for them). The run's events end when
/// the run is closed: the renderer and the tee are done then, without
/// waiting for the run's thread to free it.
pub(crate) fn drive_and_report(
    runtime: Runtime,
    observers: &mut Observers,
    json: bool,
    runs_dir: &Path,
    ask: bool,
    start: impl FnOnce(&Runtime) -> Result<RunHandle, RunError>,
) -> Result<Outcome, CliError> {
    let mode = if json {
        render::Mode::Json
    } else {
        render::Mode::Human
    };
    let done = std::sync::atomic::AtomicBool::new(false);
    let mut printed = false;
    // The process exits once the run's result is in (after an inline
    // answer or with `--view` it goes on: the run's threads then end in
    // the background, two seconds after the result).
    let runtime = runtime.events_per_run().exits_after_run();
    let outcome = std::thread::scope(|s| {
        let mut handle = start(&runtime);
        drop(runtime);
        let events = handle.as_mut().ok().and_then(RunHandle::take_events);
        // Waited for by what it closes when it has printed, not joined:
        // at a thousand-member run's end a thread's own end (unmapping
        // its stack) waited up to 100 ms behind the member threads ending.
        let (printed_all, rendered) = crossbeam_channel::bounded::<()>(0);
        let renderer = events.map(|rx| {
            let rx = observers.tee(rx);
            std::thread::Builder::new()
                .name("boardroom-render".into())
                .spawn(move || {
                    render::render(rx, mode);
                    drop(printed_all);
                })
        });
        let asker = match &handle {
            Ok(h) if ask => {
                let (approvals, done) = (h.approvals(), &done);
                std::thread::Builder::new()
                    .name("boardroom-approve".into())
                    .spawn_scoped(s, move || approve::ask_on_terminal(&approvals, done))
                    .ok()
            }
            _ => None,
        };
        // The answer is printed as soon as the run is reported done: the
        // memory notes are taken after it (a stopped run prints none).
        let mut report = |o: &boardroom::RunOutcome| {
            if !json && o.status != RunStatus::Cancelled {
                render::suspended(|| print_answer(o, runs_dir));
                printed = true;
            }
        };
        let outcome = handle.and_then(|h| wait_watching_ctrl_c(h, runs_dir, &mut report));
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(asker) = asker {
            let _ = asker.join();
        }
        if matches!(renderer, Some(Ok(_))) {
            let _ = rendered.recv();
        }
        outcome
    });
    let outcome = outcome.map_err(CliError::run)?;
    if outcome.status == RunStatus::Cancelled {
        eprintln!(
            "stopped; {} continues it",
            resume_hint(runs_dir, &outcome.run_id)
        );
        return Ok(Outcome::Stopped);
    }
    if !json && !printed {
        print_answer(&outcome, runs_dir);
    }
    if outcome.status == RunStatus::AwaitingApproval {
        approve::waiting_note(
            runs_dir,
            &outcome.run_id,
            &resume_hint(runs_dir, &outcome.run_id),
        );
    }
    if outcome.status == RunStatus::AwaitingUser {
        eprintln!(
            "waiting for your reply: {}",
            message_hint(runs_dir, &outcome.run_id)
        );
    }
    Ok(match outcome.status {
        RunStatus::Failed => Outcome::Failed,
        RunStatus::AwaitingUser | RunStatus::AwaitingApproval => Outcome::Waiting,
        // A run cut by its own limit says so in its status; the drafts the
        // limit refused are not members failing.
        RunStatus::BudgetExhausted | RunStatus::TimedOut => Outcome::Done,
        _ => match outcome.draft_failures() {
            // No silent partial success: the count, once; each failure's
            // own text is its ✗ line (or its event).
            Some(failures) => {
                eprintln!(
                    "partial: {} of {} drafts failed; the answer was made from the rest",
                    failures.failed, failures.total
                );
                Outcome::Partial
            }
            None => Outcome::Done,
        },
    })
}
