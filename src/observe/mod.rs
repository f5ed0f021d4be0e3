//! Subscribers that show a run: the OTLP trace exporter and the web view.

#[cfg(feature = "otlp")]
pub mod otlp;
#[cfg(feature = "view")]
pub mod view;
