//! The editor as the Observer and the agent see it: the one trait through which they act.
//!
//! The language server implements it over LSP; the command line implements it over the
//! terminal and the file system. Nothing behind this trait knows which one it talks to.

use async_trait::async_trait;
use url::Url;

use crate::diagnostic::Diagnostic;
use crate::run::RunReport;
use crate::text::TextRange;
use crate::workspace::DocumentSnapshot;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageLevel {
    Error,
    Warning,
    Info,
}

/// What the agent asks the editor to change in one document: `edits` in bytes of
/// `snapshot`'s text, sorted and not overlapping.
#[derive(Debug, Clone, Copy)]
pub struct DocumentEdit<'a> {
    pub snapshot: &'a DocumentSnapshot,
    pub edits: &'a [(TextRange, String)],
    /// What the change is, for the editor's undo history ("Tokamak: fix …").
    pub label: &'a str,
}

/// What became of a [`DocumentEdit`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EditOutcome {
    /// Made. `echoed`: the editor reports the new text back as a document change (LSP
    /// `didChange`), so the Observer learns of it that way; otherwise the agent records it.
    Applied { echoed: bool },
    /// Not made, in the editor's words (stale version, refused, write conflict).
    Rejected(String),
}

/// A change to the set of files, made by the editor where it can (LSP resource operations:
/// the user sees it and can undo it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileOperation {
    /// A new, empty file (the agent writes its text afterwards).
    Create {
        uri: Url,
    },
    Rename {
        from: Url,
        to: Url,
    },
    Delete {
        uri: Url,
    },
}

/// A run's progress as the user sees it (LSP work-done progress, or lines on stderr).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress {
    Begin { title: String, message: String },
    Report { message: String, percentage: Option<u32> },
    End { message: String },
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

    /// Makes `edit` in the document, only if it is still at the snapshot's version; never
    /// forced over newer text.
    async fn apply_edit(&self, edit: DocumentEdit<'_>) -> EditOutcome {
        let _ = edit;
        EditOutcome::Rejected("this front-end cannot change documents".to_string())
    }

    /// Whether the editor refuses an edit made for another version of the document (LSP
    /// `workspace.workspaceEdit.documentChanges`). One that does not applies an edit to
    /// whatever text it has, so what it reports back is verified.
    fn versions_edits(&self) -> bool {
        true
    }

    /// Whether the editor makes this kind of file operation itself (LSP
    /// `workspace.workspaceEdit.resourceOperations`); when it does not, the agent changes the
    /// disk and says so in the log.
    fn makes_file_operation(&self, operation: &FileOperation) -> bool {
        let _ = operation;
        false
    }

    /// Makes a file operation the editor said it makes; never overwrites an existing file.
    async fn file_operation(&self, operation: &FileOperation) -> EditOutcome {
        let _ = operation;
        EditOutcome::Rejected("this front-end cannot create, rename or delete files".to_string())
    }

    /// Shows how run `run_id` is going.
    async fn progress(&self, run_id: &str, progress: Progress) {
        let _ = (run_id, progress);
    }

    /// A run's plan changed (made, a step's status, a new plan): the whole plan.
    async fn plan_updated(&self, run_id: &str, plan: &crate::run::plan::Plan) {
        let _ = (run_id, plan);
    }

    /// Whether the plan it shows carries each step's note (a terminal's does). If not, a
    /// step's ending is also told as progress, for editors that show progress but no plan
    /// (Helix).
    fn shows_step_notes(&self) -> bool {
        false
    }

    /// A run ended: its exit reason and summary.
    async fn run_finished(&self, report: &RunReport) {
        let _ = report;
    }
}
