//! Subscribers that show a run: the OTLP trace exporter and the web view.

pub(crate) mod otlp;
pub(crate) mod view;
