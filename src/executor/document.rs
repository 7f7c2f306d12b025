//! Changing an open document through the editor (SPEC E4): a versioned edit of the text the
//! change was made for, moved onto the user's newer text when they typed meanwhile, retried
//! once when the editor rejects a stale version, never forced; then the document's new text
//! as the editor reports it back (or as recorded, for an editor that does not echo).

use std::sync::Arc;
use std::time::Duration;

use url::Url;

use crate::edit::reground;
use crate::editor::{DocumentEdit, EditOutcome, Editor};
use crate::observer::Observer;
use crate::text::{PositionEncoding, TextChange, TextRange, offset_to_line_col};
use crate::workspace::DocumentSnapshot;

/// How long an editor may take to report an edit it applied as a document change.
const ECHO_TIMEOUT: Duration = Duration::from_secs(10);
/// After a rejected edit, how long to wait for the user's change to arrive before retrying.
const REJECT_GRACE: Duration = Duration::from_millis(500);

/// Why an edit of an open document was not made; the text is one sentence for the user.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DocumentEditError {
    #[error("{0} was closed during the run")]
    Closed(Url),
    #[error("you edited the lines the change touches, so it was not applied (your typing wins)")]
    Conflict,
    #[error("the editor applied the edit but never reported the changed text")]
    NoEcho,
    #[error("the editor refused the edit twice ({first}; then {then}); nothing was forced")]
    Refused { first: String, then: String },
    #[error("the edit could not be recorded: {0}")]
    Record(String),
}

/// Makes `edits` (in bytes of `base`'s text) in the open document through the editor and
/// returns the document as it is afterwards.
pub async fn apply_to_document(
    observer: &Arc<Observer>,
    editor: &dyn Editor,
    base: &DocumentSnapshot,
    edits: &[(TextRange, String)],
    label: &str,
) -> Result<DocumentSnapshot, DocumentEditError> {
    let uri = &base.uri;
    let base_text = base.rope.to_string();
    let mut rejected: Option<String> = None;
    loop {
        let current = observer.snapshot(uri).ok_or_else(|| DocumentEditError::Closed(uri.clone()))?;
        let current_text = current.rope.to_string();
        let edits = reground(&base_text, &current_text, edits).map_err(|conflict| {
            tracing::info!("{uri}: {conflict}");
            DocumentEditError::Conflict
        })?;
        let outcome = editor.apply_edit(DocumentEdit { snapshot: &current, edits: &edits, label }).await;
        match outcome {
            EditOutcome::Applied { echoed: true } => {
                return observer
                    .changed_from(uri, current.version, ECHO_TIMEOUT)
                    .await
                    .ok_or(DocumentEditError::NoEcho);
            }
            EditOutcome::Applied { echoed: false } => {
                // recorded as ranged changes, last first so each range still holds: the tree
                // is reparsed incrementally and stored diagnostics move with the text
                let changes: Vec<TextChange> = edits
                    .iter()
                    .rev()
                    .map(|(range, insert)| TextChange {
                        range: Some((
                            offset_to_line_col(&current.rope, range.start, PositionEncoding::Utf8),
                            offset_to_line_col(&current.rope, range.end, PositionEncoding::Utf8),
                        )),
                        text: insert.clone(),
                    })
                    .collect();
                let version = current.version.unwrap_or(0).saturating_add(1);
                return observer
                    .change(uri, version, &changes, PositionEncoding::Utf8)
                    .await
                    .map(|(snapshot, _)| snapshot)
                    .map_err(|err| DocumentEditError::Record(err.to_string()));
            }
            EditOutcome::Rejected(reason) => {
                if let Some(first) = rejected {
                    return Err(DocumentEditError::Refused { first, then: reason });
                }
                tracing::info!("{uri}: edit rejected ({reason}); re-grounding on the current text");
                // the user's change that made it stale may still be on its way
                let _ = observer.changed_from(uri, current.version, REJECT_GRACE).await;
                rejected = Some(reason);
            }
        }
    }
}
