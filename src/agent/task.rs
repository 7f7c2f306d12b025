//! A task run: a goal in words, carried out through the executor by one tool-using loop
//! (`act.rs`), with the run's checkpoint and audit log, progress, a cancel and a wall-time
//! limit, and a report at the end. The same for the server (`tokamak.run`) and the command
//! line (`tokamak run`).

use std::sync::Arc;
use std::time::Duration;

use url::Url;

use super::act::{ActOutcome, ActRequest, act};
use super::report::{ExitReason, RunReport, Tokens};
use super::runs::RunHandle;
use crate::config::LimitSettings;
use crate::editor::Progress;
use crate::executor::{Executor, ExecutorContext};
use crate::model::{Model, ModelError};

/// The instructions a task run's model gets.
pub const SYSTEM: &str = "You are Tokamak, a careful coding agent working inside the user's project. \
Look before you change: list, search and read the files the goal concerns. Change only what the goal needs, \
with small SEARCH/REPLACE edits that copy the file's lines exactly. Run the project's tests when there are any. \
When the goal is reached, or cannot be, say so with the done action.";

/// What task runs work with.
pub struct TaskContext {
    pub executor: Arc<ExecutorContext>,
    /// The model, or why there is none.
    pub model: Result<Arc<dyn Model>, ModelError>,
    pub limits: LimitSettings,
}

/// Runs one task to its end and reports it (also to the editor).
pub async fn run_task(context: &TaskContext, goal: &str, run: RunHandle) -> RunReport {
    let executor_context = &context.executor;
    let observer = Arc::clone(&executor_context.observer);
    let journal = executor_context.history.as_ref().map(|h| h.journal(&run.run_id, goal, observer));
    if let Some(path) = journal.as_ref().and_then(|j| j.audit_path()) {
        run.set_audit(path);
    }
    let editor = Arc::clone(&executor_context.editor);
    let title: String = goal.chars().take(60).collect();
    editor
        .progress(
            &run.run_id,
            Progress::Begin { title: format!("Tokamak: {title}"), message: "starting".into() },
        )
        .await;
    let executor =
        Executor::new(Arc::clone(executor_context), &run.run_id, journal.clone(), run.cancel.clone());
    executor.record("phase", serde_json::json!({"from": "idle", "to": "executing"}));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(context.limits.wall_time_s.max(1));
    let outcome = match &context.model {
        Err(err) => ActOutcome {
            exit_reason: ExitReason::Failed,
            summary: format!("no model could be used: {err}"),
            tokens: Tokens::default(),
            turns: 0,
        },
        Ok(model) => {
            let context_text = workspace_context(executor_context);
            let request = ActRequest {
                system: SYSTEM,
                goal,
                context: &context_text,
                max_tokens: context.limits.tokens,
            };
            let progress_editor = Arc::clone(&editor);
            let run_id = run.run_id.clone();
            let report = move |line: String| {
                let editor = Arc::clone(&progress_editor);
                let run_id = run_id.clone();
                tokio::spawn(async move {
                    editor.progress(&run_id, Progress::Report { message: line, percentage: None }).await;
                });
            };
            tokio::select! {
                outcome = act(&executor, model.as_ref(), &request, &run.cancel, &report) => outcome,
                () = run.cancel.cancelled() => ActOutcome {
                    exit_reason: ExitReason::Cancelled,
                    summary: "Cancelled".into(),
                    tokens: Tokens::default(),
                    turns: 0,
                },
                () = tokio::time::sleep_until(deadline) => ActOutcome {
                    exit_reason: ExitReason::TimeLimit,
                    summary: format!("stopped at the time limit of {} s (limits.wall_time_s)", context.limits.wall_time_s),
                    tokens: Tokens::default(),
                    turns: 0,
                },
            }
        }
    };
    let changed = executor.changed_files();
    let root = executor_context.confinement.root();
    let mut summary = outcome.summary.trim().to_string();
    if !summary.ends_with('.') {
        summary.push('.');
    }
    if !changed.is_empty() {
        summary.push_str(&format!(" Changed: {}.", changed.join(", ")));
        if let Some(id) = journal.as_ref().and_then(|j| j.checkpoint_id()) {
            summary.push_str(&format!(" Undo with tokamak rollback {id}."));
        }
    }
    let report = RunReport {
        run_id: run.run_id.clone(),
        uri: Url::from_directory_path(root).unwrap_or_else(|()| placeholder()),
        exit_reason: outcome.exit_reason,
        summary,
        files_changed: changed.iter().filter_map(|r| Url::from_file_path(root.join(r)).ok()).collect(),
        tokens: outcome.tokens,
        attempts: outcome.turns,
        deterministic_fixes: 0,
        targets_before: 0,
        targets_after: 0,
    };
    tracing::info!("{}: {} — {}", run.run_id, report.exit_reason, report.summary);
    let last = if report.exit_reason == ExitReason::Done { "done" } else { "failed" };
    executor.record("phase", serde_json::json!({"from": "executing", "to": last}));
    if let Some(journal) = &journal {
        journal.finish(&report).await;
    }
    editor.progress(&run.run_id, Progress::End { message: report.summary.clone() }).await;
    drop(run);
    editor.run_finished(&report).await;
    report
}

fn placeholder() -> Url {
    // unreachable in practice: the root is an absolute path
    Url::parse("file:///").expect("a constant URL parses")
}

/// What the model is told about the workspace up front: its name and top-level entries.
fn workspace_context(context: &ExecutorContext) -> String {
    let root = context.confinement.root();
    let mut entries: Vec<String> = std::fs::read_dir(root)
        .map(|read| {
            read.flatten()
                .filter(|e| e.file_name() != ".git")
                .map(|e| {
                    let name = e.file_name().to_string_lossy().to_string();
                    if e.file_type().is_ok_and(|t| t.is_dir()) { format!("{name}/") } else { name }
                })
                .collect()
        })
        .unwrap_or_default();
    entries.sort();
    let shown: Vec<&str> = entries.iter().take(60).map(String::as_str).collect();
    format!(
        "The workspace is {} ({} entries at its root: {}{}).",
        root.file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_else(|| root.display().to_string()),
        entries.len(),
        shown.join(", "),
        if entries.len() > shown.len() { ", …" } else { "" }
    )
}
