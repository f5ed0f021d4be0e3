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

#[cfg(test)]
mod tests {
    use super::*;

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
