//! The manner of a member's notes ([`Manner`]: a writer's, a critic's,
//! ...), its pool of sentences, and the [`Part`] a member reads from its
//! assignment.

use super::capital;

/// The manner of a member's notes, from its name and part.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Manner {
    // In the order their sentences go into a section.
    Writer,
    Background,
    Facts,
    Analyst,
    Critic,
}

impl Manner {
    pub(crate) fn of(text: &str) -> Manner {
        let t = text.to_lowercase();
        if t.contains("fact") || t.contains("source") || t.contains("research") {
            Manner::Facts
        } else if t.contains("review") || t.contains("critic") || t.contains("error") {
            Manner::Critic
        } else if t.contains("trade-off") || t.contains("option") || t.contains("analy") {
            Manner::Analyst
        } else {
            Manner::Writer
        }
    }

    /// The first line of a member's notes (the master reads the manner
    /// back from it).
    pub(super) fn label(self) -> &'static str {
        match self {
            Manner::Writer => "Draft",
            Manner::Background => "Background",
            Manner::Facts => "Facts",
            Manner::Analyst => "Options",
            Manner::Critic => "Pitfalls",
        }
    }

    pub(super) fn from_label(line: &str) -> Option<Manner> {
        [
            Manner::Writer,
            Manner::Background,
            Manner::Facts,
            Manner::Analyst,
            Manner::Critic,
        ]
        .into_iter()
        .find(|m| line.starts_with(&format!("{} on ", m.label())))
    }

    /// Sentences by the place of the point (the first, a middle one, the
    /// last), two of each.
    pub(super) fn pool(self) -> &'static [[&'static str; 2]; 3] {
        match self {
            Manner::Writer => &[
                [
                    "Start here: get this right and the rest of {s} becomes easier.",
                    "This matters more than anything else in {s}; give it your full attention first.",
                ],
                [
                    "Take it one step at a time, and check the result before moving on.",
                    "Do it the same way each time, so you can tell what made the difference.",
                ],
                [
                    "Keep it simple: most trouble comes from doing too much at once.",
                    "When in doubt, do less rather than more, and adjust from there.",
                ],
            ],
            Manner::Background => &[
                [
                    "At its core, {s} is simple: a few conditions decide the result, and the rest is detail.",
                    "The plain meaning is the useful one here: {s} comes down to a few conditions that decide the result.",
                ],
                [
                    "The usual method grew out of long practice rather than one source; most guides repeat it.",
                    "Practice has changed little over time; what changed is how precisely people measure it.",
                ],
                [
                    "It works because the conditions interact: change one and the others shift with it.",
                    "The mechanism is understood in outline; the fine detail is still argued over.",
                ],
            ],
            Manner::Facts => &[
                [
                    "This is where most of the result of {s} is decided; the established figures are the ones to follow.",
                    "This is well established and easy to check; it is the part of {s} least worth improvising.",
                ],
                [
                    "Sources agree on the basics; where they differ, the range is narrow and its middle is a safe choice.",
                    "Exact figures vary with the conditions; the usual rule of thumb holds for the usual case.",
                ],
                [
                    "The evidence is thinner here: treat common advice as a starting point and check it against your own result.",
                    "Little here is disputed; the open question is how much it matters beyond the usual case.",
                ],
            ],
            Manner::Analyst => &[
                [
                    "Getting this wrong costs more than getting it slightly better gains, so settle it before anything else.",
                    "The other choices depend on this one: settle it first, and they follow.",
                ],
                [
                    "Two approaches are common; take the simpler one unless you have a reason the other fits better.",
                    "The trade-off is time against quality; on a first attempt, favour quality.",
                ],
                [
                    "The main risk is small but real, and it is cheapest to plan for at the start.",
                    "Err on the cautious side: a mistake here is harder to undo than a missed improvement.",
                ],
            ],
            Manner::Critic => &[
                [
                    "A common mistake is to rush this; it is the one step not to skip.",
                    "Check this once more at the end: most problems with {s} start here.",
                ],
                [
                    "Advice on this often contradicts itself; when in doubt, follow the simplest version.",
                    "Beware of advice that sounds precise but gives no conditions; it rarely fits every case.",
                ],
                [
                    "Overdoing it is a more common failure than underdoing it.",
                    "This is easy to get wrong without noticing: the result is what tells you.",
                ],
            ],
        }
    }

    /// The sentence of this manner for the point at `index` of `count`, by
    /// `agent`; `other` picks the other sentence of the pair (a second
    /// sentence, for a longer text).
    pub(super) fn sentence(
        self,
        agent: &str,
        index: usize,
        count: usize,
        subject: &str,
        other: bool,
    ) -> String {
        // A point added after the task's own (`count` of them) is a middle one.
        let place = if index == 0 {
            0
        } else if index + 1 == count {
            2
        } else {
            1
        };
        let variant = (crate::util::shard::shard_of(agent, 2) + usize::from(other)) % 2;
        self.pool()[place][variant].replace("{s}", subject)
    }
}

/// What a member was asked to do, read from its assignment.
pub(crate) struct Part {
    pub(super) manner: Manner,
    /// The member's own topic ("background" of "topic 1: background —
    /// definitions, history"), with the items it lists.
    pub(super) topic: Option<(String, Vec<String>)>,
    /// The assignment asks for a recommendation.
    pub(super) decide: bool,
}

impl Part {
    pub(crate) fn of(agent: &str, assignment: &str) -> Part {
        let part = assignment
            .split_once("(your part: ")
            .map(|(_, p)| p.split_once(')').map_or(p, |(p, _)| p).trim())
            .unwrap_or_default();
        let topic = part.split_once('—').map(|(head, items)| {
            let name = head.rsplit(':').next().unwrap_or(head).trim();
            let items: Vec<String> = items
                .split([',', ';'])
                .map(|i| i.trim().trim_start_matches("and ").trim().to_string())
                .filter(|i| !i.is_empty())
                .collect();
            (capital(name), items)
        });
        // A member with a topic writes in the manner of its topic.
        let by_topic = topic.as_ref().and_then(|(name, _)| {
            let n = name.to_lowercase();
            let any = |words: &[&str]| words.iter().any(|w| n.contains(w));
            if any(&["background", "definition", "history"]) {
                Some(Manner::Background)
            } else if any(&["practice", "apply", "example"]) {
                Some(Manner::Writer)
            } else if any(&["evidence", "figure", "stud", "data"]) {
                Some(Manner::Facts)
            } else {
                None
            }
        });
        Part {
            manner: by_topic.unwrap_or_else(|| Manner::of(&format!("{agent} {part}"))),
            topic,
            decide: assignment.contains("recommendation"),
        }
    }
}
