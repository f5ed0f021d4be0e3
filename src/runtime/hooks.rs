//! Extension points of a run, each owned by one subsystem:
//!
//! - `exchange`: one agent turn against its model; the tool loop (model →
//!   tools → model ...) lives here.
//! - `record_turn`: the Turn record of every model call.
//! - `checkpoint` / `on_entry`: persistence after every phase and entry.
//! - `check_budget`: the run's token budget, before each call.

use crate::board::Entry;
use crate::model::{ChatRequest, ChatResponse, ModelError, SharedModel};
use crate::team::AgentSpec;

use super::run::Run;

impl Run<'_> {
    /// One agent turn: the model call (and, for agents with tools, the tool
    /// loop around it). Adds the usage of every model call to the run as it
    /// returns; the response carries the turn's total, for its Turn record.
    pub(crate) fn exchange(
        &self,
        agent: &AgentSpec,
        model: &SharedModel,
        request: &mut ChatRequest,
        on_delta: &mut dyn FnMut(&str),
    ) -> Result<ChatResponse, ModelError> {
        self.tool_exchange(agent, model, request, on_delta)
    }

    /// Records one finished model call.
    pub(crate) fn record_turn(
        &self,
        agent: &AgentSpec,
        request: &ChatRequest,
        result: &Result<ChatResponse, ModelError>,
        latency: std::time::Duration,
    ) {
        self.record_turn_impl(agent, request, result, latency);
    }

    /// Saves the run's state after a phase.
    pub(crate) fn checkpoint(&self) {
        self.checkpoint_impl();
    }

    /// Saves one board entry as soon as it lands.
    pub(crate) fn on_entry(&self, entry: &Entry) {
        self.on_entry_impl(entry);
    }

    /// The run's workspace directory, if it has one.
    pub(crate) fn workspace_dir(&self) -> Option<std::path::PathBuf> {
        self.rt
            .workspace
            .clone()
            .or_else(|| self.persist.dir.as_ref().map(|d| d.workspace()))
    }

    /// Fails the call when the run's token budget is spent.
    pub(crate) fn check_budget(&self) -> Result<(), ModelError> {
        self.budget_check()
    }
}
