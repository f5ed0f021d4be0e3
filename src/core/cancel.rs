//! A run's stop flag, checked between calls.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A stop flag for one run. Cheap to clone; every clone stops the same run.
///
/// Setting it stops the run gracefully: no new model calls are sent, the
/// calls in flight return (each within its own deadline), the state is
/// saved with status [`RunStatus::Cancelled`](crate::RunStatus::Cancelled)
/// and [`Runtime::resume`](crate::Runtime::resume) continues it from where it stood.
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    /// A flag that is not set.
    #[must_use]
    pub fn new() -> Self {
        Cancel::default()
    }

    /// Asks the run to stop.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether the run was asked to stop.
    #[must_use]
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}
