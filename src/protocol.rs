//! The text protocol: one directive a line, so that any model can follow it.
//!
//! - `ASSIGN:<member>:<task>`: the task is the rest of the line and any
//!   following lines up to the next directive or a blank line.
//! - `DONE`: the text after it (same line or following lines) is the answer.
//! - `CHALLENGE:<what is wrong and why>` or `AGREE`, from challengers.
//!
//! The parser forgives what models really write (leading spaces, list
//! bullets, bold or code markers, any letter case of the keyword and of the
//! member's name) and rejects what is wrong with a [`ProtocolError`] that
//! goes back to the master in its next turn.

use crate::util::text::closest;
use std::fmt;

use serde::{Deserialize, Serialize};

/// One piece of work for one member.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Assignment {
    /// The member, as the roster spells it.
    pub member: String,
    /// What to do.
    pub task: String,
}

/// What the master decided in one turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Work for the next round.
    Assign(Vec<Assignment>),
    /// Finished; the answer may be empty, in which case the runtime asks
    /// for the final report.
    Done(String),
    /// The master asks its user something (`ASK:<question>`): the run
    /// waits for the reply (status `awaiting_user`).
    Ask(String),
}

/// A master turn, parsed: the decision (if any) and what was wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MasterReply {
    /// The decision, or `None` when nothing usable was found.
    pub decision: Option<Decision>,
    /// Lines that were rejected, to be fed back to the master.
    pub errors: Vec<ProtocolError>,
}

/// A challenger's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The board is fine.
    Agree,
    /// Something is wrong; the text says what and why.
    Challenge(String),
}

/// What was wrong with a reply.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProtocolError {
    /// An ASSIGN names nobody on the roster.
    UnknownMember {
        /// 1-based line of the reply.
        line: usize,
        /// The name as written.
        name: String,
        /// The closest roster name, if any is close.
        suggestion: Option<String>,
    },
    /// The master assigned work to itself.
    SelfAssignment {
        /// 1-based line of the reply.
        line: usize,
    },
    /// An ASSIGN with no task.
    EmptyTask {
        /// 1-based line of the reply.
        line: usize,
        /// The member named.
        member: String,
    },
    /// An ASSIGN line with no member name.
    MissingMember {
        /// 1-based line of the reply.
        line: usize,
    },
    /// The reply holds no directive the protocol knows.
    NoDirective {
        /// What was expected, e.g. "ASSIGN or DONE".
        expected: &'static str,
    },
    /// A JSON-mode reply that is not the JSON asked for.
    BadJson {
        /// What was wrong.
        detail: String,
    },
    /// More assignments for one member in one reply than a round allows
    /// (`max_assignments_per_member`): the first `limit` were kept, the
    /// rest dropped.
    TooManyAssignments {
        /// The member, as the roster spells it.
        member: String,
        /// How many the reply gave it.
        given: usize,
        /// How many were kept.
        limit: usize,
    },
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProtocolError::UnknownMember {
                line,
                name,
                suggestion,
            } => {
                write!(f, "line {line}: unknown member '{name}'")?;
                if let Some(s) = suggestion {
                    write!(f, " (did you mean '{s}'?)")?;
                }
                Ok(())
            }
            ProtocolError::SelfAssignment { line } => {
                write!(f, "line {line}: the master cannot assign work to itself")
            }
            ProtocolError::EmptyTask { line, member } => {
                write!(f, "line {line}: ASSIGN to '{member}' has no task")
            }
            ProtocolError::MissingMember { line } => {
                write!(
                    f,
                    "line {line}: ASSIGN needs a member: ASSIGN:<member>:<task>"
                )
            }
            ProtocolError::NoDirective { expected } => {
                write!(f, "no directive found: expected {expected}")
            }
            ProtocolError::BadJson { detail } => write!(f, "{detail}"),
            ProtocolError::TooManyAssignments {
                member,
                given,
                limit,
            } => write!(
                f,
                "{given} assignments to '{member}' in one reply: the first {limit} are kept, \
                 the other {} dropped (at most {limit} per member a round: \
                 max_assignments_per_member in team.yaml)",
                given.saturating_sub(*limit)
            ),
        }
    }
}

impl std::error::Error for ProtocolError {}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Keyword {
    Assign,
    Done,
    Challenge,
    Agree,
}

