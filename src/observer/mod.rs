//! The Observer: what is wrong with each document, from every source, published per version.
//!
//! Today the one source is the built-in syntax check (tree-sitter `ERROR`/`MISSING` nodes);
//! external checkers and diagnostics forwarded by the editor join it here.

mod diagnostic;

pub use diagnostic::{Diagnostic, Severity};

use crate::editor::Editor;
use crate::syntax::syntax_problems;
use crate::workspace::DocumentSnapshot;

/// The `source` of Tokamak's own diagnostics.
pub const SOURCE: &str = "tokamak";
/// The `code` of a syntax diagnostic.
pub const SYNTAX_CODE: &str = "syntax";

/// Computes diagnostics for document snapshots and publishes them through the editor.
#[derive(Debug, Default)]
pub struct Observer {}

impl Observer {
    pub fn new() -> Observer {
        Observer {}
    }

    /// Every diagnostic Tokamak itself finds in `snapshot`.
    pub fn diagnostics(&self, snapshot: &DocumentSnapshot) -> Vec<Diagnostic> {
        syntax_diagnostics(snapshot)
    }

    /// Computes the diagnostics of `snapshot` and publishes them (an empty list clears).
    pub async fn observe(&self, snapshot: &DocumentSnapshot, editor: &dyn Editor) {
        let diagnostics = self.diagnostics(snapshot);
        editor.publish_diagnostics(snapshot, diagnostics).await;
    }
}

/// Syntax diagnostics from the snapshot's tree; none for a language Tokamak does not parse.
pub fn syntax_diagnostics(snapshot: &DocumentSnapshot) -> Vec<Diagnostic> {
    let Some(tree) = &snapshot.tree else {
        return Vec::new();
    };
    syntax_problems(tree, &snapshot.rope, snapshot.language)
        .into_iter()
        .map(|problem| Diagnostic {
            range: problem.range,
            severity: Severity::Error,
            source: SOURCE.to_string(),
            code: Some(SYNTAX_CODE.to_string()),
            message: problem.message,
        })
        .collect()
}
