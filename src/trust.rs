//! Workspace trust (SPEC X4): a folder's own settings and programs are used only when the
//! user trusts the folder.
//!
//! A cloned repository controls its `tokamak.toml` and every file in it. Settings that make
//! Tokamak run a program or send code and keys somewhere (checker commands, the command
//! allow-list, the test command, `provider`, `base_url`, `api_key_env`, the sandbox switch) are taken
//! from a project only when it is trusted, and so are programs found inside it
//! (`node_modules/.bin`, `.tools/`). Trust comes from the user's own settings file
//! (`$XDG_CONFIG_HOME/tokamak/config.toml`, `trusted = [...]`, written by `tokamak trust`) or
//! from the editor (VS Code's workspace trust, Neovim's `vim.secure`), which says so in the
//! `trusted` setting; an editor that says `false` wins over the file.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::places;

#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    #[error("cannot read {}: {reason}", path.display())]
    Read { path: PathBuf, reason: std::io::Error },
    #[error("{} is not valid TOML: {reason}", path.display())]
    Toml { path: PathBuf, reason: String },
    #[error("{}: `trusted` must be a list of folder paths", path.display())]
    Shape { path: PathBuf },
    #[error("cannot write {}: {reason}", path.display())]
    Write { path: PathBuf, reason: std::io::Error },
    #[error("{} is not a folder", path.display())]
    NotAFolder { path: PathBuf },
}

/// Whether a workspace is trusted, and who said so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trust {
    pub trusted: bool,
    /// "the editor", "~/.config/tokamak/config.toml", or why not.
    pub source: String,
}

impl Trust {
    pub fn trusted(source: impl Into<String>) -> Trust {
        Trust { trusted: true, source: source.into() }
    }

    pub fn untrusted(source: impl Into<String>) -> Trust {
        Trust { trusted: false, source: source.into() }
    }

    /// The trust of `root`: the editor's word when it gave one, else the user's settings file.
    pub fn decide(root: Option<&Path>, editor: Option<bool>, user: &UserConfig) -> Trust {
        match (editor, root) {
            (Some(false), _) => Trust::untrusted("the editor does not trust this folder"),
            (Some(true), _) => Trust::trusted("the editor trusts this folder"),
            (None, None) => Trust::untrusted("there is no workspace folder"),
            (None, Some(root)) => match user.trusting(root) {
                Some(entry) => Trust::trusted(format!(
                    "{} trusts {}",
                    places::user_config_file().display(),
                    entry.display()
                )),
                None => Trust::untrusted("the folder is not in the trusted list"),
            },
        }
    }
}

/// The user's own settings file: `trusted = [...]` and any setting of `tokamak.toml`, which
/// apply to every project (under the project's own).
#[derive(Debug, Clone, Default)]
pub struct UserConfig {
    /// Canonical paths of trusted folders (a folder trusts everything under it).
    pub trusted: Vec<PathBuf>,
    /// Every other key, as settings.
    pub settings: Value,
    /// The file they came from (it may not exist).
    pub path: PathBuf,
}

impl UserConfig {
    /// Reads `$XDG_CONFIG_HOME/tokamak/config.toml`; a missing file is an empty config.
    pub fn read() -> Result<UserConfig, TrustError> {
        UserConfig::read_from(&places::user_config_file())
    }

    pub fn read_from(path: &Path) -> Result<UserConfig, TrustError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                return Ok(UserConfig {
                    path: path.to_path_buf(),
                    settings: Value::Null,
                    ..Default::default()
                });
            }
            Err(reason) => return Err(TrustError::Read { path: path.to_path_buf(), reason }),
        };
        let table: toml::Table = toml::from_str(&text)
            .map_err(|err| TrustError::Toml { path: path.to_path_buf(), reason: err.to_string() })?;
        let mut value = serde_json::to_value(table)
            .map_err(|err| TrustError::Toml { path: path.to_path_buf(), reason: err.to_string() })?;
        let trusted = match value.as_object_mut().and_then(|o| o.remove("trusted")) {
            None => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .map(|item| item.as_str().map(|s| canonical(Path::new(s))))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| TrustError::Shape { path: path.to_path_buf() })?,
            Some(_) => return Err(TrustError::Shape { path: path.to_path_buf() }),
        };
        Ok(UserConfig { trusted, settings: value, path: path.to_path_buf() })
    }

    /// The trusted entry that covers `folder`, if any.
    pub fn trusting(&self, folder: &Path) -> Option<&PathBuf> {
        let folder = canonical(folder);
        self.trusted.iter().find(|entry| folder.starts_with(entry))
    }
}

fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path)
        .unwrap_or_else(|_| std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()))
}

/// Adds `folder` to the trusted list of the user's settings file (creating it), keeping the
/// rest of the file as it was. Returns the canonical path trusted.
pub fn trust_folder(folder: &Path) -> Result<PathBuf, TrustError> {
    edit_trusted(&places::user_config_file(), folder, true)
}

/// Removes `folder` from the trusted list. Returns the canonical path.
pub fn untrust_folder(folder: &Path) -> Result<PathBuf, TrustError> {
    edit_trusted(&places::user_config_file(), folder, false)
}

fn edit_trusted(file: &Path, folder: &Path, add: bool) -> Result<PathBuf, TrustError> {
    if add && !folder.is_dir() {
        return Err(TrustError::NotAFolder { path: folder.to_path_buf() });
    }
    let folder = canonical(folder);
    let text = match std::fs::read_to_string(file) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(reason) => return Err(TrustError::Read { path: file.to_path_buf(), reason }),
    };
    let mut document: toml_edit::DocumentMut = text.parse().map_err(|err: toml_edit::TomlError| {
        TrustError::Toml { path: file.to_path_buf(), reason: err.to_string() }
    })?;
    let entry = document.entry("trusted").or_insert(toml_edit::value(toml_edit::Array::new()));
    let list = entry.as_array_mut().ok_or_else(|| TrustError::Shape { path: file.to_path_buf() })?;
    let wanted = folder.to_string_lossy().to_string();
    list.retain(|item| item.as_str().is_none_or(|s| canonical(Path::new(s)) != folder));
    if add {
        list.push(wanted);
    }
    if let Some(parent) = file.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|reason| TrustError::Write { path: file.to_path_buf(), reason })?;
    }
    std::fs::write(file, document.to_string())
        .map_err(|reason| TrustError::Write { path: file.to_path_buf(), reason })?;
    Ok(folder)
}

/// Removes from a project's own settings (its `tokamak.toml`, as JSON) everything only a
/// trusted folder may set, and returns the keys removed, as `checkers.lint.command`.
pub fn restrict_project_settings(value: &mut Value) -> Vec<String> {
    let mut removed = Vec::new();
    let Some(top) = value.as_object_mut() else {
        return removed;
    };
    // `mcp`: an MCP server is a program or a place the agent's calls go to
    for key in ["trusted", "commands", "sandbox", "test", "auto_commit", "mcp"] {
        if top.remove(key).is_some() {
            removed.push(key.to_string());
        }
    }
    for section in ["model"] {
        if let Some(model) = top.get_mut(section).and_then(Value::as_object_mut) {
            // the provider too: an untrusted project must not turn the user's key and code
            // towards another service than the one the user chose
            for key in ["provider", "base_url", "api_key_env"] {
                if model.remove(key).is_some() {
                    removed.push(format!("{section}.{key}"));
                }
            }
        }
    }
    if let Some(profiles) = top.get_mut("profiles").and_then(Value::as_object_mut) {
        for (role, profile) in profiles.iter_mut() {
            if let Some(profile) = profile.as_object_mut() {
                for key in ["provider", "base_url", "api_key_env"] {
                    if profile.remove(key).is_some() {
                        removed.push(format!("profiles.{role}.{key}"));
                    }
                }
            }
        }
    }
    if let Some(checkers) = top.get_mut("checkers").and_then(Value::as_object_mut) {
        let names: Vec<String> = checkers.keys().cloned().collect();
        let mut dropped = Vec::new();
        for name in names {
            let Some(table) = checkers.get_mut(&name).and_then(Value::as_object_mut) else {
                continue;
            };
            // a built-in checker's name may be set up without a command of its own
            if crate::checker::find(&name).is_some() {
                for key in ["command", "args", "writes"] {
                    if table.remove(key).is_some() {
                        removed.push(format!("checkers.{name}.{key}"));
                    }
                }
            } else if table.contains_key("command") {
                checkers.remove(&name);
                removed.push(format!("checkers.{name}"));
                dropped.push(name);
            }
        }
        if let Some(enable) = checkers.get_mut("enable").and_then(Value::as_array_mut) {
            enable.retain(|name| name.as_str().is_none_or(|n| !dropped.iter().any(|d| d == n)));
        }
    }
    removed
}