/// Strips what models put around a directive: indentation, list bullets,
/// headings, bold/italic/code markers, quote marks.
fn strip_decoration(line: &str) -> &str {
    let mut s = line.trim();
    loop {
        let before = s.len();
        s = s
            .trim_start_matches(['*', '_', '`', '#', '>', '"', '\''])
            .trim_start();
        // "-", "+", "•" bullets, and "1." / "1)" numbering.
        if let Some(rest) = s.strip_prefix(['-', '+', '•'])
            && (rest.starts_with(char::is_whitespace) || rest.starts_with(['*', '_', '`']))
        {
            s = rest.trim_start();
        }
        let digits = s.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && digits < 4 {
            let rest = &s[digits..];
            if let Some(rest) = rest.strip_prefix(['.', ')']) {
                s = rest.trim_start();
            }
        }
        if s.len() == before {
            return s;
        }
    }
}

/// Strips markers such as `**`, `__` or backticks from both ends of a piece.
fn strip_markers(s: &str) -> &str {
    s.trim()
        .trim_matches(['*', '_', '`', '[', ']', '<', '>', '"', '\''])
        .trim()
}

/// Finds a keyword at the start of a decorated line; returns it and the text
/// after it (after any `:` separator and markers).
fn directive(line: &str) -> Option<(Keyword, &str)> {
    let s = strip_decoration(line);
    let word_len = s.bytes().take_while(u8::is_ascii_alphabetic).count();
    let word = &s[..word_len];
    let keyword = [
        ("assign", Keyword::Assign),
        ("done", Keyword::Done),
        ("challenge", Keyword::Challenge),
        ("agree", Keyword::Agree),
    ]
    .into_iter()
    .find(|(k, _)| word.eq_ignore_ascii_case(k))?
    .1;
    let rest = s[word_len..].trim_start_matches(['*', '_', '`']);
    let after = match keyword {
        // ASSIGN must be followed by ':' or whitespace and a name.
        Keyword::Assign => {
            if let Some(r) = rest.strip_prefix(':') {
                r
            } else if rest.starts_with(char::is_whitespace) {
                rest
            } else {
                return None;
            }
        }
        // CHALLENGE needs its colon: "challenge the assumption" is prose.
        Keyword::Challenge => rest.strip_prefix(':')?,
        // DONE and AGREE stand alone or before ':' / '.' / '-' / '!'.
        Keyword::Done | Keyword::Agree => {
            let t = rest.trim_start();
            if t.is_empty() {
                t
            } else {
                t.strip_prefix([':', '.', '!', '-', '—'])?
            }
        }
    };
    Some((keyword, after.trim_start_matches(['*', '_', '`']).trim()))
}

/// Parses a master reply against the roster (member names, master excluded)
/// and the master's own name.
#[must_use]
pub fn parse_master(reply: &str, members: &[&str], master: &str) -> MasterReply {
    let lines: Vec<&str> = reply.lines().collect();
    let mut assignments = Vec::new();
    let mut errors = Vec::new();
    let mut done: Option<String> = None;
    let mut i = 0;
    while i < lines.len() {
        let Some((keyword, rest)) = directive(lines[i]) else {
            i += 1;
            continue;
        };
        let line_no = i + 1;
        i += 1;
        match keyword {
            Keyword::Done => {
                let mut answer = rest.to_string();
                let tail = lines[i..].join("\n");
                if !tail.trim().is_empty() {
                    if !answer.is_empty() {
                        answer.push('\n');
                    }
                    answer.push_str(tail.trim_end());
                }
                done = Some(answer.trim().to_string());
                break;
            }
            Keyword::Assign => {
                // The task continues until a blank line or the next directive.
                let mut body = vec![rest.to_string()];
                while i < lines.len()
                    && !lines[i].trim().is_empty()
                    && directive(lines[i]).is_none()
                {
                    body.push(lines[i].trim().to_string());
                    i += 1;
                }
                match parse_assign(&body.join("\n"), line_no, members, master) {
                    Ok(a) => assignments.push(a),
                    Err(e) => errors.push(e),
                }
            }
            // Challenger words in a master reply are not directives for it.
            Keyword::Challenge | Keyword::Agree => {}
        }
    }
    // A question for the user wins: the master cannot go on without it.
    if let Some(question) = ask::parse_ask(reply) {
        return MasterReply {
            decision: Some(Decision::Ask(question)),
            errors: Vec::new(),
        };
    }
    let decision = match done {
        Some(answer) if !answer.is_empty() || assignments.is_empty() => {
            Some(Decision::Done(answer))
        }
        _ if !assignments.is_empty() => Some(Decision::Assign(assignments)),
        _ => None,
    };
    if decision.is_none() && errors.is_empty() {
        errors.push(ProtocolError::NoDirective {
            expected: "ASSIGN:<member>:<task> lines or DONE",
        });
    }
    MasterReply { decision, errors }
}

