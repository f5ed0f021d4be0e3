//! What the sim writes: members' notes built from the task's words, and
//! the one document a master (or a publisher) composes from them.
//!
//! Offline and deterministic: a sentence is picked from a small pool by the
//! point's place and the agent's name, so two members of one role write
//! different notes, and the same run writes the same text every time. The
//! user's words reach the text: a follow-up that asks for less makes it
//! shorter, one that asks for more makes it longer, any other adds a
//! section on what it names, and an answer to the master's question is
//! stated under the title.

use std::collections::HashMap;
use std::fmt::Write as _;

#[path = "sim_decide.rs"]
mod decide;
#[path = "sim_manner.rs"]
mod manner;
#[path = "sim_steps.rs"]
pub(crate) mod steps;

use decide::{Stance, decision};
pub(crate) use manner::{Manner, Part};

/// The line every final answer of the sim carries, under its title.
pub(crate) const SIMULATED: &str = "> Simulated answer: boardroom's offline `sim` model wrote \
     this from the task's words; no language model was called. Use --model to run a real one.";

/// The points a task without a list of its own is written on.
const DEFAULT_POINTS: [&str; 3] = ["what matters most", "how to go about it", "what to avoid"];

/// How long the user wants the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Length {
    Normal,
    Short,
    Long,
}

/// What the user told the run since the task: follow-ups and answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Notes {
    pub(crate) length: Length,
    /// Topics follow-ups asked to add, as the user wrote them.
    pub(crate) additions: Vec<String>,
    /// The master's questions and the user's answers.
    pub(crate) answers: Vec<(String, String)>,
}

impl Notes {
    /// The notes a `<task>` block carries after its first line ("What the
    /// user told the team since: …").
    pub(crate) fn of_task(task: &str) -> Notes {
        let mut notes = Notes {
            length: Length::Normal,
            additions: Vec::new(),
            answers: Vec::new(),
        };
        let mut asked: Option<String> = None;
        for line in task.lines().skip(1) {
            let line = line.trim();
            if let Some(m) = line.strip_prefix("- Follow-up from the user:") {
                notes.follow_up(m);
            } else if let Some(q) = line.strip_prefix("- The master asked:") {
                asked = Some(q.trim().to_string());
            } else if let Some(a) = line.strip_prefix("The user answered:") {
                let q = asked.take().unwrap_or_default();
                notes.answers.push((q, a.trim().to_string()));
            }
        }
        notes
    }

    /// Takes in one follow-up message.
    pub(crate) fn follow_up(&mut self, message: &str) {
        let m = message.trim();
        if m.is_empty() {
            return;
        }
        let l = m.to_lowercase();
        let any = |words: &[&str]| words.iter().any(|w| l.contains(w));
        if any(&[
            "longer",
            "more detail",
            "expand",
            "elaborate",
            "in depth",
            "deeper",
            "too short",
        ]) {
            self.length = Length::Long;
        } else if any(&[
            "shorter", "shorten", "short", "brief", "concise", "too long", "trim", "less", "fewer",
        ]) {
            self.length = Length::Short;
        } else {
            let topic = topic_of(m);
            if !self
                .additions
                .iter()
                .any(|a| a.eq_ignore_ascii_case(&topic))
            {
                self.additions.push(topic);
            }
        }
    }
}

/// "Add a section on storing tea." → "storing tea".
fn topic_of(message: &str) -> String {
    const LEADS: &[&str] = &[
        "please ",
        "can you ",
        "could you ",
        "also ",
        "and ",
        "add ",
        "include ",
        "mention ",
        "cover ",
        "explain ",
        "say more about ",
        "talk about ",
        "focus on ",
        "write about ",
        "a section ",
        "a part ",
        "a paragraph ",
        "a note ",
        "a word ",
        "something ",
        "on ",
        "about ",
    ];
    let mut s = message.trim().trim_end_matches(['.', '!', '?']).trim();
    loop {
        let lower = s.to_ascii_lowercase();
        match LEADS.iter().find(|l| lower.starts_with(*l)) {
            Some(l) if s.len() > l.len() => s = s[l.len()..].trim_start(),
            _ => break,
        }
    }
    if s.is_empty() {
        message.trim().to_string()
    } else {
        s.to_string()
    }
}

