//! [`McpProbe`](crate::testing::McpProbe) for the pool: read-only looks
//! at its servers, for tests.

use super::McpPool;
use crate::testing::McpProbe;

impl McpProbe for McpPool {
    fn pid(&self, server: &str) -> Option<u32> {
        self.session_pid(server)
    }

    fn restarts(&self, server: &str) -> u32 {
        self.restart_count(server)
    }

    fn notifications(&self, server: &str) -> Vec<String> {
        self.received_notifications(server)
    }
}
