//! Rolling a run back (SPEC K2): the files it changed get the text they had before it — open
//! documents through the editor (so the user can undo the rollback), other files atomically
//! on disk; files it created are deleted and files it deleted come back. Refused, naming the
//! files, when any of them changed after the run, or when one it touched cannot be restored
//! (its checkpoint could not hold it, it is outside what may be written), before anything is
//! changed — unless forced. A run killed before its end (its checkpoint has only "before")
//! is rolled back too: its end is taken as now, and only the files its audit log says it was
//! about to change are restored; the others that differ are named and left alone. The
//! rollback is a run of its own, checkpointed like any other, so it can be rolled back too.

use std::sync::Arc;

use serde::Serialize;
use url::Url;

use super::change::write_new_bytes;
use super::{Access, ExecutorContext, apply_to_document};
use crate::edit::minimal_edits;
use crate::editor::{EditOutcome, FileOperation};
use crate::history::{CheckpointInfo, FileChange};
use crate::run::{ExitReason, RunReport};
use crate::workspace::write_bytes_if_unchanged;

#[derive(Debug, thiserror::Error)]
pub enum RollbackError {
    #[error("{0}")]
    Unavailable(String),
    #[error(
        "{} changed after the run, so nothing was rolled back; roll back with force to overwrite those changes",
        .0.join(", ")
    )]
    ChangedSince(Vec<String>),
    #[error(
        "nothing was rolled back: {}; roll back with force to restore the rest",
        .0.iter().map(|(file, why)| format!("{file} cannot be restored ({why})")).collect::<Vec<_>>().join("; ")
    )]
    CannotRestore(Vec<(String, String)>),
}

/// What a rollback did.
#[derive(Debug, Clone, Serialize)]
pub struct RollbackReport {
    /// The run rolled back, by its run id.
    pub checkpoint: String,
    /// The rollback's own run (and checkpoint, to undo it).
    pub run_id: String,
    pub restored: Vec<String>,
    /// Files that could not be restored, with why.
    pub failed: Vec<(String, String)>,
    /// Files left as they are, with why: changed since a killed run's checkpoint, but not by
    /// the run.
    pub left: Vec<(String, String)>,
}

impl RollbackReport {
    /// What it did, a line a file, then how to undo it: `undo` is the command that takes a
    /// checkpoint id (`tokamak rollback `, `/rollback `).
    pub fn describe(&self, undo: &str) -> String {
        let mut text = String::new();
        for file in &self.restored {
            text.push_str(&format!("restored {file}\n"));
        }
        for (file, reason) in &self.failed {
            text.push_str(&format!("not restored {file}: {reason}\n"));
        }
        for (file, reason) in &self.left {
            text.push_str(&format!("left as it is {file}: {reason}\n"));
        }
        text.push_str(&format!(
            "Rolled back {} ({} file(s)); undo this with: {undo}{}\n",
            self.checkpoint,
            self.restored.len(),
            self.run_id
        ));
        text
    }
}

/// Rolls back the run of `wanted` (a checkpoint id or a run id) as run `run_id`.
pub async fn rollback(
    context: &ExecutorContext,
    wanted: &str,
    force: bool,
    run_id: &str,
) -> Result<RollbackReport, RollbackError> {
    let history = context.history.clone().ok_or_else(|| {
        RollbackError::Unavailable("there is no workspace folder, so there are no checkpoints".into())
    })?;
    let checkpoints = history.checkpoints().await.map_err(RollbackError::Unavailable)?;
    let found: CheckpointInfo =
        checkpoints.find(wanted).await.map_err(|err| RollbackError::Unavailable(err.to_string()))?;
    // the folder's lock for the whole rollback: no run starts under it, and a run still going
    // (the one asked for — then no killed run, though its checkpoint has not ended — or another)
    // is not undone under its feet
    let _folder = crate::history::FolderLock::take(history.root(), run_id).map_err(|refused| {
        let going = format!("({}, process", found.run_id);
        RollbackError::Unavailable(match refused.find(&going) {
            Some(at) => {
                let holder = refused[at + 1..].split(')').next().unwrap_or_default();
                format!(
                    "the run {} is still going ({holder}); stop it first, then roll it back",
                    found.run_id
                )
            }
            None => refused,
        })
    })?;
    // read again under the lock: the run may have ended since
    let mut info: CheckpointInfo =
        checkpoints.find(wanted).await.map_err(|err| RollbackError::Unavailable(err.to_string()))?;
    let log = history.touched(&info.run_id);
    // killed before its end: its checkpoint has no "after" yet — or got one from an earlier
    // rollback of it, which its log (no `exit`) still tells
    let killed = !info.complete || log.as_ref().is_some_and(|(_, ended)| !ended);
    if !info.complete {
        info = history.end_killed_run(&info, &context.observer).await.map_err(|reason| {
            RollbackError::Unavailable(format!("the killed run's checkpoint cannot be ended: {reason}"))
        })?;
    }
    let touched = log.map(|(touched, _)| touched);
    let mut changes =
        checkpoints.changes(&info).await.map_err(|err| RollbackError::Unavailable(err.to_string()))?;
    let mut left = Vec::new();
    if killed {
        // what differs now is the run's only where its log says it was about to change it
        let touched = touched.clone().unwrap_or_default();
        let (runs, others): (Vec<FileChange>, Vec<FileChange>) =
            changes.into_iter().partition(|change| touched.contains(&change.relative));
        changes = runs;
        left = others
            .into_iter()
            .map(|change| {
                (change.relative, "changed since the killed run's checkpoint, but not by the run".to_string())
            })
            .collect();
    }
    // what cannot be restored is said before anything changes
    let mut cannot: Vec<(String, String)> = changes
        .iter()
        .filter_map(|change| restorable(context, change).err().map(|why| (change.relative.clone(), why)))
        .collect();
    for relative in touched.iter().flatten() {
        let path = context.confinement.root().join(relative);
        if !changes.iter().any(|c| &c.relative == relative) && path.exists() && !checkpoints.can_hold(&path) {
            cannot.push((
                relative.clone(),
                "its checkpoint could not hold it (too large, binary or not in the snapshot)".to_string(),
            ));
        }
    }
    if !cannot.is_empty() && !force {
        return Err(RollbackError::CannotRestore(cannot));
    }

    let changed_since: Vec<String> = changes
        .iter()
        .filter(|change| current(context, change) != change.after)
        .map(|c| c.relative.clone())
        .collect();
    if !changed_since.is_empty() && !force {
        return Err(RollbackError::ChangedSince(changed_since));
    }

    let goal = format!("roll back {} ({})", info.id, info.goal);
    let journal = history.journal(run_id, &goal, Arc::clone(&context.observer));
    let paths: Vec<&str> = changes.iter().map(|c| c.relative.as_str()).collect();
    journal.before_change(&paths).await;
    let mut restored = Vec::new();
    let skipped: Vec<String> = cannot.iter().map(|(file, _)| file.clone()).collect();
    let mut failed = cannot;
    for change in changes.iter().filter(|change| !skipped.contains(&change.relative)) {
        match restore(context, change).await {
            Ok(()) => restored.push(change.relative.clone()),
            Err(reason) => failed.push((change.relative.clone(), reason)),
        }
    }
    // a run is named by its run id everywhere (its checkpoint's hex id is accepted, not said)
    let summary = if failed.is_empty() {
        format!("Rolled back {}: {} file(s) restored.", info.run_id, restored.len())
    } else {
        format!(
            "Rolled back {} in part: {} file(s) restored, {} not.",
            info.run_id,
            restored.len(),
            failed.len()
        )
    };
    let root_uri = Url::from_directory_path(context.confinement.root())
        .map_err(|()| RollbackError::Unavailable("the workspace root is not an absolute path".to_string()))?;
    let report = RunReport {
        exit_reason: if failed.is_empty() { ExitReason::Clean } else { ExitReason::Failed },
        files_changed: restored
            .iter()
            .filter_map(|r| Url::from_file_path(context.confinement.root().join(r)).ok())
            .collect(),
        ..RunReport::failed(run_id.to_string(), root_uri, summary)
    };
    journal.finish(&report).await;
    Ok(RollbackReport { checkpoint: info.run_id, run_id: run_id.to_string(), restored, failed, left })
}

