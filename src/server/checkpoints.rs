//! `tokamak.checkpoints` and `tokamak.rollback`: the runs that can be undone, and undoing one.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};
use tower_lsp_server::jsonrpc::{Error, Result};
use url::Url;

use super::Backend;
use super::error::Refusal;
use crate::agent::{ExitReason, RunReport};
use crate::editor::Progress;
use crate::executor::RollbackError;

#[derive(Deserialize, Default)]
#[serde(default)]
pub struct CheckpointsArgs {
    /// Only the runs that changed this file.
    uri: Option<Url>,
}

/// `tokamak.checkpoints {uri?}`: `[{id, run_id, time, goal, files, complete}]`, newest first.
pub async fn checkpoints(backend: &Backend, args: Option<CheckpointsArgs>) -> Result<Value> {
    let args = args.unwrap_or_default();
    let history = backend.history().ok_or_else(|| no_workspace("Checkpoints need"))?;
    let checkpoints =
        history.checkpoints().await.map_err(|reason| server_error(format!("no checkpoints: {reason}")))?;
    let mut list = checkpoints.list().await.map_err(|err| server_error(err.to_string()))?;
    if let Some(uri) = args.uri {
        let path = uri.to_file_path().map_err(|()| Error::invalid_params(format!("{uri} is not a file")))?;
        let root = history.root().to_path_buf();
        let path = std::fs::canonicalize(&path).unwrap_or(path);
        let relative = path.strip_prefix(&root).map(|p| p.to_string_lossy().to_string()).unwrap_or_default();
        list.retain(|checkpoint| checkpoint.files.contains(&relative));
    }
    serde_json::to_value(list).map_err(|err| server_error(err.to_string()))
}

/// `{checkpoint?, force?}`, or the checkpoint alone as a string (Helix's
/// `:lsp-workspace-command tokamak.rollback "…"`); without a checkpoint, the latest run's.
#[derive(Deserialize, Default)]
#[serde(from = "RollbackForm")]
pub struct RollbackArgs {
    /// A checkpoint id (or a prefix of it) or a run id.
    checkpoint: Option<String>,
    /// Roll back even files changed after the run.
    force: bool,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RollbackForm {
    Checkpoint(String),
    Full {
        checkpoint: Option<String>,
        #[serde(default)]
        force: bool,
    },
}

impl From<RollbackForm> for RollbackArgs {
    fn from(form: RollbackForm) -> Self {
        match form {
            RollbackForm::Checkpoint(id) => RollbackArgs { checkpoint: Some(id), force: false },
            RollbackForm::Full { checkpoint, force } => RollbackArgs { checkpoint, force },
        }
    }
}

/// `tokamak.rollback {checkpoint, force?}`: starts the rollback as a run and answers
/// `{run_id}` at once (it asks the editor to change open documents, which must not hold the
/// message queue); the outcome comes as `tokamak/runFinished` and a message.
pub async fn rollback(backend: &Backend, args: Option<RollbackArgs>) -> Result<Value> {
    let args = args.unwrap_or_default();
    let context = backend.executor_context().ok_or_else(|| no_workspace("A rollback needs"))?;
    let checkpoint = match args.checkpoint {
        Some(id) => id,
        None => {
            let history = backend.history().ok_or_else(|| no_workspace("A rollback needs"))?;
            let checkpoints = history
                .checkpoints()
                .await
                .map_err(|reason| server_error(format!("no checkpoints: {reason}")))?;
            let list = checkpoints.list().await.map_err(|err| server_error(err.to_string()))?;
            list.first()
                .map(|c| c.id.clone())
                .ok_or_else(|| Error::invalid_params("there is no run to roll back in this workspace"))?
        }
    };
    let root = Url::from_directory_path(context.confinement.root())
        .map_err(|()| server_error("the workspace root is not a path".to_string()))?;
    let handle = super::runs::start(backend, &root).await?;
    let run_id = handle.run_id.clone();
    let editor = Arc::clone(&context.editor);
    tokio::spawn(async move {
        let title = format!("Tokamak: rolling back {checkpoint}");
        editor
            .progress(&handle.run_id, Progress::Begin { title, message: "restoring files".to_string() })
            .await;
        let outcome = crate::executor::rollback(&context, &checkpoint, args.force, &handle.run_id).await;
        let report = match outcome {
            Ok(report) => {
                let mut summary = format!(
                    "Rolled back {}: {} file(s) restored ({}).",
                    report.checkpoint,
                    report.restored.len(),
                    report.restored.join(", ")
                );
                for (file, reason) in &report.failed {
                    summary.push_str(&format!(" {file} was not restored: {reason}."));
                }
                for (file, reason) in &report.left {
                    summary.push_str(&format!(" {file} was left as it is: {reason}."));
                }
                RunReport {
                    exit_reason: if report.failed.is_empty() {
                        ExitReason::Clean
                    } else {
                        ExitReason::Failed
                    },
                    files_changed: report
                        .restored
                        .iter()
                        .filter_map(|r| Url::from_file_path(context.confinement.root().join(r)).ok())
                        .collect(),
                    ..RunReport::failed(handle.run_id.clone(), root.clone(), summary)
                }
            }
            Err(
                err @ (RollbackError::ChangedSince(_)
                | RollbackError::Unavailable(_)
                | RollbackError::CannotRestore(_)),
            ) => RunReport::failed(handle.run_id.clone(), root.clone(), err.to_string()),
        };
        editor.progress(&handle.run_id, Progress::End { message: report.summary.clone() }).await;
        drop(handle);
        editor.run_finished(&report).await;
    });
    Ok(json!({"run_id": run_id}))
}

fn no_workspace(what: &str) -> Error {
    Error::invalid_params(format!("{what} a workspace folder, and this session has none"))
}

fn server_error(message: String) -> Error {
    Refusal::Failed(message).into()
}
