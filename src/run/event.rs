//! What a run tells the user, as one stream of events, the same for every front end: the
//! plan whenever it changes, progress lines, each action of the model's as a tool call (its
//! kind, title and files) and its result, and the report at the end. The engine sends them
//! through `Editor::run_event`; the server renders them as LSP notifications, the command line
//! as terminal lines, an ACP front end as `session/update`s.

use crate::action::{ChangedFile, ToolKind};

use super::RunReport;
use super::plan::Plan;

/// A run's progress as the user sees it (LSP work-done progress, or lines on stderr).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress {
    Begin { title: String, message: String },
    Report { message: String, percentage: Option<u32> },
    End { message: String },
}

/// One thing a run tells the user.
#[derive(Debug, Clone, PartialEq)]
pub enum RunEvent {
    /// The whole plan, on every change of a step.
    Plan(Plan),
    Progress(Progress),
    /// An action of the model's, about to be carried out.
    ToolCall {
        id: String,
        kind: ToolKind,
        title: String,
        paths: Vec<String>,
    },
    /// What became of it: whether it did what was asked, one line, the files it changed with
    /// their texts before and after (for an editor's diff).
    ToolResult {
        id: String,
        ok: bool,
        summary: String,
        changed: Vec<String>,
        files: Vec<ChangedFile>,
    },
    /// The run ended.
    Finished(RunReport),
}