/// "Write a short guide to brewing green tea: water temperature, steeping
/// time, and two common mistakes." → ("brewing green tea", [the three]).
pub(crate) fn subject_and_points(task: &str) -> (String, Vec<String>) {
    let task = task.trim().trim_end_matches(['.', '!']);
    let (head, list) = task.split_once(':').unwrap_or((task, ""));
    let question = head.trim_end().ends_with('?');
    let head = head.trim().trim_end_matches('?');
    let lower = head.to_lowercase();
    let verb = lower.split_whitespace().next().unwrap_or("");
    let subject = if question {
        lower_first(head.trim())
    } else if WRITING_VERBS.contains(&verb) || ["a", "an", "the"].contains(&verb) {
        // "Write a guide to X" is about X.
        [" to ", " about ", " on ", " for ", " of "]
            .iter()
            .filter_map(|w| lower.find(w).map(|at| head[at + w.len()..].trim()))
            .next()
            .map_or_else(|| lower_first(head[verb.len()..].trim()), str::to_string)
    } else {
        // "Plan a picnic" is about planning a picnic.
        match gerund(verb) {
            Some(g) => format!("{g}{}", &head[verb.len()..]),
            None => lower_first(head.trim()),
        }
    };
    let mut points: Vec<String> = list
        .split([',', ';'])
        .map(|p| p.trim().trim_start_matches("and ").trim().to_string())
        .filter(|p| !p.is_empty())
        .collect();
    if points.is_empty() {
        points = DEFAULT_POINTS.iter().map(|p| (*p).to_string()).collect();
    }
    points.truncate(5);
    (subject, points)
}

/// Verbs of a task that asks for a text on a subject.
const WRITING_VERBS: &[&str] = &[
    "write",
    "draft",
    "create",
    "prepare",
    "produce",
    "give",
    "compose",
    "explain",
    "summarise",
    "summarize",
    "describe",
];

/// "plan" → "planning", for the verbs a task often starts with.
fn gerund(verb: &str) -> Option<String> {
    const VERBS: &[&str] = &[
        "plan", "organise", "organize", "choose", "pick", "compare", "build", "design", "find",
        "make", "run", "set", "get", "buy", "learn", "move", "start", "cook", "fix", "improve",
        "decide", "migrate", "hire", "launch", "write", "brew", "grow", "train", "reduce",
    ];
    if !VERBS.contains(&verb) {
        return None;
    }
    let doubled = ["plan", "run", "set", "get"].contains(&verb);
    Some(if doubled {
        format!("{verb}{}ing", &verb[verb.len() - 1..])
    } else if let Some(stem) = verb.strip_suffix('e') {
        format!("{stem}ing")
    } else {
        format!("{verb}ing")
    })
}

/// The document's title: the task without its list, and without the
/// "Write" of "Write a short guide to …".
pub(crate) fn title(task: &str) -> String {
    let first = task.trim().lines().next().unwrap_or("").trim();
    let head = first.split_once(':').map_or(first, |(h, _)| h).trim();
    let head = head.trim_end_matches(['.', '!']);
    let lower = head.to_ascii_lowercase();
    for verb in [
        "write ", "draft ", "create ", "prepare ", "produce ", "give ",
    ] {
        if let Some(rest) = lower.strip_prefix(verb)
            && ["a ", "an ", "the "].iter().any(|a| rest.starts_with(a))
        {
            return capital(&head[verb.len()..]);
        }
    }
    if head.is_empty() {
        "The answer".into()
    } else {
        capital(head)
    }
}

pub(crate) fn capital(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

fn lower_first(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_lowercase().chain(c).collect())
        .unwrap_or_default()
}

/// "a", "a and b", "a, b and c".
fn list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// A member's notes: a label line, then one numbered item a point
/// (`1. **Point.** Sentence.`), in the manner of its part. A member with a
/// topic heads its notes `### Topic` and writes on the topic's items (the
/// task's own list first); one asked for a recommendation starts with it.
pub(crate) fn notes(
    agent: &str,
    task: &str,
    part: &Part,
    revised_after: Option<(&str, u32)>,
) -> String {
    let first = task.trim().lines().next().unwrap_or("");
    let (subject, task_points) = subject_and_points(first);
    let user = Notes::of_task(task);
    let explicit = first.contains(':');
    let mut points = match &part.topic {
        Some((_, items)) if !explicit && !items.is_empty() => items.clone(),
        _ => task_points,
    };
    if part.decide {
        points.truncate(3);
    }
    let own = points.len();
    points.extend(user.additions.iter().cloned());
    let mut out = match &part.topic {
        Some((name, _)) => format!("### {name}\n\n"),
        None => format!("{} on {subject}\n\n", part.manner.label()),
    };
    let angle = part.topic.as_ref().map_or("", |(n, _)| n.as_str());
    let stance = Stance::of(agent, angle);
    if part.decide {
        let _ = writeln!(out, "**Recommendation:** {}", stance.recommendation());
    }
    for (i, point) in points.iter().enumerate() {
        let mut sentence = part.manner.sentence(agent, i, own, &subject, false);
        if i == 0
            && part.manner == Manner::Writer
            && let Some((_, a)) = user.answers.last()
        {
            let _ = write!(
                sentence,
                " For {}, plan around it from the start.",
                a.trim_end_matches('.')
            );
        }
        if user.length == Length::Long || revised_after.is_some() {
            let more = part.manner.sentence(agent, i, own, &subject, true);
            let _ = write!(sentence, " {more}");
        }
        let _ = writeln!(out, "{}. **{}.** {sentence}", i + 1, capital(point));
    }
    if part.decide {
        let _ = writeln!(
            out,
            "**Would change my view:** {}.\n**Confidence:** medium: the reasons hold in most \
             teams, the figures are estimates.",
            stance.change()
        );
    }
    if let Some((by, round)) = revised_after {
        let _ = write!(
            out,
            "{}. **A worked example.** For {subject}, the first point alone changes the result more than \
             the others.\n\nRevised after the challenge by {by} in round {round}: each point now \
             gives its reason, and an example is added.",
            points.len() + 1
        );
    }
    out.trim_end().to_string()
}