/// Whether `change` can be restored at all (checked before anything is changed).
fn restorable(context: &ExecutorContext, change: &FileChange) -> Result<(), String> {
    let confined =
        context.confinement.resolve(&change.relative, Access::Write).map_err(|refused| refused.0)?;
    let open = Url::from_file_path(&confined.path).ok().and_then(|uri| context.observer.snapshot(&uri));
    if open.is_some()
        && let Some(before) = &change.before
        && std::str::from_utf8(before).is_err()
    {
        return Err("it is open in the editor and its content before the run is not text".to_string());
    }
    Ok(())
}

/// A file's content now: the open document's text, else the disk's (`None`: absent).
fn current(context: &ExecutorContext, change: &FileChange) -> Option<Vec<u8>> {
    let path = context.confinement.root().join(&change.relative);
    if let Some(snapshot) = Url::from_file_path(&path).ok().and_then(|uri| context.observer.snapshot(&uri)) {
        return Some(snapshot.rope.to_string().into_bytes());
    }
    std::fs::read(&path).ok()
}

async fn restore(context: &ExecutorContext, change: &FileChange) -> Result<(), String> {
    let confined =
        context.confinement.resolve(&change.relative, Access::Write).map_err(|refused| refused.0)?;
    let uri = Url::from_file_path(&confined.path).map_err(|()| "not a file path".to_string())?;
    let now = current(context, change);
    match (&change.before, now) {
        (None, None) => Ok(()),
        // the run created it: delete it
        (None, Some(_)) => {
            let operation = FileOperation::Delete { uri };
            if context.editor.makes_file_operation(&operation) {
                match context.editor.file_operation(&operation).await {
                    EditOutcome::Applied { .. } => return Ok(()),
                    EditOutcome::Rejected(reason) => {
                        return Err(format!("the editor refused to delete it: {reason}"));
                    }
                }
            }
            std::fs::remove_file(&confined.path).map_err(|err| format!("cannot delete it: {err}"))
        }
        // the run deleted it: bring it back
        (Some(before), None) => {
            if let Some(parent) = confined.path.parent() {
                std::fs::create_dir_all(parent).map_err(|err| format!("cannot make its folder: {err}"))?;
            }
            write_new_bytes(&confined.path, before).map_err(|err| format!("cannot write it: {err}"))
        }
        (Some(before), Some(now)) if &now == before => Ok(()),
        (Some(before), Some(now)) => {
            if let Some(snapshot) = context.observer.snapshot(&uri) {
                let before_text =
                    String::from_utf8(before.clone()).map_err(|_| "it is not UTF-8 text".to_string())?;
                let current_text = snapshot.rope.to_string();
                let edits = minimal_edits(&current_text, &before_text);
                apply_to_document(
                    &context.observer,
                    context.editor.as_ref(),
                    &snapshot,
                    &edits,
                    "Tokamak: roll back",
                )
                .await
                .map(|_| ())
                .map_err(|err| err.to_string())
            } else {
                write_bytes_if_unchanged(&confined.path, Some(context.confinement.root()), &now, before)
                    .map_err(|err| err.to_string())
            }
        }
    }
}
