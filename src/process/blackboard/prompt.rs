//! What each agent is shown. The protocol is explained in every prompt that
//! expects a directive, so that any model can follow it.

use std::fmt::Write as _;

use super::structured::Wording;
use crate::board::{Entry, render_context};
use crate::model::Message;
use crate::team::{AgentSpec, Team};
use crate::util::text::escape_xml;

pub(crate) const MASTER_RULES: &str = "\
## How you direct the team

Reply with directives, one per line, and nothing the team must act on outside them:

ASSIGN:<member>:<task>
  Gives one member one task. The task is the rest of the line and any following
  lines up to the next directive or a blank line. Use only names from the roster.
  Give each member a self-contained task: they see the board but not this message.
DONE
  Ends the work. Write the complete final answer after DONE (on the same line or
  the lines below): it goes to the user as it stands.
ASK:<question>
  Only when the work cannot go on without the user's answer (a choice only the
  user can make): the run waits for the reply, and you see it in your next turn.

Members work in parallel, so split the task into parts that can be done at the
same time. After every round you see the board (drafts, challenges, errors) and
either assign another round or finish with DONE.";

const DRAFT_RULES: &str = "\
## How you work here

You are one member of a team. The master gave you one assignment; other members
work on other parts at the same time. Answer your assignment directly and
completely, in Markdown. Do not write directives (ASSIGN, DONE, CHALLENGE) and do
not describe what you are going to do: do it. If the board shows challenges to
your earlier draft, answer each one in this draft.";

pub(crate) const CHALLENGE_RULES: &str = "\
## The challenge round

Read the board: every member's draft for this round. Look for factual errors,
gaps that matter for the task, contradictions between drafts, and advice that
would mislead the user. Then answer with exactly one of:

CHALLENGE:<what is wrong, where (name the member), and why>
AGREE

Challenge only what you can justify; do not challenge style. If nothing matters
enough, write AGREE.";

/// The most of one entry's text that other agents' prompts show (64 KiB):
/// a runaway answer must not multiply into every later prompt. The entry
/// itself keeps its whole text (on the board, in run.json, in the answer).
pub(crate) const MAX_ENTRY_IN_PROMPT: usize = 64 * 1024;

/// The board for a prompt, each entry's text cut at [`MAX_ENTRY_IN_PROMPT`].
/// A phase's board, rendered once for every agent of the phase to read:
/// `None` for an empty board (a draft then says nothing of it), and the
/// rendering itself (a challenge shows it even empty).
#[derive(Clone)]
pub(crate) struct SharedBoardText(Option<std::sync::Arc<str>>, std::sync::Arc<str>);

impl SharedBoardText {
    /// Renders `board` once.
    pub(crate) fn new(board: &[Entry]) -> Self {
        let text: std::sync::Arc<str> = board_context(board).into();
        SharedBoardText(
            (!board.is_empty()).then(|| std::sync::Arc::clone(&text)),
            text,
        )
    }
}

fn board_context(board: &[Entry]) -> String {
    if board.iter().all(|e| e.text.len() <= MAX_ENTRY_IN_PROMPT) {
        return render_context(board);
    }
    let cut: Vec<Entry> = board
        .iter()
        .map(|e| {
            let mut e = e.clone();
            if e.text.len() > MAX_ENTRY_IN_PROMPT {
                let mut end = MAX_ENTRY_IN_PROMPT;
                while !e.text.is_char_boundary(end) {
                    end -= 1;
                }
                let total = e.text.len();
                e.text.truncate(end);
                let _ = write!(
                    e.text,
                    "\n[cut: this entry is {total} bytes; the first {end} are shown]"
                );
            }
            e
        })
        .collect();
    render_context(&cut)
}

pub(super) fn soul_block(agent: &AgentSpec) -> String {
    let mut s = agent.soul.trim().to_string();
    if !agent.notes.trim().is_empty() {
        let _ = write!(s, "\n\n## Notes\n\n{}", agent.notes.trim());
    }
    s
}

/// The roster as the master sees it.
pub(crate) fn roster(team: &Team) -> String {
    let mut out = String::from("<roster>\n");
    for m in team.members() {
        let challenge = if m.can_challenge {
            " (can challenge)"
        } else {
            ""
        };
        let desc = if m.description.is_empty() {
            "no description"
        } else {
            m.description.as_str()
        };
        let _ = writeln!(out, "- {}: {}{}", m.name, escape_xml(desc), challenge);
    }
    out.push_str("</roster>");
    out
}

