//! Starting and resuming runs, and the choice of the process that drives
//! them: the one `match` on the team's process is in [`Runtime::drive_in`]
//! (a new process is one more arm there).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{RunError, RunOutcome, RunState, Runtime};
use crate::core::persist::Opening;
use crate::core::{Driver, RunConfig, RunContext};
use crate::process::blackboard::BlackboardRun;
use crate::process::handoff::Handoff;
use crate::process::principal::PrincipalRun;
use crate::store::{self, RunRecord, StoreError};
use crate::team::Process;

/// How a run comes to the state it starts from.
pub(crate) enum Start {
    /// A new run, in a new directory.
    New(RunState),
    /// A caller's snapshot ([`Runtime::drive`]): its directory may exist.
    Snapshot(RunState),
    /// A saved run, read under its directory's lock; the process prepares
    /// the state it goes on from (with the user's message, if any).
    Saved {
        dir: PathBuf,
        record: Box<RunRecord>,
        message: Option<String>,
        lock: Arc<store::RunLock>,
    },
}

impl Runtime {
    /// Continues the run saved in `run_dir` (`<runs-dir>/<run-id>`) from
    /// its last completed phase. Members whose drafts for the interrupted
    /// round are already on the board are not called again. The run keeps
    /// writing to the same directory.
    ///
    /// The runtime should hold the run's team: [`RunRecord::team`] via
    /// [`load_run`](crate::store::load_run) gives it back.
    ///
    /// # Errors
    ///
    /// [`RunError::Store`] when the run cannot be read; otherwise as
    /// [`Runtime::run`].
    ///
    /// # Examples
    ///
    /// ```
    /// use boardroom::{Runtime, Team};
    /// use boardroom::testing::Sim;
    /// use boardroom::store::load_run;
    /// let runs = std::env::temp_dir().join(format!("boardroom-doc-{}", std::process::id()));
    /// let run = Runtime::new(Team::builtin()?, Sim::new())
    ///     .runs_dir(&runs)
    ///     .run("Plan a picnic")?;
    /// let dir = runs.join(&run.run_id);
    /// let saved = load_run(&dir)?;
    /// let again = Runtime::new(saved.team.to_team()?, Sim::new()).resume(&dir)?;
    /// assert_eq!(again.answer, run.answer);
    /// # std::fs::remove_dir_all(&runs).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn resume(&self, run_dir: impl AsRef<Path>) -> Result<RunOutcome, RunError> {
        self.resume_in(self.context(), run_dir.as_ref(), None)
    }
    /// Continues the run saved in `run_dir` with the user's `message`: the
    /// reply to a run that waits for its user (status
    /// [`RunStatus::AwaitingUser`]), or a follow-up to a finished one. The
    /// run's process decides what the message means: a handoff run adds
    /// it to the shared history and the agent that returned to the user
    /// goes on.
    ///
    /// # Errors
    ///
    /// [`RunError::EmptyMessage`], [`RunError::MessageRefused`] when the
    /// run's process does not take one in its state; otherwise as
    /// [`Runtime::resume`].
    pub fn resume_with_message(
        &self,
        run_dir: impl AsRef<Path>,
        message: &str,
    ) -> Result<RunOutcome, RunError> {
        if message.trim().is_empty() {
            return Err(RunError::EmptyMessage);
        }
        self.resume_in(self.context(), run_dir.as_ref(), Some(message.trim()))
    }
    /// A context for a run started here: a fresh stop flag, no channel of
    /// its own, this runtime's runs directory.
    pub(crate) fn context(&self) -> RunContext {
        RunContext {
            runs_dir: self.config().runs_dir.clone(),
            ..RunContext::default()
        }
    }
    /// Continues the run saved in `dir` with `ctx`, taking `message`.
    pub(crate) fn resume_in(
        &self,
        mut ctx: RunContext,
        dir: &Path,
        message: Option<&str>,
    ) -> Result<RunOutcome, RunError> {
        // The lock first, then the state: what is read is what no other
        // process can change any more.
        let lock = match store::RunLock::acquire(dir) {
            Ok(lock) => Arc::new(lock),
            // No directory at all: say the run is not there.
            Err(StoreError::Io { .. }) if !dir.join(store::RUN_FILE).is_file() => {
                return Err(RunError::Store(StoreError::NotFound {
                    run: dir.join(store::RUN_FILE).display().to_string(),
                }));
            }
            Err(e) => return Err(RunError::Store(e)),
        };
        let record = store::load_run(dir).map_err(RunError::Store)?;
        if dir.file_name().and_then(|n| n.to_str()) != Some(record.state.run_id.as_str()) {
            return Err(RunError::Store(StoreError::Corrupt {
                path: dir.join(store::RUN_FILE),
                detail: format!(
                    "run id '{}' does not match its directory",
                    record.state.run_id
                ),
            }));
        }
        // The process is the saved team's: a runtime holding a team of the
        // other one would drive (or mark failed) a run it cannot read.
        let (saved, ours) = (record.team.config.process, self.team().config().process);
        if saved != ours {
            return Err(RunError::WrongProcess {
                run_id: record.state.run_id.clone(),
                saved,
                team: self.team().name().to_string(),
                ours,
            });
        }
        // Decisions given with the resume must name calls that wait (and
        // not approve one whose saved arguments are masked).
        if let Err(source) = ctx.approvals.0.check_given(&record.state.approvals) {
            return Err(RunError::Approval {
                run_id: record.state.run_id.clone(),
                source,
            });
        }
        ctx.runs_dir = Some(dir.parent().map_or_else(PathBuf::new, Path::to_path_buf));
        ctx.user_message = message.map(str::to_string);
        let start = Start::Saved {
            dir: dir.to_path_buf(),
            record: Box::new(record),
            message: message.map(str::to_string),
            lock,
        };
        self.drive_in(ctx, start)
    }
    /// Runs a run to its end with the driver of the team's process: the
    /// one place that names the processes.
    pub(crate) fn drive_in(&self, ctx: RunContext, start: Start) -> Result<RunOutcome, RunError> {
        let config = self.config();
        match config.team.config().process {
            Process::Blackboard => drive_as::<BlackboardRun<'_>>(config, ctx, start),
            Process::Handoff => drive_as::<Handoff<'_>>(config, ctx, start),
            Process::Principal => drive_as::<PrincipalRun<'_>>(config, ctx, start),
        }
    }
}

