//! The language server's side of the [`Editor`] trait: diagnostics, messages, edits
//! (`workspace/applyEdit`), work-done progress and `tokamak/runFinished` over LSP.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::json;
use tower_lsp_server::Client;
use tower_lsp_server::ls_types::notification::{Notification, Progress as ProgressNotification};
use tower_lsp_server::ls_types::request::{ApplyWorkspaceEdit, WorkDoneProgressCreate};
use tower_lsp_server::ls_types::*;

use super::convert;
use crate::agent::RunReport;
use crate::editor::{DocumentEdit, EditOutcome, Editor, FileOperation, MessageLevel, Progress, RunEvent};
use crate::observer::Diagnostic;
use crate::text::{PositionEncoding, TextRange};
use crate::workspace::DocumentSnapshot;

/// How long the editor may take to apply an edit or a file operation; past it the edit
/// counts as refused (the run says so) and Tokamak goes on.
const EDIT_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the editor may take to create a progress token.
const PROGRESS_TIMEOUT: Duration = Duration::from_secs(5);

/// `tokamak/runFinished`: `{run_id, exit_reason, summary, files_changed, tokens, attempts,
/// deterministic_fixes, candidates?, left?, steps?, wrap_up?}` (`candidates`: each candidate
/// fix tried, when any; `wrap_up`: `{kind: "said", text, tokens}` or `{kind: "none", why}`
/// for a run stopped before its end).
pub enum RunFinished {}

impl Notification for RunFinished {
    type Params = serde_json::Value;
    const METHOD: &'static str = "tokamak/runFinished";
}

/// `tokamak/planUpdated`: `{plan_id, run_id, goal, steps: [{id, title, detail, depends_on,
/// status, glyph, note, files, role, mode}]}` (`mode`: the running step's current mode).
pub enum PlanUpdated {}

impl Notification for PlanUpdated {
    type Params = serde_json::Value;
    const METHOD: &'static str = "tokamak/planUpdated";
}

/// What the client said it supports, at `initialize`.
#[derive(Debug, Clone, Copy, Default)]
pub struct ClientSupport {
    /// `window.workDoneProgress`: server-initiated progress.
    pub work_done_progress: bool,
    /// `workspace.workspaceEdit.documentChanges`: versioned edits.
    pub document_changes: bool,
    /// `workspace.workspaceEdit.resourceOperations`: which file operations a workspace edit
    /// may carry.
    pub resource_operations: ResourceOperations,
    /// `experimental.tokamak.runEvents`: the client shows a run's conversation
    /// (`tokamak/runEvent`, `stream.rs`).
    pub run_events: bool,
    /// `experimental.tokamak.endings`: the client tells the user how a run ended from
    /// `tokamak/runFinished` itself, so no `window/showMessage` says it a second time.
    pub endings: bool,
    /// The client drops what a workspace command answers (Helix): the answer is shown as a
    /// document (`answers.rs`).
    pub drops_results: bool,
}

/// The file operations the client makes itself.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ResourceOperations {
    pub create: bool,
    pub rename: bool,
    pub delete: bool,
}

impl ResourceOperations {
    pub fn from_capabilities(kinds: &[ResourceOperationKind]) -> ResourceOperations {
        ResourceOperations {
            create: kinds.contains(&ResourceOperationKind::Create),
            rename: kinds.contains(&ResourceOperationKind::Rename),
            delete: kinds.contains(&ResourceOperationKind::Delete),
        }
    }
}

#[derive(Clone)]
pub struct LspEditor {
    pub client: Client,
    pub encoding: PositionEncoding,
    pub support: ClientSupport,
}

#[async_trait]
impl Editor for LspEditor {
    async fn run_event(&self, run_id: &str, event: &RunEvent) {
        if self.support.run_events
            && let Some(params) = super::stream::params(run_id, event)
        {
            self.client.send_notification::<super::stream::RunEventNotification>(params).await;
        }
        crate::editor::render(self, run_id, event).await;
    }

