//! The command line's front-ends over the same engine the language server uses.

pub mod bench;
pub mod bench_context;
pub mod bench_syntax;
pub mod check;
pub mod fix;
mod headless;
pub mod history;
pub mod model_check;
pub mod run;
mod session;

use std::path::Path;

use crate::config::{Loaded, Settings};

pub use headless::Headless;

/// The settings of the workspace at `root` as the command line uses them: the user's file,
/// then the project's (what only a trusted folder may set is ignored, and said on stderr
/// once), then `overrides` from the command's flags.
pub fn load_settings(
    root: &Path,
    overrides: serde_json::Value,
) -> Result<Loaded, crate::config::ConfigError> {
    let loaded = Settings::load(Some(root), overrides)?;
    if let Some(message) = crate::trust::ignored_message(root, &loaded.ignored) {
        eprintln!("tokamak: {message}");
    }
    Ok(loaded)
}
