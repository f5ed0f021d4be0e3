use std::fmt;
use std::sync::Arc;

/// An underlying error a [`ModelError`] keeps as its `source()`: shared,
/// so the error stays `Clone`.
type Cause = Option<Arc<dyn std::error::Error + Send + Sync + 'static>>;

/// Why a model call failed.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ModelError {
    /// The server answered with an HTTP status that is not success, after
    /// any retries.
    Http {
        /// The model's name.
        model: String,
        /// The status code.
        status: u16,
        /// Where the request went (no credentials).
        url: String,
        /// What the server said, shortened, or advice for the user.
        detail: String,
        /// How many attempts were made.
        attempts: u32,
    },
    /// The connection failed or timed out, after any retries.
    Transport {
        /// The model's name.
        model: String,
        /// What went wrong.
        detail: String,
        /// How many attempts were made.
        attempts: u32,
        /// The connection's error, where there is one and its text holds
        /// no credential.
        source: Cause,
    },
    /// The answer could not be understood.
    BadResponse {
        /// The model's name.
        model: String,
        /// What was wrong with it.
        detail: String,
        /// The parser's error, where there is one.
        source: Cause,
    },
    /// The run's token budget is spent.
    BudgetExhausted {
        /// Tokens used so far.
        used: u64,
        /// The budget.
        budget: u64,
    },
    /// A simulated or scripted failure (tests and dry runs).
    Simulated {
        /// The agent whose call failed.
        agent: String,
        /// Why.
        detail: String,
    },
    /// The call was cancelled before it was sent.
    Cancelled,
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelError::Http {
                model,
                status,
                url,
                detail,
                attempts,
            } => {
                write!(f, "model '{model}': http {status} from {url}")?;
                if *attempts > 1 {
                    write!(f, " after {attempts} attempts")?;
                }
                if !detail.is_empty() {
                    write!(f, ": {detail}")?;
                }
                Ok(())
            }
            ModelError::Transport {
                model,
                detail,
                attempts,
                ..
            } => {
                write!(f, "model '{model}': {detail}")?;
                if *attempts > 1 {
                    write!(f, " after {attempts} attempts")?;
                }
                Ok(())
            }
            ModelError::BadResponse { model, detail, .. } => {
                write!(f, "model '{model}': bad response: {detail}")
            }
            ModelError::BudgetExhausted { used, budget } => {
                write!(f, "token budget spent: {used} of {budget} tokens used")
            }
            ModelError::Simulated { agent, detail } => {
                write!(f, "simulated failure for '{agent}': {detail}")
            }
            ModelError::Cancelled => write!(f, "cancelled"),
        }
    }
}

impl std::error::Error for ModelError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ModelError::Transport {
                source: Some(e), ..
            }
            | ModelError::BadResponse {
                source: Some(e), ..
            } => Some(e.as_ref()),
            _ => None,
        }
    }
}
