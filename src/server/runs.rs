//! Agent runs over LSP: `tokamak.fix` starts one on its own task, `tokamak.cancel` and the
//! editor's progress UI (`window/workDoneProgress/cancel`) stop them.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};
use tower_lsp_server::jsonrpc::{Error, Result};
use tower_lsp_server::ls_types::{self as lsp, NumberOrString, WorkDoneProgressCancelParams};
use url::Url;

use super::error::Refusal;
use super::{Backend, convert};
use crate::agent::{self, FixRequest, RunHandle, Scope};
use crate::editor::{Editor, MessageLevel};
use crate::text::{TextRange, line_col_to_offset};

pub const CANCEL_PROGRESS: &str = "window/workDoneProgress/cancel";

#[derive(Deserialize)]
pub struct FixArgs {
    uri: Url,
    /// Fix the diagnostics overlapping this range.
    range: Option<lsp::Range>,
    /// Fix exactly these (from any source).
    diagnostics: Option<Vec<lsp::Diagnostic>>,
}

/// `tokamak.fix {uri, range?, diagnostics?}`: starts a fix run and answers `{run_id}` at
/// once; the run reports through `$/progress`, `tokamak/runFinished` and
/// `window/showMessage`. A run already going on the document is an error that says so.
pub async fn fix(backend: &Backend, args: FixArgs) -> Result<Value> {
    let session = backend.session().ok_or_else(Error::internal_error)?;
    let snapshot = backend.workspace().snapshot(&args.uri).ok_or_else(|| {
        Error::invalid_params(format!("{} is not open; open it before fixing it", args.uri))
    })?;
    let encoding = backend.encoding();
    let scope = match (args.diagnostics, args.range) {
        (Some(diagnostics), _) if !diagnostics.is_empty() => Scope::Diagnostics(
            diagnostics.iter().map(|d| convert::diagnostic_from_lsp(&snapshot.rope, d, encoding)).collect(),
        ),
        (_, Some(range)) => {
            let start = line_col_to_offset(&snapshot.rope, convert::line_col(range.start), encoding).offset;
            let end = line_col_to_offset(&snapshot.rope, convert::line_col(range.end), encoding).offset;
            Scope::Range(TextRange::new(start.min(end), start.max(end)))
        }
        _ => Scope::File,
    };
    let handle = start(backend, &args.uri).await?;
    let models = crate::sync::lock(&backend.models).clone();
    let context = session.fix_context_with(&models, crate::session::fix_approver(session.executor.as_ref()));
    let run_id = handle.run_id.clone();
    let request = FixRequest { uri: args.uri, scope };
    tracing::info!("{run_id}: fixing {} ({:?})", request.uri, request.scope);
    let (editor, uri) = (Arc::clone(&context.editor), request.uri.clone());
    let summary = "Tokamak stopped on an internal error; nothing more was changed (see the log).";
    let runs = backend.runs.clone();
    crate::session::spawn_run(editor, run_id.clone(), uri, summary, async move {
        let report = agent::fix(&context, &request, handle).await;
        runs.ended(&report);
    });
    Ok(json!({"run_id": run_id}))
}

/// Registers a run on `uri` (a document, or the workspace's root for a task or a rollback);
/// another run already there is refused as busy (LSP's `RequestFailed`), and the user told.
pub async fn start(backend: &Backend, uri: &Url) -> Result<RunHandle> {
    match backend.runs.start(uri) {
        Ok(handle) => Ok(handle),
        Err(busy) => {
            let message = format!("Tokamak: {busy}");
            backend.editor().show_message(MessageLevel::Warning, message.clone()).await;
            Err(Refusal::Busy(message).into())
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub struct CancelArgs {
    run_id: Option<String>,
}

/// `tokamak.cancel {run_id?}`: cancels one run, or all. Answers `{cancelled: [run_id…]}`.
pub fn cancel(backend: &Backend, args: Option<CancelArgs>) -> Value {
    let args = args.unwrap_or_default();
    let cancelled = backend.runs.cancel(args.run_id.as_deref());
    json!({"cancelled": cancelled})
}

/// The runs going on, for `tokamak.status`.
pub fn list(backend: &Backend) -> Value {
    let runs: Vec<Value> = backend
        .runs
        .list()
        .into_iter()
        .map(|(run_id, uri, audit)| {
            let mode = backend.runs.mode(&run_id);
            let confidence: Vec<Value> = backend
                .runs
                .confidence(&run_id)
                .into_iter()
                .map(|(file, score, why)| json!({"file": file, "confidence": score, "why": why}))
                .collect();
            json!({"run_id": run_id, "uri": uri, "audit_log": audit, "mode": mode, "confidence": confidence})
        })
        .collect();
    Value::Array(runs)
}

/// The user pressed cancel on a run's progress in the editor (the token is the run id).
pub async fn work_done_progress_cancel(backend: &Backend, params: WorkDoneProgressCancelParams) {
    let run_id = match params.token {
        NumberOrString::String(id) => id,
        NumberOrString::Number(n) => n.to_string(),
    };
    let cancelled = backend.runs.cancel(Some(&run_id));
    tracing::info!("progress cancel for {run_id}: {} run(s) cancelled", cancelled.len());
}
