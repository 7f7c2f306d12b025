//! Settings: what the user can tune, with defaults that work with no configuration.
//!
//! Every setting is documented in `docs/CONFIG.md`. Today they come from LSP
//! `initializationOptions`; `tokamak.toml` and the environment join with the Observer and
//! model layers.

use serde::Deserialize;

/// Documents larger than this are kept as text but not parsed (10 MiB).
pub const DEFAULT_MAX_PARSE_BYTES: usize = 10 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SyntaxSettings {
    /// `syntax.maxFileBytes`: larger documents get no syntax tree, diagnostics or symbols.
    pub max_file_bytes: usize,
}

impl Default for SyntaxSettings {
    fn default() -> Self {
        SyntaxSettings { max_file_bytes: DEFAULT_MAX_PARSE_BYTES }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Settings {
    pub syntax: SyntaxSettings,
}

impl Settings {
    /// Reads settings from LSP `initializationOptions`; unknown keys are ignored, a value of
    /// the wrong type is an error that names it.
    pub fn from_json(value: serde_json::Value) -> Result<Settings, serde_json::Error> {
        if value.is_null() {
            return Ok(Settings::default());
        }
        serde_json::from_value(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_initialization_options() {
        let settings = Settings::from_json(serde_json::json!({"syntax": {"maxFileBytes": 5}})).unwrap();
        assert_eq!(settings.syntax.max_file_bytes, 5);
        assert_eq!(Settings::from_json(serde_json::Value::Null).unwrap(), Settings::default());
        let err = Settings::from_json(serde_json::json!({"syntax": {"maxFileBytes": "big"}})).unwrap_err();
        assert!(err.to_string().contains("invalid type"), "{err}");
    }
}
