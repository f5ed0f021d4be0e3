//! YAML with line numbers: top-level keys are checked against the keys a
//! file may have before serde reads the values, so that a typo is reported
//! at its own line with a suggestion.

use std::path::Path;

use serde::de::DeserializeOwned;

use super::TeamError;
use crate::protocol::closest;

/// Top-level keys of a YAML block mapping, with their 1-based line numbers
/// counted from `first_line`.
pub(crate) fn top_level_keys(yaml: &str, first_line: usize) -> Vec<(String, usize)> {
    let mut keys = Vec::new();
    for (i, line) in yaml.lines().enumerate() {
        if line.starts_with([' ', '\t', '#', '-']) || line.trim().is_empty() {
            continue;
        }
        if let Some((key, _)) = line.split_once(':') {
            let key = key.trim().trim_matches(['"', '\'']);
            if !key.is_empty() {
                keys.push((key.to_string(), first_line + i));
            }
        }
    }
    keys
}

/// Checks keys against `allowed` (no unknown, no duplicate) and reads the
/// YAML into `T`. Errors name `path` and the line.
pub(crate) fn read_checked<T: DeserializeOwned>(
    path: &Path,
    yaml: &str,
    first_line: usize,
    allowed: &[&str],
) -> Result<T, TeamError> {
    let keys = top_level_keys(yaml, first_line);
    for (i, (key, line)) in keys.iter().enumerate() {
        if !allowed.contains(&key.as_str()) {
            let mut msg = format!("unknown key '{key}'");
            if let Some(s) = closest(key, allowed) {
                msg.push_str(&format!(" (did you mean '{s}'?)"));
            }
            return Err(TeamError::at(path, *line, msg));
        }
        if let Some((_, first)) = keys[..i].iter().find(|(k, _)| k == key) {
            return Err(TeamError::at(
                path,
                *line,
                format!("duplicate key '{key}' (first at line {first})"),
            ));
        }
    }
    if yaml.trim().is_empty() {
        return serde_yaml::from_str("{}").map_err(|e| TeamError::in_file(path, e.to_string()));
    }
    serde_yaml::from_str(yaml).map_err(|e| {
        let line = e.location().map(|l| l.line() + first_line - 1);
        let message = clean_serde_message(&e.to_string());
        TeamError::Invalid {
            path: path.to_path_buf(),
            line,
            message,
        }
    })
}

/// serde_yaml appends " at line L column C"; we print our own line.
fn clean_serde_message(msg: &str) -> String {
    let msg = match msg.find(" at line ") {
        Some(pos) => &msg[..pos],
        None => msg,
    };
    let msg = msg
        .strip_prefix("invalid type: ")
        .map_or(msg.to_string(), |m| format!("wrong type: {m}"));
    msg.replace('`', "'")
}

/// The line (1-based, from `first_line`) where top-level `key` is written.
pub(crate) fn key_line(yaml: &str, first_line: usize, key: &str) -> Option<usize> {
    top_level_keys(yaml, first_line)
        .into_iter()
        .find(|(k, _)| k == key)
        .map(|(_, l)| l)
}

/// The items of the block list under top-level `parent:`: for each item,
/// the 1-based line of its `-` and the keys written in it with their lines.
/// Flow-style items (`- {a: 1}`) have their dash line only.
pub(crate) fn list_item_keys(
    yaml: &str,
    first_line: usize,
    parent: &str,
) -> Vec<(usize, Vec<(String, usize)>)> {
    let Some(parent_line) = key_line(yaml, first_line, parent) else {
        return Vec::new();
    };
    let mut items: Vec<(usize, Vec<(String, usize)>)> = Vec::new();
    let mut dash_indent = None;
    let mut key_indent = None;
    for (i, line) in yaml.lines().enumerate().skip(parent_line + 1 - first_line) {
        let trimmed = line.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let indent = line.len() - trimmed.len();
        if indent == 0 && !trimmed.starts_with('-') {
            break; // the next top-level key
        }
        let line_no = first_line + i;
        let is_dash = trimmed == "-" || trimmed.starts_with("- ");
        if is_dash && *dash_indent.get_or_insert(indent) == indent {
            let rest = trimmed[1..].trim_start();
            // A bare "-" has its keys on the lines below, at their indent.
            key_indent = (!rest.is_empty()).then_some(indent + (trimmed.len() - rest.len()));
            let mut keys = Vec::new();
            if let Some(k) = key_of(rest) {
                keys.push((k, line_no));
            }
            items.push((line_no, keys));
            continue;
        }
        if key_indent.is_none() && dash_indent.is_some_and(|d| indent > d) {
            key_indent = Some(indent);
        }
        if Some(indent) == key_indent {
            if let (Some(k), Some(item)) = (key_of(trimmed), items.last_mut()) {
                item.1.push((k, line_no));
            }
        }
    }
    items
}

/// The key of a `key: value` line, unquoted.
fn key_of(text: &str) -> Option<String> {
    if text.starts_with(['{', '[', '-']) {
        return None;
    }
    let (key, _) = text.split_once(':')?;
    let key = key.trim().trim_matches(['"', '\'']);
    (!key.is_empty() && !key.contains(' ')).then(|| key.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_items_and_their_key_lines() {
        let y = "name: t\nhandoffs:\n  # rules\n  - from_agent: a\n    to_agent: b\n\n    priority: 2\n  - {from_agent: b, to_agent: a}\n  -\n    to_agent: c\nmax_turns: 3\n";
        let items = list_item_keys(y, 1, "handoffs");
        assert_eq!(items.len(), 3);
        assert_eq!(
            items[0],
            (
                4,
                vec![
                    ("from_agent".to_string(), 4),
                    ("to_agent".to_string(), 5),
                    ("priority".to_string(), 7)
                ]
            )
        );
        assert_eq!(items[1], (8, vec![]));
        assert_eq!(items[2], (9, vec![("to_agent".to_string(), 10)]));
        // A list written at column 0 under its key.
        let y = "handoffs:\n- from_agent: a\n  to_agent: b\nentry: a\n";
        let items = list_item_keys(y, 1, "handoffs");
        assert_eq!(items.len(), 1);
        assert_eq!(items[0].1[1], ("to_agent".to_string(), 3));
        assert!(list_item_keys(y, 1, "missing").is_empty());
    }

    #[test]
    fn keys_and_lines() {
        let y = "name: a\nrole: member\ntools:\n  - x\n# c\ndescription: d\n";
        let keys = top_level_keys(y, 2);
        assert_eq!(
            keys,
            vec![
                ("name".to_string(), 2),
                ("role".to_string(), 3),
                ("tools".to_string(), 4),
                ("description".to_string(), 7)
            ]
        );
    }
}
