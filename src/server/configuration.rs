//! `workspace/configuration` and `workspace/didChangeConfiguration`: the editor's own
//! `tokamak` settings, which take precedence over `tokamak.toml` for the model.

use serde_json::Value;
use tower_lsp::lsp_types::{ConfigurationItem, DidChangeConfigurationParams};

use super::{Backend, ModelChoice};
use crate::editor::{Editor, MessageLevel};
use crate::model::ModelSettings;

/// Asks the client for its `tokamak` section and applies it.
pub async fn read_client_configuration(backend: &Backend) {
    let item = ConfigurationItem { scope_uri: None, section: Some("tokamak".to_string()) };
    match backend.client.configuration(vec![item]).await {
        Ok(mut values) if !values.is_empty() => apply(backend, values.swap_remove(0)).await,
        Ok(_) => {}
        Err(err) => tracing::debug!("the client did not answer workspace/configuration: {err}"),
    }
}

/// The user changed settings: take the `tokamak` section from the notification when it is
/// there, else ask for it.
pub async fn did_change_configuration(backend: &Backend, params: DidChangeConfigurationParams) {
    match params.settings.get("tokamak") {
        Some(section) if section.is_object() => apply(backend, section.clone()).await,
        _ if backend.client_configuration.get() == Some(&true) => read_client_configuration(backend).await,
        _ => {}
    }
}

/// The model settings become those of `tokamak.toml` and `initializationOptions` with the
/// editor's `model` and `profiles` over them.
async fn apply(backend: &Backend, section: Value) {
    if !section.is_object() {
        return;
    }
    #[derive(serde::Deserialize, Default)]
    #[serde(default)]
    struct Section {
        model: ModelSettings,
        profiles: std::collections::BTreeMap<String, ModelSettings>,
    }
    match serde_json::from_value::<Section>(section) {
        Ok(section) => {
            let base = crate::sync::lock(&backend.base_models).clone();
            let mut choice =
                ModelChoice { model: base.model.overlay(&section.model), profiles: base.profiles };
            for (role, profile) in section.profiles {
                let merged =
                    choice.profiles.get(&role).map_or_else(|| profile.clone(), |p| p.overlay(&profile));
                choice.profiles.insert(role, merged);
            }
            *crate::sync::lock(&backend.models) = choice;
            tracing::info!("model settings updated from the editor");
        }
        Err(err) => {
            let message = format!("Tokamak ignored the editor's tokamak.model settings: {err}");
            tracing::warn!("{message}");
            backend.editor().show_message(MessageLevel::Warning, message).await;
        }
    }
}
