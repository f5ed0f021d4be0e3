//! Logging: `env_logger` as `RUST_LOG` asks, behind a guard that no filter
//! text can get past. `ureq_proto` logs the raw bytes of every request at
//! trace level (the `Authorization` header with the API key included), so
//! its debug and trace records are dropped. (`ureq` itself logs requests
//! with sensitive headers redacted, and only addresses at trace.) A
//! directive for a
//! submodule (`ureq_proto::util=trace`) would outrank a module filter in
//! `env_logger`: the guard looks at each record's target instead. While
//! the live view is on screen, a record prints above it, never through it.
//! Every record goes through [`boardroom::redact`]: URLs lose credentials
//! and query values, known secrets are masked (issue 28).

use log::{Level, Log, Metadata, Record};

/// What is logged when `RUST_LOG` is unset: warnings, but for a failed
/// model call and a master's unusable directive, which the live view
/// shows as their `✗` line and the end of the run as `error:` (one
/// failure, printed once); `RUST_LOG=warn` shows those too.
const DEFAULT_FILTER: &str =
    "warn,boardroom::runtime::call=error,boardroom::process::blackboard::master=error";

/// Sets up the global logger (default: [`DEFAULT_FILTER`]).
pub(crate) fn init() {
    let inner =
        env_logger::Builder::from_env(env_logger::Env::default().default_filter_or(DEFAULT_FILTER))
            .build();
    let max = inner.filter();
    if log::set_boxed_logger(Box::new(Guard { inner })).is_ok() {
        log::set_max_level(max);
    }
}

struct Guard {
    inner: env_logger::Logger,
}

/// Whether records of `target` at `level` may hold request bytes.
fn unsafe_record(target: &str, level: Level) -> bool {
    let in_crate = |name: &str| {
        target == name
            || target
                .strip_prefix(name)
                .is_some_and(|rest| rest.starts_with("::"))
    };
    in_crate("ureq_proto") && level >= Level::Debug
}

impl Log for Guard {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        !unsafe_record(metadata.target(), metadata.level()) && self.inner.enabled(metadata)
    }

    fn log(&self, record: &Record<'_>) {
        if unsafe_record(record.target(), record.level()) || !self.inner.matches(record) {
            return;
        }
        // No URL credential or query value, no known secret (issue 28):
        // `ureq` prints whole URLs at trace.
        let text = record.args().to_string();
        let text = boardroom::redact(&text);
        // While the live view is on screen a log line prints above it
        // (whole), never through it.
        if super::render::is_live() {
            super::render::print_above(&format!(
                "{:<5} {}: {}",
                record.level(),
                record.target(),
                text
            ));
        } else {
            self.inner.log(
                &Record::builder()
                    .args(format_args!("{text}"))
                    .level(record.level())
                    .target(record.target())
                    .module_path(record.module_path())
                    .file(record.file())
                    .line(record.line())
                    .build(),
            );
        }
    }

    fn flush(&self) {
        self.inner.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_bytes_never_pass() {
        assert!(unsafe_record("ureq_proto", Level::Trace));
        assert!(unsafe_record("ureq_proto::util", Level::Trace));
        assert!(unsafe_record("ureq_proto::client", Level::Debug));
        assert!(!unsafe_record("ureq::run", Level::Debug));
        assert!(!unsafe_record("ureq_protocol_of_mine", Level::Trace));
        assert!(!unsafe_record("boardroom", Level::Trace));
    }
}
