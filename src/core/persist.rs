//! Persistence of a run: the run directory opened at start, a snapshot
//! after every phase (what changed, to `state.jsonl`; a small `run.json`;
//! `workspace/plan.json` when the plan changed), `report.md` at the end.
//! (Resuming a saved run is the runtime's: `runtime/start.rs`.)
//!
//! The logs (`events.jsonl`, `turns.jsonl`, `journal.jsonl`) are written
//! by the run store, a subscriber of the run's bus (see `bus.rs`). Why a
//! journal rather than rewriting `run.json` per entry: members land drafts
//! from several threads while the driver owns the state; an append of one
//! line per entry is cheap, needs no snapshot of the whole run, and a
//! SIGKILL leaves at worst a torn last line, which is skipped. A resume
//! takes the last snapshot and lets the process replay the journal
//! records of the phase that was cut off.

use std::path::Path;
use std::sync::Arc;

use super::Core;
use super::config::RunConfig;
use super::error::RunError;
use crate::event::now_ms;
use crate::record::{RunPhase, RunSettings, RunState, RunStatus, Turn};
use crate::store::{self, Checkpoint, RunDir, StoreError, TeamSnapshot, write_replace};

use super::turns::Unclaimed;

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
    /// What was last written to `workspace/plan.json`: the same plan is
    /// not written again (kept as the bytes: a copy of a thousand-module
    /// plan cost more than serialising it).
    plan_written: parking_lot::Mutex<Option<Vec<u8>>>,
    /// The `report.md` last written: the same report is not written again.
    report_written: parking_lot::Mutex<Option<String>>,
    /// A checkpoint being written beside the run (see [`Aside`]).
    pub(crate) aside: Aside,
}

/// What a snapshot covers when it is not what is on file when it is
/// written: the journal's length and the last turn at the moment it was
/// taken (`None`: at the moment it is written).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Covers {
    pub(crate) journal_len: Option<u64>,
    pub(crate) last_turn: Option<u32>,
}

/// A checkpoint written on a thread of its own while the run goes on to
/// its next model call (`Core::save_aside`): at most one at a time, and
/// every later save, and the run's end, waits for it, so the checkpoints'
/// lines stay in the order they were taken.
#[derive(Debug, Default)]
pub(crate) struct Aside {
    pending: parking_lot::Mutex<bool>,
    done: parking_lot::Condvar,
    /// `pending`, read without its lock by every journal record and turn.
    busy: std::sync::atomic::AtomicBool,
}

impl Aside {
    /// A checkpoint is taken to be written aside; the caller then starts
    /// its thread, which holds an [`AsideDone`] until it has written it.
    pub(crate) fn begin(&self) {
        self.wait();
        let mut pending = self.pending.lock();
        *pending = true;
        self.busy.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// The checkpoint written aside is written (or was never started).
    pub(crate) fn end(&self) {
        let mut pending = self.pending.lock();
        *pending = false;
        self.busy.store(false, std::sync::atomic::Ordering::SeqCst);
        drop(pending);
        self.done.notify_all();
    }

    /// As [`Aside::wait`], with no lock taken when none is being written:
    /// for the journal's records and the turns, which come after it.
    pub(crate) fn wait_if_pending(&self) {
        if self.busy.load(std::sync::atomic::Ordering::SeqCst) {
            self.wait();
        }
    }

    /// Waits until no checkpoint is being written aside.
    pub(crate) fn wait(&self) {
        let mut pending = self.pending.lock();
        while *pending {
            self.done.wait(&mut pending);
        }
    }
}

/// Ends an aside checkpoint when dropped, a panic too: a later save never
/// waits forever for one that is gone.
pub(crate) struct AsideDone<'a>(pub(crate) &'a Aside);

impl Drop for AsideDone<'_> {
    fn drop(&mut self) {
        self.0.end();
    }
}

