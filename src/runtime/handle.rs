//! A run on its own thread, with its own stop flag: [`Runtime::start`].

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use crossbeam_channel::Receiver;

use super::{RunError, RunOutcome, Runtime, ThreadError, id};
use crate::event::Event;

/// A stop flag for one run. Cheap to clone; every clone stops the same run.
///
/// Setting it stops the run gracefully: no new model calls are sent, the
/// calls in flight return (each within its own deadline), the state is
/// saved with status [`RunStatus::Cancelled`](crate::RunStatus::Cancelled)
/// and [`Runtime::resume`] continues it from where it stood.
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    /// A flag that is not set.
    #[must_use]
    pub fn new() -> Self {
        Cancel::default()
    }

    /// Asks the run to stop.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether the run was asked to stop.
    #[must_use]
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

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
    events: Option<Receiver<Event>>,
    thread: JoinHandle<Result<RunOutcome, RunError>>,
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
        self.thread.is_finished()
    }

    /// Waits for the run to end.
    ///
    /// # Errors
    ///
    /// As [`Runtime::run`]; a run thread that panicked is a
    /// [`RunError::Pool`].
    pub fn wait(self) -> Result<RunOutcome, RunError> {
        self.thread.join().unwrap_or_else(|panic| {
            Err(RunError::Pool(ThreadError::Panicked {
                thread: "the run thread",
                message: super::tool_loop::panic_text(panic.as_ref()),
            }))
        })
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
        self.spawn(run_id, move |rt| rt.drive(state))
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
        self.spawn(run_id, move |rt| rt.resume(&dir))
    }

    /// [`Runtime::resume_with_message`] on a new thread with a stop flag of
    /// its own.
    ///
    /// # Errors
    ///
    /// [`RunError::Process`] for an empty message; [`RunError::Pool`] when
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
            return Err(RunError::Process("the message is empty".into()));
        }
        let run_id = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        self.spawn(run_id, move |rt| rt.resume_with_message(&dir, &message))
    }

    fn spawn(
        &self,
        run_id: String,
        go: impl FnOnce(&Runtime) -> Result<RunOutcome, RunError> + Send + 'static,
    ) -> Result<RunHandle, RunError> {
        let mut rt = self.clone();
        rt.cancel = Cancel::new();
        let cancel = rt.cancel.clone();
        // The run's own channel: its only sender lives in the run's
        // runtime, so the receiver ends when the run thread does.
        let events = if rt.per_run_events {
            let (tx, rx) = crossbeam_channel::unbounded();
            rt.run_events = Some(tx);
            Some(rx)
        } else {
            rt.run_events = None;
            None
        };
        let thread = std::thread::Builder::new()
            .name("boardroom-run".into())
            .spawn(move || go(&rt))
            .map_err(|source| {
                RunError::Pool(ThreadError::Spawn {
                    thread: "the run thread",
                    source,
                })
            })?;
        Ok(RunHandle {
            run_id,
            cancel,
            events,
            thread,
        })
    }
}
