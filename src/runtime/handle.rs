//! A run on its own thread, with its own stop flag: [`Runtime::start`].

use std::path::PathBuf;
use std::thread::JoinHandle;

use crossbeam_channel::Receiver;

use super::start::Start;
use super::{ApprovalError, Approvals, Cancel, RunError, RunOutcome, Runtime, ThreadError, id};
use crate::core::RunContext;
use crate::event::Event;
use crate::record::{Decision, PendingApproval};

/// A run started with [`Runtime::start`] or [`Runtime::start_resume`]: its
/// id, a way to stop it, its own events (when the runtime asked for them
/// with [`Runtime::events_per_run`]), and its outcome.
///
/// # Examples
///
/// ```
/// use boardroom::{RunStatus, Runtime, Team};
/// use boardroom::testing::Sim;
///
/// let handle = Runtime::new(Team::builtin()?, Sim::new()).start("Plan a picnic")?;
/// println!("run {} started", handle.run_id());
/// let run = handle.wait()?;
/// assert_eq!(run.status, RunStatus::Done);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct RunHandle {
    run_id: String,
    cancel: Cancel,
    approvals: Approvals,
    events: Option<Receiver<Event>>,
    /// The outcome, as soon as the run is reported done.
    reported: Receiver<RunOutcome>,
    /// The run's result, sent when its work is over: `wait` does not wait
    /// for the thread's own end (unmapping its stack), which at a
    /// thousand-member run's end queued behind the member threads ending.
    ended: Receiver<Result<RunOutcome, RunError>>,
    /// Joined only when no result came (the run panicked).
    thread: JoinHandle<()>,
}

impl RunHandle {
    /// The run's id (its directory under the runs directory).
    #[must_use]
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// Stops the run gracefully (see [`Cancel`]); [`RunHandle::wait`] then
    /// returns its outcome with status `cancelled`.
    pub fn cancel(&self) {
        self.cancel.cancel();
    }

    /// This run's stop flag, to hand to another thread (a signal handler).
    #[must_use]
    pub fn canceller(&self) -> Cancel {
        self.cancel.clone()
    }

    /// The tool calls of this run that wait for a decision now (the
    /// agent's or the team's `approve:` names their tool), oldest first.
    /// Each was announced by an `approval_requested` event.
    #[must_use]
    pub fn pending_approvals(&self) -> Vec<PendingApproval> {
        self.approvals.pending()
    }

    /// Decides about the waiting call `call_id`: approve it, approve it
    /// with edited arguments, or deny it (the model gets the denial, and
    /// the reason, as the tool's result; the call never runs). The agent
    /// that waited goes on; an `approval_decided` event records it.
    ///
    /// An agent waits only in a run of a runtime built with
    /// [`Runtime::wait_for_approvals`]; otherwise the run stops at such a
    /// call with status [`RunStatus::AwaitingApproval`](crate::RunStatus::AwaitingApproval)
    /// and [`Runtime::start_resume_deciding`] decides.
    ///
    /// # Errors
    ///
    /// [`ApprovalError::UnknownCall`] when no call with this id waits (or
    /// it was decided already); [`ApprovalError::BadArguments`] or
    /// [`ApprovalError::NotAnObject`] for edited arguments that are not a
    /// JSON object.
    pub fn decide(&self, call_id: &str, decision: Decision) -> Result<(), ApprovalError> {
        self.approvals.decide(call_id, decision)
    }

    /// This run's approvals, to hand to another thread (a prompt on the
    /// terminal, a server's route): the same as
    /// [`RunHandle::pending_approvals`] and [`RunHandle::decide`], and
    /// [`Approvals::stop_waiting`].
    #[must_use]
    pub fn approvals(&self) -> Approvals {
        self.approvals.clone()
    }

    /// This run's own events, if the runtime was built with
    /// [`Runtime::events_per_run`] and they were not taken: only this
    /// run's, and the receiver ends (disconnects) when the run ends.
    #[must_use]
    pub fn events(&self) -> Option<&Receiver<Event>> {
        self.events.as_ref()
    }

