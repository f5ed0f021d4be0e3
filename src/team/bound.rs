//! The hard bound on what a template may produce (issue 28, finding 2).
//!
//! Fuel bounds a render's instructions, not its memory: one `{{ 'x' *
//! 100000000 }}` is one instruction and 100 MB. So before a template is
//! rendered, its tags are read for the constructs that can make a value
//! larger than the template and its variables together, and the render's
//! output goes to a writer that stops at a byte limit:
//!
//! - no `{% set %}`, `{% macro %}`, `{% call %}`, `{% filter %}`,
//!   `{% with %}`, `{% include %}` and kin: without them no value is fed
//!   back into itself (`{% set s = s ~ s %}` in a loop doubles);
//! - no function but `range` (and `loop.cycle`, `loop.changed`): no
//!   `namespace()`, no recursive `loop()`;
//! - filters from a short list that never grow a value by more than a small
//!   factor (`upper`, `default`, `length`, ...): no `center`, `indent`,
//!   `replace`, `join`, `format`;
//! - `*` only between numbers (number literals, numeric variables, `range`
//!   loop variables, `loop.index`): no string or list repetition.
//!
//! What is left builds each value from the template's own text and the
//! variables, each read once per evaluation, so the sum of the template's
//! length and of each variable reference's value bounds every value (times
//! the small factor of a case filter); [`check_bound`] refuses a template
//! whose sum passes the output limit. Loops may emit that many times over,
//! which the output limit stops.

use std::collections::HashSet;

use super::template::{TemplateError, Variables};

/// What a render may write beyond the template's own length: far above a
/// soul or task with a few loops (a prompt of a megabyte is not a prompt),
/// far below what hurts a run.
pub(crate) const RENDER_EXTRA_BYTES: usize = 1 << 20;

/// The output limit of one render of `template`.
pub(crate) fn output_limit(template: &str) -> usize {
    template.len().saturating_add(RENDER_EXTRA_BYTES)
}

/// Statement tags a bounded template may use.
const STATEMENTS: &[&str] = &[
    "if", "elif", "else", "endif", "for", "endfor", "raw", "endraw",
];

/// Filters that never make a value more than a few times larger.
const FILTERS: &[&str] = &[
    "upper",
    "lower",
    "title",
    "capitalize",
    "trim",
    "default",
    "d",
    "length",
    "count",
    "int",
    "float",
    "round",
    "abs",
    "first",
    "last",
    "bool",
    "string",
    "escape",
    "e",
    "safe",
    "min",
    "max",
    "sum",
    "reverse",
    "sort",
];

/// minijinja's built-in filters that are not in [`FILTERS`]: they can make
/// a value many times larger (`indent`, `replace`, `join`, `format`) or a
/// list of a value per character (`list`, `split`, `map`). A filter in
/// neither list is unknown, and minijinja says so.
const REFUSED_FILTERS: &[&str] = &[
    "replace",
    "dictsort",
    "items",
    "join",
    "split",
    "lines",
    "attr",
    "list",
    "batch",
    "slice",
    "indent",
    "select",
    "reject",
    "map",
    "groupby",
    "unique",
    "chain",
    "zip",
    "pprint",
    "format",
    "tojson",
    "urlencode",
    "center",
    "wordwrap",
];

/// Attributes of `loop` that are numbers.
const LOOP_NUMBERS: &[&str] = &[
    "index",
    "index0",
    "revindex",
    "revindex0",
    "length",
    "depth",
    "depth0",
];

#[derive(Debug, Clone, PartialEq)]
enum Tok<'a> {
    Ident(&'a str),
    Num,
    Str,
    Op(&'a str),
}

/// One tag: its kind (`{{` or `{%`), its body's tokens, its line.
struct Tag<'a> {
    statement: bool,
    toks: Vec<Tok<'a>>,
    line: usize,
}

