//! What runs a round's members, by name (the choice by a round's width is
//! the runtime's: `Executor::resolve`).

use serde::{Deserialize, Serialize};

/// What runs a round's members in parallel: `team.yaml`'s `executor:`,
/// [`Runtime::executor`](crate::Runtime::executor), `--executor`.
///
/// A run's `run_started` event names the executor the run started on
/// ([`Executor::Rayon`] or [`Executor::Threads`], never `Auto`); under
/// `Auto` a round wider than [`Executor::auto_limit`] runs on the own pool,
/// and so does every round after it.
///
/// # Examples
///
/// ```
/// use boardroom::Executor;
///
/// let e: Executor = "threads".parse()?;
/// assert_eq!(e, Executor::Threads);
/// assert_eq!(Executor::Rayon.to_string(), "rayon");
/// assert_eq!(Executor::Auto.resolve(8), Executor::Rayon);
/// assert_eq!(Executor::Auto.resolve(Executor::auto_limit() + 1), Executor::Threads);
/// assert_eq!(
///     "rayn".parse::<Executor>().unwrap_err().to_string(),
///     "unknown executor 'rayn' (did you mean 'rayon'?), expected one of 'auto', 'rayon', 'threads'"
/// );
/// # Ok::<(), boardroom::ParseExecutorError>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Executor {
    /// rayon for rounds up to [`Executor::auto_limit`] members, the own
    /// pool above (the default).
    #[default]
    Auto,
    /// A rayon `ThreadPool` owned by the run, a thread per member of the
    /// widest round.
    Rayon,
    /// The run's own pool: parked threads woken once per job; nothing
    /// searches other threads' queues, so it scales to thousands of
    /// blocked members.
    Threads,
}

/// The names `--executor` and `executor:` accept.
const NAMES: [&str; 3] = ["auto", "rayon", "threads"];

impl Executor {
    /// The name as `team.yaml`, `--executor` and `events.jsonl` spell it.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Executor::Auto => "auto",
            Executor::Rayon => "rayon",
            Executor::Threads => "threads",
        }
    }
}

impl std::fmt::Display for Executor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is not an [`Executor`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ParseExecutorError {
    /// The name as given.
    pub name: String,
    /// The closest executor name, if one is close.
    pub suggestion: Option<&'static str>,
}

impl std::fmt::Display for ParseExecutorError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "unknown executor '{}'", self.name)?;
        if let Some(s) = self.suggestion {
            write!(f, " (did you mean '{s}'?)")?;
        }
        let quoted: Vec<String> = NAMES.iter().map(|n| format!("'{n}'")).collect();
        write!(f, ", expected one of {}", quoted.join(", "))
    }
}

impl std::error::Error for ParseExecutorError {}

/// Read by name through [`FromStr`](std::str::FromStr), so that
/// `team.yaml` says what [`ParseExecutorError`] says (at the key's line).
impl<'de> Deserialize<'de> for Executor {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

impl std::str::FromStr for Executor {
    type Err = ParseExecutorError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(Executor::Auto),
            "rayon" => Ok(Executor::Rayon),
            "threads" => Ok(Executor::Threads),
            _ => Err(ParseExecutorError {
                name: s.to_string(),
                suggestion: crate::util::text::closest(s.trim(), &NAMES)
                    .and_then(|c| NAMES.iter().copied().find(|n| *n == c)),
            }),
        }
    }
}
