//! Resuming a handoff run: the last snapshot (saved after every step and
//! every routing decision, so no completed step runs again), the usage of
//! the calls that finished after it, and the user's message if there is
//! one.

use std::path::Path;

use super::state::{HandoffStep, USER};
use crate::core::{Refusal, RunError};
use crate::event::RunStatus;
use crate::record::{RunPhase, RunState};
use crate::store::{self, JournalRecord, RunRecord};

/// The state a saved handoff run goes on from.
pub(crate) fn prepare(
    dir: &Path,
    record: RunRecord,
    message: Option<&str>,
) -> Result<RunState, RunError> {
    let mut state = record.state;
    // The calls of the step that was cut off count, as they were paid for.
    let journal =
        store::read_journal(dir, record.journal_len.unwrap_or(0)).map_err(RunError::Store)?;
    for w in &journal.warnings {
        log::warn!("{}: {w}", dir.display());
    }
    // In journal order: a step journaled after the snapshot is taken as
    // done (its call is not made again), and the calls after it are
    // filed under the round it moved the run to.
    for r in journal.items {
        match r {
            JournalRecord::Usage {
                round,
                phase,
                agent,
                usage,
            } if round == state.round && phase == state.phase => {
                state.usage.add(usage);
                state.usage_by_agent.entry(agent).or_default().add(usage);
            }
            JournalRecord::Handoff {
                round,
                status,
                phase,
                answer,
                handoff,
            } if round == state.round && state.phase == RunPhase::Step => {
                state.round = handoff.steps.len() as u32;
                state.status = status;
                state.phase = phase;
                state.answer = answer;
                state.process = crate::record::ProcessState::Handoff(handoff);
            }
            _ => {}
        }
    }
    // The message first: it is refused by the status the run was saved
    // with, and the error names that status.
    if let Some(message) = message {
        take_message(&mut state, message)?;
    }
    if matches!(
        state.status,
        RunStatus::Cancelled | RunStatus::Failed | RunStatus::AwaitingApproval
    ) && state.phase != RunPhase::Finished
    {
        state.status = RunStatus::Running;
        state.error = None;
    }
    Ok(state)
}

/// The user's message: the reply to a run that returned to its user, or a
/// follow-up to a finished one (done, or ended at the turn, handoff or
/// time cap). It goes into the history as a step of the
/// user's, and the agent that had the last turn goes on.
fn take_message(state: &mut RunState, message: &str) -> Result<(), RunError> {
    let Some(hs) = state.process.handoff_mut() else {
        return Err(refused(
            &state.run_id,
            state.status,
            Refusal::NoHandoffState,
        ));
    };
    match state.status {
        // Finished: done, waiting, or ended at a cap that a reply resets
        // (the turn and handoff caps count from the user's last message;
        // the time limit is the resumed run's own).
        RunStatus::AwaitingUser
        | RunStatus::Done
        | RunStatus::TurnLimit
        | RunStatus::HandoffLimit
        | RunStatus::TimedOut => {}
        RunStatus::BudgetExhausted => {
            return Err(refused(&state.run_id, state.status, Refusal::BudgetSpent));
        }
        _ => return Err(refused(&state.run_id, state.status, Refusal::NotWaiting)),
    }
    hs.steps.push(HandoffStep {
        step_id: hs.next_id(),
        agent: USER.to_string(),
        text: message.to_string(),
        tool_calls: Vec::new(),
        artifacts: Vec::new(),
        handoff_triggered: false,
        handoff_target: Some(hs.active.clone()),
        reason: None,
        how: None,
    });
    hs.handoffs = 0;
    hs.routing = false;
    hs.feedback.clear();
    state.status = RunStatus::Running;
    state.phase = RunPhase::Step;
    state.answer = None;
    state.round = hs.steps.len() as u32;
    Ok(())
}

fn refused(run_id: &str, status: RunStatus, why: Refusal) -> RunError {
    RunError::MessageRefused {
        run_id: run_id.to_string(),
        status,
        why,
    }
}