/// The master's system prompt: soul, memory, roster, `rules`.
pub(crate) fn master_system(team: &Team, memory: &str, rules: &str) -> Message {
    let master = team.master();
    let mut s = soul_block(master);
    if !memory.trim().is_empty() {
        let _ = write!(
            s,
            "\n\n## What you remember from earlier runs\n\n<memory>\n{}\n</memory>",
            escape_xml(memory.trim())
        );
    }
    let _ = write!(s, "\n\n## Your team\n\n{}\n\n{rules}", roster(team));
    Message::system(s)
}

#[cfg(test)]
use crate::plan::MAX_TASK_IN_ARCHIVE;
pub(crate) use crate::plan::without_long_tasks;

fn task_block(task: &str) -> String {
    format!("<task>\n{}\n</task>", escape_xml(task.trim()))
}

/// What the master is told when its plan finished the work (DONE) before
/// any member was asked: a plan must assign.
pub(crate) const PLAN_DONE: &str = "the plan finished the work before any member drafted: a plan must give at least one \
     member a task (finish only after the team has drafted)";

/// The last message of a master's or challenger's turn: the ask, then how
/// to format the reply where the protocol says so.
fn ask_message(mut ask: String, w: &Wording) -> Message {
    if let Some(format) = w.reply_format {
        ask.push_str("\n\n");
        ask.push_str(format);
    }
    Message::user(ask)
}

/// The master's first turn, with the work modules the run was seeded with.
pub(crate) fn plan(
    team: &Team,
    memory: &str,
    task: &str,
    seeded: &crate::plan::Plan,
    w: &Wording,
) -> Vec<Message> {
    let mut ask = format!(
        "{}\n\nSplit this task among the members of your roster. {}; give at least one member \
         a task: nobody has worked yet, so the plan cannot finish the work.",
        task_block(task),
        w.plan_ask
    );
    add_seeded_modules(&mut ask, seeded, w);
    vec![
        master_system(team, memory, w.master_rules),
        ask_message(ask, w),
    ]
}

/// Shows the master the work modules a run was seeded with (drafted by the
/// partner with the user) in its plan turn: each open one is to be
/// assigned.
fn add_seeded_modules(ask: &mut String, plan: &crate::plan::Plan, w: &Wording) {
    let open: Vec<&crate::plan::WorkModule> = plan
        .tasks
        .iter()
        .filter(|m| m.status == crate::plan::ModuleStatus::Pending && m.assigned_agent.is_none())
        .collect();
    if open.is_empty() {
        return;
    }
    let mut block = String::from(
        "\n\nThe work is already split into these pending modules (drafted with the user):\n<modules>\n",
    );
    for m in open {
        let _ = writeln!(
            block,
            "- {}: {}",
            m.task_id,
            escape_xml(m.description.trim())
        );
    }
    let _ = write!(
        block,
        "</modules>\nAssign every module to the member who fits it best: start each task with \
         the module's id ({}).",
        w.seeded_example
    );
    ask.push_str(&block);
}

/// The master reviewing round `round` (of at most `max_rounds`), with
/// problems from its last reply.
pub(crate) fn review(
    team: &Team,
    memory: &str,
    task: &str,
    board: &[Entry],
    (round, max_rounds): (u32, u32),
    feedback: &[String],
    w: &Wording,
) -> Vec<Message> {
    let mut ask = format!(
        "{}\n\nRound {round} of at most {max_rounds} is over. This is the board:\n\n{}\n\n",
        task_block(task),
        board_context(board)
    );
    push_feedback(&mut ask, feedback);
    if round >= max_rounds {
        let _ = write!(
            ask,
            "This was the last round. {} the complete final answer.",
            w.last_round_ask
        );
    } else {
        let _ = write!(
            ask,
            "If the drafts answer the task and no challenge stands, {} write the complete final \
             answer, merging the drafts. Otherwise {} for the next round, saying exactly what to \
             fix.",
            w.done_ask, w.assign_ask
        );
    }
    vec![
        master_system(team, memory, w.master_rules),
        ask_message(ask, w),
    ]
}

