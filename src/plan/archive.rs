//! Where a module's transcript came from, and how the run store saves it.
//!
//! A member's transcript is what its calls were sent and what they
//! answered, and `turns.jsonl` holds every call already. So a module keeps,
//! beside its `context_archive`, one [`ArchivePart`] per piece of it: the
//! messages of one turn (from some message on) and its reply, or messages
//! kept as they are. The run store writes the archive as those pieces, a
//! turn by its id (`context_turns`, a [`SavedPart`] each), and reads it back
//! whole: each transcript is stored once (issue 25). A module whose pieces
//! are not known (one seeded from a file, or edited by hand) is written
//! whole, as before.

use std::borrow::Cow;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::{ModuleStatus, Plan, WorkModule};
use crate::model::Message;

/// One piece of a module's transcript.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ArchivePart {
    /// The messages of turn number `turn` from message `from` on, then
    /// (when `reply`) its [`reply`]: `len` messages, `None` while they are
    /// still to be read from `turns.jsonl`.
    Turn {
        turn: u32,
        from: usize,
        reply: bool,
        len: Option<usize>,
    },
    /// `len` messages kept as they are.
    Kept { len: usize },
}

impl ArchivePart {
    fn len(&self) -> Option<usize> {
        match self {
            ArchivePart::Turn { len, .. } => *len,
            ArchivePart::Kept { len } => Some(*len),
        }
    }
}

/// A piece of a transcript as saved in `context_turns`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(untagged)]
pub(crate) enum SavedPart<'a> {
    /// `"t0015"`: the turn's messages, then its reply.
    Turn(String),
    /// `{"turn": "t0015", "from": 3, "reply": false}`: its messages from
    /// the fourth on, and no reply.
    Slice {
        turn: String,
        #[serde(default)]
        from: usize,
        #[serde(default = "yes")]
        reply: bool,
    },
    /// `{"messages": [...]}`: messages as they are.
    Messages { messages: Cow<'a, [Message]> },
}

fn yes() -> bool {
    true
}

