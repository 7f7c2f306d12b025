//! A fix run's hold on its document: observing it settled (the user typing starts the wait
//! over), applying edits through the editor — approved first where someone approves —, the
//! drift found under the run, and the run's confidence in the file (SPEC G3–G4).

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use url::Url;

use super::{FixContext, Stop, Tally, display_path, report};
use crate::agent::runs::RunHandle;
use crate::context::{Drift, Fingerprint};
use crate::executor::{DocumentEditError, GO_ON, REREAD_BELOW, apply_to_document};
use crate::history::Journal;
use crate::observer::{Diagnostic, SettleError};
use crate::run::ExitReason;
use crate::sync::lock;
use crate::text::TextRange;
use crate::workspace::DocumentSnapshot;

/// How often observing may find the document changed again (the user typing) before giving up.
const OBSERVE_TRIES: usize = 5;

/// The document's current snapshot and what every source found on exactly that text,
/// waiting for the checkers. The user typing meanwhile starts the wait over.
/// [`observe_now`], its time counted as waited for the checks.
pub(super) async fn observe(
    context: &FixContext,
    uri: &Url,
    tally: &Mutex<Tally>,
) -> Result<(DocumentSnapshot, Vec<Diagnostic>), Stop> {
    let started = std::time::Instant::now();
    let observed = observe_now(context, uri).await;
    let mut tally = lock(tally);
    tally.waited.checks_ms += started.elapsed().as_secs_f64() * 1000.0;
    let (snapshot, diagnostics, missing) = observed?;
    // the checkers that did not answer on this text: an ending must not call it checked
    tally.left.unanswered = missing;
    Ok((snapshot, diagnostics))
}

/// The document's snapshot, what every source found on exactly its text, and the sources that
/// did not answer in time.
async fn observe_now(
    context: &FixContext,
    uri: &Url,
) -> Result<(DocumentSnapshot, Vec<Diagnostic>, Vec<String>), Stop> {
    let timeout = Duration::from_millis(context.settings.settle_timeout_ms.max(1));
    for _ in 0..OBSERVE_TRIES {
        let snapshot = context.observer.snapshot(uri).ok_or_else(|| closed(uri))?;
        match context.observer.settled(uri, snapshot.version, timeout).await {
            Ok(settled) => {
                if !settled.missing.is_empty() {
                    tracing::warn!("{uri}: going on without {}", settled.missing.join(", "));
                }
                // a large document's tree comes with its settled syntax: take it now
                let Some(now) = context.observer.snapshot(uri).filter(|now| now.version == snapshot.version)
                else {
                    continue;
                };
                return Ok((now, context.observer.diagnostics_at(uri, snapshot.version), settled.missing));
            }
            Err(SettleError::Changed { .. }) => tokio::time::sleep(Duration::from_millis(100)).await,
            Err(SettleError::NotOpen(_)) => return Err(closed(uri)),
        }
    }
    Err(Stop::failed(
        "the document kept changing while Tokamak waited for its checkers; run the fix again when you pause",
    ))
}

pub(super) fn closed(uri: &Url) -> Stop {
    Stop::failed(format!("{uri} was closed during the run"))
}

/// [`apply`], with the run marked as having changed the file from the moment the edit is
/// sent: a cancel or a time limit while the editor answers must not report "nothing changed"
/// for an edit that lands anyway.
pub(super) async fn apply_counted(
    context: &FixContext,
    journal: Option<&Journal>,
    run_id: &str,
    base: &DocumentSnapshot,
    edits: &[(TextRange, String)],
    label: &str,
    tally: &Mutex<Tally>,
) -> Result<DocumentSnapshot, Stop> {
    let before = std::mem::replace(&mut lock(tally).changed, true);
    let waits = Arc::clone(&lock(tally).waits);
    // the editor taking the edit and the Observer's syntax check of the new text (a person
    // approving it is not counted)
    let (started, asked) = (std::time::Instant::now(), waits.waited());
    let result = apply(context, journal, (run_id, &waits), base, edits, label).await;
    let person = waits.waited().saturating_sub(asked);
    lock(tally).waited.checks_ms += started.elapsed().saturating_sub(person).as_secs_f64() * 1000.0;
    if result.is_err() {
        lock(tally).changed = before;
    }
    result
}

