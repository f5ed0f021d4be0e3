//! The inbox: every asynchronous input of an agent that waits on others
//! (the partner), in one priority queue drained before each of its turns.
//!
//! The order is the priority table ([`InboxItem::priority`]): tool
//! results first (they answer the agent's own last message), then
//! briefings, then team events, then user messages; items of the same
//! priority in the order they arrived. Each item becomes model-readable
//! text through the ingestor for its kind ([`super::ingest`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::event::RunStatus;

/// One thing waiting for the agent.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum InboxItem {
    /// A tool the agent called has answered.
    ToolResult {
        /// The call's id (the result carries it back to the model).
        call_id: String,
        /// The tool.
        tool: String,
        /// What it returned, or why it failed.
        text: String,
        /// Whether it failed.
        is_error: bool,
    },
    /// Standing context handed to the agent (a resumed chat, a run's
    /// history).
    Briefing {
        /// The text.
        text: String,
    },
    /// Something happened in a run the agent launched.
    TeamEvent(TeamNews),
    /// The user said something.
    UserMessage {
        /// What the user typed.
        text: String,
    },
}

impl InboxItem {
    /// The item's priority: lower is handled first. Tool results 0,
    /// briefings 1, team events 2, user messages 3.
    #[must_use]
    pub fn priority(&self) -> u8 {
        match self {
            InboxItem::ToolResult { .. } => 0,
            InboxItem::Briefing { .. } => 1,
            InboxItem::TeamEvent(_) => 2,
            InboxItem::UserMessage { .. } => 3,
        }
    }

    /// A user message.
    pub fn user(text: impl Into<String>) -> Self {
        InboxItem::UserMessage { text: text.into() }
    }
}

/// What a run the partner launched has to say.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum TeamNews {
    /// A work module was accepted.
    ModuleCompleted {
        /// The run.
        run_id: String,
        /// The module's id.
        task_id: String,
        /// What it was.
        description: String,
    },
    /// The run ended with an answer (or was stopped).
    RunFinished {
        /// The run.
        run_id: String,
        /// How it ended.
        status: RunStatus,
        /// Where the report is, when there is one.
        report: Option<String>,
    },
    /// The run ended without an answer.
    RunFailed {
        /// The run.
        run_id: String,
        /// Why.
        error: String,
    },
    /// The run stopped to ask its user something.
    AwaitingUser {
        /// The run.
        run_id: String,
        /// The question.
        question: String,
    },
    /// Something went wrong inside the run; it goes on.
    Error {
        /// The run.
        run_id: String,
        /// What.
        message: String,
    },
}

impl TeamNews {
    /// The run it concerns.
    #[must_use]
    pub fn run_id(&self) -> &str {
        match self {
            TeamNews::ModuleCompleted { run_id, .. }
            | TeamNews::RunFinished { run_id, .. }
            | TeamNews::RunFailed { run_id, .. }
            | TeamNews::AwaitingUser { run_id, .. }
            | TeamNews::Error { run_id, .. } => run_id,
        }
    }
}

/// A priority queue of [`InboxItem`]s, shared between the threads that
/// fill it and the agent that drains it.
#[derive(Debug, Default)]
pub struct Inbox {
    items: Mutex<Vec<(u8, u64, InboxItem)>>,
    arrivals: AtomicU64,
    ready: Condvar,
}

impl Inbox {
    /// An empty inbox.
    #[must_use]
    pub fn new() -> Self {
        Inbox::default()
    }

    /// Adds an item and wakes a waiting agent.
    pub fn push(&self, item: InboxItem) {
        let seq = self.arrivals.fetch_add(1, Ordering::SeqCst);
        self.items.lock().push((item.priority(), seq, item));
        self.ready.notify_all();
    }

    /// Takes every item, highest priority first, ties in arrival order.
    pub fn drain(&self) -> Vec<InboxItem> {
        let mut items = std::mem::take(&mut *self.items.lock());
        items.sort_by_key(|(priority, seq, _)| (*priority, *seq));
        items.into_iter().map(|(_, _, item)| item).collect()
    }

    /// Items waiting.
    pub fn len(&self) -> usize {
        self.items.lock().len()
    }

    /// Whether nothing waits.
    pub fn is_empty(&self) -> bool {
        self.items.lock().is_empty()
    }

    /// Blocks until an item waits or `timeout` passes; whether one waits.
    pub fn wait(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut items = self.items.lock();
        while items.is_empty() {
            if self.ready.wait_until(&mut items, deadline).timed_out() {
                break;
            }
        }
        !items.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn news(n: u32) -> InboxItem {
        InboxItem::TeamEvent(TeamNews::Error {
            run_id: "r".into(),
            message: format!("e{n}"),
        })
    }

    fn result(id: &str) -> InboxItem {
        InboxItem::ToolResult {
            call_id: id.into(),
            tool: "plan_read".into(),
            text: "ok".into(),
            is_error: false,
        }
    }

    #[test]
    fn drains_by_priority_then_arrival() {
        let inbox = Inbox::new();
        inbox.push(InboxItem::user("first words"));
        inbox.push(news(1));
        inbox.push(result("c1"));
        inbox.push(InboxItem::user("second words"));
        inbox.push(InboxItem::Briefing { text: "b".into() });
        inbox.push(news(2));
        inbox.push(result("c2"));
        assert_eq!(inbox.len(), 7);
        let got = inbox.drain();
        assert_eq!(
            got,
            vec![
                result("c1"),
                result("c2"),
                InboxItem::Briefing { text: "b".into() },
                news(1),
                news(2),
                InboxItem::user("first words"),
                InboxItem::user("second words"),
            ]
        );
        assert!(inbox.is_empty());
        assert!(inbox.drain().is_empty());
    }

    #[test]
    fn a_push_from_another_thread_wakes_the_waiter() {
        let inbox = std::sync::Arc::new(Inbox::new());
        assert!(!inbox.wait(Duration::from_millis(10)));
        let other = std::sync::Arc::clone(&inbox);
        let t = std::thread::spawn(move || other.push(news(7)));
        assert!(inbox.wait(Duration::from_secs(10)));
        t.join().unwrap();
        assert_eq!(inbox.drain(), vec![news(7)]);
    }
}
