//! The events as `events.jsonl` keeps them (issue 25).

use boardroom::EventKind;

/// The events as `events.jsonl` keeps them: without a call's only delta
/// when the agent's next message is the same text, and without a call's
/// task when it is its agent's last assignment.
pub fn without_repeats(events: &[boardroom::Event]) -> Vec<boardroom::Event> {
    use std::collections::HashMap;
    let mut deltas: HashMap<(String, u64), usize> = HashMap::new();
    for e in events {
        if let EventKind::AgentDelta { call, .. } = e.kind {
            *deltas.entry((e.agent.clone(), call)).or_default() += 1;
        }
    }
    let mut assigned: HashMap<String, String> = HashMap::new();
    let mut out = Vec::new();
    for (i, e) in events.iter().enumerate() {
        let mut e = e.clone();
        match &mut e.kind {
            EventKind::AgentDelta { call, delta, .. } if deltas[&(e.agent.clone(), *call)] == 1 => {
                let next = events[i + 1..].iter().find_map(|n| match &n.kind {
                    EventKind::AgentMessage { text, .. } if n.agent == e.agent => Some(text),
                    _ => None,
                });
                if next == Some(delta) {
                    continue;
                }
            }
            EventKind::TaskAssigned { member, task, .. } => {
                assigned.insert(member.clone(), task.clone());
            }
            EventKind::CallStarted { task, .. } if assigned.get(&e.agent) == task.as_ref() => {
                *task = None;
            }
            _ => {}
        }
        out.push(e);
    }
    out
}
