//! What the checkers say of a text the agent wrote, against the text before it: the errors
//! that appeared and those that went away, each text checked by an Observer of its own (the
//! same checkers, on exactly that text). A step's observation and each edit's tool call (for a
//! front end that shows them, SPEC A3) use it.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use url::Url;

use super::targets::{Signature, problems};
use crate::action::ChangedFile;
use crate::diagnostic::{Diagnostic, Severity};
use crate::executor::{DiskEditor, ExecutorContext};
use crate::observer::Observer;

/// The settled diagnostics of `text` as the document `uri`, checked apart from the editor's
/// copy; none when they do not settle within `timeout`.
pub async fn diagnostics_of_text(
    context: &ExecutorContext,
    uri: &Url,
    text: &str,
    timeout: Duration,
) -> Vec<Diagnostic> {
    diagnostics_settled(&context.observer, context.confinement.root(), uri, text, timeout)
        .await
        .unwrap_or_default()
}

/// The settled diagnostics of `text` as the document `uri` in the workspace `root`, checked by
/// an Observer of its own with `observer`'s checkers; `None` when they do not settle within
/// `timeout` or a checker did not report.
pub async fn diagnostics_settled(
    observer: &Observer,
    root: &Path,
    uri: &Url,
    text: &str,
    timeout: Duration,
) -> Option<Vec<Diagnostic>> {
    let private = observer.private(Arc::new(DiskEditor { root: root.to_path_buf() }));
    settle_in(private, uri, text, timeout).await
}

/// The settled diagnostics of `text` as the document `uri` in the workspace as it was before
/// a run: `before` (absolute path, text) for the files the run changed, the disk for the rest
/// — the run's own buffers unseen, so an error it made elsewhere is not taken for one that was
/// there. None when they do not settle.
pub async fn diagnostics_before(
    context: &ExecutorContext,
    uri: &Url,
    text: &str,
    before: Vec<(std::path::PathBuf, String)>,
    timeout: Duration,
) -> Vec<Diagnostic> {
    let editor = Arc::new(DiskEditor { root: context.confinement.root().to_path_buf() });
    let private = context.observer.before(editor, before);
    settle_in(private, uri, text, timeout).await.unwrap_or_default()
}

/// `text` opened as `uri` in `private`, settled, closed.
async fn settle_in(
    private: Arc<Observer>,
    uri: &Url,
    text: &str,
    timeout: Duration,
) -> Option<Vec<Diagnostic>> {
    let snapshot = private.open(uri.clone(), "", 0, text).await;
    let diagnostics = match private.settled(uri, snapshot.version, timeout).await {
        Ok(settled) if settled.missing.is_empty() => Some(settled.diagnostics),
        Ok(_) | Err(_) => None,
    };
    private.close(uri).await;
    diagnostics
}

/// The diagnostics of `after` that `before` did not have, and those of `before` gone from
/// `after` (two identical ones are two).
pub fn compare(before: &[Diagnostic], after: &[Diagnostic]) -> (Vec<Diagnostic>, Vec<Diagnostic>) {
    let only_in = |these: &[Diagnostic], those: &[Diagnostic]| {
        let mut known = problems(those);
        let mut only = Vec::new();
        for diagnostic in these {
            match known.get_mut(&Signature::of(diagnostic)) {
                Some(count) if *count > 0 => *count -= 1,
                _ => only.push(diagnostic.clone()),
            }
        }
        only
    };
    (only_in(after, before), only_in(before, after))
}

/// Only the errors of `list`.
pub fn errors(list: &[Diagnostic]) -> Vec<Diagnostic> {
    list.iter().filter(|d| d.severity == Severity::Error).cloned().collect()
}

/// Only the warnings of `list`.
pub fn warnings(list: &[Diagnostic]) -> Vec<Diagnostic> {
    list.iter().filter(|d| d.severity == Severity::Warning).cloned().collect()
}

/// A changed file's diagnostics that appeared and went away, when it is text the checkers read
/// (`None` for a deleted or moved-away file).
pub async fn check_change(
    context: &ExecutorContext,
    file: &ChangedFile,
    timeout: Duration,
) -> Option<(Vec<Diagnostic>, Vec<Diagnostic>)> {
    let after = file.after.as_deref()?;
    let uri = Url::from_file_path(context.confinement.root().join(&file.path)).ok()?;
    let before = match file.before.as_deref() {
        Some(before) => diagnostics_of_text(context, &uri, before, timeout).await,
        None => Vec::new(),
    };
    let after = diagnostics_of_text(context, &uri, after, timeout).await;
    Some(compare(&before, &after))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::TextRange;

    fn error(message: &str, at: usize) -> Diagnostic {
        let range = TextRange { start: at, end: at + 1 };
        Diagnostic::new(range, Severity::Error, "ruff", Some("F821".into()), message.into())
    }

    #[test]
    fn appeared_and_resolved_are_counted_as_problems() {
        let mut warning = error("unused", 0);
        warning.severity = Severity::Warning;
        let before = [error("undefined name `a`", 0), error("undefined name `a`", 9), warning.clone()];
        let after = [error("undefined name `a`", 40), error("undefined name `b`", 3), warning];
        assert_eq!(errors(&after).len(), 2);
        let (appeared, resolved) = compare(&before, &after);
        assert_eq!(appeared.iter().map(|d| d.message.as_str()).collect::<Vec<_>>(), ["undefined name `b`"]);
        assert_eq!(resolved.iter().map(|d| d.message.as_str()).collect::<Vec<_>>(), ["undefined name `a`"]);
    }
}
