//! `textDocument/codeAction`: the actions Tokamak offers at a range.
//!
//! Tokamak advertises code actions from the start so editors wire the menu up; the fix
//! actions ("Fix with Tokamak", `source.fixAll.tokamak`) arrive with the fix loop.

use tower_lsp::jsonrpc::Result;
use tower_lsp::lsp_types::{CodeActionParams, CodeActionResponse};

use super::Backend;

pub async fn code_action(backend: &Backend, params: CodeActionParams) -> Result<Option<CodeActionResponse>> {
    let uri = params.text_document.uri;
    if backend.workspace().snapshot(&uri).is_none() {
        tracing::debug!("code actions asked for {uri}, which is not open");
    }
    Ok(Some(Vec::new()))
}
