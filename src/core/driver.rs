//! The processes as the core sees them: a [`Driver`] is what the runtime
//! starts and runs, [`Phases`] what the shared loop ([`drive`]) steps
//! through. The core names no driver: the runtime picks one (a `match` on
//! the team's process), the loop here reaches it only through [`Phases`],
//! and the driver calls the core for everything else (calls, events,
//! snapshots).
//!
//! ```text
//! run_started, user_message, begin
//! while next() gives a position:
//!     stop asked (cancel, time, budget)?  -> end_early, out of the loop
//!     step()   -> an error a stop caused: end_early; any other: saved, returned
//!     stepped()  (the snapshot)
//! wrap_up (the last snapshot), finish -> the outcome, reported; then the
//! memory notes (remember)
//! ```

use std::path::Path;
use std::sync::Arc;

use super::budget::Stop;
use super::config::{RunConfig, RunContext};
use super::error::RunError;
use super::outcome::RunOutcome;
use super::persist::Opening;
use super::run::Core;
use crate::event::EventKind;
use crate::record::{RunPhase, RunState, RunStatus};
use crate::store::{RunLock, RunRecord};

/// One way a team works (blackboard, handoff), as the runtime starts it.
pub(crate) trait Driver<'a>: Sized {
    /// The state a saved run of this process goes on from: what its
    /// journal holds after the snapshot replayed, a stopped or failed run
    /// made runnable again, the user's message taken if there is one.
    ///
    /// # Errors
    ///
    /// A journal that cannot be read; a message the run does not take in
    /// its state.
    fn prepare_resume(
        dir: &Path,
        record: RunRecord,
        message: Option<&str>,
    ) -> Result<RunState, RunError>;

    /// Checks that the run can start and builds it over a new core.
    ///
    /// # Errors
    ///
    /// Bad input (variables, souls, tools, models), a run directory that
    /// cannot be opened.
    fn start(
        config: &'a RunConfig,
        ctx: RunContext,
        state: RunState,
        opening: Opening,
    ) -> Result<Self, RunError>;

    /// The run's core.
    fn core(&self) -> &Core<'a>;

    /// Runs the process to its end (through [`drive`]).
    ///
    /// # Errors
    ///
    /// As [`Runtime::run`](crate::Runtime::run).
    fn run(self) -> Result<RunOutcome, RunError>;

    /// The run directory's lock, to hold until the run's last word is
    /// written.
    fn lock(&self) -> Option<Arc<RunLock>> {
        self.core().persist.lock()
    }
}

/// A process's phases or steps, as [`drive`] goes through them.
pub(crate) trait Phases {
    /// The run's core.
    fn core(&self) -> &Core<'_>;

    /// The agent that announces the run, and its `run_started` event.
    fn started(&self) -> (String, EventKind);

    /// After `run_started`, before the first step: a check of the saved
    /// state, a first snapshot.
    ///
    /// # Errors
    ///
    /// A state this process cannot go on from.
    fn begin(&mut self) -> Result<(), RunError> {
        Ok(())
    }

    /// Where the next phase or step is filed (round, phase), or `None`
    /// once the run is over.
    fn next(&mut self) -> Option<(u32, RunPhase)>;

    /// Runs one phase or step.
    ///
    /// # Errors
    ///
    /// What ends the run: a master that failed, no usable draft.
    fn step(&mut self) -> Result<(), RunError>;

    /// The stop that caused a step's error, if it was one: the run then
    /// ends as the stop says instead of failing.
    fn stopped_by(&self, _error: &RunError) -> Option<Stop> {
        None
    }

    /// After a step that went well: the snapshot.
    fn stepped(&mut self) {
        self.checkpoint();
    }

    /// Ends the run before its agents finished.
    ///
    /// # Errors
    ///
    /// A stop with nothing worth an answer yet.
    fn end_early(&mut self, stop: Stop) -> Result<(), RunError>;

    /// Saves the run as it stands.
    fn checkpoint(&self);

    /// After the loop: the last snapshot. `saved`: the loop ended right
    /// after a step's own snapshot, so the state on disk is the state now
    /// (a second snapshot would copy the board and write nothing).
    fn wrap_up(&mut self, saved: bool);

    /// The outcome, with the last `room_status` sent (`run_finished`
    /// follows the memory notes, as the run's last event).
    fn finish(&mut self) -> RunOutcome;

    /// The agent the run's `run_finished` event names.
    fn last_agent(&self) -> String;

    /// After the run is reported done (saved, its last `room_status` sent,
    /// the outcome handed to the caller's [`RunHandle`](crate::RunHandle)):
    /// the memory notes. A kill here loses nothing but the note.
    fn remember(&mut self) {}
}

/// The loop every process runs: phases or steps until the run is over,
/// checking between them whether it must stop.
///
/// # Errors
///
/// What a step or [`Phases::begin`] returns; the run is saved first.
pub(crate) fn drive<P: Phases>(mut run: P) -> Result<RunOutcome, RunError> {
    let (agent, started) = run.started();
    run.core().emit(&agent, None, started);
    run.core().emit_user_message();
    let mut round = 0;
    let saved = steps(&mut run, &mut round);
    if let Err(e) = saved {
        // However it failed (a step, a stop with nothing worth an answer,
        // a state it cannot go on from), the subscribers hear how the run
        // ended, as for any other end; the error itself is the caller's.
        let (usage, _) = run.core().usage();
        run.core().emit(
            &agent,
            None,
            EventKind::RunFinished {
                status: RunStatus::Failed,
                answer: String::new(),
                rounds: round,
                usage,
            },
        );
        return Err(e);
    }
    run.wrap_up(saved.unwrap_or(false));
    let outcome = run.finish();
    run.core().report(&outcome);
    run.remember();
    // The last event: with the notes' tokens in its usage.
    let (usage, _) = run.core().usage();
    run.core().emit(
        &run.last_agent(),
        None,
        EventKind::RunFinished {
            status: outcome.status,
            answer: outcome.answer.clone(),
            rounds: outcome.rounds,
            usage,
        },
    );
    // A started run's caller has its result now; what is left (the
    // member threads ending, the run freed) goes on without it.
    Ok(run.core().end(outcome))
}

/// [`drive`]'s loop: `begin`, then the phases or steps until the run is
/// over or stops; `round` follows where it is. `Ok(true)`: the loop ended
/// after a step and its snapshot, nothing changed since.
fn steps<P: Phases>(run: &mut P, round: &mut u32) -> Result<bool, RunError> {
    run.begin()?;
    let mut saved = false;
    while let Some((at, phase)) = run.next() {
        *round = at;
        run.core().at(at, phase);
        if let Some(stop) = run.core().stop_reason() {
            return run.end_early(stop).map(|()| false);
        }
        if let Err(e) = run.step() {
            return match run.stopped_by(&e) {
                Some(stop) => run.end_early(stop).map(|()| false),
                None => {
                    // Saved as it stands, so a resume goes on from here.
                    run.checkpoint();
                    Err(e)
                }
            };
        }
        run.stepped();
        saved = true;
    }
    Ok(saved)
}
