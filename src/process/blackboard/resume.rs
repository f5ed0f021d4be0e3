//! Resuming a blackboard run: the last snapshot, with the journal records
//! of the phase that was cut off replayed on top (only a members phase
//! replays its entries: its drafts are what must not be redone; any other
//! phase simply runs again), and a failed or stopped run made runnable.

use std::path::Path;

use crate::board::{Entry, EntryKind};
use crate::core::{Refusal, RunError};
use crate::event::RunStatus;
use crate::record::{RunPhase, RunState, UserNote};
use crate::store::{self, JournalRecord, RunRecord, StoreError};

/// The state a saved blackboard run goes on from.
pub(crate) fn prepare(dir: &Path, record: RunRecord) -> Result<RunState, RunError> {
    let mut state = replay(dir, record.state, record.journal_len).map_err(RunError::Store)?;
    if matches!(
        state.status,
        RunStatus::Cancelled | RunStatus::Failed | RunStatus::AwaitingApproval
    ) && state.phase != RunPhase::Finished
    {
        state.rerun_errors = state.status == RunStatus::Failed;
        back_to_failed_members(&mut state);
        state.status = RunStatus::Running;
        state.error = None;
    }
    Ok(state)
}

/// The user's message for a saved blackboard run: the hook of the human
/// in the loop.
///
/// - A run that waits for its user (the master wrote `ASK:`): the message
///   answers the question; the master's turn that asked runs again (the
///   plan, or the review of the round it stood at) and sees the question
///   and the answer with the task.
/// - A finished run (done, or ended at a limit): a follow-up. The master
///   reviews the same board with the message and assigns a new round (the
///   round cap counts again from here) or answers at once.
/// - A run that was stopped or cut off refuses it: resume it first.
pub(crate) fn take_message(state: &mut RunState, message: &str) -> Result<(), RunError> {
    let message = message.trim().to_string();
    match (state.status, state.phase) {
        (RunStatus::AwaitingUser, _) => {
            let question = state.answer.take().filter(|q| !q.trim().is_empty());
            state.user_notes.push(UserNote { question, message });
            state.phase = if state.round == 0 {
                RunPhase::Plan
            } else {
                RunPhase::Review
            };
        }
        (
            RunStatus::Done
            | RunStatus::RoundLimit
            | RunStatus::BudgetExhausted
            | RunStatus::TimedOut,
            RunPhase::Finished,
        ) => {
            state.user_notes.push(UserNote {
                question: None,
                message,
            });
            state.round_offset = state.round;
            state.answer = None;
            state.phase = if state.round == 0 {
                RunPhase::Plan
            } else {
                RunPhase::Review
            };
        }
        _ => return Err(not_for_a_message(state)),
    }
    state.status = RunStatus::Running;
    state.error = None;
    state.feedback.clear();
    Ok(())
}

/// Refuses a message on a run that neither waits for its user nor has
/// finished, naming how it stands as saved (before `prepare` makes a
/// failed or stopped run runnable again).
pub(crate) fn check_message(state: &RunState) -> Result<(), RunError> {
    match (state.status, state.phase) {
        (RunStatus::AwaitingUser, _)
        | (
            RunStatus::Done
            | RunStatus::RoundLimit
            | RunStatus::BudgetExhausted
            | RunStatus::TimedOut,
            RunPhase::Finished,
        ) => Ok(()),
        _ => Err(not_for_a_message(state)),
    }
}

fn not_for_a_message(state: &RunState) -> RunError {
    RunError::MessageRefused {
        run_id: state.run_id.clone(),
        status: state.status,
        why: Refusal::NotFinished,
    }
}

