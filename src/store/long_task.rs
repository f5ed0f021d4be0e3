//! A long task is written once (issue 28, finding 4): it is in
//! `state.jsonl`, and a turn whose messages hold it is saved with every
//! copy cut out and `task_at` (`[[message, byte], ...]`) saying where each
//! was; reading the turn puts the task back. A task shorter than
//! [`LONG_TASK`] is written as it is, everywhere.

use serde_json::Value;

use crate::record::Turn;

/// A task this long or longer is written once.
pub(crate) const LONG_TASK: usize = 4096;

/// The key that says where the task was cut out of a turn's messages.
const TASK_AT: &str = "task_at";

/// A turn's line for `turns.jsonl` (its JSON, secrets already masked) with
/// every copy of `task` (a long one, masked the same way) cut out of its
/// messages; the line as it was when there is none.
pub(crate) fn cut_task(line: Vec<u8>, task: Option<&str>) -> Vec<u8> {
    let Some(task) = task.filter(|t| t.len() >= LONG_TASK) else {
        return line;
    };
    let Ok(mut value) = serde_json::from_slice::<Value>(&line) else {
        return line;
    };
    let mut at = Vec::new();
    if let Some(messages) = value.get_mut("messages").and_then(Value::as_array_mut) {
        for (i, m) in messages.iter_mut().enumerate() {
            let Some(Value::String(content)) = m.get_mut("content") else {
                continue;
            };
            if !content.contains(task) {
                continue;
            }
            let mut cut = String::with_capacity(content.len());
            let mut last = 0;
            for (pos, _) in content.match_indices(task) {
                cut.push_str(&content[last..pos]);
                at.push(Value::from(vec![i, cut.len()]));
                last = pos + task.len();
            }
            cut.push_str(&content[last..]);
            *content = cut;
        }
    }
    if at.is_empty() {
        return line;
    }
    if let Value::Object(map) = &mut value {
        map.insert(TASK_AT.into(), Value::Array(at));
    }
    serde_json::to_vec(&value).unwrap_or(line)
}

/// Whether a line of `turns.jsonl` had the task cut out (the key can only
/// be a key: in a string its quotes are escaped).
pub(crate) fn has_task_cut(line: &str) -> bool {
    line.contains("\"task_at\":")
}

/// A turn read from a line with the task cut out, the task put back.
pub(crate) fn turn_with_task(line: &str, task: &str) -> Result<Turn, serde_json::Error> {
    let mut value: Value = serde_json::from_str(line)?;
    let at = match &mut value {
        Value::Object(map) => map.remove(TASK_AT),
        _ => None,
    };
    let mut places: Vec<(usize, usize)> = at
        .as_ref()
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|p| Some((p.get(0)?.as_u64()?, p.get(1)?.as_u64()?)))
                .filter_map(|(i, b)| Some((usize::try_from(i).ok()?, usize::try_from(b).ok()?)))
                .collect()
        })
        .unwrap_or_default();
    // From the end: a later place is counted in the text before the
    // earlier ones are put back.
    places.sort_unstable();
    if let Some(messages) = value.get_mut("messages").and_then(Value::as_array_mut) {
        for (i, byte) in places.into_iter().rev() {
            if let Some(Value::String(content)) =
                messages.get_mut(i).and_then(|m| m.get_mut("content"))
                && content.is_char_boundary(byte)
            {
                content.insert_str(byte, task);
            }
        }
    }
    serde_json::from_value(value)
}
