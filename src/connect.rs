//! From a spec string to a model: the model floor reads the spec
//! ([`crate::model::spec`]); the offline sim it may name lives in
//! [`crate::testing`], so the step that builds a [`SharedModel`] sits
//! above both.

use std::sync::Arc;

use crate::model::spec::{self, ModelSpec};
use crate::model::{ModelSpecError, SharedModel};
use crate::testing::{Sim, parse_sim_options};

/// Builds a model from a spec string.
///
/// # Errors
///
/// A [`ModelSpecError`] for an unknown provider or a bad option.
///
/// # Examples
///
/// ```
/// let model = boardroom::openai::resolve_model("sim:latency=10ms").unwrap();
/// assert_eq!(model.name(), "sim");
/// // A bare OpenAI model name and `openai/NAME` mean OpenAI.
/// let model = boardroom::openai::resolve_model("openai/gpt-4o").unwrap();
/// assert_eq!(model.name(), "openai:gpt-4o");
/// ```
pub fn resolve_model(spec: &str) -> Result<SharedModel, ModelSpecError> {
    match spec::parse(spec)? {
        ModelSpec::Sim { options } => {
            let options = parse_sim_options(&options).map_err(|detail| ModelSpecError {
                spec: spec.to_string(),
                detail,
            })?;
            Ok(Arc::new(Sim::with_options(options)))
        }
        ModelSpec::Http(http) => http.build(),
    }
}