/// The master asked for its final answer (the round cap, or an empty DONE).
pub(crate) fn final_answer(team: &Team, memory: &str, task: &str, board: &[Entry]) -> Vec<Message> {
    // The final answer is plain text in every protocol; the master's rules
    // stay those of the line protocol, as they always were here.
    vec![
        master_system(team, memory, MASTER_RULES),
        Message::user(format!(
            "{}\n\nThe work is over. This is the board:\n\n{}\n\nWrite the complete final answer for \
             the user now, from the best of the board. Write only the answer, with no directives.",
            task_block(task),
            board_context(board)
        )),
    ]
}

/// The master asked what is worth remembering after a run.
pub(crate) fn memory(team: &Team, task: &str, answer: &str) -> Vec<Message> {
    vec![
        Message::system(soul_block(team.master())),
        Message::user(format!(
            "{}\n\n<answer>\n{}\n</answer>\n\nThe run is over. In at most five short bullet points, write \
             what is worth remembering for future tasks: what worked, what the members are good at, \
             mistakes to avoid. Write nothing else.",
            task_block(task),
            escape_xml(answer.trim())
        )),
    ]
}

/// A member asked what is worth remembering of its own work after a run.
pub(crate) fn member_memory(member: &AgentSpec, task: &str, drafts: &[String]) -> Vec<Message> {
    let mut ask = task_block(task);
    for d in drafts {
        let _ = write!(
            ask,
            "\n\n<your_draft>\n{}\n</your_draft>",
            escape_xml(d.trim())
        );
    }
    ask.push_str(
        "\n\nThe run is over. In at most three short bullet points, write what is worth \
         remembering for your future assignments: what worked, mistakes to avoid. Write nothing \
         else.",
    );
    vec![Message::system(soul_block(member)), Message::user(ask)]
}

/// The memory block of a system prompt (nothing for an empty memory).
fn memory_block(memory: &str) -> String {
    if memory.trim().is_empty() {
        return String::new();
    }
    format!(
        "\n\n## What you remember from earlier runs\n\n<memory>\n{}\n</memory>",
        escape_xml(memory.trim())
    )
}

/// A member drafting its assignment, with its own memory of earlier runs.
pub(crate) fn draft(
    member: &AgentSpec,
    memory: &str,
    task: &str,
    board: &SharedBoardText,
    assignment: &str,
) -> Vec<Message> {
    let mut ask = task_block(task);
    if let Some(board) = &board.0 {
        let _ = write!(ask, "\n\nThe board so far:\n\n{board}");
    }
    let _ = write!(
        ask,
        "\n\nYour assignment from the master:\n<assignment>\n{}\n</assignment>\n\nWrite your draft now.",
        escape_xml(assignment.trim())
    );
    vec![
        Message::system(format!(
            "{}{}\n\n{DRAFT_RULES}",
            soul_block(member),
            memory_block(memory)
        )),
        Message::user(ask),
    ]
}

/// A challenger reading the board.
pub(crate) fn challenge(
    member: &AgentSpec,
    task: &str,
    board: &SharedBoardText,
    round: u32,
    w: &Wording,
) -> Vec<Message> {
    vec![
        Message::system(format!("{}\n\n{}", soul_block(member), w.challenge_rules)),
        ask_message(
            format!(
                "{}\n\nThe board after round {round}:\n\n{}\n\n{}",
                task_block(task),
                board.1,
                w.challenge_ask
            ),
            w,
        ),
    ]
}

/// The note sent when a reply could not be used.
fn push_feedback(ask: &mut String, feedback: &[String]) {
    if feedback.is_empty() {
        return;
    }
    ask.push_str("Some of your earlier directives were rejected:\n");
    for f in feedback {
        let _ = writeln!(ask, "- {f}");
    }
    ask.push('\n');
}

#[cfg(test)]
mod archive_tests {
    use super::*;

    #[test]
    fn issue28_finding4_a_long_task_is_not_kept_in_a_transcript() {
        let long = "w".repeat(MAX_TASK_IN_ARCHIVE + 1);
        let prompt = format!("Before.\n\n{}\n\nAfter.", task_block(&long));
        assert_eq!(
            without_long_tasks(&prompt),
            format!(
                "Before.\n\n<task>\n[the run's task, {} bytes: not repeated in this \
                 transcript]\n</task>\n\nAfter.",
                MAX_TASK_IN_ARCHIVE + 1
            )
        );
        // A short task stays, even in a long prompt.
        let prompt = format!("{}{}", task_block("short"), "x".repeat(MAX_TASK_IN_ARCHIVE));
        assert_eq!(without_long_tasks(&prompt), prompt);
    }
}
