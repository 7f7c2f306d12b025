//! The command line's front-ends over the same engine the language server uses.

pub mod bench;
pub mod bench_context;
pub mod bench_syntax;
pub mod bench_task;
pub mod check;
pub mod command;
pub mod fix;
mod headless;
pub mod history;
pub mod model_check;
pub mod output;
pub mod run;
pub mod sandbox;
mod session;
pub mod stdio;

use std::path::Path;

use self::stdio::errln;
use crate::config::{Loaded, Settings};

pub use headless::Headless;

/// The settings of the workspace at `root` as the command line uses them: the user's file,
/// then the project's (what only a trusted folder may set is ignored, and said on stderr
/// once), then `overrides` from the command's flags.
pub fn load_settings(
    root: &Path,
    overrides: serde_json::Value,
) -> Result<Loaded, crate::config::ConfigError> {
    load_settings_as(root, root, overrides)
}

/// [`load_settings`] for `root`, a copy of the project at `project` (a dry run's): the
/// copy's settings with the project's trust, and messages that name the project.
pub fn load_settings_as(
    root: &Path,
    project: &Path,
    mut overrides: serde_json::Value,
) -> Result<Loaded, crate::config::ConfigError> {
    if root != project {
        let user = crate::trust::UserConfig::read()
            .map_err(|err| crate::config::ConfigError::Invalid { from: None, reason: err.to_string() })?;
        let trust = crate::trust::Trust::decide(Some(project), None, &user);
        if let Some(object) = overrides.as_object_mut() {
            object.insert("trusted".to_string(), serde_json::Value::Bool(trust.trusted));
        }
    }
    let loaded = Settings::load(Some(root), overrides)?;
    if let Some(message) = crate::trust::ignored_message(project, &loaded.ignored, "restart the server") {
        errln!("tokamak: {message}");
    }
    Ok(loaded)
}
