//! A saved run, again: the builder settings that tie a runtime to a runs
//! directory, a runtime for a saved run, resuming it, and handing a run
//! to its process's driver (the only place here that names `Driver`).

use std::path::{Path, PathBuf};

use super::persist::Opening;
use super::{RunError, RunOutcome, Runtime};
use crate::event::now_ms;
use crate::memory::MasterMemory;
use crate::record::{RunState, RunStatus};
use crate::store::{self, RunRecord, StoreError, write_atomic};

impl Runtime {
    /// Writes the run to `<dir>/<run-id>/` (`run.json`, `events.jsonl`,
    /// `turns.jsonl`, `workspace/`). Without it nothing is written. The
    /// run's workspace is `<dir>/<run-id>/workspace` unless
    /// [`Runtime::workspace`] names another.
    #[must_use]
    pub fn runs_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.runs_dir = Some(dir.into());
        self
    }

    /// Gives the master the memory kept in `memory` (read when each run
    /// starts, so a run sees what the one before it added) and, after each
    /// run that ends with an answer, asks it what to add. It takes the
    /// place of [`Runtime::memory`].
    #[must_use]
    pub fn master_memory(mut self, memory: MasterMemory) -> Self {
        self.master_memory = Some(memory);
        self
    }

    /// Records the model spec the default model was built from, so that a
    /// resume can build it again (it goes into `run.json`).
    #[must_use]
    pub fn model_spec(mut self, spec: impl Into<String>) -> Self {
        self.model_spec = Some(spec.into());
        self
    }

    /// A runtime for a saved run, as it was started: its team (as saved,
    /// souls included), round cap, parallelism, token budget, protocol and executor,
    /// with `model` as the default model (build it from
    /// [`RunSettings::model_spec`](crate::store::RunSettings::model_spec) or choose another). Add what the saved
    /// run cannot know (events, memory, a time limit), then call
    /// [`Runtime::resume`] or [`Runtime::resume_with_message`].
    ///
    /// # Errors
    ///
    /// A [`TeamError`](crate::TeamError) when the saved team no longer
    /// loads.
    pub fn for_saved(
        record: &RunRecord,
        model: crate::model::SharedModel,
    ) -> Result<Runtime, crate::team::TeamError> {
        let settings = &record.settings;
        let mut rt = Runtime::with_shared_model(record.team.to_team()?, model)
            .max_rounds(settings.max_rounds);
        if let Some(p) = settings.max_parallel {
            rt = rt.max_parallel(p);
        }
        if let Some(n) = settings.token_budget {
            rt = rt.token_budget(n);
        }
        if let Some(p) = settings.protocol {
            rt = rt.protocol(p);
        }
        if let Some(x) = settings.executor {
            rt = rt.executor(x);
        }
        for (name, value) in &settings.vars {
            rt = rt.var(name, value);
        }
        Ok(rt)
    }

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
        self.resume_saved(run_dir.as_ref(), None)
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
    /// [`RunError::Process`] when the message is empty or the run's
    /// process does not take one in its state; otherwise as
    /// [`Runtime::resume`].
    pub fn resume_with_message(
        &self,
        run_dir: impl AsRef<Path>,
        message: &str,
    ) -> Result<RunOutcome, RunError> {
        if message.trim().is_empty() {
            return Err(RunError::Process("the message is empty".into()));
        }
        self.resume_saved(run_dir.as_ref(), Some(message.trim()))
    }

    fn resume_saved(&self, dir: &Path, message: Option<&str>) -> Result<RunOutcome, RunError> {
        // The lock first, then the state: what is read is what no other
        // process can change any more.
        let lock = match store::RunLock::acquire(dir) {
            Ok(lock) => std::sync::Arc::new(lock),
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
        let (saved, ours) = (record.team.config.process, self.team.config().process);
        if saved != ours {
            return Err(RunError::Process(format!(
                "run {} is a {} run and this runtime's team '{}' is a {} team: resume it with the run's own team (load_run(dir).team.to_team())",
                record.state.run_id,
                process_name(saved),
                self.team.name(),
                process_name(ours),
            )));
        }
        let state = crate::process::prepare_resume(&self.team, dir, record, message)?;
        let mut rt = self.clone();
        rt.runs_dir = Some(dir.parent().map_or_else(PathBuf::new, Path::to_path_buf));
        rt.user_message = message.map(str::to_string);
        rt.drive_in(state, Opening::Resume(lock))
    }

    /// Runs `state` in its directory, holding the directory's lock until
    /// the outcome is saved. A panic that escapes the driver still marks
    /// the run failed (never left `running`) before it goes on unwinding.
    pub(crate) fn drive_in(
        &self,
        state: RunState,
        opening: Opening,
    ) -> Result<RunOutcome, RunError> {
        let run_id = state.run_id.clone();
        let run = crate::process::Driver::start(self, state, opening)?;
        let _lock = run.lock();
        let result = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run.drive())) {
            Ok(result) => result,
            Err(panic) => {
                let message = super::tool_loop::panic_text(panic.as_ref());
                mark_failed_with(self, &run_id, format!("the run panicked: {message}"));
                std::panic::resume_unwind(panic);
            }
        };
        if let Err(e) = &result {
            mark_failed(self, &run_id, e);
        }
        result
    }
}

/// `blackboard`, `handoff`: as `team.yaml` writes it.
fn process_name(p: crate::team::Process) -> String {
    format!("{p:?}").to_lowercase()
}

/// Marks a saved run as failed when the loop stopped with an error.
pub(crate) fn mark_failed(rt: &Runtime, run_id: &str, error: &RunError) {
    mark_failed_with(rt, run_id, error.to_string());
}

fn mark_failed_with(rt: &Runtime, run_id: &str, error: String) {
    let Some(runs_dir) = &rt.runs_dir else { return };
    let dir = runs_dir.join(run_id);
    let Ok(mut record) = store::load_run(&dir) else {
        return;
    };
    record.state.status = RunStatus::Failed;
    record.state.error = Some(error);
    record.saved_ms = now_ms();
    if let Ok(json) = serde_json::to_vec_pretty(&record)
        && let Err(e) = write_atomic(&dir.join(store::RUN_FILE), &json)
    {
        log::error!("cannot save the failed run: {e}");
    }
}