impl Persist {
    /// Opens (or reopens, on resume) the run directory and writes a first
    /// snapshot when there is none. Returns the turns already recorded,
    /// and those of them answered after the last snapshot.
    pub(crate) fn open(
        config: &RunConfig,
        runs_dir: Option<&Path>,
        state: &RunState,
        opening: Opening,
    ) -> Result<(Persist, Vec<Turn>, Unclaimed), RunError> {
        let Some(runs_dir) = runs_dir else {
            let persist = Persist {
                created_ms: now_ms(),
                ..Persist::default()
            };
            return Ok((persist, Vec::new(), Unclaimed::default()));
        };
        // One name inside the runs directory: a caller's state
        // (`Runtime::drive`) may hold any id.
        let mut parts = Path::new(&state.run_id).components();
        if !matches!(
            (parts.next(), parts.next()),
            (Some(std::path::Component::Normal(_)), None)
        ) {
            return Err(RunError::BadRunId {
                run_id: state.run_id.clone(),
            });
        }
        let path = runs_dir.join(&state.run_id);
        let resumed = matches!(opening, Opening::Resume(_));
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
        // The next snapshot covers the turns read back too.
        dir.filed_up_to(
            turns
                .items
                .iter()
                .map(|t| t.turn_id.number())
                .max()
                .unwrap_or(0),
        );
        // Only a resume of a run that was cut off (killed while it ran)
        // takes calls from turns filed after its snapshot: a run that
        // stopped saved them all, and one resumed to try a failed step
        // again asks anew.
        let unclaimed = match previous.as_ref().and_then(|r| r.last_turn.map(|l| (r, l))) {
            Some((r, last)) if resumed && r.state.status() == RunStatus::Running => {
                Unclaimed::after(&turns.items, last)
            }
            Some((_, last)) => Unclaimed::none_above(last),
            None => Unclaimed::default(),
        };
        let persist = Persist {
            dir: Some(Arc::new(dir)),
            created_ms: previous.as_ref().map_or_else(now_ms, |r| r.created_ms),
            plan_written: parking_lot::Mutex::new(None),
            report_written: parking_lot::Mutex::new(None),
            aside: Aside::default(),
        };
        // On disk before the run goes on: a directory that cannot take its
        // first snapshot stops the run before any call is paid for.
        if previous.is_none() {
            persist
                .save(config, state, None, false)
                .map_err(RunError::Store)?;
        }
        Ok((persist, turns.items, unclaimed))
    }

    /// The run directory's lock, to hold until the run's last word is
    /// written.
    pub(crate) fn lock(&self) -> Option<std::sync::Arc<store::RunLock>> {
        self.dir.as_deref().map(RunDir::lock)
    }

    /// Saves the run (when it has a directory): `team.json` the first
    /// time, what changed to `state.jsonl`, then `run.json`; then
    /// `plan.json` when the plan changed and, at the end, `report.md` into
    /// the workspace (when there is one) if the run's answer is a report
    /// (`answer_is_report`: the process says; a question to the user is
    /// not).
    pub(crate) fn save(
        &self,
        config: &RunConfig,
        state: &RunState,
        workspace: Option<&Path>,
        answer_is_report: bool,
    ) -> Result<(), StoreError> {
        let covers = Covers::default();
        self.write(config, state, workspace, answer_is_report, covers, false)
    }

    /// The journal's length now, when the run has a directory.
    pub(crate) fn journal_len(&self) -> Option<u64> {
        self.dir.as_deref().map(RunDir::journal_len)
    }

    /// What a snapshot taken now covers: the journal's length and the
    /// last turn filed (`None` without a directory).
    pub(crate) fn covers_now(&self) -> Covers {
        Covers {
            journal_len: self.journal_len(),
            last_turn: self.dir.as_deref().map(RunDir::last_turn),
        }
    }

    /// As [`Persist::save`], with the snapshot covering the journal up to
    /// `journal_len` (when given) rather than all of it: a process whose
    /// saves keep the usage a dispatch began with keeps its journal length
    /// too, so a resume counts every later call once.
    pub(crate) fn save_at(
        &self,
        config: &RunConfig,
        state: &RunState,
        workspace: Option<&Path>,
        answer_is_report: bool,
        journal_len: Option<u64>,
    ) -> Result<(), StoreError> {
        let covers = Covers {
            journal_len,
            last_turn: None,
        };
        self.write(config, state, workspace, answer_is_report, covers, false)
    }

    /// As [`Persist::save`], but between phases the fsyncs and `run.json`
    /// are written behind the run, during its next model call
    /// ([`RunDir::checkpoint_behind`]); where the run stops (done,
    /// failed, waiting) they are on disk before it says so. The snapshot
    /// covers what `covers` says (a snapshot taken before the run went on
    /// and written beside it keeps the journal length and the last turn it
    /// was taken at).
    pub(crate) fn save_behind_covering(
        &self,
        config: &RunConfig,
        state: &RunState,
        workspace: Option<&Path>,
        answer_is_report: bool,
        covers: Covers,
    ) -> Result<(), StoreError> {
        let behind = !stops(state);
        self.write(config, state, workspace, answer_is_report, covers, behind)
    }

