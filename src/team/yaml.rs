//! YAML with line numbers, from the parser's own locations.
//!
//! A file is read twice by serde-saphyr: once into an [`Outline`] (every
//! key and item with its line), to refuse unknown and duplicate keys at
//! their own line with a suggestion, and once into the typed value. An
//! error of the typed read carries the parser's location; the outline turns
//! it into the path of the value (`models.gpt.timeout`, `handoffs[2]`,
//! items counted from 1) so that every message reads `FILE:LINE: path: what`.
//!
//! An agent file, of which a team may have thousands, is read typed first
//! ([`read_agent_checked`]): a file that reads cleanly gets an outline
//! parsed only when a line is asked of it, and one that does not is read
//! again the long way, for the same messages.

use std::collections::HashMap;
use std::path::Path;

use serde::Deserialize;
use serde::de::{DeserializeOwned, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::{Error as YamlError, Location, Spanned};

use super::TeamError;
use crate::util::text::closest;

/// One node of a YAML document: what it holds, where it starts.
#[derive(Debug)]
enum Node {
    /// A scalar, as text (a number as written by the parser).
    Scalar(String),
    /// A list.
    Seq(Vec<Spanned<Node>>),
    /// A mapping, its entries in file order (duplicates kept, to report).
    Map(Mapping),
}

/// A mapping's entries in file order, with an index from each key to its
/// first entry: a key is found, and a duplicate told, in one look-up
/// (issue 15: a linear search per key made a 40,000-key file take 21 s).
#[derive(Debug, Default)]
struct Mapping {
    entries: Vec<(Spanned<String>, Spanned<Node>)>,
    first: HashMap<String, usize>,
}

impl Mapping {
    fn push(&mut self, key: Spanned<String>, value: Spanned<Node>) {
        self.first
            .entry(key.value.clone())
            .or_insert(self.entries.len());
        self.entries.push((key, value));
    }

    /// The first entry written `key`.
    fn get(&self, key: &str) -> Option<&(Spanned<String>, Spanned<Node>)> {
        #[cfg(test)]
        probes::count();
        self.first.get(key).map(|&i| &self.entries[i])
    }
}

/// How many key look-ups the outline made on this thread: a test counts
/// them to show that checking a file costs one per key, not one per pair.
#[cfg(test)]
mod probes {
    use std::cell::Cell;
    thread_local!(static PROBES: Cell<usize> = const { Cell::new(0) });
    thread_local!(static PARSES: Cell<usize> = const { Cell::new(0) });
    pub(super) fn count() {
        PROBES.with(|p| p.set(p.get() + 1));
    }
    pub(super) fn take() -> usize {
        PROBES.with(|p| p.replace(0))
    }
    /// An outline parsed (at once or later).
    pub(super) fn parsed() {
        PARSES.with(|p| p.set(p.get() + 1));
    }
    pub(super) fn take_parses() -> usize {
        PARSES.with(|p| p.replace(0))
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any YAML value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Node, E> {
        Ok(Node::Scalar(v.to_string()))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Node, E> {
        Ok(Node::Scalar(v.to_string()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Node, E> {
        Ok(Node::Scalar(v.to_string()))
    }
    fn visit_i128<E>(self, v: i128) -> Result<Node, E> {
        Ok(Node::Scalar(v.to_string()))
    }
    fn visit_u128<E>(self, v: u128) -> Result<Node, E> {
        Ok(Node::Scalar(v.to_string()))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Node, E> {
        Ok(Node::Scalar(v.to_string()))
    }
    fn visit_str<E>(self, v: &str) -> Result<Node, E> {
        Ok(Node::Scalar(v.to_string()))
    }
    fn visit_bytes<E>(self, v: &[u8]) -> Result<Node, E> {
        Ok(Node::Scalar(String::from_utf8_lossy(v).into_owned()))
    }
    fn visit_unit<E>(self) -> Result<Node, E> {
        Ok(Node::Scalar(String::new()))
    }
    fn visit_none<E>(self) -> Result<Node, E> {
        Ok(Node::Scalar(String::new()))
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Node, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Node::Seq(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut entries = Mapping::default();
        while let Some(key) = map.next_key::<Spanned<Node>>()? {
            let text = match key.value {
                Node::Scalar(s) => s,
                // A list or mapping as a key: never a key we know.
                Node::Seq(_) | Node::Map(_) => "?".to_string(),
            };
            let key = Spanned::new(text, key.referenced, key.defined);
            entries.push(key, map.next_value()?);
        }
        Ok(Node::Map(entries))
    }
}

/// One step of a path into a document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step<'a> {
    /// The value of a mapping's key.
    Key(&'a str),
    /// A list's item, counted from 0.
    Item(usize),
}

/// Every key and item of a YAML document with its line: what the typed
/// read does not keep.
#[derive(Debug)]
pub(crate) struct Outline {
    /// The document's nodes: parsed at once, or from `text` when first
    /// asked for (a document its typed read took whole).
    root: std::cell::OnceCell<Spanned<Node>>,
    /// The document, kept for a later parse (empty for one parsed at once).
    text: String,
    /// The file line of the document's first line.
    first_line: usize,
}

/// The parser's settings: no source snippet in messages (we print our own
/// `FILE:LINE:`). For the outline, mapping keys are passed on as written
/// so that it sees both lines of a duplicate key, and `.nan` is kept as
/// text for the typed read to judge.
fn options(outline: bool) -> serde_saphyr::Options {
    let mut o = serde_saphyr::Options::default();
    o.with_snippet = false;
    if outline {
        o.duplicate_keys = serde_saphyr::DuplicateKeyPolicy::PassThrough;
        o.non_finite_float_policy = serde_saphyr::NonFiniteFloatPolicy::AsString;
    }
    o
}

impl Outline {
    /// Parses `yaml`, whose first line is line `first_line` of `path`.
    ///
    /// # Errors
    ///
    /// A YAML syntax error, or a key written twice in one mapping, at its
    /// file line.
    pub(crate) fn parse(path: &Path, yaml: &str, first_line: usize) -> Result<Self, TeamError> {
        #[cfg(test)]
        probes::parsed();
        let root = if yaml.trim().is_empty() {
            no_nodes()
        } else {
            serde_saphyr::from_str_with_options::<Spanned<Node>>(yaml, options(true)).map_err(
                |e| {
                    let line = e.location().filter(|l| *l != Location::UNKNOWN).map(|l| {
                        let at = l.line() as usize;
                        // The scanner names the line where its token
                        // began, often the one before the tab.
                        let at = if message(&e).contains("tab") {
                            first_tab_line(yaml, at).unwrap_or(at)
                        } else {
                            at
                        };
                        at + first_line - 1
                    });
                    let text = own_words(&e, path, yaml, first_line).unwrap_or_else(|| message(&e));
                    let line = error_line(&e, yaml, first_line, line);
                    TeamError::Invalid {
                        path: path.to_path_buf(),
                        line,
                        message: text,
                        source: Some(std::sync::Arc::new(e)),
                    }
                },
            )?
        };
        let outline = Outline {
            root: root.into(),
            text: String::new(),
            first_line,
        };
        outline.check_duplicates(path, outline.root(), &mut Vec::new())?;
        Ok(outline)
    }

    /// The outline of `yaml`, a document already read cleanly by its typed
    /// read, parsed when first asked for.
    fn later(yaml: &str, first_line: usize) -> Self {
        Outline {
            root: std::cell::OnceCell::new(),
            text: yaml.to_string(),
            first_line,
        }
    }

    /// Refuses a key written twice in one mapping, as [`Outline::parse`]
    /// does: for a document read typed first whose mappings the typed read
    /// does not judge by their text (a map of names, a JSON schema: `1` and
    /// `"1"` are two keys to the parser and one to the map).
    pub(crate) fn check_duplicates_now(&self, path: &Path) -> Result<(), TeamError> {
        self.check_duplicates(path, self.root(), &mut Vec::new())
    }

    /// The document's nodes. A later parse cannot fail where the typed
    /// read did not (the outline's settings take more); if it did, the
    /// document has no lines to tell, and callers fall back to the file's
    /// first.
    fn root(&self) -> &Spanned<Node> {
        self.root.get_or_init(|| {
            #[cfg(test)]
            probes::parsed();
            serde_saphyr::from_str_with_options::<Spanned<Node>>(&self.text, options(true))
                .unwrap_or_else(|_| no_nodes())
        })
    }

    /// The file line of a parser location.
    fn file_line(&self, at: &Location) -> usize {
        at.line() as usize + self.first_line - 1
    }

    /// A key written twice in one mapping, anywhere in the document.
    fn check_duplicates<'a>(
        &'a self,
        path: &Path,
        node: &'a Spanned<Node>,
        trail: &mut Vec<Step<'a>>,
    ) -> Result<(), TeamError> {
        match &node.value {
            Node::Scalar(_) => Ok(()),
            Node::Seq(items) => {
                for (i, item) in items.iter().enumerate() {
                    trail.push(Step::Item(i));
                    self.check_duplicates(path, item, trail)?;
                    trail.pop();
                }
                Ok(())
            }
            Node::Map(map) => {
                for (key, value) in &map.entries {
                    let first = map.get(&key.value).map(|(k, _)| k);
                    if let Some(first) = first.filter(|f| !std::ptr::eq(*f, key)) {
                        return Err(TeamError::at(
                            path,
                            self.file_line(&key.referenced),
                            format!(
                                "{}duplicate key '{}' (first at line {})",
                                prefix(trail),
                                key.value,
                                self.file_line(&first.referenced)
                            ),
                        ));
                    }
                    trail.push(Step::Key(&key.value));
                    self.check_duplicates(path, value, trail)?;
                    trail.pop();
                }
                Ok(())
            }
        }
    }

    /// The top-level keys with their file lines (none unless the document
    /// is a mapping).
    pub(crate) fn top_level_keys(&self) -> Vec<(&str, usize)> {
        match &self.root().value {
            Node::Map(map) => map
                .entries
                .iter()
                .map(|(k, _)| (k.value.as_str(), self.file_line(&k.referenced)))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The node at `path`, and the location to name for it: a key's own
    /// line for a mapping entry, the item's line for a list item.
    fn find(&self, path: &[Step<'_>]) -> Option<(&Spanned<Node>, Location)> {
        let mut node = self.root();
        let mut at = node.referenced;
        for step in path {
            match (step, &node.value) {
                (Step::Key(want), Node::Map(map)) => {
                    let (k, v) = map.get(want)?;
                    at = k.referenced;
                    node = v;
                }
                (Step::Item(i), Node::Seq(items)) => {
                    node = items.get(*i)?;
                    at = node.referenced;
                }
                _ => return None,
            }
        }
        Some((node, at))
    }

    /// The file line of the key or item at `path`.
    pub(crate) fn line(&self, path: &[Step<'_>]) -> Option<usize> {
        let (_, at) = self.find(path)?;
        (at != Location::UNKNOWN).then(|| self.file_line(&at))
    }

    /// The line of `key` in the item at `path`, or else of the item itself.
    pub(crate) fn line_in(&self, item: &[Step<'_>], key: &str) -> Option<usize> {
        let mut path = item.to_vec();
        path.push(Step::Key(key));
        self.line(&path).or_else(|| self.line(item))
    }

    /// The line of the item written `value` in the list at `list`, else of
    /// the list's key (a flow list, `[a, b]`, is on its key's line).
    pub(crate) fn item_line(&self, list: &[Step<'_>], value: &str) -> Option<usize> {
        let (node, _) = self.find(list)?;
        let found = match &node.value {
            Node::Seq(items) => items
                .iter()
                .find(|i| matches!(&i.value, Node::Scalar(s) if s == value))
                .map(|i| self.file_line(&i.referenced)),
            _ => None,
        };
        found.or_else(|| self.line(list))
    }

    /// The path (as steps) to the key or value the parser located at `at`:
    /// the deepest match wins. For a key, the path of the mapping that
    /// holds it (so an unknown key is reported in its parent).
    fn path_at(&self, at: &Location) -> Vec<Step<'_>> {
        fn walk<'a>(node: &'a Spanned<Node>, at: &Location, trail: &mut Vec<Step<'a>>) -> bool {
            match &node.value {
                Node::Scalar(_) => node.referenced == *at,
                Node::Seq(items) => {
                    for (i, item) in items.iter().enumerate() {
                        trail.push(Step::Item(i));
                        if walk(item, at, trail) {
                            return true;
                        }
                        trail.pop();
                    }
                    node.referenced == *at
                }
                Node::Map(map) => {
                    for (k, v) in &map.entries {
                        if k.referenced == *at {
                            return true;
                        }
                        trail.push(Step::Key(&k.value));
                        if walk(v, at, trail) {
                            return true;
                        }
                        trail.pop();
                    }
                    node.referenced == *at
                }
            }
        }
        let mut trail = Vec::new();
        if walk(self.root(), at, &mut trail) {
            trail
        } else {
            Vec::new()
        }
    }

    /// The scalar written at `at`, if one is.
    fn scalar_at(&self, at: &Location) -> Option<&str> {
        let path = self.path_at(at);
        let (node, _) = self.find(&path)?;
        match &node.value {
            Node::Scalar(s) if node.referenced == *at => Some(s),
            _ => None,
        }
    }
}

/// The 1-based line of the first tab on or after line `from`.
fn first_tab_line(yaml: &str, from: usize) -> Option<usize> {
    yaml.lines()
        .enumerate()
        .skip(from.saturating_sub(1))
        .find(|(_, l)| l.contains('\t'))
        .map(|(i, _)| i + 1)
}

/// `models.gpt.timeout: ` for a path; items counted from 1.
pub(crate) fn prefix(path: &[Step<'_>]) -> String {
    let mut out = String::new();
    for step in path {
        match step {
            Step::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
            Step::Item(i) => out.push_str(&format!("[{}]", i + 1)),
        }
    }
    if out.is_empty() { out } else { out + ": " }
}

/// Checks keys against `allowed` (no unknown, no duplicate) and reads the
/// YAML into `T`. Errors name `path` and the line; the outline is returned
/// for the checks that follow (a value out of range at its line).
pub(crate) fn read_checked<T: DeserializeOwned>(
    path: &Path,
    yaml: &str,
    first_line: usize,
    allowed: &[&str],
) -> Result<(T, Outline), TeamError> {
    let outline = Outline::parse(path, yaml, first_line)?;
    for (key, line) in outline.top_level_keys() {
        if !allowed.contains(&key) {
            let mut msg = format!("unknown key '{key}'");
            if let Some(s) = closest(key, allowed) {
                msg.push_str(&format!(" (did you mean '{s}'?)"));
            }
            return Err(TeamError::at(path, line, msg));
        }
    }
    let yaml = if yaml.trim().is_empty() { "{}" } else { yaml };
    let value = serde_saphyr::from_str_with_options(yaml, options(false)).map_err(|e| {
        let at = e.location().filter(|l| *l != Location::UNKNOWN);
        let line = at.map(|l| outline.file_line(&l));
        let steps = at.map(|l| outline.path_at(&l)).unwrap_or_default();
        let scalar = at.and_then(|l| outline.scalar_at(&l));
        let text = own_words(&e, path, yaml, first_line)
            .unwrap_or_else(|| format!("{}{}", prefix(&steps), typed_message(&e, scalar)));
        let line = error_line(&e, yaml, first_line, line);
        TeamError::Invalid {
            path: path.to_path_buf(),
            line,
            message: text,
            source: Some(std::sync::Arc::new(e)),
        }
    })?;
    Ok((value, outline))
}

/// [`read_checked`] for an agent file, the typed read first: a document
/// it takes whole (every key known, none twice: `T` must refuse unknown
/// fields, and the parser refuses a duplicate key) needs no outline until a
/// line is asked of it; any other is read as [`read_checked`] reads it, for
/// its messages.
pub(crate) fn read_agent_checked<T: DeserializeOwned>(
    path: &Path,
    yaml: &str,
    first_line: usize,
    allowed: &[&str],
) -> Result<(T, Outline), TeamError> {
    if !yaml.trim().is_empty()
        && let Ok(value) = serde_saphyr::from_str_with_options::<T>(yaml, options(false))
    {
        return Ok((value, Outline::later(yaml, first_line)));
    }
    read_checked(path, yaml, first_line, allowed)
}

/// The outline of an empty document: one empty scalar, at no line.
fn no_nodes() -> Spanned<Node> {
    Spanned::new(
        Node::Scalar(String::new()),
        Location::UNKNOWN,
        Location::UNKNOWN,
    )
}

/// `'a'`, `'a' or 'b'`, `one of 'a', 'b', 'c'`.
fn one_of(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("'{n}'")).collect();
    match quoted.as_slice() {
        [] => "nothing".to_string(),
        [one] => one.clone(),
        [a, b] => format!("{a} or {b}"),
        _ => format!("one of {}", quoted.join(", ")),
    }
}

/// The message of a typed read's error, in our words where we have them.
/// `scalar` is the value written where the parser stopped.
fn typed_message(e: &YamlError, scalar: Option<&str>) -> String {
    match e.without_snippet() {
        YamlError::SerdeUnknownField {
            field, expected, ..
        } => {
            let mut m = format!("unknown field '{field}'");
            if let Some(s) = closest(field, expected) {
                m.push_str(&format!(" (did you mean '{s}'?)"));
            }
            format!("{m}, expected {}", one_of(expected))
        }
        YamlError::SerdeUnknownVariant {
            variant, expected, ..
        } => format!("unknown variant '{variant}', expected {}", one_of(expected)),
        YamlError::SerdeInvalidType {
            unexpected,
            expected,
            ..
        } => format!("wrong type: {unexpected}, expected {expected}").replace('`', "'"),
        YamlError::InvalidScalar { .. } => {
            let shown = scalar.map_or_else(|| "this value".to_string(), |s| format!("'{s}'"));
            let what = message(e);
            let ty = what.strip_prefix("invalid ").unwrap_or(&what);
            format!("wrong type: {shown} is not {}", kind_of(ty))
        }
        YamlError::Unexpected { expected, .. } => {
            let expected = match *expected {
                "string scalar" => "a single value, not a list or mapping",
                "sequence start" => "a list",
                "mapping start" => "a mapping",
                other => other,
            };
            format!("wrong type: expected {expected}")
        }
        _ => message(e),
    }
}

/// A team author's words for the parser's errors that read as its API:
/// a second document, aliases that expand too far.
fn own_words(e: &YamlError, path: &Path, yaml: &str, first_line: usize) -> Option<String> {
    use serde_saphyr::budget::BudgetBreach;
    let mut e = e;
    while let YamlError::AliasError { error, .. } | YamlError::WithSnippet { error, .. } = e {
        e = error;
    }
    match e {
        YamlError::MultipleDocuments { location, .. } => {
            let name = path.file_name().map_or_else(
                || path.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            );
            // The parser names where the second document's content starts;
            // its '---' is on that line or above it.
            let at = second_document(yaml, location).map_or_else(String::new, |l| {
                format!(" (a second '---' at line {})", l + first_line - 1)
            });
            Some(format!("{name} holds more than one YAML document{at}"))
        }
        YamlError::Budget {
            breach: BudgetBreach::Nodes { .. },
            ..
        } => {
            let max = serde_saphyr::Budget::default().max_nodes;
            // Aliases (`*name`) are counted as often as they expand; a file
            // without any is simply too long.
            let aliased = yaml
                .split(|c: char| c.is_whitespace() || matches!(c, '[' | ',' | '{' | ':'))
                .any(|w| w.len() > 1 && w.starts_with('*'));
            Some(if aliased {
                format!("too many nodes (aliases expand to more than {max} values)")
            } else {
                format!("too many values (more than {max} in one file)")
            })
        }
        _ => None,
    }
}

/// The line (1-based, in `yaml`) of the '---' that starts a second
/// document: the parser names where its content starts, on that line or
/// below it.
fn second_document(yaml: &str, at: &Location) -> Option<usize> {
    if *at == Location::UNKNOWN {
        return None;
    }
    yaml.lines()
        .take(at.line() as usize)
        .enumerate()
        .skip(1)
        .filter(|(_, l)| l.starts_with("---"))
        .last()
        .map(|(i, _)| i + 1)
}

/// The line to name for a parser error: a second document's '---'.
fn error_line(e: &YamlError, yaml: &str, first_line: usize, line: Option<usize>) -> Option<usize> {
    match e.without_snippet() {
        YamlError::MultipleDocuments { location, .. } => second_document(yaml, location)
            .map(|l| l + first_line - 1)
            .or(line),
        _ => line,
    }
}

/// What a Rust type is, in words.
fn kind_of(ty: &str) -> String {
    match ty {
        "u8" | "u16" | "u32" | "u64" | "usize" => "a whole number of 0 or more".to_string(),
        "i8" | "i16" | "i32" | "i64" | "isize" => "a whole number".to_string(),
        "f32" | "f64" | "floating point" | "float" => "a number".to_string(),
        "integer" => "a whole number".to_string(),
        "bool" | "boolean" => "true or false".to_string(),
        other => format!("a valid {other}"),
    }
}

/// The parser's message without its location (we print our own line),
/// with serde's backquotes as our single quotes.
fn message(e: &YamlError) -> String {
    use serde_saphyr::MessageFormatter;
    serde_saphyr::DefaultMessageFormatter
        .format_message(e.without_snippet())
        .replace('`', "'")
}

#[cfg(test)]
mod tests;