    async fn publish_diagnostics(&self, snapshot: &DocumentSnapshot, diagnostics: Vec<Diagnostic>) {
        let Some(uri) = convert::uri(&snapshot.uri) else { return };
        let lsp_diagnostics =
            diagnostics.iter().map(|d| convert::diagnostic(&uri, &snapshot.rope, d, self.encoding)).collect();
        self.client.publish_diagnostics(uri, lsp_diagnostics, snapshot.version).await;
    }

    async fn clear_diagnostics(&self, uri: &url::Url) {
        let Some(uri) = convert::uri(uri) else { return };
        self.client.publish_diagnostics(uri, Vec::new(), None).await;
    }

    async fn show_message(&self, level: MessageLevel, message: String) {
        self.client.show_message(message_type(level), message).await;
    }

    async fn apply_edit(&self, edit: DocumentEdit<'_>) -> EditOutcome {
        let snapshot = edit.snapshot;
        let Some(uri) = convert::uri(&snapshot.uri) else {
            return EditOutcome::Rejected(format!("{} cannot be said in the protocol", snapshot.uri));
        };
        let edits: Vec<TextEdit> = edit
            .edits
            .iter()
            .map(|(range, text)| {
                let (range, new_text) = anchor_append(&snapshot.rope, *range, text);
                TextEdit { range: convert::range(&snapshot.rope, range, self.encoding), new_text }
            })
            .collect();
        let workspace_edit = if self.support.document_changes {
            WorkspaceEdit {
                document_changes: Some(DocumentChanges::Edits(vec![TextDocumentEdit {
                    text_document: OptionalVersionedTextDocumentIdentifier { uri, version: snapshot.version },
                    edits: edits.into_iter().map(OneOf::Left).collect(),
                }])),
                ..WorkspaceEdit::default()
            }
        } else {
            // no versions to guard with: the agent checked the version just before sending
            WorkspaceEdit { changes: Some([(uri, edits)].into_iter().collect()), ..WorkspaceEdit::default() }
        };
        let params = ApplyWorkspaceEditParams { label: Some(edit.label.to_string()), edit: workspace_edit };
        match self.apply(params).await {
            Ok(()) => EditOutcome::Applied { echoed: true },
            Err(reason) => EditOutcome::Rejected(reason),
        }
    }

    fn versions_edits(&self) -> bool {
        self.support.document_changes
    }

    fn keeps_unsaved_text(&self) -> bool {
        true
    }

    fn makes_file_operation(&self, operation: &FileOperation) -> bool {
        let supported = self.support.resource_operations;
        self.support.document_changes
            && match operation {
                FileOperation::Create { .. } => supported.create,
                FileOperation::Rename { .. } => supported.rename,
                FileOperation::Delete { .. } => supported.delete,
            }
    }

    async fn file_operation(&self, operation: &FileOperation) -> EditOutcome {
        let uri =
            |url: &url::Url| convert::uri(url).ok_or_else(|| format!("{url} cannot be said in the protocol"));
        let converted = match operation {
            FileOperation::Create { uri: url } | FileOperation::Delete { uri: url } => {
                uri(url).map(|u| (u.clone(), u))
            }
            FileOperation::Rename { from, to } => uri(from).and_then(|from| Ok((from, uri(to)?))),
        };
        let (first, second) = match converted {
            Ok(uris) => uris,
            Err(reason) => return EditOutcome::Rejected(reason),
        };
        let (change, label) = match operation {
            FileOperation::Create { .. } => (
                ResourceOp::Create(CreateFile {
                    uri: first,
                    options: Some(CreateFileOptions {
                        overwrite: Some(false),
                        ignore_if_exists: Some(false),
                    }),
                    annotation_id: None,
                }),
                "Tokamak: create file",
            ),
            FileOperation::Rename { .. } => (
                ResourceOp::Rename(RenameFile {
                    old_uri: first,
                    new_uri: second,
                    options: Some(RenameFileOptions {
                        overwrite: Some(false),
                        ignore_if_exists: Some(false),
                    }),
                    annotation_id: None,
                }),
                "Tokamak: rename file",
            ),
            FileOperation::Delete { .. } => (
                ResourceOp::Delete(DeleteFile {
                    uri: first,
                    options: Some(DeleteFileOptions {
                        recursive: Some(false),
                        ignore_if_not_exists: Some(false),
                    }),
                    annotation_id: None,
                }),
                "Tokamak: delete file",
            ),
        };
        let edit = WorkspaceEdit {
            document_changes: Some(DocumentChanges::Operations(vec![DocumentChangeOperation::Op(change)])),
            ..WorkspaceEdit::default()
        };
        let params = ApplyWorkspaceEditParams { label: Some(label.to_string()), edit };
        match self.apply(params).await {
            Ok(()) => EditOutcome::Applied { echoed: false },
            Err(reason) => EditOutcome::Rejected(reason),
        }
    }

