//! `textDocument/documentSymbol`: classes, functions and methods, hierarchical.

use tower_lsp_server::jsonrpc::{Error, Result};
use tower_lsp_server::ls_types::{DocumentSymbolParams, DocumentSymbolResponse};

use super::{Backend, convert};
use crate::syntax::document_symbols;

pub async fn document_symbol(
    backend: &Backend,
    params: DocumentSymbolParams,
) -> Result<Option<DocumentSymbolResponse>> {
    let uri = convert::url(&params.text_document.uri)
        .ok_or_else(|| Error::invalid_params("the document's URI is not one Tokamak can read"))?;
    let parsed = match backend.observer() {
        Some(observer) => observer.parsed_snapshot(&uri).await,
        None => None,
    };
    let snapshot = match parsed {
        Some(snapshot) => snapshot,
        None => backend.workspace().read(&uri).map_err(|err| Error::invalid_params(err.to_string()))?,
    };
    let Some(tree) = &snapshot.tree else {
        return Ok(Some(DocumentSymbolResponse::Nested(Vec::new())));
    };
    let encoding = backend.encoding();
    let symbols = document_symbols(tree, &snapshot.rope, snapshot.language)
        .iter()
        .map(|symbol| convert::document_symbol(&snapshot.rope, symbol, encoding))
        .collect();
    Ok(Some(DocumentSymbolResponse::Nested(symbols)))
}