/// The number of turn id `t0015` (0, which no turn has, for anything else).
fn turn_number(id: &str) -> u32 {
    id.strip_prefix('t')
        .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// A turn's reply in a transcript: its answer; for a call that failed,
/// what failed; else an empty message.
pub(crate) fn reply(answer: Option<&str>, error: Option<&str>) -> Message {
    Message::assistant(match (answer, error) {
        (Some(a), _) => a.to_string(),
        (None, Some(e)) => format!("(the call failed: {e})"),
        (None, None) => String::new(),
    })
}

/// `len` messages kept as they are, as parts.
pub(super) fn kept(len: usize) -> Vec<ArchivePart> {
    if len == 0 {
        Vec::new()
    } else {
        vec![ArchivePart::Kept { len }]
    }
}

/// A transcript being built of turns: the messages and where they came
/// from.
#[derive(Debug, Default)]
pub(crate) struct Transcript {
    messages: Vec<Message>,
    parts: Vec<ArchivePart>,
}

impl Transcript {
    /// How many messages it holds.
    pub(crate) fn len(&self) -> usize {
        self.messages.len()
    }

    /// Whether it holds none.
    pub(crate) fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    /// Adds the messages of turn number `turn` from message `from` on
    /// (`messages` are all the turn's), then `reply` if any.
    pub(crate) fn push_turn(
        &mut self,
        turn: u32,
        from: usize,
        messages: Vec<Message>,
        reply: Option<Message>,
    ) {
        let len = messages.len().saturating_sub(from) + usize::from(reply.is_some());
        self.parts.push(ArchivePart::Turn {
            turn,
            from,
            reply: reply.is_some(),
            len: Some(len),
        });
        self.messages.extend(messages.into_iter().skip(from));
        self.messages.extend(reply);
    }
}

impl WorkModule {
    /// Whether the parts say where every message of the archive came from.
    fn parts_cover(&self) -> bool {
        let mut total = 0;
        for p in &self.archive_parts {
            match p.len() {
                Some(n) => total += n,
                None => return false,
            }
        }
        total == self.context_archive.len()
    }

    /// Cuts the transcript to its first `len` messages.
    pub(crate) fn archive_cut(&mut self, len: usize) {
        if len >= self.context_archive.len() {
            return;
        }
        self.context_archive.truncate(len);
        let (mut end, mut keep) = (0, 0);
        for p in &self.archive_parts {
            match p.len() {
                Some(n) if end + n <= len => {
                    end += n;
                    keep += 1;
                }
                _ => break,
            }
        }
        if end == len {
            self.archive_parts.truncate(keep);
        } else {
            self.archive_parts = kept(len);
        }
    }

    /// Adds a turn's messages from `from` on, then `reply`, to the
    /// transcript.
    pub(crate) fn archive_turn(
        &mut self,
        turn: u32,
        from: usize,
        messages: Vec<Message>,
        reply: Option<Message>,
    ) {
        if !self.parts_cover() {
            self.archive_parts = kept(self.context_archive.len());
        }
        let mut t = Transcript {
            messages: std::mem::take(&mut self.context_archive),
            parts: std::mem::take(&mut self.archive_parts),
        };
        t.push_turn(turn, from, messages, reply);
        self.set_transcript(t);
    }

    /// Makes `t` the module's transcript.
    pub(crate) fn set_transcript(&mut self, t: Transcript) {
        self.context_archive = t.messages;
        self.archive_parts = t.parts;
    }

    /// The transcript as saved: its pieces, when at least one is a turn and
    /// they cover it (`None`: it is saved whole).
    pub(crate) fn saved_parts(&self) -> Option<Vec<SavedPart<'_>>> {
        let turns = self
            .archive_parts
            .iter()
            .any(|p| matches!(p, ArchivePart::Turn { .. }));
        if !turns || !self.parts_cover() {
            return None;
        }
        let mut at = 0;
        let mut out = Vec::with_capacity(self.archive_parts.len());
        for p in &self.archive_parts {
            out.push(match *p {
                ArchivePart::Turn {
                    turn,
                    from: 0,
                    reply: true,
                    ..
                } => SavedPart::Turn(format!("t{turn:04}")),
                ArchivePart::Turn {
                    turn, from, reply, ..
                } => SavedPart::Slice {
                    turn: format!("t{turn:04}"),
                    from,
                    reply,
                },
                ArchivePart::Kept { len } => SavedPart::Messages {
                    messages: Cow::Borrowed(&self.context_archive[at..at + len]),
                },
            });
            at += p.len().unwrap_or(0);
        }
        Some(out)
    }

    /// Takes in a piece read from a file: a turn is read back later
    /// ([`WorkModule::read_turns_with`]).
    pub(super) fn push_saved(&mut self, part: SavedPart<'static>) {
        let (turn, from, reply) = match part {
            SavedPart::Turn(id) => (id, 0, true),
            SavedPart::Slice { turn, from, reply } => (turn, from, reply),
            SavedPart::Messages { messages } => {
                let messages = messages.into_owned();
                self.archive_parts.push(ArchivePart::Kept {
                    len: messages.len(),
                });
                self.context_archive.extend(messages);
                return;
            }
        };
        self.archive_parts.push(ArchivePart::Turn {
            turn: turn_number(&turn),
            from,
            reply,
            len: None,
        });
    }

    /// Every turn the transcript is made of (read or still to be read).
    pub(crate) fn named_turns(&self) -> impl Iterator<Item = u32> + '_ {
        self.archive_parts.iter().filter_map(|p| match p {
            ArchivePart::Turn { turn, .. } => Some(*turn),
            ArchivePart::Kept { .. } => None,
        })
    }

    /// The turns whose messages are still to be read into the transcript.
    pub(crate) fn turns_to_read(&self) -> impl Iterator<Item = u32> + '_ {
        self.archive_parts.iter().filter_map(|p| match p {
            ArchivePart::Turn {
                turn, len: None, ..
            } => Some(*turn),
            _ => None,
        })
    }

    /// Reads the turns of the transcript back: `turn(n)` gives turn `n`'s
    /// messages, answer and error, or `None` when there is no such turn.
    /// Returns the turns that were not found (they add nothing).
    pub(crate) fn read_turns_with<'t>(
        &mut self,
        mut turn: impl FnMut(u32) -> Option<(&'t [Message], Option<&'t str>, Option<&'t str>)>,
    ) -> Vec<u32> {
        if self.turns_to_read().next().is_none() {
            return Vec::new();
        }
        let mut kept = std::mem::take(&mut self.context_archive).into_iter();
        let mut out = Vec::new();
        let mut missing = Vec::new();
        for p in &mut self.archive_parts {
            match p {
                ArchivePart::Kept { len } | ArchivePart::Turn { len: Some(len), .. } => {
                    out.extend(kept.by_ref().take(*len))
                }
                ArchivePart::Turn {
                    turn: n,
                    from,
                    reply: with_reply,
                    len,
                } => {
                    let Some((messages, answer, error)) = turn(*n) else {
                        missing.push(*n);
                        *len = Some(0);
                        continue;
                    };
                    let before = out.len();
                    out.extend(messages.iter().skip(*from).cloned());
                    if *with_reply {
                        out.push(reply(answer, error));
                    }
                    *len = Some(out.len() - before);
                }
            }
        }
        self.context_archive = out;
        missing
    }
}