/// Checks that `template` can produce at most [`output_limit`] bytes in any
/// value with these variables, by the rules in this module's docs. With no
/// values (`None`: a check at load time, before the values are known) a
/// variable counts as a number of no size; the render checks again with
/// the values. Either way this runs before minijinja compiles the template,
/// which folds constants (`'x' * 100000000`) while compiling.
///
/// # Errors
///
/// [`TemplateError::Unbounded`] naming the construct and its line,
/// [`TemplateError::TooLarge`] when the template and its variables could
/// pass the output limit.
pub(crate) fn check_bound(template: &str, vars: Option<&Variables>) -> Result<(), TemplateError> {
    let tags = tags(template);
    // Loop variables over something other than `range` hold text.
    let mut text_targets: HashSet<&str> = HashSet::new();
    let mut range_targets: HashSet<&str> = HashSet::new();
    for tag in tags.iter().filter(|t| t.statement) {
        if let [Tok::Ident("for"), rest @ ..] = tag.toks.as_slice() {
            let Some(in_at) = rest.iter().position(|t| *t == Tok::Ident("in")) else {
                continue;
            };
            let is_range = rest.get(in_at + 1) == Some(&Tok::Ident("range"));
            for t in &rest[..in_at] {
                if let Tok::Ident(name) = t {
                    if is_range {
                        range_targets.insert(name);
                    } else {
                        text_targets.insert(name);
                    }
                }
            }
        }
    }
    let numeric = |t: Option<&Tok<'_>>| match t {
        Some(Tok::Num) => true,
        Some(Tok::Ident(name)) => {
            if text_targets.contains(name) {
                false
            } else if range_targets.contains(name) || LOOP_NUMBERS.contains(name) {
                true
            } else {
                vars.is_none_or(|vars| {
                    vars.get(name)
                        .is_some_and(|v| v.is_number() || v.is_boolean())
                })
            }
        }
        _ => false,
    };
    let max_var = vars
        .into_iter()
        .flat_map(Variables::iter)
        .map(|(_, v)| v.as_str().map_or(24, str::len))
        .max()
        .unwrap_or(0);
    let mut bound = template.len();
    let mut in_raw = false;
    for tag in &tags {
        let refuse = |detail: String| TemplateError::Unbounded {
            line: tag.line,
            detail,
        };
        if tag.statement {
            match tag.toks.first() {
                Some(Tok::Ident("endraw")) => {
                    in_raw = false;
                    continue;
                }
                _ if in_raw => continue,
                Some(Tok::Ident("raw")) => {
                    in_raw = true;
                    continue;
                }
                Some(Tok::Ident(head)) if STATEMENTS.contains(head) => {}
                Some(Tok::Ident(head)) => {
                    return Err(refuse(format!(
                        "'{{% {head} %}}' is not allowed here (a bounded template uses \
                         {{{{ }}}}, if and for)"
                    )));
                }
                _ => return Err(refuse("a tag without a statement".to_string())),
            }
        } else if in_raw {
            continue;
        }
        let toks = &tag.toks;
        for (i, tok) in toks.iter().enumerate() {
            let prev = i.checked_sub(1).and_then(|p| toks.get(p));
            let next = toks.get(i + 1);
            match tok {
                Tok::Op("*") => {
                    let numbers = numeric(prev) && numeric(next);
                    if !numbers {
                        return Err(refuse(
                            "'*' may only multiply numbers (text and lists are not repeated)"
                                .to_string(),
                        ));
                    }
                }
                Tok::Ident(name) if prev == Some(&Tok::Op("|")) => {
                    let refused = REFUSED_FILTERS.contains(name) && !FILTERS.contains(name);
                    if refused {
                        return Err(refuse(format!(
                            "filter '{name}' is not allowed (allowed: {})",
                            FILTERS.join(", ")
                        )));
                    }
                }
                Tok::Ident(name) if next == Some(&Tok::Op("(")) => {
                    let before = i.checked_sub(2).and_then(|p| toks.get(p));
                    let test = prev == Some(&Tok::Ident("is"))
                        || (prev == Some(&Tok::Ident("not")) && before == Some(&Tok::Ident("is")));
                    let method = prev == Some(&Tok::Op("."));
                    let ok = if test {
                        true
                    } else if method {
                        matches!(*name, "cycle" | "changed")
                    } else {
                        *name == "range"
                    };
                    if !ok {
                        return Err(refuse(format!(
                            "'{name}(...)' is not allowed (a bounded template calls only range)"
                        )));
                    }
                }
                Tok::Ident(name) if vars.is_some_and(|v| v.get(name).is_some()) => {
                    bound = bound.saturating_add(max_var);
                }
                _ => {}
            }
        }
    }
    // A case filter may triple a value's bytes.
    if bound.saturating_mul(3) > output_limit(template) {
        return Err(TemplateError::TooLarge {
            limit: output_limit(template),
        });
    }
    Ok(())
}