/// A member's notes, read back.
#[derive(Debug, Default)]
struct Parsed {
    rank: Option<Manner>,
    topic: Option<String>,
    items: Vec<(String, String)>,
    recommendation: Option<String>,
    change: Option<String>,
    /// Text that is not in the notes' form (another model's draft).
    other: String,
}

fn parse(body: &str) -> Parsed {
    let mut p = Parsed::default();
    for line in body.lines() {
        let t = line.trim();
        if p.rank.is_none()
            && p.topic.is_none()
            && p.items.is_empty()
            && let Some(m) = Manner::from_label(t)
        {
            p.rank = Some(m);
            continue;
        }
        if let Some(topic) = t.strip_prefix("### ") {
            p.topic = Some(topic.trim().to_string());
        } else if let Some(r) = t.strip_prefix("**Recommendation:**") {
            p.recommendation = Some(r.trim().to_string());
        } else if let Some(c) = t.strip_prefix("**Would change my view:**") {
            p.change = Some(c.trim().trim_end_matches('.').to_string());
        } else if t.starts_with("**Confidence:**") || t.starts_with("Revised after ") {
        } else if let Some(item) = numbered_item(t) {
            p.items.push(item);
        } else if !t.is_empty() && !t.starts_with("Tool results:") && !t.starts_with("- ") {
            p.other.push_str(t);
            p.other.push('\n');
        }
    }
    p
}

/// `3. **Point.** Sentence.` → (Point, Sentence.).
fn numbered_item(line: &str) -> Option<(String, String)> {
    let (n, rest) = line.split_once(". ")?;
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let rest = rest.strip_prefix("**")?;
    let (point, sentence) = rest.split_once(".**")?;
    Some((point.trim().to_string(), sentence.trim().to_string()))
}

/// Sections of a document, in order, each a heading and its text.
type Sections = Vec<(String, Vec<String>)>;

fn add(sections: &mut Sections, at: &mut HashMap<String, usize>, heading: &str, text: String) {
    let key = heading.to_lowercase();
    let i = *at.entry(key).or_insert_with(|| {
        sections.push((capital(heading), Vec::new()));
        sections.len() - 1
    });
    if !sections[i].1.contains(&text) {
        sections[i].1.push(text);
    }
}

/// The final answer a master composes from the members' latest drafts:
/// one document under the task's title, in the task's own sections, the
/// simulated line under the title, and the process left out.
pub(crate) fn compose(task: &str, drafts: &[(String, String)]) -> String {
    let user = Notes::of_task(task);
    let mut parsed: Vec<(String, Parsed)> =
        drafts.iter().map(|(a, b)| (a.clone(), parse(b))).collect();
    parsed.sort_by(|a, b| (a.1.rank, &a.0).cmp(&(b.1.rank, &b.0)));
    let title = title(task);
    if parsed.iter().any(|(_, p)| p.recommendation.is_some()) {
        let mut out = format!("# {title}\n\n{SIMULATED}\n\n");
        decision(&mut out, &user, &parsed);
        return out.trim_end().to_string() + "\n";
    }
    let mut sections = Sections::new();
    let mut at = HashMap::new();
    for (_, p) in &parsed {
        match &p.topic {
            Some(topic) => {
                for (point, sentence) in &p.items {
                    add(
                        &mut sections,
                        &mut at,
                        topic,
                        format!("- **{point}.** {sentence}"),
                    );
                }
            }
            None => {
                for (point, sentence) in &p.items {
                    add(&mut sections, &mut at, point, sentence.clone());
                }
            }
        }
        if p.items.is_empty() && !p.other.trim().is_empty() {
            // A draft not in the notes' form (another model's) is kept whole.
            add(&mut sections, &mut at, "Notes", p.other.trim().to_string());
        }
    }
    for topic in &user.additions {
        if !at.contains_key(&topic.to_lowercase()) {
            let (subject, _) = subject_and_points(task.lines().next().unwrap_or(""));
            add(
                &mut sections,
                &mut at,
                topic,
                Manner::Writer.sentence(topic, 1, 3, &subject, false),
            );
        }
    }
    document(&title, &sections, &user)
}

