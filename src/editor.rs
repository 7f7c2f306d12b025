//! The editor as the Observer and the agent see it: the one trait through which they act.
//!
//! The language server implements it over LSP; the command line implements it over the
//! terminal and the file system. Nothing behind this trait knows which one it talks to.

use async_trait::async_trait;
use url::Url;

use crate::observer::Diagnostic;
use crate::workspace::DocumentSnapshot;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageLevel {
    Error,
    Warning,
    Info,
}

#[async_trait]
pub trait Editor: Send + Sync {
    /// Shows `diagnostics` for `snapshot`'s document and version, replacing what was shown
    /// before; an empty list clears.
    async fn publish_diagnostics(&self, snapshot: &DocumentSnapshot, diagnostics: Vec<Diagnostic>);

    /// Removes every diagnostic shown for a document (it was closed).
    async fn clear_diagnostics(&self, uri: &Url);

    /// Tells the user something in one sentence.
    async fn show_message(&self, level: MessageLevel, message: String);
}
