//! The inbox: every input of an agent (the chat partner, a run's master
//! and members), in one priority queue drained before each of its turns.
//!
//! The order is the priority table ([`InboxItem::priority`]): tool
//! results first (they answer the agent's own last message), then
//! briefings, then team events and observations, then what is asked of
//! the agent (a user's message, the process's ask); items of the same
//! priority in the order they arrived. Each item has an id (`i1`, `i2`,
//! ... in the order it arrived at its inbox), which the turn that consumed
//! it records in its `inputs`. Each item becomes model-readable text
//! through the ingestor for its kind ([`super::ingest`]).
//!
//! The API is four calls: [`Inbox::push`] (an item arrives; its id back),
//! [`Inbox::drain`] (a turn takes everything waiting), [`Inbox::deliver`]
//! (a turn's own ask and everything waiting, in one step, so that two
//! turns of one agent at once never take each other's ask) and
//! [`Inbox::wait`] (block until something arrives).

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
    /// An observer of the agent's profile noticed something about the
    /// agent's own state (no tool called last turn, a deliverable
    /// missing) and says so.
    Observation {
        /// The observer's name (its place in the profile when unnamed).
        observer: String,
        /// What it says.
        text: String,
    },
    /// The process asks the agent for its turn's work (the master's
    /// assignment to a member, the runtime's ask for a plan or review).
    /// The process composed the text and escaped what it quotes; it is
    /// the last thing the agent reads.
    Directive {
        /// Who asks: `runtime`, or the agent that assigned the work.
        from: String,
        /// The ask.
        text: String,
    },
    /// The user said something.
    UserMessage {
        /// What the user typed.
        text: String,
    },
}

impl InboxItem {
    /// The item's priority: lower is handled first. Tool results 0,
    /// briefings 1, team events and observations 2, directives and user
    /// messages 3.
    #[must_use]
    pub fn priority(&self) -> u8 {
        match self {
            InboxItem::ToolResult { .. } => 0,
            InboxItem::Briefing { .. } => 1,
            InboxItem::TeamEvent(_) | InboxItem::Observation { .. } => 2,
            InboxItem::Directive { .. } | InboxItem::UserMessage { .. } => 3,
        }
    }

    /// The kind's name, as profiles' conditions (`inbox.has('observation')`)
    /// and records name it: `tool_result`, `briefing`, `team_event`,
    /// `observation`, `directive`, `user_message`.
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            InboxItem::ToolResult { .. } => "tool_result",
            InboxItem::Briefing { .. } => "briefing",
            InboxItem::TeamEvent(_) => "team_event",
            InboxItem::Observation { .. } => "observation",
            InboxItem::Directive { .. } => "directive",
            InboxItem::UserMessage { .. } => "user_message",
        }
    }

    /// Every kind's name, in priority order.
    pub const KINDS: [&'static str; 6] = [
        "tool_result",
        "briefing",
        "team_event",
        "observation",
        "directive",
        "user_message",
    ];

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

/// An item taken from an inbox, with its id.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Received {
    /// `i1`, `i2`, ... in the order items arrived at the inbox.
    pub id: String,
    /// The item.
    pub item: InboxItem,
}

/// The ids of `items`, in their order (what a turn records as its inputs).
#[must_use]
pub(crate) fn ids(items: &[Received]) -> Vec<String> {
    items.iter().map(|r| r.id.clone()).collect()
}

/// A priority queue of [`InboxItem`]s, shared between the threads that
/// fill it and the agent that drains it.
///
/// # Examples
///
/// ```
/// use boardroom::chat::{Inbox, InboxItem};
///
/// let inbox = Inbox::new();
/// inbox.push(InboxItem::user("hello"));
/// let id = inbox.push(InboxItem::Briefing { text: "the story so far".into() });
/// let items = inbox.drain();
/// assert_eq!(items[0].id, id); // the briefing first: it has priority
/// assert_eq!(items[1].item, InboxItem::user("hello"));
/// ```
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

    /// Adds an item and wakes a waiting agent; the item's id.
    pub fn push(&self, item: InboxItem) -> String {
        let seq = self.arrivals.fetch_add(1, Ordering::SeqCst) + 1;
        self.items.lock().push((item.priority(), seq, item));
        self.ready.notify_all();
        item_id(seq)
    }

    /// Takes every item, highest priority first, ties in arrival order.
    pub fn drain(&self) -> Vec<Received> {
        sorted(std::mem::take(&mut *self.items.lock()))
    }

    /// Adds `item` and takes it with everything waiting, in one step:
    /// what a turn starts from. Two turns of one agent at once (a member
    /// given two assignments in a round) each get their own `item`; what
    /// waited goes to whichever came first.
    pub fn deliver(&self, item: InboxItem) -> Vec<Received> {
        let seq = self.arrivals.fetch_add(1, Ordering::SeqCst) + 1;
        let mut items = std::mem::take(&mut *self.items.lock());
        items.push((item.priority(), seq, item));
        sorted(items)
    }

    /// The kinds of the items waiting (what a profile's `inbox.has(..)`
    /// reads), without taking them.
    pub fn kinds(&self) -> Vec<&'static str> {
        self.items.lock().iter().map(|(_, _, i)| i.kind()).collect()
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

fn item_id(seq: u64) -> String {
    format!("i{seq}")
}

fn sorted(mut items: Vec<(u8, u64, InboxItem)>) -> Vec<Received> {
    items.sort_by_key(|(priority, seq, _)| (*priority, *seq));
    items
        .into_iter()
        .map(|(_, seq, item)| Received {
            id: item_id(seq),
            item,
        })
        .collect()
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
        let drained = inbox.drain();
        assert_eq!(
            ids(&drained),
            ["i3", "i7", "i5", "i2", "i6", "i1", "i4"].map(String::from)
        );
        let got: Vec<InboxItem> = drained.into_iter().map(|r| r.item).collect();
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
        let got = inbox.drain();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].item, news(7));
    }

    #[test]
    fn deliver_takes_the_ask_last_with_what_waited() {
        let inbox = Inbox::new();
        let seen = inbox.push(InboxItem::Observation {
            observer: "reflect".into(),
            text: "You called no tool.".into(),
        });
        assert_eq!(inbox.kinds(), ["observation"]);
        let got = inbox.deliver(InboxItem::Directive {
            from: "runtime".into(),
            text: "Plan.".into(),
        });
        assert_eq!(ids(&got), [seen, "i2".to_string()]);
        assert_eq!(got[1].item.kind(), "directive");
        // A second turn at once gets only its own ask.
        let second = inbox.deliver(InboxItem::Directive {
            from: "lead".into(),
            text: "Again.".into(),
        });
        assert_eq!(ids(&second), ["i3"]);
        assert!(inbox.is_empty());
    }
}