/// Makes `edits` (in bytes of `base`) in the document through the editor, moved onto the
/// user's newer text if they typed meanwhile; never forced. With an approver, the person
/// sees the diff first; a rejection ends the run with their reason.
async fn apply(
    context: &FixContext,
    journal: Option<&Journal>,
    (run_id, waits): (&str, &crate::executor::WaitClock),
    base: &DocumentSnapshot,
    edits: &[(TextRange, String)],
    label: &str,
) -> Result<DocumentSnapshot, Stop> {
    if let Some(approver) = &context.approver {
        let path = display_path(context.root.as_deref(), &base.uri);
        let before = base.rope.to_string();
        let after = crate::edit::apply_edits(&before, edits).unwrap_or_else(|| before.clone());
        let request = crate::executor::Request::Change {
            action: "fix".to_string(),
            summary: format!("fix {path}"),
            diff: crate::executor::unified_diff(&path, Some(&before), Some(&after)),
            file: Some(crate::executor::ChangedFile { path, before: Some(before), after: Some(after) }),
        };
        match waits.time(approver.decide(run_id, &request)).await {
            crate::executor::Decision::Approve => {}
            crate::executor::Decision::Reject(reason) | crate::executor::Decision::Refuse(reason) => {
                let stop = Stop::new(ExitReason::Cancelled, format!("the fix was not applied: {reason}"));
                return Err(Stop { rejected: true, ..stop });
            }
        }
    }
    if let Some(journal) = journal {
        let relative = display_path(context.root.as_deref(), &base.uri);
        journal.before_change(&[relative.as_str()]).await;
    }
    apply_to_document(&context.observer, context.editor.as_ref(), base, edits, label).await.map_err(|err| {
        match err {
            DocumentEditError::Conflict => Stop::failed(format!("{err}; run the fix again")),
            DocumentEditError::Closed(uri) => closed(&uri),
            other => Stop::failed(other.to_string()),
        }
    })
}

/// The run's confidence in the document (100 at the start).
pub(super) fn confidence(tally: &Mutex<Tally>) -> i32 {
    (100 - lock(tally).doubt).max(0)
}

/// Lowers the run's confidence in the document by `cost`, audited.
pub(super) fn doubt(journal: Option<&Journal>, tally: &Mutex<Tally>, path: &str, cost: i32, why: &str) {
    let (from, to) = {
        let mut tally = lock(tally);
        let from = (100 - tally.doubt).max(0);
        tally.doubt += cost;
        (from, (100 - tally.doubt).max(0))
    };
    if let Some(journal) = journal {
        journal.record("confidence", serde_json::json!({"file": path, "from": from, "to": to, "why": why}));
    }
}

/// The document as its owner has it now, when that is not the text the attempt's prompt
/// showed (`shown`): its snapshot, and how far it drifted, with what changed.
pub(super) async fn drifted(
    context: &FixContext,
    uri: &Url,
    shown: &DocumentSnapshot,
    path: &str,
) -> Result<Option<(DocumentSnapshot, Drift, String)>, Stop> {
    crate::executor::catch_up(&context.observer, context.editor.as_ref(), uri).await.map_err(
        |err| match err {
            DocumentEditError::Closed(uri) => closed(&uri),
            other => Stop::failed(other.to_string()),
        },
    )?;
    let now = context.observer.snapshot(uri).ok_or_else(|| closed(uri))?;
    if now.rope == shown.rope {
        return Ok(None);
    }
    let file = Path::new(path);
    let (before, after) = (shown.rope.to_string(), now.rope.to_string());
    let (drift, what) =
        Fingerprint::of(file, &before, false).drift(Some(&Fingerprint::of(file, &after, false)));
    Ok(Some((now, drift, what)))
}

/// A drift found: audited, said in the progress and the ending, and charged to the run's
/// confidence in the file.
pub(super) async fn note_drift(
    context: &FixContext,
    run: &RunHandle,
    journal: Option<&Journal>,
    tally: &Mutex<Tally>,
    (path, drift, what): (&str, Drift, &str),
    how: &str,
) {
    if let Some(journal) = journal {
        journal.record(
            "drift",
            serde_json::json!({"file": path, "severity": drift.as_str(), "what": what, "how": how}),
        );
    }
    let line = format!("{path}: {} drift ({what}); {how}", drift.as_str());
    report(context, run, format!("{path} changed under the run: {how}"), None).await;
    lock(tally).drift.push(line);
    doubt(journal, tally, path, drift.cost(), &format!("changed under the run: {what}"));
}

/// Under [`ASK_BELOW`], whoever approves is asked whether the run goes on changing the
/// file; nobody to ask, or a no, stops it.
pub(super) async fn go_on(
    context: &FixContext,
    run: &RunHandle,
    tally: &Mutex<Tally>,
    path: &str,
) -> Result<(), Stop> {
    let score = confidence(tally);
    let unsure = |why: String| {
        Stop::new(
            ExitReason::Unsure,
            format!("Tokamak's confidence in {path} fell to {score} and the run did not go on: {why}"),
        )
    };
    let Some(approver) = &context.approver else {
        return Err(unsure("fixes that did not apply, or the file changing under it".to_string()));
    };
    let request = crate::executor::Request::Look {
        action: GO_ON.to_string(),
        summary: format!("go on fixing {path}, though Tokamak's confidence in it is {score}"),
    };
    let waits = Arc::clone(&lock(tally).waits);
    match waits.time(approver.decide(&run.run_id, &request)).await {
        crate::executor::Decision::Approve => {
            let mut tally = lock(tally);
            tally.doubt = tally.doubt.min(100 - (REREAD_BELOW - 20));
            Ok(())
        }
        crate::executor::Decision::Reject(why) | crate::executor::Decision::Refuse(why) => Err(unsure(why)),
    }
}