fn parse_assign(
    body: &str,
    line: usize,
    members: &[&str],
    master: &str,
) -> Result<Assignment, ProtocolError> {
    // "member: task", "member - task", or "member task" when nothing else fits.
    let (name, task) = match body.find([':', '\n']) {
        Some(pos) if body.as_bytes()[pos] == b':' => (&body[..pos], &body[pos + 1..]),
        _ => match body.find(" - ") {
            Some(pos) => (&body[..pos], &body[pos + 3..]),
            None => body.split_once(char::is_whitespace).unwrap_or((body, "")),
        },
    };
    let name = strip_markers(name);
    let task = strip_markers(task.trim_start_matches(['*', '_', '`']));
    if name.is_empty() {
        return Err(ProtocolError::MissingMember { line });
    }
    if name.eq_ignore_ascii_case(master) {
        return Err(ProtocolError::SelfAssignment { line });
    }
    let Some(member) = members.iter().find(|m| m.eq_ignore_ascii_case(name)) else {
        return Err(ProtocolError::UnknownMember {
            line,
            name: name.to_string(),
            suggestion: closest(name, members),
        });
    };
    if task.is_empty() {
        return Err(ProtocolError::EmptyTask {
            line,
            member: member.to_string(),
        });
    }
    Ok(Assignment {
        member: member.to_string(),
        task: task.to_string(),
    })
}

/// Parses a challenger's reply.
///
/// # Errors
///
/// [`ProtocolError::NoDirective`] when the reply holds neither CHALLENGE nor
/// AGREE.
pub fn parse_verdict(reply: &str) -> Result<Verdict, ProtocolError> {
    let lines: Vec<&str> = reply.lines().collect();
    let mut agreed = false;
    for (i, line) in lines.iter().enumerate() {
        match directive(line) {
            Some((Keyword::Challenge, rest)) => {
                let mut text = rest.to_string();
                let tail = lines[i + 1..].join("\n");
                if !tail.trim().is_empty() {
                    text.push('\n');
                    text.push_str(tail.trim());
                }
                let text = text.trim();
                if !text.is_empty() {
                    return Ok(Verdict::Challenge(text.to_string()));
                }
            }
            Some((Keyword::Agree, _)) => agreed = true,
            _ => {}
        }
    }
    if agreed {
        Ok(Verdict::Agree)
    } else {
        Err(ProtocolError::NoDirective {
            expected: "CHALLENGE:<what is wrong and why> or AGREE",
        })
    }
}

mod ask;
pub(crate) mod handoff;
mod json;
mod limit;
#[cfg(test)]
mod tests;

pub use limit::DEFAULT_MAX_ASSIGNMENTS_PER_MEMBER;
pub(crate) use limit::limit_per_member;

pub use ask::{parse_ask, parse_ask_json};
pub(crate) use handoff::{
    HANDOFF_TOOL, HandoffDirective, HistoryStep, RoutingRule, SET_VARIABLE_TOOL, TurnInput,
    handoff_tool_spec, parse_agent_choice, parse_handoff_args, parse_handoff_line,
    parse_rule_choice, parse_set_variable_args, resolve_destination, roster_routing_prompt,
    rule_routing_prompt, set_variable_tool_spec, strip_handoff_lines, turn_prompt,
};

pub(crate) use json::{
    CHALLENGE_RULES_JSON, MASTER_EXPECTED, MASTER_RULES_JSON, PLAN_EXPECTED, REPLY_JSON,
    VERDICT_EXPECTED, line_to_json, master_schema, plan_schema, verdict_schema,
};
pub use json::{Protocol, parse_master_json, parse_verdict_json};
