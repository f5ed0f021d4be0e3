//! Models and probes for tests: the offline [`Sim`] team, the [`Scripted`]
//! model that replies what a test tells it, and read-only probes into the
//! parts that touch the outside ([`McpProbe`], [`OpenAiProbe`]).
//!
//! Nothing here talks to a network: a test builds a team in code, runs it
//! on `Sim` or `Scripted`, and asserts on the outcome, the events and the
//! saved run.

use std::time::Duration;

mod scripted;
mod sim;
mod sim_handoff;
mod sim_partner;
mod sim_principal;
mod spec;

pub use scripted::{Scripted, ScriptedReply};
pub use sim::{Sim, SimOptions, SimStats, SimToolCall};
pub(crate) use spec::parse_sim_options;

/// Read-only probes into an MCP pool (`boardroom::mcp::McpPool`), for tests
/// that kill a server or count what it sent.
pub trait McpProbe {
    /// The process id of a server's current session (stdio servers).
    fn pid(&self, server: &str) -> Option<u32>;
    /// How many times a server was restarted.
    fn restarts(&self, server: &str) -> u32;
    /// The methods of the notifications the current session received, in
    /// order.
    fn notifications(&self, server: &str) -> Vec<String>;
}

/// A read-only probe into an [`OpenAi`](crate::model::OpenAi) model's transport
/// retries.
pub trait OpenAiProbe {
    /// The last waits (at most 64) the transport retry chose, oldest first,
    /// across all calls.
    fn retry_waits(&self) -> Vec<Duration>;
}

impl OpenAiProbe for crate::model::OpenAi {
    fn retry_waits(&self) -> Vec<Duration> {
        self.recent_retry_waits()
    }
}

#[cfg(test)]
mod tests {
    use super::OpenAiProbe;
    use crate::{ChatModel, ChatRequest, Message, OpenAi, Phase};

    /// The retry waits an `OpenAi` keeps are bounded (issue 15: the list
    /// grew for the model's whole life): 69 retries keep the last 64.
    #[test]
    fn the_kept_retry_waits_are_bounded() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let model = OpenAi::builder(format!("http://127.0.0.1:{port}/v1"), "m")
            .retry(crate::model::RetryPolicy {
                max_attempts: 70,
                ..crate::model::RetryPolicy::default()
            })
            .sleep_with(|_| {})
            .build()
            .unwrap();
        let request = ChatRequest::new("writer", Phase::Draft, 1, vec![Message::user("hi")]);
        let err = model.chat(&request, &mut |_| {}).unwrap_err();
        assert!(err.to_string().contains("after 70 attempts"), "{err}");
        assert_eq!(model.retry_waits().len(), 64);
    }
}