    fn write(
        &self,
        config: &RunConfig,
        state: &RunState,
        workspace: Option<&Path>,
        answer_is_report: bool,
        covers: Covers,
        behind: bool,
    ) -> Result<(), StoreError> {
        if let Some(dir) = &self.dir {
            let team = || TeamSnapshot::of(&config.team);
            let c = Checkpoint {
                created_ms: self.created_ms,
                settings: settings(config),
                team_name: config.team.name(),
                team: &team,
                journal_len: covers.journal_len,
                last_turn: covers.last_turn,
            };
            if behind {
                dir.checkpoint_behind(state, c)?;
            } else {
                dir.checkpoint(state, c)?;
            }
        }
        let Some(ws) = workspace else { return Ok(()) };
        std::fs::create_dir_all(ws).map_err(|e| StoreError::io(ws, e))?;
        // The plan is in `state.jsonl`; `plan.json`, its copy in Roboco's
        // shape, is written where the run stops (and waits, or ends).
        let stops = stops(state);
        let mut written = self.plan_written.lock();
        if stops {
            let plan_path = ws.join("plan.json");
            // Transcripts as the ids of their turns where the run has a
            // directory (its `turns.jsonl` holds them), whole where it has
            // only a workspace. One line: a thousand modules
            // pretty-printed are a third whitespace.
            let plan = if self.dir.is_some() {
                serde_json::to_vec(&crate::plan::SavedPlan(&state.plan))
            } else {
                serde_json::to_vec(&state.plan)
            }
            .map_err(|e| StoreError::json(&plan_path, "cannot serialise", e))?;
            if written.as_deref() != Some(&plan[..]) {
                write_replace(&plan_path, &plan)?;
                *written = Some(plan);
            }
        }
        drop(written);
        if state.phase == RunPhase::Finished
            && answer_is_report
            && let Some(answer) = &state.answer
        {
            let report = report(&state.task, answer);
            let mut written = self.report_written.lock();
            if written.as_deref() != Some(report.as_str()) {
                write_replace(&ws.join("report.md"), report.as_bytes())?;
                *written = Some(report);
            }
        }
        Ok(())
    }
}

impl Core<'_> {
    /// Saves the run: `state` (whose usage and plan the core fills in)
    /// to `run.json`, the plan to `workspace/plan.json`, and at the end the
    /// answer to `workspace/report.md` when the process says it is a report
    /// (`answer_is_report`). On disk when this returns.
    pub(crate) fn save(&self, state: RunState, answer_is_report: bool) {
        self.save_as(state, answer_is_report, false);
    }

    /// As [`Core::save`], for a phase a model call follows: the fsyncs and
    /// `run.json` are written behind the run during that call (see
    /// `Persist::save_behind_covering`). The blackboard saves so: a
    /// thousand members' phase ends in a dozen fsyncs the run need not
    /// wait for.
    pub(crate) fn save_behind(&self, state: RunState, answer_is_report: bool) {
        self.save_as(state, answer_is_report, true);
    }

    /// As [`Core::save_behind`], but written on a thread of `scope` while
    /// the caller goes on to its next model call (the master's review,
    /// after a round's drafts). The checkpoint is the run as it is now:
    /// what it covers (usage, journal length, last turn) is taken here,
    /// and its thread holds the plan's lock before this returns, so what
    /// the call changes in the plan waits for it, and so do the call's
    /// journal records and turn (`Core::journal`, `Core::file_turn`), and
    /// every later save and the run's end (`Aside`): nothing lands before
    /// the checkpoint it comes after. `false` when no thread could be
    /// started: nothing was saved, and the caller saves as usual.
    pub(crate) fn save_aside<'s>(
        &'s self,
        scope: &'s std::thread::Scope<'s, '_>,
        state: RunState,
        answer_is_report: bool,
    ) -> bool {
        let Some(state) = self.taken(state) else {
            return true;
        };
        let aside = &self.persist.aside;
        aside.begin();
        let covers = self.persist.covers_now();
        let (locked_tx, locked) = crossbeam_channel::bounded::<()>(0);
        let write = move || {
            let _done = AsideDone(aside);
            let plan = self.plan.lock();
            let _ = locked_tx.send(());
            #[cfg(test)]
            if let Some(gate) = &self.config.aside_write {
                gate.arrive();
                gate.hold();
            }
            if let Some(panic) = self.write_lent(state, answer_is_report, true, covers, plan) {
                // No caller to hand it to: said, and the next checkpoint
                // writes the summary and flushes every log again.
                log::error!(
                    "saving the run panicked: {}",
                    super::unwind::panic_text(panic.as_ref())
                );
                if let Some(dir) = &self.persist.dir {
                    dir.write_all_next_time();
                }
            }
        };
        match std::thread::Builder::new()
            .name("boardroom-checkpoint".into())
            .spawn_scoped(scope, write)
        {
            Ok(_) => {
                // Its thread holds the plan (or ended without it).
                let _ = locked.recv();
                true
            }
            Err(e) => {
                aside.end();
                log::warn!("no thread for the checkpoint ({e}): saved on the run's thread");
                false
            }
        }
    }

    fn save_as(&self, state: RunState, answer_is_report: bool, behind: bool) {
        self.persist.aside.wait();
        if let Some(state) = self.taken(state) {
            let plan = self.plan.lock();
            let covers = Covers::default();
            if let Some(panic) = self.write_lent(state, answer_is_report, behind, covers, plan) {
                // The plan is back; the run fails as it would have.
                std::panic::resume_unwind(panic);
            }
        }
    }

    /// `state` with the core's usage and paused approvals, to save; `None`
    /// when there is nowhere to save it.
    fn taken(&self, mut state: RunState) -> Option<RunState> {
        if !self.saves() {
            return None;
        }
        let (usage, by_agent) = self.usage();
        state.usage = usage;
        state.usage_by_agent = by_agent;
        state.approvals = self.approvals().paused();
        Some(state)
    }

    /// Writes a state [`Core::taken`], the plan (whose lock `plan` is)
    /// lent to it. The plan is lent, not copied (a thousand modules with
    /// their transcripts took milliseconds to copy and to free at every
    /// phase): its lock is held while the run is saved, a few file
    /// writes. The processes that save here (blackboard, handoff) save
    /// between phases, when no member is working on a module, or beside
    /// the review, whose changes to the plan wait for the lock. The plan
    /// goes back whatever happens: a save that panics returns the panic,
    /// for the caller to raise again or to report.
    fn write_lent(
        &self,
        mut state: RunState,
        answer_is_report: bool,
        behind: bool,
        covers: Covers,
        mut plan: parking_lot::MutexGuard<'_, crate::plan::Plan>,
    ) -> Option<Box<dyn std::any::Any + Send>> {
        let workspace = self.workspace_dir();
        state.plan = std::mem::take(&mut *plan);
        let (config, ws) = (self.config, workspace.as_deref());
        let saved = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            if behind {
                self.persist
                    .save_behind_covering(config, &state, ws, answer_is_report, covers)
            } else {
                self.persist.save(config, &state, ws, answer_is_report)
            }
        }));
        *plan = std::mem::take(&mut state.plan);
        drop(plan);
        match saved {
            Ok(Ok(())) => None,
            Ok(Err(e)) => {
                log::error!("cannot save the run: {e}");
                None
            }
            Err(panic) => Some(panic),
        }
    }
}

