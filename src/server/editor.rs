//! The language server's side of the [`Editor`] trait: diagnostics and messages over LSP.

use async_trait::async_trait;
use tower_lsp::Client;
use tower_lsp::lsp_types::{MessageType, Url};

use super::convert;
use crate::editor::{Editor, MessageLevel};
use crate::observer::Diagnostic;
use crate::text::PositionEncoding;
use crate::workspace::DocumentSnapshot;

pub struct LspEditor {
    pub client: Client,
    pub encoding: PositionEncoding,
}

#[async_trait]
impl Editor for LspEditor {
    async fn publish_diagnostics(&self, snapshot: &DocumentSnapshot, diagnostics: Vec<Diagnostic>) {
        let lsp_diagnostics =
            diagnostics.iter().map(|d| convert::diagnostic(&snapshot.rope, d, self.encoding)).collect();
        self.client.publish_diagnostics(snapshot.uri.clone(), lsp_diagnostics, snapshot.version).await;
    }

    async fn clear_diagnostics(&self, uri: &Url) {
        self.client.publish_diagnostics(uri.clone(), Vec::new(), None).await;
    }

    async fn show_message(&self, level: MessageLevel, message: String) {
        let kind = match level {
            MessageLevel::Error => MessageType::ERROR,
            MessageLevel::Warning => MessageType::WARNING,
            MessageLevel::Info => MessageType::INFO,
        };
        self.client.show_message(kind, message).await;
    }
}