/// A module as the run store saves it (`journal.jsonl`, `state.jsonl`,
/// `plan.json`): its transcript as `context_turns` when it was built of
/// turns, else whole in `context_archive`. The fields are in the order a
/// [`WorkModule`] serialises them.
#[derive(Debug)]
pub(crate) struct SavedModule<'a>(pub(crate) &'a WorkModule);

impl Serialize for SavedModule<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Out<'a> {
            task_id: &'a str,
            description: &'a str,
            status: ModuleStatus,
            assigned_agent: &'a Option<String>,
            #[serde(skip_serializing_if = "Option::is_none")]
            round: Option<u32>,
            metadata: &'a serde_json::Map<String, serde_json::Value>,
            #[serde(skip_serializing_if = "<[Message]>::is_empty")]
            context_archive: &'a [Message],
            #[serde(skip_serializing_if = "Vec::is_empty")]
            context_turns: Vec<SavedPart<'a>>,
            #[serde(skip_serializing_if = "Option::is_none")]
            deliverable: Option<&'a serde_json::Value>,
        }
        let m = self.0;
        let (context_archive, context_turns) = match m.saved_parts() {
            Some(parts) => (&[][..], parts),
            None => (&m.context_archive[..], Vec::new()),
        };
        Out {
            task_id: &m.task_id,
            description: &m.description,
            status: m.status,
            assigned_agent: &m.assigned_agent,
            round: m.round,
            metadata: &m.metadata,
            context_archive,
            context_turns,
            deliverable: m.deliverable.as_ref(),
        }
        .serialize(s)
    }
}

/// A plan as the run store saves it: `{"tasks": [...]}`, each a
/// [`SavedModule`].
#[derive(Debug)]
pub(crate) struct SavedPlan<'a>(pub(crate) &'a Plan);

impl Serialize for SavedPlan<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let tasks: Vec<SavedModule<'_>> = self.0.tasks.iter().map(SavedModule).collect();
        let mut st = s.serialize_struct("Plan", 1)?;
        st.serialize_field("tasks", &tasks)?;
        st.end()
    }
}

/// Serialises a module as [`SavedModule`] (for `serialize_with`).
pub(crate) fn serialize_saved<S: serde::Serializer>(
    m: &WorkModule,
    s: S,
) -> Result<S::Ok, S::Error> {
    SavedModule(m).serialize(s)
}

