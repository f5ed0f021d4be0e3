//! The master's memory in a handoff team, as in a blackboard team: the
//! team's master (its `role: master` agent) sees the notes of earlier runs
//! in its turns, and a run that ends with an answer leaves a note from its
//! last answer (one call to the master). A run that returns to its user
//! is not over and leaves none until it ends; a run that timed out makes
//! no call past its deadline.

use crate::event::RunStatus;
use crate::model::Message;
use crate::util::text::escape_xml;

/// Whether a run that ended with `status` leaves a note.
pub(super) fn leaves_a_note(status: RunStatus) -> bool {
    matches!(
        status,
        RunStatus::Done
            | RunStatus::TurnLimit
            | RunStatus::HandoffLimit
            | RunStatus::BudgetExhausted
    )
}

/// Adds the notes of earlier runs to a turn's system prompt (the first
/// system message; one is added in front when there is none).
pub(super) fn show(messages: &mut Vec<Message>, memory: &str) {
    if memory.trim().is_empty() {
        return;
    }
    let block = format!(
        "## What you remember from earlier runs\n\n<memory>\n{}\n</memory>",
        escape_xml(memory.trim())
    );
    match messages.iter_mut().find(|m| m.role == crate::Role::System) {
        Some(system) => {
            system.content.push_str("\n\n");
            system.content.push_str(&block);
        }
        None => messages.insert(0, Message::system(block)),
    }
}

/// The master asked what is worth remembering after the run.
pub(super) fn prompt(soul: &str, task: &str, answer: &str) -> Vec<Message> {
    vec![
        Message::system(soul.trim().to_string()),
        Message::user(format!(
            "<task>\n{}\n</task>\n\n<answer>\n{}\n</answer>\n\nThe run is over: your team \
             passed the work from agent to agent and this was its last answer. In at most five \
             short bullet points, write what is worth remembering for future tasks: what worked, \
             which agent is good at what, mistakes to avoid. Write nothing else.",
            escape_xml(task.trim()),
            escape_xml(answer.trim())
        )),
    ]
}
