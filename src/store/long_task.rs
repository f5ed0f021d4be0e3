//! A long task is written once (issue 28, finding 4): it is in
//! `state.jsonl`, and a turn whose messages hold it is saved with every
//! copy cut out and `task_at` (`[[message, byte], ...]`) saying where each
//! was; reading the turn puts the task back. A task shorter than
//! [`LONG_TASK`] is written as it is, everywhere.

use serde_json::Value;

use crate::model::Message;
use crate::record::Turn;

/// A task this long or longer is written once.
pub(crate) const LONG_TASK: usize = 4096;

/// The key that says where the task was cut out of a turn's messages.
const TASK_AT: &str = "task_at";

/// A long task as the run directory keeps it: masked, whether masking
/// left it as it was (then the turns' messages hold it as it stands), and
/// its form escaped for XML when that differs (prompts hold it so, in
/// their `<task>` block).
#[derive(Debug)]
pub(crate) struct LongTask {
    masked: std::sync::Arc<str>,
    unchanged: bool,
    escaped: Option<String>,
}

impl LongTask {
    /// `task` when it is long enough to be written once.
    pub(crate) fn of(task: &str) -> Option<Self> {
        if task.len() < LONG_TASK {
            return None;
        }
        let masked = crate::util::secrets::mask(task);
        let unchanged = matches!(masked, std::borrow::Cow::Borrowed(_));
        let escapes = masked.contains(['<', '>', '&', '"', '\'']);
        Some(LongTask {
            escaped: (unchanged && escapes).then(|| crate::util::text::escape_xml(&masked)),
            masked: masked.as_ref().into(),
            unchanged,
        })
    }

    /// Whether this is still `task` (compared without a copy when masking
    /// left it as it was).
    pub(crate) fn is(&self, task: &str) -> bool {
        self.unchanged && *self.masked == *task
    }

    /// The task as written, masked.
    pub(crate) fn masked(&self) -> &str {
        &self.masked
    }
}

/// A turn's line for `turns.jsonl`, known secrets masked, with every copy
/// of the long task cut out of its messages *before* the turn is
/// serialised: a 60 MiB task in four members' prompts is neither
/// serialised, masked nor parsed again (issue 28, finding 4: those
/// copies, four members at once, were most of a run's peak memory).
/// A task that masking changes takes the slower way ([`cut_task`]).
pub(crate) fn turn_line(turn: &Turn, task: Option<&LongTask>) -> serde_json::Result<Vec<u8>> {
    let mask_line = |line: Vec<u8>| match crate::util::secrets::mask_json(&line) {
        std::borrow::Cow::Borrowed(_) => line,
        std::borrow::Cow::Owned(masked) => masked,
    };
    let Some(task) = task else {
        return serde_json::to_vec(turn).map(mask_line);
    };
    if !task.unchanged {
        let line = mask_line(serde_json::to_vec(turn)?);
        return Ok(cut_task(line, Some(task.masked())));
    }
    // The task as it stands (0) and escaped for a `<task>` block (1).
    let needles: Vec<(&str, usize)> = std::iter::once((&*task.masked, 0))
        .chain(task.escaped.as_deref().map(|e| (e, 1)))
        .collect();
    let holds = |content: &str| needles.iter().any(|(n, _)| content.contains(n));
    if !turn.messages.iter().any(|m| holds(&m.content)) {
        return serde_json::to_vec(turn).map(mask_line);
    }
    // Each piece around the task is masked on its own, so that the places
    // are counted in the text as written.
    let mut at = Vec::new();
    let messages = turn
        .messages
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let content = if holds(&m.content) {
                let mut found: Vec<(usize, usize, usize)> = needles
                    .iter()
                    .flat_map(|&(n, form)| {
                        m.content
                            .match_indices(n)
                            .map(move |(pos, _)| (pos, n.len(), form))
                    })
                    .collect();
                found.sort_unstable();
                let mut cut = String::new();
                let mut last = 0;
                for (pos, len, form) in found {
                    if pos < last {
                        continue;
                    }
                    cut.push_str(&crate::util::secrets::mask(&m.content[last..pos]));
                    // `[message, byte]`, or `[message, byte, 1]` for the
                    // escaped form (lines written before it have two).
                    at.push(if form == 0 {
                        vec![i, cut.len()]
                    } else {
                        vec![i, cut.len(), form]
                    });
                    last = pos + len;
                }
                cut.push_str(&crate::util::secrets::mask(&m.content[last..]));
                cut
            } else {
                m.content.clone()
            };
            Message {
                role: m.role,
                content,
                tool_calls: m.tool_calls.clone(),
                tool_call_id: m.tool_call_id.clone(),
            }
        })
        .collect();
    let small = Turn {
        turn_id: turn.turn_id,
        run_id: turn.run_id.clone(),
        agent: turn.agent.clone(),
        role: turn.role,
        round: turn.round,
        phase: turn.phase,
        parents: turn.parents.clone(),
        time_ms: turn.time_ms,
        messages,
        answer: turn.answer.clone(),
        tool_calls: turn.tool_calls.clone(),
        usage: turn.usage,
        latency_ms: turn.latency_ms,
        retries: turn.retries,
        error: turn.error.clone(),
        inputs: turn.inputs.clone(),
        predicted_usage: turn.predicted_usage,
        finish: turn.finish,
    };
    let mut line = mask_line(serde_json::to_vec(&small)?);
    // The line is one JSON object: `task_at` goes in before its end.
    if line.last() == Some(&b'}') {
        line.pop();
        line.extend_from_slice(b",\"task_at\":");
        serde_json::to_writer(&mut line, &at)?;
        line.push(b'}');
    }
    Ok(line)
}

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
    let mut places: Vec<(usize, usize, bool)> = at
        .as_ref()
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|p| {
                    let escaped = p.get(2).and_then(Value::as_u64) == Some(1);
                    Some((p.get(0)?.as_u64()?, p.get(1)?.as_u64()?, escaped))
                })
                .filter_map(|(i, b, e)| {
                    Some((usize::try_from(i).ok()?, usize::try_from(b).ok()?, e))
                })
                .collect()
        })
        .unwrap_or_default();
    let escaped = places
        .iter()
        .any(|p| p.2)
        .then(|| crate::util::text::escape_xml(task));
    // From the end: a later place is counted in the text before the
    // earlier ones are put back.
    places.sort_unstable();
    if let Some(messages) = value.get_mut("messages").and_then(Value::as_array_mut) {
        for (i, byte, is_escaped) in places.into_iter().rev() {
            let text = match (&escaped, is_escaped) {
                (Some(e), true) => e.as_str(),
                _ => task,
            };
            if let Some(Value::String(content)) =
                messages.get_mut(i).and_then(|m| m.get_mut("content"))
                && content.is_char_boundary(byte)
            {
                content.insert_str(byte, text);
            }
        }
    }
    serde_json::from_value(value)
}