/// A task longer than this (64 KiB, as much as a prompt shows of a board
/// entry) is not kept in a module's transcript (its `context_archive`, in
/// memory and as read back from `turns.jsonl`): the run's task is saved once, in the run's
/// state; every member's transcript held it again, and with it every
/// journal record, checkpoint and `plan.json` that copies the module
/// (issue 28, finding 4: a 60 MiB task, four members, 250 MB of journal).
pub(crate) const MAX_TASK_IN_ARCHIVE: usize = 64 * 1024;

/// `content` with the text of every `<task>` block longer than
/// [`MAX_TASK_IN_ARCHIVE`] replaced by a note of its size.
pub(crate) fn without_long_tasks(content: &str) -> std::borrow::Cow<'_, str> {
    const OPEN: &str = "<task>\n";
    const CLOSE: &str = "\n</task>";
    if content.len() <= MAX_TASK_IN_ARCHIVE {
        return content.into();
    }
    let mut out = String::new();
    let mut rest = content;
    while let Some(open) = rest.find(OPEN) {
        let inner = &rest[open + OPEN.len()..];
        // An escaped task holds no `<`: its block ends at the first close.
        let Some(close) = inner.find(CLOSE) else {
            break;
        };
        out.push_str(&rest[..open + OPEN.len()]);
        if close > MAX_TASK_IN_ARCHIVE {
            let _ = write!(
                out,
                "[the run's task, {close} bytes: not repeated in this transcript]"
            );
        } else {
            out.push_str(&inner[..close]);
        }
        rest = &inner[close..];
    }
    if out.is_empty() {
        return content.into();
    }
    out.push_str(rest);
    out.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msgs(texts: &[&str]) -> Vec<Message> {
        texts.iter().map(|t| Message::user(*t)).collect()
    }

    /// Issue 25: a transcript built of turns is saved as their ids and
    /// read back whole.
    #[test]
    fn a_transcript_of_turns_is_saved_by_id_and_read_back_whole() {
        let mut plan = Plan::default();
        let id = plan.add("write", Some("w".into()));
        let m = plan.get_mut(&id).unwrap();
        m.archive_turn(3, 0, msgs(&["sys", "task"]), Some(reply(Some("one"), None)));
        m.archive_turn(9, 1, msgs(&["sys", "more"]), None);
        let json = serde_json::to_value(SavedModule(m)).unwrap();
        assert_eq!(
            json["context_turns"],
            serde_json::json!(["t0003", {"turn": "t0009", "from": 1, "reply": false}])
        );
        assert!(json.get("context_archive").is_none(), "{json}");
        let mut back: WorkModule = serde_json::from_value(json).unwrap();
        assert_eq!(back.turns_to_read().collect::<Vec<_>>(), vec![3, 9]);
        let t3 = msgs(&["sys", "task"]);
        let t9 = msgs(&["sys", "more"]);
        let missing = back.read_turns_with(|n| match n {
            3 => Some((&t3[..], Some("one"), None)),
            9 => Some((&t9[..], None, Some("failed"))),
            _ => None,
        });
        assert!(missing.is_empty());
        assert_eq!(back, *m);
        assert_eq!(back.context_archive.len(), 4);
        // Written again, it is the same.
        assert_eq!(
            serde_json::to_value(SavedModule(&back)).unwrap(),
            serde_json::to_value(SavedModule(m)).unwrap()
        );
        // Cut to the first turn, the second is gone from both.
        back.archive_cut(3);
        let json = serde_json::to_value(SavedModule(&back)).unwrap();
        assert_eq!(json["context_turns"], serde_json::json!(["t0003"]));
        // A transcript not built of turns is saved whole.
        let mut plain = back.clone();
        plain.archive_parts.clear();
        let json = serde_json::to_value(SavedModule(&plain)).unwrap();
        assert_eq!(json["context_archive"].as_array().unwrap().len(), 3);
        assert!(json.get("context_turns").is_none());
        assert_eq!(json, serde_json::to_value(&plain).unwrap());
    }
}
