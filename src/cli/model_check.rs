//! `tokamak model check`: the configured model (`tokamak.toml` and the environment), asked
//! one tiny question — the first thing to run when something is off.

use std::path::Path;

use crate::model::{ModelCheck, ModelError, run_check};

/// Why a check could not be made or failed.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    #[error("{0}")]
    Settings(#[from] crate::config::ConfigError),
    #[error("{0}")]
    Model(#[from] ModelError),
}

/// Resolves the model from `tokamak.toml` in `root` (`role` picks a profile) and the
/// environment, then sends [`crate::model::probe`], streamed when `stream`.
pub async fn check_model(root: &Path, role: Option<&str>, stream: bool) -> Result<ModelCheck, CheckError> {
    let settings = super::load_settings(root, serde_json::Value::Null)?.settings;
    let choice = crate::session::ModelChoice { model: settings.model, profiles: settings.profiles };
    let config = choice.config(role)?;
    run_check(config, stream).await.map_err(CheckError::from)
}
