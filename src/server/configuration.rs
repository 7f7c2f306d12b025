//! `workspace/configuration` and `workspace/didChangeConfiguration`: the editor's own
//! `tokamak` settings, which take precedence over `tokamak.toml` for the model.
//!
//! Asking the client is never awaited inside a handler: the answer comes through the same
//! input tower-lsp-server reads one message at a time, so a handler waiting for it could wait
//! forever behind messages the editor sent first. The question is asked from a task of its
//! own, with a timeout; without an answer Tokamak goes on with the settings it has. Work off
//! the queue that needs the model (`tokamak.checkModel`, `tokamak.plan`) waits for a pending
//! answer first ([`settled_models`]), so a check sent right after `initialized` checks the
//! editor's model, not the one before it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tower_lsp_server::Client;
use tower_lsp_server::ls_types::{ConfigurationItem, DidChangeConfigurationParams, MessageType};

use super::{Backend, ModelChoice, Session};
use crate::model::ModelSettings;

/// How long the client may take to answer `workspace/configuration`.
pub const TIMEOUT: Duration = Duration::from_secs(5);

/// Where the answer goes: the settings before the editor's, and the ones in use.
#[derive(Clone)]
pub struct Target {
    client: Client,
    base: ModelChoice,
    current: Arc<Mutex<ModelChoice>>,
}

impl Target {
    pub fn of(backend: &Backend) -> Target {
        Target {
            client: backend.client.clone(),
            base: backend.session().map(Session::models).unwrap_or_default(),
            current: Arc::clone(&backend.models),
        }
    }
}

/// Asks the client for its `tokamak` section, from a task of its own, and applies the answer.
pub fn read_client_configuration(backend: &Backend) {
    let target = Target::of(backend);
    // taken before this handler returns, so anything the editor sends next sees it held
    let reading = Arc::clone(&backend.reading_configuration).try_lock_owned().ok();
    tokio::spawn(async move {
        ask(&target).await;
        drop(reading);
    });
}

/// The model settings once a pending question about the editor's settings is answered (or
/// has timed out); for work that runs off the message queue.
pub async fn settled_models(
    backend_models: Arc<Mutex<ModelChoice>>,
    reading: Arc<tokio::sync::Mutex<()>>,
) -> ModelChoice {
    let _ = tokio::time::timeout(TIMEOUT + Duration::from_secs(1), reading.lock()).await;
    crate::sync::lock(&backend_models).clone()
}

async fn ask(target: &Target) {
    static TOLD: AtomicBool = AtomicBool::new(false);
    let item = ConfigurationItem { scope_uri: None, section: Some("tokamak".to_string()) };
    let client = target.client.clone();
    let request = async move { client.configuration(vec![item]).await };
    match super::transport::ask_within(TIMEOUT, request).await {
        Some(Ok(mut values)) if !values.is_empty() => apply(target, values.swap_remove(0)).await,
        Some(Ok(_)) => {}
        Some(Err(err)) => tracing::debug!("the client did not answer workspace/configuration: {err}"),
        None => {
            if !TOLD.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    "the editor did not answer workspace/configuration in {} s; going on without its settings",
                    TIMEOUT.as_secs()
                );
            }
        }
    }
}

/// The user changed settings: take the `tokamak` section from the notification when it is
/// there, else ask for it.
pub async fn did_change_configuration(backend: &Backend, params: DidChangeConfigurationParams) {
    match params.settings.get("tokamak") {
        Some(section) if section.is_object() => apply(&Target::of(backend), section.clone()).await,
        _ if backend.client_configuration.get() == Some(&true) => read_client_configuration(backend),
        _ => {}
    }
}

/// The model settings become those of `tokamak.toml` and `initializationOptions` with the
/// editor's `model` and `profiles` over them.
async fn apply(target: &Target, section: Value) {
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
            let base = target.base.clone();
            let mut choice =
                ModelChoice { model: base.model.overlay(&section.model), profiles: base.profiles };
            for (role, profile) in section.profiles {
                let merged =
                    choice.profiles.get(&role).map_or_else(|| profile.clone(), |p| p.overlay(&profile));
                choice.profiles.insert(role, merged);
            }
            *crate::sync::lock(&target.current) = choice;
            tracing::info!("model settings updated from the editor");
        }
        Err(err) => {
            let message = format!("Tokamak ignored the editor's tokamak.model settings: {err}");
            tracing::warn!("{message}");
            target.client.show_message(MessageType::WARNING, message).await;
        }
    }
}