    async fn progress(&self, run_id: &str, progress: Progress) {
        // a client that shows the run stream shows the run's progress its own way (the VS Code
        // panel and its status-bar item): work-done progress would be a second, staler one
        if !self.support.work_done_progress || self.support.run_events {
            return;
        }
        let token = NumberOrString::String(run_id.to_string());
        let value = match progress {
            Progress::Begin { title, message } => {
                let create = WorkDoneProgressCreateParams { token: token.clone() };
                let client = self.client.clone();
                let created = super::transport::ask_within(PROGRESS_TIMEOUT, async move {
                    client.send_request::<WorkDoneProgressCreate>(create).await
                });
                match created.await {
                    Some(Ok(())) => {}
                    Some(Err(err)) => {
                        tracing::debug!("window/workDoneProgress/create refused: {}", err.message)
                    }
                    None => {
                        tracing::warn!("the editor did not answer window/workDoneProgress/create; going on")
                    }
                }
                WorkDoneProgress::Begin(WorkDoneProgressBegin {
                    title,
                    cancellable: Some(true),
                    message: Some(message),
                    percentage: Some(0),
                })
            }
            Progress::Report { message, percentage } => WorkDoneProgress::Report(WorkDoneProgressReport {
                cancellable: Some(true),
                message: Some(message),
                percentage,
            }),
            Progress::End { message } => {
                WorkDoneProgress::End(WorkDoneProgressEnd { message: Some(message) })
            }
        };
        self.client
            .send_notification::<ProgressNotification>(ProgressParams {
                token,
                value: ProgressParamsValue::WorkDone(value),
            })
            .await;
    }

    async fn plan_updated(&self, run_id: &str, plan: &crate::run::plan::Plan) {
        let steps: Vec<serde_json::Value> = plan
            .steps
            .iter()
            .map(|s| {
                json!({
                    "id": s.id,
                    "title": s.title,
                    "detail": s.detail,
                    "depends_on": s.depends_on,
                    "status": s.status,
                    "glyph": s.status.glyph(),
                    "note": s.note,
                    "files": s.files,
                    "role": s.role,
                    "mode": s.mode,
                    "replaced_by": s.replaced_by,
                })
            })
            .collect();
        let params = json!({"plan_id": plan.plan_id, "run_id": run_id, "goal": plan.goal, "steps": steps});
        self.client.send_notification::<PlanUpdated>(params).await;
    }

    async fn run_finished(&self, report: &RunReport) {
        let mut params = json!({
            "run_id": report.run_id,
            "uri": report.uri,
            "exit_reason": report.exit_reason,
            "summary": report.summary,
            "files_changed": report.files_changed,
            "tokens": {"prompt": report.tokens.prompt, "completion": report.tokens.completion, "cached": report.tokens.cached},
            "attempts": report.attempts,
            "deterministic_fixes": report.deterministic_fixes,
        });
        if !report.candidates.is_empty() {
            // each candidate fix tried: its number, temperature, outcome and why
            params["candidates"] = json!(report.candidates);
        }
        if !report.left.is_empty() {
            // what the run leaves: errors, failing tests, tests that could not run, changes
            // refused, rejected or not applied, drift
            params["left"] = json!(report.left);
        }
        if !report.step_endings.is_empty() {
            params["steps"] = json!(report.step_endings);
        }
        if let Some(wrap_up) = &report.wrap_up {
            // a run stopped before its end: the model's words (`said`), or why there are none
            params["wrap_up"] = json!(wrap_up);
        }
        self.client.send_notification::<RunFinished>(params).await;
        if self.support.endings {
            return;
        }
        let level = match report.exit_reason {
            crate::agent::ExitReason::Clean | crate::agent::ExitReason::Done => MessageLevel::Info,
            crate::agent::ExitReason::Cancelled => MessageLevel::Info,
            _ => MessageLevel::Warning,
        };
        // the reason first: a status line that cuts the message (Helix's) still says it
        let reason = report.exit_reason.as_str().replace('_', " ");
        self.client.show_message(message_type(level), format!("Tokamak {reason}: {}", report.summary)).await;
    }
}

