//! The room's own work for every thread of a run: an agent's call through
//! the core, and an entry on the board with what it changes (the journal,
//! the entry's module, its events).

use crate::board::{Entry, EntryKind, Failure, NewEntry};
use crate::core::InboxItem;
use crate::core::call::{Ask, Attempt};
use crate::event::EventKind;
use crate::model::{ChatResponse, Message, ModelError, Phase, Role};
use crate::team::FlowAction;
use parking_lot::Mutex;

use super::profile::{GO_ON_WITH_A_TOOL, RUNTIME, tools_of};
use crate::record::RunPhase;
use crate::record::Turn;
use crate::store::JournalRecord;
use crate::team::AgentSpec;

use super::Room;

impl Room<'_> {
    /// An agent's turn through the core, asked again while its answer is
    /// unusable (see [`Core::call_until`]), with this run's schema for the
    /// phase and the member's transcript kept in its work module.
    pub(super) fn call_until<T>(
        &self,
        agent: &AgentSpec,
        phase: Phase,
        round: u32,
        messages: Vec<Message>,
        expected: &str,
        accept: impl Fn(&ChatResponse) -> Result<T, Vec<String>>,
    ) -> Result<Attempt<T>, ModelError> {
        self.call_until_on(agent, phase, round, None, messages, expected, accept)
    }

    /// [`Room::call_until`] for a call that works on one assignment.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn call_until_on<T>(
        &self,
        agent: &AgentSpec,
        phase: Phase,
        round: u32,
        task: Option<&str>,
        messages: Vec<Message>,
        expected: &str,
        accept: impl Fn(&ChatResponse) -> Result<T, Vec<String>>,
    ) -> Result<Attempt<T>, ModelError> {
        // The assignment's own module: a member with several in a round
        // keeps each draft in its own archive. The tools each call used
        // and its answer are kept for the profile (when there is one).
        let profiled = !agent.profile.is_empty();
        let last: Mutex<(Vec<String>, String)> = Mutex::default();
        let archive = |turn: &Turn| {
            if profiled {
                *last.lock() = (tools_of(turn), turn.answer.clone().unwrap_or_default());
            }
            self.archive_turn(turn, task);
        };
        let mut messages = messages;
        self.before_turn(agent, phase, round, &mut messages);
        let (messages, inputs) = self.through_inbox(agent, task.is_some(), messages);
        let ask = Ask {
            inputs: &inputs,
            task,
            schema: self.schema_for(phase),
            on_turn: &archive,
            // Members (and challengers) run on the run's member pool.
            on_pool: agent.role == crate::team::AgentRole::Member,
            ..Ask::new(phase, round, expected)
        };
        let result = self.core.call_until(agent, &ask, messages, |r| {
            if profiled {
                let tools = last.lock().0.clone();
                let action = self.flow(agent, phase, round, &r.text, &tools);
                self.flows.lock().insert(agent.name.clone(), action);
                if action == FlowAction::ContinueWithTool {
                    return Err(vec![GO_ON_WITH_A_TOOL.to_string()]);
                }
            }
            accept(r)
        });
        if profiled {
            let (tools, answer) = std::mem::take(&mut *last.lock());
            self.after_turn(agent, phase, round, &answer, tools);
        }
        result
    }

    /// What the flow decider said of `agent`'s last reply (in the accept
    /// of a call: of the reply being read).
    pub(super) fn flow_of(&self, agent: &str) -> FlowAction {
        self.flows
            .lock()
            .get(agent)
            .copied()
            .unwrap_or(FlowAction::EndAgentTurn)
    }

    /// The agent's input through its inbox: the prompt's last user
    /// message (the ask the phase composed) becomes a directive delivered
    /// with whatever waits there (an observer's note), in priority order,
    /// after the system prompt. The ids of the items are the turn's
    /// inputs.
    fn through_inbox(
        &self,
        agent: &AgentSpec,
        assigned: bool,
        mut messages: Vec<Message>,
    ) -> (Vec<Message>, Vec<String>) {
        let Some(at) = messages.iter().rposition(|m| m.role == Role::User) else {
            return (messages, Vec::new());
        };
        let ask = messages.remove(at);
        let from = if assigned {
            self.team.master().name.clone()
        } else {
            RUNTIME.to_string()
        };
        let items = self.core.deliver(
            &agent.name,
            InboxItem::Directive {
                from,
                text: ask.content,
            },
        );
        messages.splice(at..at, crate::core::ingest_all(&items));
        (messages, crate::core::inbox::ids(&items))
    }

    /// Adds an entry and files it under `at` (where the driver is).
    pub(crate) fn add_entry_at(
        &self,
        at: (u32, RunPhase),
        round: u32,
        author: &str,
        kind: EntryKind,
        task: Option<&str>,
        text: String,
    ) -> Entry {
        self.add_new_entry(
            at,
            NewEntry {
                round,
                author: author.to_string(),
                kind,
                task: task.map(str::to_string),
                text,
                failure: None,
            },
            false,
        )
    }

    /// Adds the `error` entry of a member or call that failed by
    /// `failure`, filed under `at`.
    pub(crate) fn add_failure_at(
        &self,
        at: (u32, RunPhase),
        round: u32,
        author: &str,
        task: Option<&str>,
        text: String,
        failure: Failure,
    ) -> Entry {
        let new = NewEntry {
            round,
            author: author.to_string(),
            kind: EntryKind::Error,
            task: task.map(str::to_string),
            text,
            failure: Some(failure),
        };
        self.add_new_entry(at, new, false)
    }

    /// Adds an entry (marked as a transport failure when `transport`),
    /// saves it (filed under `at`) and announces it.
    pub(super) fn add_new_entry(
        &self,
        at: (u32, RunPhase),
        new: NewEntry,
        transport: bool,
    ) -> Entry {
        let (round, kind, author) = (new.round, new.kind, new.author.clone());
        let author = author.as_str();
        let entry = self.board.add_marked(new, transport);
        // To the journal at once (a resume keeps it); a member's draft
        // moves its module to `pending_review`.
        if self.core.journaling() {
            self.core.journal(&JournalRecord::Entry {
                round: at.0,
                phase: at.1,
                entry: entry.clone(),
            });
        }
        if let (EntryKind::Draft | EntryKind::Error, Some(task)) = (entry.kind, &entry.task) {
            self.module_drafted(at, &entry, task);
        }
        let parent = self.team.agent(author).and_then(|a| self.core.parent_of(a));
        self.core.emit(
            author,
            parent,
            EventKind::BoardEntry {
                seq: entry.seq,
                round,
                kind,
            },
        );
        if kind == EntryKind::Error {
            self.core.emit(
                author,
                parent,
                EventKind::Error {
                    round,
                    message: entry.text.clone(),
                },
            );
        }
        entry
    }
}
