//! Persistence of a run: the run directory opened at start, a snapshot
//! (`run.json`, `workspace/plan.json`) after every phase, `report.md` at
//! the end; resuming a saved run; and the process drivers' dispatch.
//!
//! The logs (`events.jsonl`, `turns.jsonl`, `journal.jsonl`) are written
//! by the run store, a subscriber of the run's bus (see `bus.rs`). Why a
//! journal rather than rewriting `run.json` per entry: members land drafts
//! from several threads while the driver owns the state; an append of one
//! line per entry is cheap, needs no snapshot of the whole run, and a
//! SIGKILL leaves at worst a torn last line, which is skipped. A resume
//! takes the last snapshot and lets the process replay the journal
//! records of the phase that was cut off.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::record::{ProcessState, RunPhase, RunState};
use super::{RunError, RunOutcome, Runtime, Turn};
use crate::event::{RunStatus, now_ms};
use crate::memory::MasterMemory;
use crate::store::{
    self, RUN_FORMAT_VERSION, RunDir, RunRecord, RunSettings, StoreError, TeamSnapshot,
    write_atomic, write_replace,
};

/// How a run comes to its directory.
#[derive(Debug)]
pub(crate) enum Opening {
    /// A new run: the directory must not exist yet.
    New,
    /// A resume of a directory whose lock the resume took before it read
    /// the run.
    Resume(std::sync::Arc<store::RunLock>),
    /// [`Runtime::drive`] from a caller's snapshot: either.
    Either,
}

/// What a run keeps for persistence.
#[derive(Debug, Default)]
pub(crate) struct Persist {
    /// The run directory, when the runtime has a runs directory.
    pub(crate) dir: Option<Arc<RunDir>>,
    created_ms: u64,
}

impl Persist {
    /// Opens (or reopens, on resume) the run directory and writes a first
    /// snapshot when there is none. Returns the turns already recorded.
    pub(crate) fn open(
        rt: &Runtime,
        state: &RunState,
        opening: Opening,
    ) -> Result<(Persist, Vec<Turn>), RunError> {
        let Some(runs_dir) = &rt.runs_dir else {
            let persist = Persist {
                created_ms: now_ms(),
                ..Persist::default()
            };
            return Ok((persist, Vec::new()));
        };
        // One name inside the runs directory: a caller's state
        // (`Runtime::drive`) may hold any id.
        let mut parts = Path::new(&state.run_id).components();
        if !matches!(
            (parts.next(), parts.next()),
            (Some(std::path::Component::Normal(_)), None)
        ) {
            return Err(RunError::Process(format!(
                "run id '{}': must be one directory name (not empty, '.' or '..', no '/')",
                state.run_id
            )));
        }
        let path = runs_dir.join(&state.run_id);
        let dir = match opening {
            Opening::New => RunDir::create(&path),
            Opening::Resume(lock) => RunDir::open_locked(&path, lock),
            Opening::Either if path.is_dir() => RunDir::open(&path),
            Opening::Either => RunDir::create(&path),
        }
        .map_err(RunError::Store)?;
        let previous = store::load_run(&path).ok();
        let turns = store::read_turns(&path).map_err(RunError::Store)?;
        for w in &turns.warnings {
            log::warn!("{}: {w}", path.display());
        }
        let persist = Persist {
            dir: Some(Arc::new(dir)),
            created_ms: previous.as_ref().map_or_else(now_ms, |r| r.created_ms),
        };
        if previous.is_none() {
            let record = persist.record(rt, state.clone());
            persist.save(&record, None).map_err(RunError::Store)?;
        }
        Ok((persist, turns.items))
    }

    /// The run directory's lock, to hold until the run's last word is
    /// written.
    pub(crate) fn lock(&self) -> Option<std::sync::Arc<store::RunLock>> {
        self.dir.as_deref().map(RunDir::lock)
    }

    pub(crate) fn record(&self, rt: &Runtime, state: RunState) -> RunRecord {
        RunRecord {
            version: RUN_FORMAT_VERSION,
            created_ms: self.created_ms,
            saved_ms: now_ms(),
            team: TeamSnapshot::of(&rt.team),
            journal_len: Some(self.dir.as_deref().map_or(0, RunDir::journal_len)),
            settings: RunSettings {
                model: rt.model.name(),
                model_spec: rt.model_spec.as_deref().map(crate::model::redact_url),
                max_rounds: rt.rounds_cap(),
                max_parallel: rt.parallel_cap(),
                memory: rt.master_memory.is_some(),
                token_budget: rt.token_budget,
                protocol: rt.protocol,
                vars: rt.vars.clone(),
                executor: rt.executor,
            },
            state,
        }
    }

    /// Writes `run.json` (when the run has a directory), then `plan.json`
    /// and, at the end, `report.md` into the workspace (when there is one).
    pub(crate) fn save(
        &self,
        record: &RunRecord,
        workspace: Option<&Path>,
    ) -> Result<(), StoreError> {
        if let Some(dir) = &self.dir {
            let path = dir.path().join(store::RUN_FILE);
            write_atomic(&path, &to_json(&path, record)?)?;
        }
        let Some(ws) = workspace else { return Ok(()) };
        std::fs::create_dir_all(ws).map_err(|e| StoreError::io(ws, e))?;
        let plan_path = ws.join("plan.json");
        write_replace(&plan_path, &to_json(&plan_path, &record.state.plan)?)?;
        // A blackboard run that waits for its user holds the question, not
        // a report.
        let asking = record.state.status == crate::event::RunStatus::AwaitingUser
            && matches!(record.state.process, ProcessState::Blackboard);
        if record.state.phase == RunPhase::Finished
            && !asking
            && let Some(answer) = &record.state.answer
        {
            let report = report(&record.state.task, answer);
            write_replace(&ws.join("report.md"), report.as_bytes())?;
        }
        Ok(())
    }
}

/// `report.md`: the answer under one H1. An answer with a title of its own
/// (a `# ` line outside code) keeps it; any other goes under the task's
/// first line.
fn report(task: &str, answer: &str) -> String {
    let mut fenced = false;
    let titled = answer.lines().any(|l| {
        let t = l.trim_start();
        if t.starts_with("```") || t.starts_with("~~~") {
            fenced = !fenced;
        }
        !fenced && l.starts_with("# ")
    });
    if titled {
        format!("{}\n", answer.trim())
    } else {
        let title = task.trim().lines().next().unwrap_or("").trim();
        format!("# {title}\n\n{}\n", answer.trim())
    }
}

fn to_json(path: &Path, value: &impl serde::Serialize) -> Result<Vec<u8>, StoreError> {
    serde_json::to_vec_pretty(value).map_err(|e| StoreError::json(path, "cannot serialise", e))
}

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
    /// [`RunSettings::model_spec`] or choose another). Add what the saved
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

#[cfg(test)]
mod tests {
    use super::report;

    #[test]
    fn a_report_has_one_title() {
        // Issue 21: the task went on top of an answer with its own title.
        let titles = |r: &str| r.lines().filter(|l| l.starts_with("# ")).count();
        let titled = report("Write a guide\nfor me", "# A guide\n\nText.");
        assert_eq!(titled, "# A guide\n\nText.\n");
        let plain = report("Write a guide\nfor me", "Text.");
        assert_eq!(plain, "# Write a guide\n\nText.\n");
        let code = report("Task", "```sh\n# a comment\n```");
        assert_eq!(titles(&code), 2, "a `# ` line in code is no title: {code}");
        assert!(code.starts_with("# Task\n"));
    }
}