impl LspEditor {
    /// `workspace/applyEdit`, waiting at most [`EDIT_TIMEOUT`] for the answer.
    async fn apply(&self, params: ApplyWorkspaceEditParams) -> Result<(), String> {
        let client = self.client.clone();
        let request = async move { client.send_request::<ApplyWorkspaceEdit>(params).await };
        match super::transport::ask_within(EDIT_TIMEOUT, request).await {
            Some(Ok(response)) if response.applied => Ok(()),
            Some(Ok(response)) => {
                Err(response.failure_reason.unwrap_or_else(|| "the editor did not apply it".to_string()))
            }
            Some(Err(err)) => Err(format!("workspace/applyEdit failed: {}", err.message)),
            None => {
                Err(format!("the editor did not answer workspace/applyEdit in {} s", EDIT_TIMEOUT.as_secs()))
            }
        }
    }
}

/// Lines appended after a document's final line break are sent as an insertion before that
/// break instead (the same change): Neovim appends an edit that starts past its last line
/// as whole lines, which leaves an extra empty line at the end of the buffer.
fn anchor_append(rope: &ropey::Rope, range: TextRange, text: &str) -> (TextRange, String) {
    let len = rope.len_bytes();
    if range.start != len || range.end != len || len == 0 {
        return (range, text.to_string());
    }
    let tail: String = rope.byte_slice(len.saturating_sub(2)..len).to_string();
    let newline = if tail.ends_with("\r\n") {
        "\r\n"
    } else if tail.ends_with('\n') {
        "\n"
    } else {
        ""
    };
    match text.strip_suffix(newline) {
        Some(body) if !newline.is_empty() => {
            let at = len - newline.len();
            (TextRange { start: at, end: at }, format!("{newline}{body}"))
        }
        _ => (range, text.to_string()),
    }
}

fn message_type(level: MessageLevel) -> MessageType {
    match level {
        MessageLevel::Error => MessageType::ERROR,
        MessageLevel::Warning => MessageType::WARNING,
        MessageLevel::Info => MessageType::INFO,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appends_after_the_last_line_break_are_anchored_before_it() {
        let apply = |text: &str, range: TextRange, new: &str| {
            let mut out = text.to_string();
            out.replace_range(range.start..range.end, new);
            out
        };
        for (text, new) in [("a\nb\n", "\nc\n"), ("a\r\nb\r\n", "c\r\n"), ("a\n", "b\n")] {
            let rope = ropey::Rope::from_str(text);
            let end = TextRange { start: text.len(), end: text.len() };
            let (range, moved) = anchor_append(&rope, end, new);
            assert!(range.start < text.len(), "{text:?}");
            assert_eq!(apply(text, range, &moved), format!("{text}{new}"), "the same change");
        }
        // anything else is sent as it is
        let rope = ropey::Rope::from_str("a\nb");
        assert_eq!(
            anchor_append(&rope, TextRange { start: 3, end: 3 }, "\nc"),
            (TextRange { start: 3, end: 3 }, "\nc".into())
        );
        let rope = ropey::Rope::from_str("a\n");
        assert_eq!(
            anchor_append(&rope, TextRange { start: 0, end: 2 }, "b\n"),
            (TextRange { start: 0, end: 2 }, "b\n".into())
        );
        assert_eq!(
            anchor_append(&rope, TextRange { start: 2, end: 2 }, "b"),
            (TextRange { start: 2, end: 2 }, "b".into())
        );
    }
}
