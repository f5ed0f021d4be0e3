//! Modules' transcripts read back from `turns.jsonl`: a module built of
//! turns is saved with their ids (`context_turns`, see `plan/archive.rs`),
//! and every reader of a run gets its `context_archive` whole.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::io::BufRead;
use std::path::Path;

use super::StoreError;
use crate::plan::WorkModule;
use crate::record::Turn;

/// Reads back the transcripts of `modules` that were saved as turn ids,
/// from the turns of the run in `dir` (`task`: the run's task, which a
/// long one is cut out of the turns for). Reads `turns.jsonl` only when a
/// module needs it. A turn that is not there (a power cut lost the end of
/// the file) adds nothing to the transcript, and is logged.
pub(crate) fn read_back<'m>(
    dir: &Path,
    task: Option<&str>,
    modules: impl IntoIterator<Item = &'m mut WorkModule>,
) -> Result<(), StoreError> {
    let pending: Vec<&mut WorkModule> = modules
        .into_iter()
        .filter(|m| m.turns_to_read().next().is_some())
        .collect();
    if pending.is_empty() {
        return Ok(());
    }
    let needed: HashSet<u32> = pending.iter().flat_map(|m| m.turns_to_read()).collect();
    let mut by_id = needed_turns(dir, task, &needed)?;
    // As the live run keeps them: no task over 64 KiB in a transcript
    // (every member's would hold it again).
    for t in by_id.values_mut() {
        for m in &mut t.messages {
            if let Cow::Owned(cut) = crate::plan::without_long_tasks(&m.content) {
                m.content = cut;
            }
        }
    }
    for m in pending {
        // Any agent's turn: a module reassigned keeps the transcript of
        // the member before (a turn id is given once in a run: a resume
        // numbers its turns above every id a transcript names).
        let missing = m.read_turns_with(|n| {
            let t = by_id.get(&n)?;
            Some((&t.messages[..], t.answer.as_deref(), t.error.as_deref()))
        });
        if !missing.is_empty() {
            let ids: Vec<String> = missing.iter().map(|n| format!("t{n:04}")).collect();
            log::warn!(
                "{}: module {}: turns.jsonl lacks turn {} of its transcript; read without it",
                dir.display(),
                m.task_id,
                ids.join(", ")
            );
        }
    }
    Ok(())
}

/// The turns of `turns.jsonl` whose numbers are `needed`, read a line at a
/// time (a line of another turn is not parsed, and the file is never held
/// whole). A turn id is unique in a run; were one written twice, the later
/// wins. Unreadable lines are left to [`super::read_turns`] to report.
fn needed_turns(
    dir: &Path,
    task: Option<&str>,
    needed: &HashSet<u32>,
) -> Result<HashMap<u32, Turn>, StoreError> {
    let path = dir.join(super::TURNS_FILE);
    let file = match super::open_regular(&path, std::fs::OpenOptions::new().read(true)) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(HashMap::new()),
        Err(e) => return Err(StoreError::io(&path, e)),
    };
    let mut reader = std::io::BufReader::new(std::io::Read::take(file, super::MAX_LOG_FILE));
    let mut task: Option<Option<String>> = task.map(|t| Some(t.to_string()));
    let mut found = HashMap::new();
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = reader
            .read_until(b'\n', &mut line)
            .map_err(|e| StoreError::io(&path, e))?;
        if n == 0 {
            break;
        }
        // Most lines start with their id; one rewritten (a long task cut
        // out, a secret masked) may not, and is asked for its id.
        let number = leading_turn_id(&line).or_else(|| {
            #[derive(serde::Deserialize)]
            struct Id {
                turn_id: crate::record::TurnId,
            }
            serde_json::from_slice::<Id>(&line)
                .ok()
                .map(|i| i.turn_id.number())
        });
        let Some(number) = number.filter(|n| needed.contains(n)) else {
            continue;
        };
        let Ok(text) = std::str::from_utf8(&line) else {
            continue;
        };
        let turn = if super::long_task::has_task_cut(text) {
            let task = task
                .get_or_insert_with(|| super::read::load_raw(dir).ok().map(|(r, _)| r.state.task));
            task.as_deref()
                .and_then(|t| super::long_task::turn_with_task(text, t).ok())
        } else {
            serde_json::from_str::<Turn>(text).ok()
        };
        if let Some(turn) = turn {
            found.insert(number, turn);
        }
    }
    Ok(found)
}

/// The number of the turn a line of `turns.jsonl` starts with
/// (`{"turn_id":"t0042",...`), as the store writes them.
fn leading_turn_id(line: &[u8]) -> Option<u32> {
    let rest = line.strip_prefix(b"{\"turn_id\":\"t")?;
    let end = rest.iter().position(|b| !b.is_ascii_digit())?;
    if rest.get(end) != Some(&b'"') {
        return None;
    }
    std::str::from_utf8(&rest[..end]).ok()?.parse().ok()
}
