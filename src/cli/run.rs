//! `tokamak run "GOAL"`: a task run without an editor — the same engine as `tokamak.run`,
//! acting on the files of the workspace through the executor, with progress on stderr and,
//! at the end, the diff of what changed and the exit reason.

use std::path::Path;

use serde::Serialize;

use super::session::Session;
use crate::agent::{ExitReason, RunReport, Runs, TaskContext, run_task};
use crate::model::{ModelConfig, connect};

#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// `[model]` settings laid over the workspace's.
    pub model: serde_json::Value,
    /// Print progress lines on stderr.
    pub progress: bool,
}

/// What a headless task run did.
#[derive(Debug, Clone, Serialize)]
pub struct RunResult {
    #[serde(flatten)]
    pub report: RunReport,
    /// The unified diff of every file the run changed.
    pub diff: String,
    /// The checkpoint to roll the run back with.
    pub checkpoint: Option<String>,
}

/// Carries out `goal` in the workspace at `root`.
pub async fn run(root: &Path, goal: &str, options: &RunOptions) -> anyhow::Result<RunResult> {
    let mut overrides = serde_json::json!({});
    if !options.model.is_null() {
        overrides["model"] = options.model.clone();
    }
    let session = Session::open(root, overrides, true, options.progress)?;
    let env = |name: &str| std::env::var(name).ok();
    let model = ModelConfig::resolve(
        &session.settings.model,
        &session.settings.profiles,
        Some(crate::agent::FIX_ROLE),
        &env,
    )
    .and_then(connect);
    let context = TaskContext {
        executor: std::sync::Arc::clone(&session.executor),
        model,
        limits: session.settings.limits.clone(),
    };
    let runs = Runs::default();
    let root_uri = url::Url::from_directory_path(&session.root)
        .map_err(|()| anyhow::anyhow!("{} is not an absolute path", session.root.display()))?;
    let handle = runs.start(&root_uri)?;
    let run_id = handle.run_id.clone();
    let report = run_task(&context, goal, handle).await;
    let (diff, checkpoint) = diff_of(&session, &run_id).await;
    Ok(RunResult { report, diff, checkpoint })
}

/// The unified diff of what run `run_id` changed, from its checkpoints.
async fn diff_of(session: &Session, run_id: &str) -> (String, Option<String>) {
    let Ok(checkpoints) = session.history.checkpoints().await else {
        return (String::new(), None);
    };
    let Ok(info) = checkpoints.find(run_id).await else {
        return (String::new(), None);
    };
    let changes = checkpoints.changes(&info).await.unwrap_or_default();
    let mut diff = String::new();
    for change in changes {
        let before = String::from_utf8_lossy(change.before.as_deref().unwrap_or_default()).to_string();
        let after = String::from_utf8_lossy(change.after.as_deref().unwrap_or_default()).to_string();
        let old =
            if change.before.is_some() { format!("a/{}", change.relative) } else { "/dev/null".to_string() };
        let new =
            if change.after.is_some() { format!("b/{}", change.relative) } else { "/dev/null".to_string() };
        diff.push_str(
            &similar::TextDiff::from_lines(&before, &after)
                .unified_diff()
                .context_radius(3)
                .header(&old, &new)
                .to_string(),
        );
    }
    (diff, Some(info.id))
}

/// The exit status for a run's result: 0 when the goal was reached.
pub fn succeeded(result: &RunResult) -> bool {
    result.report.exit_reason == ExitReason::Done
}
