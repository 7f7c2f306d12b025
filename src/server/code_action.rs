//! `textDocument/codeAction`: the actions Tokamak offers at a range. The diagnostics in the
//! request's context (which may come from any source the editor shows) are observed.
//!
//! Tokamak advertises code actions from the start so editors wire the menu up; the fix
//! actions ("Fix with Tokamak", `source.fixAll.tokamak`) arrive with the fix loop.

use tower_lsp::jsonrpc::Result;
use tower_lsp::lsp_types::{CodeActionParams, CodeActionResponse};

use super::{Backend, convert};
use crate::observer::CODE_ACTION_SOURCE;

pub async fn code_action(backend: &Backend, params: CodeActionParams) -> Result<Option<CodeActionResponse>> {
    let uri = params.text_document.uri;
    let snapshot = backend.workspace().snapshot(&uri);
    match (snapshot, backend.observer()) {
        (Some(snapshot), Some(observer)) => {
            let encoding = backend.encoding();
            let seen = params
                .context
                .diagnostics
                .iter()
                .map(|d| convert::diagnostic_from_lsp(&snapshot.rope, d, encoding))
                .collect();
            observer.observe_editor(&snapshot, CODE_ACTION_SOURCE, snapshot.version, seen);
        }
        _ => tracing::debug!("code actions asked for {uri}, which is not open"),
    }
    Ok(Some(Vec::new()))
}
