//! Changing an open document through the editor (SPEC E4): a versioned edit of the text the
//! change was made for, moved onto the user's newer text when they typed meanwhile, retried
//! once when the editor rejects a stale version, never forced; then the document's new text
//! as the editor reports it back (or as recorded, for an editor that does not echo), checked
//! to hold the edit when the editor does not version edits.

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
/// Times an edit is retried on a text its owner changed without the Observer hearing.
const CATCH_UPS: usize = 3;
/// Document changes an unversioned edit's echo may take.
const ECHO_CHANGES: usize = 4;

/// Why an edit of an open document was not made; the text is one sentence for the user.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DocumentEditError {
    #[error("{0} was closed during the run")]
    Closed(Url),
    #[error("you edited the lines the change touches, so it was not applied (your typing wins)")]
    Conflict,
    #[error("the editor applied the edit but never reported the changed text")]
    NoEcho,
    #[error(
        "the document changed while the edit was on its way and this editor does not version edits, so it may \
         have landed in the wrong place: check the file (undo restores it)"
    )]
    Misplaced,
    #[error("the editor refused the edit twice ({first}; then {then}); nothing was forced")]
    Refused { first: String, then: String },
    #[error("the edit could not be recorded: {0}")]
    Record(String),
}

/// An editor without versioned edits applied `edits` (made on `sent`) to whatever text it had
/// then. Each text it reports is checked: the edits made where they belong on the text before
/// it (`sent`, or the user's typing that came first) is the echo; anything else is the user's
/// typing, and the echo is waited for on top of it. No such echo: the edit may have landed on
/// other lines, and that is said, never repeated.
async fn verified_echo(
    observer: &Arc<Observer>,
    sent: &str,
    edits: &[(TextRange, String)],
    mut after: DocumentSnapshot,
) -> Result<DocumentSnapshot, DocumentEditError> {
    let mut before = sent.to_string();
    // the edit made on what was sent, and where its inserted text is there
    let (made, inserted) = made_on(sent, edits);
    for _ in 0..ECHO_CHANGES {
        let text = after.rope.to_string();
        let meant = reground(sent, &before, edits).ok().map(|moved| applied(&before, &moved));
        if meant.as_deref() == Some(text.as_str()) {
            return Ok(after);
        }
        // the echo and more typing, seen at once: the inserted text is there, in place, the
        // user's changes away from its lines
        let held = reground(&made, &text, &inserted).is_ok_and(|moved| {
            moved.iter().all(|(range, insert)| text.get(range.start..range.end) == Some(insert.as_str()))
        });
        if held && before == sent {
            return Ok(after);
        }
        before = text;
        match observer.changed_from(&after.uri, after.version, REJECT_GRACE).await {
            Some(next) => after = next,
            None => break,
        }
    }
    tracing::warn!(
        "{}: no text reported after an unversioned edit holds it where it was meant to go",
        after.uri
    );
    Err(DocumentEditError::Misplaced)
}

/// `edits` made on `text`, and each inserted text's range in the result.
fn made_on(text: &str, edits: &[(TextRange, String)]) -> (String, Vec<(TextRange, String)>) {
    let made = applied(text, edits);
    let mut inserted = Vec::with_capacity(edits.len());
    let mut shift: isize = 0;
    for (range, insert) in edits {
        let start = range.start.saturating_add_signed(shift);
        inserted.push((TextRange::new(start, start + insert.len()), insert.clone()));
        shift += insert.len() as isize - range.len() as isize;
    }
    (made, inserted)
}

/// `edits` (sorted, in bytes of `text`) made on `text`.
fn applied(text: &str, edits: &[(TextRange, String)]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (range, insert) in edits {
        out.push_str(text.get(at.min(range.start)..range.start).unwrap_or_default());
        out.push_str(insert);
        at = range.end;
    }
    out.push_str(text.get(at.min(text.len())..).unwrap_or_default());
    out
}

/// Brings the Observer's document up to the text its owner holds, when the owner says what
/// that is and it differs ([`Editor::held_text`]: the disk the command line writes, changed by
/// another program): the new text as a change of its own. `Some`: the snapshot after it.
pub async fn catch_up(
    observer: &Arc<Observer>,
    editor: &dyn Editor,
    uri: &Url,
) -> Result<Option<DocumentSnapshot>, DocumentEditError> {
    let Some(held) = editor.held_text(uri).await else { return Ok(None) };
    let current = observer.snapshot(uri).ok_or_else(|| DocumentEditError::Closed(uri.clone()))?;
    if current.rope == held.as_str() {
        return Ok(None);
    }
    tracing::info!("{uri} changed outside Tokamak; its new text is taken");
    let version = current.version.unwrap_or(0).saturating_add(1);
    let change = TextChange { range: None, text: held };
    observer
        .change(uri, version, &[change], PositionEncoding::Utf8)
        .await
        .map(|(snapshot, _)| Some(snapshot))
        .map_err(|err| DocumentEditError::Record(err.to_string()))
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
    let mut caught_up = 0;
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
                let after = observer
                    .changed_from(uri, current.version, ECHO_TIMEOUT)
                    .await
                    .ok_or(DocumentEditError::NoEcho)?;
                if editor.versions_edits() {
                    return Ok(after);
                }
                return verified_echo(observer, &current_text, &edits, after).await;
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
                // the owner's text moved on without the Observer hearing: take it, try again
                if caught_up < CATCH_UPS && catch_up(observer, editor, uri).await?.is_some() {
                    caught_up += 1;
                    continue;
                }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_made_on_a_text_and_where_their_text_lands() {
        let edits = vec![(TextRange::new(0, 1), "xyz".to_string()), (TextRange::new(4, 7), String::new())];
        let (made, inserted) = made_on("a\nb\ncd\ne\n", &edits);
        assert_eq!(made, "xyz\nb\ne\n");
        assert_eq!(
            inserted,
            vec![(TextRange::new(0, 3), "xyz".to_string()), (TextRange::new(6, 6), String::new())]
        );
        assert_eq!(applied("abc", &[]), "abc");
    }
}
