//! `textDocument/didOpen`, `didChange`, `didSave`, `didClose`: keep the workspace's ropes and
//! trees in step with the editor; the Observer publishes what it finds, runs checkers and
//! hands each document's tree to the live index (`session/`).

use tower_lsp_server::ls_types::*;

use super::{Backend, convert};
use crate::editor::{Editor, MessageLevel};
use crate::workspace::{ChangeError, DocumentSnapshot};

pub async fn did_open(backend: &Backend, params: DidOpenTextDocumentParams) {
    let Some(observer) = backend.observer() else {
        return;
    };
    let item = params.text_document;
    let Some(uri) = convert::url(&item.uri) else { return };
    let snapshot = observer.open(uri, &item.language_id, item.version, &item.text).await;
    tracing::debug!("opened {} ({}, version {})", snapshot.uri, snapshot.language, item.version);
    if let Some(reason) = &snapshot.syntax_skipped {
        let message = format!("Tokamak does not parse {}: {reason}.", file_name(&snapshot));
        tracing::warn!("{message}");
        backend.editor().show_message(MessageLevel::Warning, message).await;
    }
}

pub async fn did_change(backend: &Backend, params: DidChangeTextDocumentParams) {
    let Some(observer) = backend.observer() else {
        return;
    };
    let Some(uri) = convert::url(&params.text_document.uri) else { return };
    let version = params.text_document.version;
    let changes: Vec<_> = params.content_changes.into_iter().map(convert::text_change).collect();
    let started = std::time::Instant::now();
    let changed = observer.change(&uri, version, &changes, backend.encoding()).await;
    tracing::trace!("{uri} version {version}: changed and published in {:?}", started.elapsed());
    match changed {
        Ok((_, report)) => {
            if report.clamped_edits > 0 {
                tracing::warn!(
                    "{uri} version {version}: {} edit(s) had positions out of range; clamped them",
                    report.clamped_edits
                );
            }
        }
        Err(err @ ChangeError::StaleVersion { .. }) => tracing::warn!("{err}"),
        Err(err @ ChangeError::UnknownDocument(_)) => tracing::warn!("ignored a change: {err}"),
    }
}

pub async fn did_save(backend: &Backend, params: DidSaveTextDocumentParams) {
    let Some(observer) = backend.observer() else {
        return;
    };
    let Some(uri) = convert::url(&params.text_document.uri) else { return };
    if let Err(err) = observer.save(&uri, params.text.as_deref()).await {
        tracing::warn!("ignored a save: {err}");
    }
}

pub async fn did_close(backend: &Backend, params: DidCloseTextDocumentParams) {
    let Some(observer) = backend.observer() else {
        return;
    };
    let Some(uri) = convert::url(&params.text_document.uri) else { return };
    if !observer.close(&uri).await {
        tracing::warn!("ignored a close: {uri} is not open");
    }
    super::context::document_closed(backend, &uri);
}

fn file_name(snapshot: &DocumentSnapshot) -> String {
    snapshot
        .uri
        .path_segments()
        .and_then(|mut segments| segments.next_back())
        .map_or_else(|| snapshot.uri.to_string(), |name| name.to_string())
}