/// Whether the run stops at `state` (ends, fails, or waits for someone).
fn stops(state: &RunState) -> bool {
    state.phase == RunPhase::Finished || state.status != RunStatus::Running
}

/// The settings a run was started with, as `run.json` keeps them.
fn settings(config: &RunConfig) -> RunSettings {
    RunSettings {
        model: config.model.name(),
        model_spec: config.model_spec.as_deref().map(crate::model::redact_url),
        max_rounds: config.rounds_cap(),
        max_parallel: config.parallel_cap(),
        memory: config.master_memory.is_some(),
        token_budget: config.token_budget,
        protocol: config.protocol,
        vars: config.vars.clone(),
        executor: config.executor,
    }
}

/// `report.md`: the answer under one H1. An answer with a title of its own
/// (a `# ` line outside code) keeps it; any other goes under the task's
/// first line.
fn report(task: &str, answer: &str) -> String {
    /// The most characters of the task's first line that make the title.
    const MAX_TITLE: usize = 200;
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
        // A title, not the task: a task of one 60 MiB line was copied
        // whole into the report's heading (issue 28, finding 4).
        let title = match title.char_indices().nth(MAX_TITLE) {
            Some((end, _)) => format!("{}…", &title[..end]),
            None => title.to_string(),
        };
        format!("# {title}\n\n{}\n", answer.trim())
    }
}

#[cfg(test)]
mod tests {
    use super::{Aside, AsideDone, report};

    /// A save waits for the checkpoint written aside, and one whose thread
    /// panicked is over all the same (no later save waits forever).
    #[test]
    fn a_save_waits_for_the_checkpoint_written_aside_even_one_that_panicked() {
        use std::sync::atomic::{AtomicBool, Ordering};
        let aside = Aside::default();
        let written = AtomicBool::new(false);
        std::thread::scope(|s| {
            aside.begin();
            s.spawn(|| {
                let _done = AsideDone(&aside);
                std::thread::sleep(std::time::Duration::from_millis(100));
                written.store(true, Ordering::SeqCst);
            });
            aside.wait();
            assert!(written.load(Ordering::SeqCst), "waited for the writer");
        });
        aside.begin();
        let panicked = std::thread::scope(|s| {
            s.spawn(|| {
                let _done = AsideDone(&aside);
                panic!("a checkpoint that fails hard");
            })
            .join()
        });
        assert!(panicked.is_err());
        aside.wait();
    }

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
        // Issue 28, finding 4: a one-line task of any length makes a
        // title of 200 characters.
        let long = report(&"é".repeat(10_000), "Text.");
        assert_eq!(long, format!("# {}…\n\nText.\n", "é".repeat(200)));
    }
}
