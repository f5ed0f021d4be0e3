//! OpenTelemetry traces of a run, over OTLP/HTTP protobuf.
//!
//! [`OtlpExporter`] is one more subscriber of a run's events: give its
//! [`events`](OtlpExporter::events) sender to [`Runtime::events`] (or
//! forward events to it) and it turns them into spans following the
//! GenAI semantic conventions on a background thread, and POSTs them to
//! the collector from another. Neither ever blocks the run: spans go
//! through a bounded queue, and when the collector is down, slow or
//! answers errors they are dropped and counted in the [`ExportReport`].
//!
//! [`export_run`] sends a saved run's trace after the fact, from its files.
//!
//! [`Runtime::events`]: crate::Runtime::events

mod config;
mod exporter;
mod genai;
mod groups;
mod ids;
mod openinference;
mod proto;
mod spans;

pub use config::{OtlpConfig, OtlpError};
pub use exporter::{ExportReport, OtlpExporter, export_run};

#[cfg(test)]
mod tests;