/// Runs `start` with driver `D`, holding the run directory's lock until the
/// outcome is saved. A panic that escapes the driver still marks the run
/// failed (never left `running`) before it goes on unwinding.
fn drive_as<'a, D: Driver<'a>>(
    config: &'a RunConfig,
    ctx: RunContext,
    start: Start,
) -> Result<RunOutcome, RunError> {
    let runs_dir = ctx.runs_dir.clone();
    let (state, opening) = match start {
        Start::New(state) => (state, Opening::New),
        Start::Snapshot(state) => (state, Opening::Either),
        Start::Saved {
            dir,
            record,
            message,
            lock,
        } => (
            D::prepare_resume(&dir, *record, message.as_deref())?,
            Opening::Resume(lock),
        ),
    };
    let run_id = state.run_id.clone();
    // Once a started run handed its result over (`Core::end`), it is
    // closed and unlocked: its directory may be another's already, and
    // its caller was told how it ended. A panic after that (freeing the
    // run, joining its threads) marks nothing.
    let ended = ctx.ended.clone();
    let handed_over = || ended.as_ref().is_some_and(|slot| slot.lock().is_none());
    let run = D::start(config, ctx, state, opening)?;
    let _lock = run.lock();
    let result = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run.run())) {
        Ok(result) => result,
        Err(panic) => {
            if !handed_over() {
                let message = crate::core::unwind::panic_text(panic.as_ref());
                mark_failed(
                    runs_dir.as_deref(),
                    &run_id,
                    format!("the run panicked: {message}"),
                );
            }
            std::panic::resume_unwind(panic);
        }
    };
    if let Err(e) = &result {
        mark_failed(runs_dir.as_deref(), &run_id, e.to_string());
    }
    result
}

/// Marks a saved run as failed when the loop stopped with an error.
fn mark_failed(runs_dir: Option<&Path>, run_id: &str, error: String) {
    let Some(runs_dir) = runs_dir else { return };
    let dir = runs_dir.join(run_id);
    if !dir.join(store::RUN_FILE).is_file() {
        return;
    }
    if let Err(e) = store::mark_failed(&dir, error) {
        log::error!("cannot save the failed run: {e}");
    }
}
