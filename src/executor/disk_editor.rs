//! An [`Editor`] for files no editor has open: the agent's changes go to disk atomically, only
//! over the text they were made for; diagnostics, messages and progress go nowhere (whoever
//! uses it reads them from its own Observer).

use async_trait::async_trait;
use url::Url;

use crate::edit::apply_edits;
use crate::editor::{DocumentEdit, EditOutcome, Editor, MessageLevel};
use crate::observer::Diagnostic;
use crate::workspace::{DocumentSnapshot, write_if_unchanged};

pub struct DiskEditor {
    /// The workspace, which a link written through must not lead out of.
    pub root: std::path::PathBuf,
}

#[async_trait]
impl Editor for DiskEditor {
    async fn publish_diagnostics(&self, _: &DocumentSnapshot, _: Vec<Diagnostic>) {}

    async fn clear_diagnostics(&self, _: &Url) {}

    async fn show_message(&self, _: MessageLevel, message: String) {
        tracing::debug!("{message}");
    }

    async fn apply_edit(&self, edit: DocumentEdit<'_>) -> EditOutcome {
        write_edit(&edit, Some(&self.root))
    }

    async fn held_text(&self, uri: &Url) -> Option<String> {
        std::fs::read_to_string(uri.to_file_path().ok()?).ok()
    }
}

/// Makes `edit` in its file on disk, atomically and only over the text it was made for (a
/// link written through must not lead out of `root`): what every editor without a buffer
/// does with an edit.
pub fn write_edit(edit: &DocumentEdit<'_>, root: Option<&std::path::Path>) -> EditOutcome {
    let Some(path) = edit.snapshot.path() else {
        return EditOutcome::Rejected(format!("{} is not a file", edit.snapshot.uri));
    };
    let old = edit.snapshot.rope.to_string();
    let Some(new) = apply_edits(&old, edit.edits) else {
        return EditOutcome::Rejected("an edit fell outside the text".to_string());
    };
    match write_if_unchanged(&path, root, &old, &new) {
        Ok(()) => EditOutcome::Applied { echoed: false },
        Err(err) => EditOutcome::Rejected(err.to_string()),
    }
}
