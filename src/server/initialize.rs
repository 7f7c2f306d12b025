//! `initialize` and `initialized`: the position encoding, settings and what the server offers.

use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::*;

use std::path::PathBuf;
use std::sync::Arc;

use super::{Backend, execute_command};
use crate::config::{Loaded, Settings};
use crate::editor::{Editor, MessageLevel};
use crate::session::{FrontEnd, Options, Session};
use crate::text::PositionEncoding;
use crate::trust::{Trust, ignored_message};

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

    let root = workspace_root(&params);
    let options = params.initialization_options.clone().unwrap_or_default();
    let loaded = match Settings::load(root.as_deref(), options) {
        Ok(loaded) => loaded,
        Err(err) => {
            let message = format!("Tokamak is using its default settings: {err}");
            tracing::warn!("{message}");
            backend.editor().show_message(MessageLevel::Warning, message).await;
            Loaded {
                settings: Settings::default(),
                trust: Trust::untrusted("the settings could not be read"),
                ignored: Vec::new(),
            }
        }
    };
    let Loaded { settings, trust, ignored } = loaded;
    if let Some(message) =
        root.as_deref().and_then(|root| ignored_message(root, &ignored, "restart the server"))
    {
        tracing::warn!("{message}");
        backend.editor().show_message(MessageLevel::Warning, message).await;
    }
    tracing::info!("workspace trust: {} ({})", trust.trusted, trust.source);
    let configuration = params.capabilities.workspace.as_ref().and_then(|w| w.configuration).unwrap_or(false);
    let experimental = |name: &str| {
        let pointer = format!("/tokamak/{name}");
        params
            .capabilities
            .experimental
            .as_ref()
            .and_then(|e| e.pointer(&pointer))
            .and_then(serde_json::Value::as_bool)
            == Some(true)
    };
    let support = super::editor::ClientSupport {
        work_done_progress: params
            .capabilities
            .window
            .as_ref()
            .and_then(|w| w.work_done_progress)
            .unwrap_or(false),
        document_changes: params
            .capabilities
            .workspace
            .as_ref()
            .and_then(|w| w.workspace_edit.as_ref())
            .and_then(|e| e.document_changes)
            .unwrap_or(false),
        resource_operations: super::editor::ResourceOperations::from_capabilities(
            params
                .capabilities
                .workspace
                .as_ref()
                .and_then(|w| w.workspace_edit.as_ref())
                .and_then(|e| e.resource_operations.as_deref())
                .unwrap_or_default(),
        ),
        run_events: experimental("runEvents"),
        endings: experimental("endings"),
        drops_results: super::answers::drops_results(params.client_info.as_ref().map(|c| c.name.as_str())),
    };
    let _ = backend.support.set(support);
    tokio::task::spawn_blocking(super::approvals::sweep_shown_files);
    backend.approvals.set_support(super::approvals::ApprovalSupport::from_capabilities(&params.capabilities));
    let watch = params
        .capabilities
        .workspace
        .as_ref()
        .and_then(|w| w.did_change_watched_files.as_ref())
        .and_then(|w| w.dynamic_registration)
        .unwrap_or(false);
    let _ = backend.watch_files.set(watch);
    let _ = backend.client_configuration.set(configuration);
    if backend.session().is_some() {
        tracing::warn!("initialize sent twice; keeping the first settings");
        return Err(tower_lsp_server::jsonrpc::Error::invalid_request());
    }
    let front = FrontEnd {
        editor: Arc::new(backend.editor()),
        approver: Arc::new(super::approvals::LspApprover(Arc::clone(&backend.approvals))),
    };
    // the editor tells of files changed on disk when it can watch them; else Tokamak watches
    let options = Options {
        history: true,
        agent: true,
        workspace: Some(Arc::clone(&backend.workspace)),
        watch: !watch,
        mcp: Vec::new(),
    };
    let session = Session::build(root.clone(), settings, trust, front, options);
    for problem in &session.problems {
        let message = problem.going_on();
        tracing::warn!("{message}");
        backend.editor().show_message(MessageLevel::Warning, message).await;
    }
    // the editor's settings, when it has any, go over the session's (`configuration.rs`)
    *crate::sync::lock(&backend.models) = session.models();
    let _ = backend.session.set(session);
    let client = params.client_info.map_or_else(|| "an unnamed client".to_string(), |c| c.name);
    let root_text =
        root.as_ref().map_or_else(|| "no workspace folder".to_string(), |r| r.display().to_string());
    tracing::info!("initialize from {client}; positions in {}; root {root_text}", encoding.lsp_name());

    Ok(InitializeResult {
        capabilities: capabilities(encoding),
        server_info: Some(ServerInfo {
            name: "tokamak".to_string(),
            version: Some(env!("CARGO_PKG_VERSION").to_string()),
        }),
        // clangd's pre-3.17 extension; `capabilities.positionEncoding` says it
        offset_encoding: None,
    })
}

/// The first workspace folder, else the deprecated `rootUri`, as a path.
fn workspace_root(params: &InitializeParams) -> Option<PathBuf> {
    let folder = params.workspace_folders.as_ref().and_then(|folders| folders.first()).map(|f| &f.uri);
    #[allow(deprecated)] // clients still send only `rootUri`
    let uri = folder.or(params.root_uri.as_ref())?;
    super::convert::url(uri)?.to_file_path().ok()
}

pub async fn initialized(backend: &Backend) {
    if let Some(queue) = crate::sync::lock(&backend.log_queue).take() {
        queue.forward(backend.client.clone());
    }
    if backend.client_configuration.get() == Some(&true) {
        super::configuration::read_client_configuration(backend);
    }
    super::context::start_index(backend);
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
        code_action_provider: Some(CodeActionProviderCapability::Options(CodeActionOptions {
            code_action_kinds: Some(vec![
                CodeActionKind::QUICKFIX,
                CodeActionKind::from(super::code_action::FIX_ALL.to_string()),
            ]),
            work_done_progress_options: WorkDoneProgressOptions::default(),
            resolve_provider: Some(false),
        })),
        execute_command_provider: Some(ExecuteCommandOptions {
            commands: execute_command::COMMANDS.iter().map(|c| c.to_string()).collect(),
            work_done_progress_options: WorkDoneProgressOptions::default(),
        }),
        ..ServerCapabilities::default()
    }
}