/// The last snapshot of a run, with the journal records written after it
/// (from byte `journal_len`) replayed on top: for a members phase, the
/// entries, modules and usage of the drafts that landed (they are not
/// asked for again); for any other phase, which simply runs again, the
/// usage of the calls that finished before the cut, so that the totals
/// always equal the sum over `turns.jsonl`. A snapshot without
/// `journal_len` (an older file) replays a members phase only.
pub(crate) fn replay(
    dir: &Path,
    mut state: RunState,
    journal_len: Option<u64>,
) -> Result<RunState, StoreError> {
    if journal_len.is_none() && state.phase != RunPhase::Members {
        return Ok(state);
    }
    let journal = store::read_journal(dir, journal_len.unwrap_or(0))?;
    for w in &journal.warnings {
        log::warn!("{}: {w}", dir.display());
    }
    let members = state.phase == RunPhase::Members;
    // Entries are numbered under the board's lock but journaled after it,
    // so members that land together can be journaled out of order: keep
    // every entry the snapshot lacks, then restore the board's order.
    let mut on_board: std::collections::HashSet<u64> = state.board.iter().map(|e| e.seq).collect();
    for record in journal.items {
        match record {
            JournalRecord::Entry {
                round,
                phase,
                entry,
            } if members
                && round == state.round
                && phase == state.phase
                && !on_board.contains(&entry.seq) =>
            {
                // Never written by boardroom, and the next entry's number
                // would overflow: not taken.
                if entry.seq == 0 || entry.seq >= store::MAX_SEQ {
                    log::warn!(
                        "{}: journal entry #{} is out of range; skipped",
                        dir.display(),
                        entry.seq
                    );
                    continue;
                }
                on_board.insert(entry.seq);
                state.board.push(entry);
            }
            JournalRecord::Module {
                round,
                phase,
                module,
            } if members && round == state.round && phase == state.phase => {
                match state.plan.get_mut(&module.task_id) {
                    Some(m) => *m = module,
                    None => state.plan.tasks.push(module),
                }
            }
            JournalRecord::Usage {
                round,
                phase,
                agent,
                usage,
            } if round == state.round && phase == state.phase => {
                state.usage.add(usage);
                state.usage_by_agent.entry(agent).or_default().add(usage);
            }
            _ => {}
        }
    }
    state.board.sort_by_key(|e| e.seq);
    Ok(state)
}

/// Whether a call's error means the assignment was never answered, so a
/// resume runs it again: the model was not reached (no connection, a cut
/// stream, the call's deadline), the server refused the call with an HTTP
/// error (408, 429 or 5xx after the retries, and also 401, 403 or 404,
/// which a user fixes — a key, a model name — before resuming), or the
/// call was cancelled before it was sent (the run was stopped). A model
/// that answered, however badly, did its turn. Every variant is named, so
/// a new one must be classified here.
pub(crate) fn is_transport(e: &crate::model::ModelError) -> bool {
    use crate::model::ModelError;
    match e {
        ModelError::Transport { .. } | ModelError::Cancelled | ModelError::Http { .. } => true,
        ModelError::BadResponse { .. }
        | ModelError::BudgetExhausted { .. }
        | ModelError::Simulated { .. } => false,
    }
}

/// The assignments of the current round still to run, and among them the
/// ones that ran before and failed (to run again). An assignment is done
/// once the board holds its draft, or an error that was not a transport
/// failure (a model that answered badly would again) — unless a failed
/// run is being resumed ([`RunState::rerun_errors`]): then every error
/// runs again, so a run that failed for want of a usable draft can go on.
pub(crate) fn still_to_do(
    state: &RunState,
    board: &[Entry],
) -> (
    Vec<crate::protocol::Assignment>,
    Vec<crate::protocol::Assignment>,
) {
    let round = state.round;
    let mut todo = Vec::new();
    let mut again = Vec::new();
    // This round's entries by (author, task), indexed once: a scan of the
    // board per assignment made a round after a big one O(N²).
    let mut by_assignment: std::collections::HashMap<(&str, &str), Vec<&Entry>> =
        std::collections::HashMap::new();
    for e in board.iter().filter(|e| e.round == round) {
        if let Some(task) = e.task.as_deref() {
            by_assignment
                .entry((e.author.as_str(), task))
                .or_default()
                .push(e);
        }
    }
    for a in &state.assignments {
        let of: &[&Entry] = by_assignment
            .get(&(a.member.as_str(), a.task.as_str()))
            .map_or(&[], Vec::as_slice);
        let final_error =
            |e: &&Entry| e.kind == EntryKind::Error && !e.transport && !state.rerun_errors;
        let done = of
            .iter()
            .any(|e| e.kind == EntryKind::Draft || final_error(e));
        if done {
            continue;
        }
        if of.iter().any(|e| e.kind == EntryKind::Error) {
            again.push(a.clone());
        }
        todo.push(a.clone());
    }
    (todo, again)
}