    /// Takes this run's receiver (see [`RunHandle::events`]), to read on
    /// another thread while this one waits, or to drop: once dropped, the
    /// run's sends to it are no-ops and nothing is kept.
    pub fn take_events(&mut self) -> Option<Receiver<Event>> {
        self.events.take()
    }

    /// Whether the run has ended (`wait` will not block).
    #[must_use]
    pub fn is_finished(&self) -> bool {
        !self.ended.is_empty() || self.thread.is_finished()
    }

    /// Waits until the run is reported done: its outcome once it is saved
    /// and `run_finished` is sent, before the master's and members' memory
    /// notes, which go on on the run's thread ([`RunHandle::wait`] then
    /// waits for them). `None` when the run ended without an outcome (an
    /// error: [`RunHandle::wait`] returns it).
    ///
    /// # Examples
    ///
    /// ```
    /// use boardroom::{Runtime, Team, testing::Sim};
    /// let handle = Runtime::new(Team::builtin()?, Sim::new()).start("Plan a picnic")?;
    /// let outcome = handle.wait_reported().expect("an outcome");
    /// println!("{}", outcome.answer); // shown while the notes are taken
    /// handle.wait()?; // the notes kept
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn wait_reported(&self) -> Option<RunOutcome> {
        self.reported.recv().ok()
    }

    /// Waits for the run to end (its memory notes taken, its directory
    /// saved and unlocked, its event log written, its own event channel
    /// closed, its MCP servers ended). The result of a run that got to
    /// its end (done, stopped, waiting) comes as soon as the run is
    /// closed: the run's thread then frees it and joins its member
    /// threads, which may still be ending when this returns (see
    /// [`Runtime::exits_after_run`]). A run that failed is freed before
    /// its error comes.
    ///
    /// # Errors
    ///
    /// As [`Runtime::run`]; a run thread that panicked is a
    /// [`RunError::Pool`].
    pub fn wait(self) -> Result<RunOutcome, RunError> {
        if let Ok(result) = self.ended.recv() {
            return result;
        }
        // No result: the run's thread unwound.
        let message = match self.thread.join() {
            Err(panic) => crate::core::unwind::panic_text(panic.as_ref()),
            Ok(()) => "it ended without a result".to_string(),
        };
        Err(RunError::Pool(ThreadError::Panicked {
            thread: "the run thread",
            message,
        }))
    }
}

impl Runtime {
    /// Starts the task on a new thread (`boardroom-run`) with a stop flag
    /// of its own, and returns at once.
    ///
    /// # Errors
    ///
    /// [`RunError::EmptyTask`]; [`RunError::Pool`] when the thread cannot
    /// be started. Everything else comes from [`RunHandle::wait`].
    pub fn start(&self, task: &str) -> Result<RunHandle, RunError> {
        if task.trim().is_empty() {
            return Err(RunError::EmptyTask);
        }
        let run_id = id::new_run_id();
        let state = self.seeded(super::RunState::new(
            run_id.clone(),
            task.trim().to_string(),
        ));
        self.spawn(run_id, move |rt, ctx| {
            rt.drive_in(ctx, Start::Snapshot(state))
        })
    }

    /// Resumes a saved run (see [`Runtime::resume`]) on a new thread with a
    /// stop flag of its own.
    ///
    /// # Errors
    ///
    /// [`RunError::Pool`] when the thread cannot be started; everything
    /// else comes from [`RunHandle::wait`].
    pub fn start_resume(&self, run_dir: impl Into<PathBuf>) -> Result<RunHandle, RunError> {
        let dir: PathBuf = run_dir.into();
        let run_id = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        self.spawn(run_id, move |rt, ctx| rt.resume_in(ctx, &dir, None))
    }

    /// [`Runtime::resume_with_message`] on a new thread with a stop flag of
    /// its own.
    ///
    /// # Errors
    ///
    /// [`RunError::EmptyMessage`] for an empty message; [`RunError::Pool`] when
    /// the thread cannot be started; everything else comes from
    /// [`RunHandle::wait`].
    pub fn start_resume_with_message(
        &self,
        run_dir: impl Into<PathBuf>,
        message: impl Into<String>,
    ) -> Result<RunHandle, RunError> {
        let dir: PathBuf = run_dir.into();
        let message: String = message.into();
        if message.trim().is_empty() {
            return Err(RunError::EmptyMessage);
        }
        let run_id = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        self.spawn(run_id, move |rt, ctx| {
            rt.resume_in(ctx, &dir, Some(message.trim()))
        })
    }