/// The `{{ }}` and `{% %}` tags of a template, tokenised. Comments are
/// skipped; a tag without its end runs to the end of the text (minijinja
/// has refused such a template before this is called).
fn tags(template: &str) -> Vec<Tag<'_>> {
    let mut out = Vec::new();
    let mut at = 0;
    let bytes = template.as_bytes();
    while let Some(found) = template[at..].find('{') {
        let open = at + found;
        let (close, statement) = match bytes.get(open + 1) {
            Some(b'{') => ("}}", false),
            Some(b'%') => ("%}", true),
            Some(b'#') => {
                at = template[open..]
                    .find("#}")
                    .map_or(template.len(), |e| open + e + 2);
                continue;
            }
            _ => {
                at = open + 1;
                continue;
            }
        };
        let body_start = open + 2;
        let (toks, end) = tokens(template, body_start, close);
        out.push(Tag {
            statement,
            toks,
            line: template[..open].matches('\n').count() + 1,
        });
        at = end;
    }
    out
}

/// Tokens from `start` up to the tag's `close` (outside string literals);
/// returns them and the offset after the close.
fn tokens<'a>(text: &'a str, start: usize, close: &str) -> (Vec<Tok<'a>>, usize) {
    let bytes = text.as_bytes();
    let mut toks = Vec::new();
    let mut i = start;
    // Whitespace control marks right after the open.
    if matches!(bytes.get(i), Some(b'-' | b'+' | b'~')) {
        i += 1;
    }
    while i < bytes.len() {
        if text[i..].starts_with(close) {
            // A `-` right before the close is whitespace control.
            if matches!(toks.last(), Some(Tok::Op("-" | "+" | "~"))) {
                toks.pop();
            }
            return (toks, i + close.len());
        }
        let c = bytes[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c == b'"' || c == b'\'' {
            i += 1;
            while i < bytes.len() && bytes[i] != c {
                i += if bytes[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            toks.push(Tok::Str);
        } else if c.is_ascii_digit() {
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            // A fraction: `1.5`.
            if bytes.get(i) == Some(&b'.') && bytes.get(i + 1).is_some_and(u8::is_ascii_digit) {
                i += 1;
                while i < bytes.len() && bytes[i].is_ascii_alphanumeric() {
                    i += 1;
                }
            }
            toks.push(Tok::Num);
        } else if c.is_ascii_alphabetic() || c == b'_' || c >= 0x80 {
            let s = i;
            while i < bytes.len()
                && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_' || bytes[i] >= 0x80)
            {
                i += 1;
            }
            toks.push(Tok::Ident(&text[s..i]));
        } else {
            let two = text.get(i..i + 2).unwrap_or("");
            let len = if matches!(two, "**" | "//" | "==" | "!=" | "<=" | ">=") {
                2
            } else {
                1
            };
            toks.push(Tok::Op(text.get(i..i + len).unwrap_or("?")));
            i += len;
        }
    }
    (toks, text.len())
}

/// A writer that keeps at most `limit` bytes and fails past them.
#[derive(Debug)]
pub(crate) struct Capped {
    pub(crate) buf: Vec<u8>,
    pub(crate) limit: usize,
    pub(crate) over: bool,
}

impl std::io::Write for Capped {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        if self.buf.len().saturating_add(data.len()) > self.limit {
            self.over = true;
            return Err(std::io::Error::other("template output limit"));
        }
        self.buf.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