/// A run that failed after its round's members failed on the transport
/// goes back to that round's members phase on resume: the failed
/// assignments run again, instead of the run answering from a board with
/// no drafts. Returns whether it went back.
fn back_to_failed_members(state: &mut RunState) -> bool {
    let after_members = matches!(
        state.phase,
        RunPhase::Challenge | RunPhase::Review | RunPhase::Final
    );
    if !after_members || state.round == 0 || state.assignments.is_empty() {
        return false;
    }
    let (_, again) = still_to_do(state, &state.board);
    if again.is_empty() {
        return false;
    }
    log::info!(
        "run {}: round {} runs again for {} assignment(s) whose calls failed or got no answer",
        state.run_id,
        state.round,
        again.len()
    );
    state.phase = RunPhase::Members;
    state.answer = None;
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::ModuleStatus;
    use crate::store::RunDir;

    fn entry(seq: u64, author: &str) -> Entry {
        Entry {
            seq,
            round: 1,
            author: author.into(),
            kind: EntryKind::Draft,
            task: Some("t".into()),
            text: format!("draft {seq}"),
            transport: false,
            failure: None,
        }
    }

    /// A run in round 1 cut off in `phase`.
    fn round_one(phase: RunPhase) -> RunState {
        let mut state = RunState::new("r".into(), "task".into());
        state.round = 1;
        state.phase = phase;
        state
    }

    /// A run folder in a temporary folder, and a run in round 1 cut off
    /// in `phase`.
    fn cut_off_in(phase: RunPhase) -> (tempfile::TempDir, RunDir, RunState) {
        let tmp = tempfile::tempdir().unwrap();
        let dir = RunDir::open(tmp.path()).unwrap();
        (tmp, dir, round_one(phase))
    }

    /// Journals a round-1 members-phase draft for each `(seq, author)`.
    fn journal_drafts(dir: &RunDir, drafts: &[(u64, &str)]) {
        for &(seq, who) in drafts {
            dir.append_journal(&JournalRecord::Entry {
                round: 1,
                phase: RunPhase::Members,
                entry: entry(seq, who),
            })
            .unwrap();
        }
    }

    fn usage(prompt_tokens: u64, completion_tokens: u64) -> crate::model::Usage {
        crate::model::Usage {
            prompt_tokens,
            completion_tokens,
            ..crate::model::Usage::default()
        }
    }

    #[test]
    fn replay_applies_only_the_cut_off_members_phase() {
        let (tmp, dir, mut state) = cut_off_in(RunPhase::Members);
        state.board.push(entry(1, "writer"));
        let id = state.plan.add("t", Some("critic".into()));
        let mut module = state.plan.get(&id).unwrap().clone();
        module.status = ModuleStatus::PendingReview;
        let members = |entry| JournalRecord::Entry {
            round: 1,
            phase: RunPhase::Members,
            entry,
        };
        dir.append_journal(&members(entry(1, "writer"))).unwrap();
        dir.append_journal(&members(entry(2, "critic"))).unwrap();
        dir.append_journal(&JournalRecord::Module {
            round: 1,
            phase: RunPhase::Members,
            module,
        })
        .unwrap();
        // From another phase or round: not replayed.
        dir.append_journal(&JournalRecord::Entry {
            round: 0,
            phase: RunPhase::Members,
            entry: entry(3, "analyst"),
        })
        .unwrap();
        let replayed = replay(tmp.path(), state.clone(), None).unwrap();
        let seqs: Vec<u64> = replayed.board.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, vec![1, 2]);
        assert_eq!(replayed.plan.tasks[0].status, ModuleStatus::PendingReview);

        state.phase = RunPhase::Review;
        assert_eq!(replay(tmp.path(), state.clone(), None).unwrap(), state);
    }

    #[test]
    fn replay_keeps_entries_journaled_out_of_order() {
        // Review finding: seq 3 journaled before seq 2 used to drop seq 2.
        let (tmp, dir, mut state) = cut_off_in(RunPhase::Members);
        state.board.push(entry(1, "writer"));
        journal_drafts(&dir, &[(3, "analyst"), (2, "critic"), (1, "writer")]);
        let replayed = replay(tmp.path(), state, None).unwrap();
        let board: Vec<(u64, &str)> = replayed
            .board
            .iter()
            .map(|e| (e.seq, e.author.as_str()))
            .collect();
        assert_eq!(board, vec![(1, "writer"), (2, "critic"), (3, "analyst")]);
    }

    #[test]
    fn replay_skips_journal_entries_numbered_out_of_range() {
        // A damaged journal: an entry numbered u64::MAX made the next
        // entry's number overflow (a panic on resume).
        let (tmp, dir, state) = cut_off_in(RunPhase::Members);
        journal_drafts(&dir, &[(1, "writer"), (u64::MAX, "critic"), (0, "analyst")]);
        let replayed = replay(tmp.path(), state, None).unwrap();
        let seqs: Vec<u64> = replayed.board.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, vec![1]);
    }

    #[test]
    fn replay_counts_the_usage_of_calls_that_finished_before_the_cut() {
        let (tmp, dir, state) = cut_off_in(RunPhase::Members);
        for (phase, agent, n) in [
            (RunPhase::Members, "writer", 10),
            (RunPhase::Members, "critic", 20),
            (RunPhase::Plan, "master", 99),
        ] {
            dir.append_journal(&JournalRecord::Usage {
                round: 1,
                phase,
                agent: agent.into(),
                usage: usage(n, 1),
            })
            .unwrap();
        }
        let replayed = replay(tmp.path(), state, None).unwrap();
        assert_eq!(replayed.usage.total(), 32);
        assert_eq!(replayed.usage_by_agent["critic"].prompt_tokens, 20);
        assert!(!replayed.usage_by_agent.contains_key("master"));
    }

    #[test]
    fn replay_counts_usage_of_any_cut_off_phase_after_the_snapshot_only() {
        // Issue 8: a kill in a non-member phase lost the usage of the calls
        // that finished before it; usage journaled before the snapshot is
        // already in it and must not count twice.
        let (tmp, dir, state) = cut_off_in(RunPhase::Finished);
        let record = |n| JournalRecord::Usage {
            round: 1,
            phase: RunPhase::Finished,
            agent: "master".into(),
            usage: usage(n, 0),
        };
        dir.append_journal(&record(100)).unwrap();
        let snapshot_at = dir.journal_len();
        dir.append_journal(&record(7)).unwrap();
        let replayed = replay(tmp.path(), state.clone(), Some(snapshot_at)).unwrap();
        assert_eq!(replayed.usage.total(), 7);
        assert_eq!(replayed.usage_by_agent["master"].total(), 7);
        // An old run.json without the offset: only a members phase replays.
        assert_eq!(replay(tmp.path(), state.clone(), None).unwrap(), state);
    }

    #[test]
    fn only_assignments_that_failed_on_the_transport_run_again() {
        let mut state = round_one(RunPhase::Final);
        for m in ["a", "b", "c", "d"] {
            state.assignments.push(crate::protocol::Assignment {
                member: m.into(),
                task: "t".into(),
            });
        }
        let mut e = |seq, author: &str, kind, transport| {
            let mut x = entry(seq, author);
            x.kind = kind;
            x.transport = transport;
            state.board.push(x);
        };
        e(1, "a", EntryKind::Draft, false);
        e(2, "b", EntryKind::Error, false);
        e(3, "c", EntryKind::Error, true);
        let (todo, again) = still_to_do(&state, &state.board);
        let names = |v: &[crate::protocol::Assignment]| -> Vec<String> {
            v.iter().map(|a| a.member.clone()).collect()
        };
        assert_eq!(names(&todo), ["c", "d"]);
        assert_eq!(names(&again), ["c"]);
        assert!(back_to_failed_members(&mut state));
        assert_eq!(state.phase, RunPhase::Members);
    }
}