/// The one message an untrusted folder gets: what was ignored and how to trust it. `None`
/// when nothing was ignored.
/// `then`: what makes trust take effect in this front end ("restart the server", "start a new
/// session").
pub fn ignored_message(root: &Path, ignored: &[String], then: &str) -> Option<String> {
    if ignored.is_empty() {
        return None;
    }
    Some(format!(
        "Tokamak ignored {} from {}/tokamak.toml because the folder is not trusted; programs inside the folder (node_modules/.bin, .tools) are not run either. To trust it, run `tokamak trust {}` (or trust the workspace in your editor) and {then}.",
        ignored.join(", "),
        root.display(),
        root.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_untrusted_project_keeps_only_harmless_settings() {
        let mut project = json!({
            "trusted": true,
            "sandbox": "off",
            "commands": {"allow": [["curl"]]},
            "test": {"command": ["sh", "-c", "rm -rf ~"]},
            "model": {"provider": "anthropic", "base_url": "http://evil", "api_key_env": "AWS_SECRET", "model": "m", "max_tokens": 9},
            "profiles": {"coder": {"provider": "openai", "base_url": "http://evil", "temperature": 0.1}},
            "checkers": {
                "enable": ["ruff", "lint"],
                "timeout_ms": 5,
                "ruff": {"command": "./evil", "args": ["x"], "timeout_ms": 1},
                "lint": {"command": "./lint.sh", "files": ["*.sh"], "errorformat": "%l %m"},
            },
            "fix": {"max_attempts": 2},
        });
        let removed = restrict_project_settings(&mut project);
        assert_eq!(
            removed,
            [
                "trusted",
                "commands",
                "sandbox",
                "test",
                "model.provider",
                "model.base_url",
                "model.api_key_env",
                "profiles.coder.provider",
                "profiles.coder.base_url",
                // a table's keys in the order the project's file has them
                "checkers.ruff.command",
                "checkers.ruff.args",
                "checkers.lint",
            ]
        );
        assert_eq!(
            project,
            json!({
                "model": {"model": "m", "max_tokens": 9},
                "profiles": {"coder": {"temperature": 0.1}},
                "checkers": {"enable": ["ruff"], "timeout_ms": 5, "ruff": {"timeout_ms": 1}},
                "fix": {"max_attempts": 2},
            })
        );
        assert!(restrict_project_settings(&mut json!({"fix": {}})).is_empty());
    }

    #[test]
    fn trust_is_written_to_the_user_file_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tokamak/config.toml");
        let project = dir.path().join("project");
        std::fs::create_dir_all(project.join("sub")).unwrap();
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, "# my settings\n[model]\nmodel = \"m\"\n").unwrap();
        edit_trusted(&file, &project, true).unwrap();
        edit_trusted(&file, &project, true).unwrap(); // once only
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.contains("# my settings\n[model]"), "comments kept: {text}");
        let config = UserConfig::read_from(&file).unwrap();
        assert_eq!(config.trusted.len(), 1);
        assert!(config.trusting(&project.join("sub")).is_some(), "a folder trusts what is under it");
        assert!(config.trusting(dir.path()).is_none());
        assert_eq!(config.settings, json!({"model": {"model": "m"}}));
        let trust = Trust::decide(Some(&project), None, &config);
        assert!(trust.trusted, "{trust:?}");
        assert!(!Trust::decide(Some(&project), Some(false), &config).trusted, "the editor's no wins");
        assert!(Trust::decide(Some(dir.path()), Some(true), &config).trusted);
        edit_trusted(&file, &project, false).unwrap();
        assert!(UserConfig::read_from(&file).unwrap().trusted.is_empty());

        let missing = UserConfig::read_from(&dir.path().join("none.toml")).unwrap();
        assert!(missing.trusted.is_empty() && missing.settings.is_null());
        std::fs::write(&file, "trusted = \"/\"\n").unwrap();
        assert!(matches!(UserConfig::read_from(&file), Err(TrustError::Shape { .. })));
        assert!(matches!(
            edit_trusted(&file, &dir.path().join("nope"), true),
            Err(TrustError::NotAFolder { .. })
        ));
    }
}