/// A document: the title, the simulated line, a one-line summary (unless
/// the user asked for less), the user's answers, then the sections (only
/// their first sentence when the user asked for less).
pub(crate) fn document(title: &str, sections: &[(String, Vec<String>)], user: &Notes) -> String {
    let mut out = format!("# {title}\n\n{SIMULATED}\n\n");
    let headings: Vec<String> = sections.iter().map(|(h, _)| lower_first(h)).collect();
    if user.length != Length::Short && !headings.is_empty() {
        let _ = writeln!(
            out,
            "What follows covers {}, the most important first.\n",
            list(&headings)
        );
    }
    premise(&mut out, user);
    if sections.is_empty() {
        out.push_str("The board holds no drafts; nothing could be concluded.\n");
    }
    for (heading, texts) in sections {
        // Asked for less: the first sentence of each section.
        let short: Vec<String>;
        let texts: &[String] = if user.length == Length::Short {
            short = texts
                .iter()
                .take(1)
                .map(|t| match t.find(". ") {
                    Some(end) if !t.starts_with("- ") => t[..=end].to_string(),
                    _ => t.clone(),
                })
                .collect();
            &short
        } else {
            texts
        };
        let join = if texts.iter().all(|t| t.starts_with("- ")) {
            "\n"
        } else {
            " "
        };
        let _ = write!(out, "## {heading}\n\n{}\n\n", texts.join(join));
    }
    out.trim_end().to_string() + "\n"
}

/// The user's answers to the master's questions, under the title.
fn premise(out: &mut String, user: &Notes) {
    for (q, a) in &user.answers {
        let a = a.trim();
        let stop = if a.ends_with(['.', '!', '?']) {
            ""
        } else {
            "."
        };
        if q.is_empty() {
            let _ = writeln!(out, "Based on your answer: {a}{stop}\n");
        } else {
            let _ = writeln!(out, "Based on your answer to \"{q}\": {a}{stop}\n");
        }
    }
}

/// A final answer with the simulated line under its title (or first, when
/// it has no title). Text that already carries it is left as it is.
pub(crate) fn marked(text: &str) -> String {
    if text.contains(SIMULATED) {
        return text.to_string();
    }
    match text.split_once('\n') {
        Some((first, rest)) if first.starts_with("# ") => {
            format!("{first}\n\n{SIMULATED}\n\n{}", rest.trim_start())
        }
        _ if text.starts_with("# ") => format!("{text}\n\n{SIMULATED}"),
        _ => format!("{SIMULATED}\n\n{text}"),
    }
}

/// The headings of an answer (`## …`), for the master's memory note.
pub(crate) fn headings(answer: &str) -> Vec<String> {
    answer
        .lines()
        .filter_map(|l| l.strip_prefix("## "))
        .map(|h| h.trim().to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follow_ups_set_the_length_or_add_a_topic() {
        let task = "Write a guide\n\nWhat the user told the team since:\n\
                    - Follow-up from the user: add a section on storing tea.\n\
                    - The master asked: Which city?\n  The user answered: Lisbon, in May\n\
                    - Follow-up from the user: make it shorter";
        let n = Notes::of_task(task);
        assert_eq!(n.length, Length::Short);
        assert_eq!(n.additions, vec!["storing tea".to_string()]);
        assert_eq!(
            n.answers,
            vec![("Which city?".to_string(), "Lisbon, in May".to_string())]
        );
    }

    #[test]
    fn titles_drop_the_imperative_and_the_list() {
        assert_eq!(
            title("Write a short guide to brewing green tea: water, time."),
            "A short guide to brewing green tea"
        );
        assert_eq!(title("Plan a picnic"), "Plan a picnic");
        assert_eq!(title("Should we go?"), "Should we go?");
    }

    #[test]
    fn notes_read_back_into_one_document() {
        let task = "Write a short guide to brewing green tea";
        let a = notes(
            "writer",
            task,
            &Part::of("writer", "x (your part: writes)"),
            None,
        );
        let b = notes(
            "critic",
            task,
            &Part::of("critic", "x (your part: reviews)"),
            None,
        );
        let doc = compose(task, &[("writer".into(), a), ("critic".into(), b)]);
        assert!(doc.starts_with("# A short guide to brewing green tea\n\n> Simulated"));
        assert_eq!(
            headings(&doc),
            ["What matters most", "How to go about it", "What to avoid"]
        );
        assert!(!doc.contains("From "), "{doc}");
    }
}
