//! `initialize` and `initialized`: the position encoding, settings and what the server offers.

use tower_lsp::jsonrpc::Result;
use tower_lsp::lsp_types::*;

use super::{Backend, execute_command};
use crate::config::Settings;
use crate::editor::{Editor, MessageLevel};
use crate::text::PositionEncoding;

pub async fn initialize(backend: &Backend, params: InitializeParams) -> Result<InitializeResult> {
    let offered: Vec<&str> = params
        .capabilities
        .general
        .as_ref()
        .and_then(|general| general.position_encodings.as_ref())
        .map(|encodings| encodings.iter().map(PositionEncodingKind::as_str).collect())
        .unwrap_or_default();
    let encoding = PositionEncoding::negotiate(offered.iter().copied());
    if backend.encoding.set(encoding).is_err() {
        tracing::warn!("initialize sent twice; keeping the first position encoding");
    }
    let encoding = backend.encoding();

    let options = params.initialization_options.unwrap_or_default();
    match Settings::from_json(options) {
        Ok(settings) => backend.workspace().set_settings(settings.syntax),
        Err(err) => {
            let message = format!("Tokamak ignored its initializationOptions: {err}");
            tracing::warn!("{message}");
            backend.editor().show_message(MessageLevel::Warning, message).await;
        }
    }
    let client = params.client_info.map_or_else(|| "an unnamed client".to_string(), |c| c.name);
    tracing::info!("initialize from {client}; positions in {}", encoding.lsp_name());

    Ok(InitializeResult {
        capabilities: capabilities(encoding),
        server_info: Some(ServerInfo {
            name: "tokamak".to_string(),
            version: Some(env!("CARGO_PKG_VERSION").to_string()),
        }),
    })
}

pub async fn initialized(backend: &Backend) {
    if let Some(queue) = crate::sync::lock(&backend.log_queue).take() {
        queue.forward(backend.client.clone());
    }
    tracing::info!("tokamak {} ready", env!("CARGO_PKG_VERSION"));
}

fn capabilities(encoding: PositionEncoding) -> ServerCapabilities {
    ServerCapabilities {
        position_encoding: Some(PositionEncodingKind::from(encoding.lsp_name().to_string())),
        text_document_sync: Some(TextDocumentSyncCapability::Options(TextDocumentSyncOptions {
            open_close: Some(true),
            change: Some(TextDocumentSyncKind::INCREMENTAL),
            save: Some(TextDocumentSyncSaveOptions::SaveOptions(SaveOptions { include_text: Some(true) })),
            ..TextDocumentSyncOptions::default()
        })),
        document_symbol_provider: Some(OneOf::Left(true)),
        code_action_provider: Some(CodeActionProviderCapability::Simple(true)),
        execute_command_provider: Some(ExecuteCommandOptions {
            commands: execute_command::COMMANDS.iter().map(|c| c.to_string()).collect(),
            work_done_progress_options: WorkDoneProgressOptions::default(),
        }),
        ..ServerCapabilities::default()
    }
}
