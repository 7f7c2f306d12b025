//! `tokamak/clientDiagnostics`: diagnostics the editor shows from other sources (VS Code's
//! `languages.getDiagnostics`, Neovim's `vim.diagnostic`), forwarded so the agent sees them.
//! Observed, never published back.

use serde::Deserialize;
use tower_lsp_server::ls_types::Diagnostic;
use url::Url;

use super::{Backend, convert};
use crate::observer::CLIENT_SOURCE;

pub const METHOD: &str = "tokamak/clientDiagnostics";

#[derive(Debug, Deserialize)]
pub struct ClientDiagnosticsParams {
    pub uri: Url,
    /// The document version the diagnostics belong to, when the editor knows it.
    #[serde(default)]
    pub version: Option<i32>,
    /// The full set for the document; an empty list clears.
    pub diagnostics: Vec<Diagnostic>,
}

pub async fn client_diagnostics(backend: &Backend, params: ClientDiagnosticsParams) {
    let Some(observer) = backend.observer() else {
        return;
    };
    let Some(snapshot) = backend.workspace().snapshot(&params.uri) else {
        tracing::debug!("{METHOD} for {}, which is not open; ignored", params.uri);
        return;
    };
    let encoding = backend.encoding();
    let diagnostics = params
        .diagnostics
        .iter()
        .map(|d| convert::diagnostic_from_lsp(&snapshot.rope, d, encoding))
        .collect();
    if observer.observe_editor(&snapshot, CLIENT_SOURCE, params.version, diagnostics) {
        // the editor has a server of its own for a checker Tokamak runs: stop showing both
        observer.republish(&snapshot.uri).await;
    }
}