    /// Resumes a saved run (see [`Runtime::resume`]) on a new thread with
    /// decisions about the tool calls it waits for (a run with status
    /// [`RunStatus::AwaitingApproval`](crate::RunStatus::AwaitingApproval):
    /// [`RunState::pending_approvals`](crate::store::RunState::pending_approvals)
    /// lists them). A call given no decision waits again.
    ///
    /// # Errors
    ///
    /// [`RunError::Pool`] when the thread cannot be started; edited
    /// arguments that are not a JSON object are a [`RunError::Approval`]
    /// at once. Everything else comes from [`RunHandle::wait`], among it a
    /// [`RunError::Approval`] for a decision that names no call the saved
    /// run waits for.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use boardroom::{Decision, Runtime, Team};
    /// use boardroom::store::load_run;
    /// use boardroom::testing::Sim;
    ///
    /// let dir = std::path::Path::new("runs/20261126-120000-000-0000");
    /// let saved = load_run(dir)?;
    /// let decisions: Vec<_> = saved
    ///     .state
    ///     .pending_approvals()
    ///     .into_iter()
    ///     .map(|p| (p.call_id, Decision::Deny { reason: Some("not today".into()) }))
    ///     .collect();
    /// let run = Runtime::new(saved.team.to_team()?, Sim::new())
    ///     .start_resume_deciding(dir, decisions)?
    ///     .wait()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn start_resume_deciding(
        &self,
        run_dir: impl Into<PathBuf>,
        decisions: impl IntoIterator<Item = (String, Decision)>,
    ) -> Result<RunHandle, RunError> {
        let dir: PathBuf = run_dir.into();
        let run_id = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let decisions: Vec<(String, Decision)> = decisions.into_iter().collect();
        for (call, decision) in &decisions {
            crate::core::approval::check_decision(call, decision).map_err(|source| {
                RunError::Approval {
                    run_id: run_id.clone(),
                    source,
                }
            })?;
        }
        self.spawn(run_id, move |rt, ctx| {
            ctx.approvals.0.give(decisions);
            rt.resume_in(ctx, &dir, None)
        })
    }

    fn spawn(
        &self,
        run_id: String,
        go: impl FnOnce(&Runtime, RunContext) -> Result<RunOutcome, RunError> + Send + 'static,
    ) -> Result<RunHandle, RunError> {
        let rt = self.clone();
        let mut ctx = self.context();
        let cancel = ctx.cancel.clone();
        let approvals = ctx.approvals.clone();
        // The run's own channel: its only sender goes with the run, so the
        // receiver ends when the run does.
        let events = if self.config().per_run_events {
            let (tx, rx) = crossbeam_channel::unbounded();
            ctx.events = Some(tx);
            Some(rx)
        } else {
            None
        };
        let (reported_tx, reported) = crossbeam_channel::bounded(1);
        ctx.reported = Some(reported_tx);
        let (ended_tx, ended) = crossbeam_channel::bounded(1);
        // The run sends its result as soon as it is closed (see
        // `Core::end`); this thread sends it when the run ended without
        // getting there (an error, a panic).
        let slot: crate::core::Ended = std::sync::Arc::new(parking_lot::Mutex::new(Some(ended_tx)));
        ctx.ended = Some(std::sync::Arc::clone(&slot));
        let thread = std::thread::Builder::new()
            .name("boardroom-run".into())
            .spawn(move || {
                let result = go(&rt, ctx);
                drop(rt);
                if let Some(tx) = slot.lock().take() {
                    let _ = tx.send(result);
                }
            })
            .map_err(|source| {
                RunError::Pool(ThreadError::Spawn {
                    thread: "the run thread",
                    source,
                })
            })?;
        Ok(RunHandle {
            run_id,
            cancel,
            approvals,
            events,
            reported,
            ended,
            thread,
        })
    }
}
