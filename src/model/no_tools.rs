//! The warning that an agent's granted tools are not sent because its
//! model has no tool calling ([`ChatModel::supports_tools`] false): said
//! once per run, agent and model, not on every turn of the agent.
//!
//! [`ChatModel::supports_tools`]: super::ChatModel::supports_tools

use std::collections::HashSet;
use std::sync::LazyLock;

use parking_lot::Mutex;

/// (run id, agent, model) already warned about.
type Warned = HashSet<(String, String, String)>;

/// Keys kept at most: past that the record starts again (a process that
/// runs team after team must not grow without end; a run then warns at
/// most once more).
const MAX_KEPT: usize = 4096;

static WARNED: LazyLock<Mutex<Warned>> = LazyLock::new(|| Mutex::new(HashSet::new()));

/// Logs that `agent`'s `granted` tools are not sent to `model`, the first
/// time in run `run_id` only.
pub(crate) fn warn_once(run_id: &str, agent: &str, model: &str, granted: usize) {
    if first_time(&WARNED, run_id, agent, model) {
        log::warn!(
            "agent '{agent}': its model {model} cannot call tools, so its {granted} granted \
             tool(s) are not sent (said once this run)"
        );
    }
}

fn first_time(warned: &Mutex<Warned>, run_id: &str, agent: &str, model: &str) -> bool {
    let key = (run_id.to_string(), agent.to_string(), model.to_string());
    let mut warned = warned.lock();
    if warned.contains(&key) {
        return false;
    }
    if warned.len() >= MAX_KEPT {
        warned.clear();
    }
    warned.insert(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_run_agent_and_model_is_warned_about_once_and_the_record_is_bounded() {
        let warned = Mutex::new(Warned::new());
        assert!(first_time(&warned, "r1", "writer", "m"));
        assert!(!first_time(&warned, "r1", "writer", "m"));
        assert!(first_time(&warned, "r1", "editor", "m"));
        assert!(first_time(&warned, "r1", "writer", "m2"));
        assert!(first_time(&warned, "r2", "writer", "m"));
        for i in 0..MAX_KEPT * 2 {
            first_time(&warned, &format!("run{i}"), "a", "m");
        }
        assert!(warned.lock().len() <= MAX_KEPT);
    }
}
