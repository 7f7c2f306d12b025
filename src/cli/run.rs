//! `tokamak plan "GOAL"` and `tokamak run "GOAL"`: the task agent without an editor — the
//! same engine as `tokamak.plan` and `tokamak.run`, acting on the files of the workspace
//! through the executor, with progress and the plan on stderr and, at the end, the diff of
//! what changed and the exit reason. Before each change it asks on a terminal; without one
//! it needs `--yes`. `--dry-run` carries the task out in a copy of the workspace and shows
//! what it would change.

use std::path::Path;

use serde::Serialize;

use super::session::{self, Approval, Session};
use super::stdio::errln;
use crate::agent::{ExitReason, RunReport, Runs, TaskContext, TaskRequest, plan_goal, run_task};
use crate::run::plan::Plan;
use crate::session::new_plan_id;

#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// `[model]` settings laid over the workspace's.
    pub model: serde_json::Value,
    /// Print progress lines on stderr.
    pub progress: bool,
    /// The test command (overrides `[test] command`).
    pub test_command: Option<Vec<String>>,
    /// Change nothing: carry the task out in a copy and show the diff.
    pub dry_run: bool,
    /// Approve every change without asking.
    pub yes: bool,
    /// The role to act in (`--role`); `None`: routed by the goal's words.
    pub role: Option<String>,
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
    pub dry_run: bool,
}

fn overrides(options: &RunOptions) -> serde_json::Value {
    let mut overrides = serde_json::json!({});
    if !options.model.is_null() {
        overrides["model"] = options.model.clone();
    }
    if let Some(command) = &options.test_command {
        overrides["test"] = serde_json::json!({"command": command});
    }
    overrides
}

/// How long a command waits at its end for the summaries its prompts asked for, and for the
/// pruning of old runs.
const SUMMARIES_SETTLE: std::time::Duration = std::time::Duration::from_secs(60);

fn task_context(session: &Session) -> anyhow::Result<TaskContext> {
    session.task_context().ok_or_else(|| anyhow::anyhow!("the agent cannot act on this workspace"))
}

/// Makes a plan for `goal` in the workspace at `root` without carrying it out.
pub async fn plan(root: &Path, goal: &str, options: &RunOptions) -> anyhow::Result<Plan> {
    let session = session::open(root, overrides(options), Approval::Unattended, options.progress, false)?;
    let context = task_context(&session)?;
    let cancel = tokio_util::sync::CancellationToken::new();
    let planned = plan_goal(&context, goal, None, &[], &new_plan_id(), &cancel).await;
    // summaries asked for meanwhile are kept for the next run
    context.executor.summaries.settle(SUMMARIES_SETTLE).await;
    let (plan, _) = planned?;
    Ok(plan)
}

/// Carries out `goal` in the workspace at `root`.
pub async fn run(root: &Path, goal: &str, options: &RunOptions) -> anyhow::Result<RunResult> {
    if options.dry_run {
        return dry_run(root, goal, options).await;
    }
    let approval = if options.yes { Approval::Yes } else { Approval::Ask };
    let session = session::open(root, overrides(options), approval, options.progress, true)?;
    let (report, _) = carry_out(&session, goal, options.role.clone()).await?;
    let (diff, checkpoint) = diff_of(&session, &report.run_id).await;
    Ok(RunResult { report, diff, checkpoint, dry_run: false })
}

/// Carries out `goal` in `copy`, a copy of the project at `project` (a benchmark's task), with
/// that project's trust and without asking: the copy is the run's to change.
pub async fn run_copy(
    copy: &Path,
    project: &Path,
    goal: &str,
    options: &RunOptions,
) -> anyhow::Result<RunResult> {
    let session =
        session::open_copy(copy, Some(project), overrides(options), Approval::Yes, options.progress, false)?;
    let (report, _) = carry_out(&session, goal, options.role.clone()).await?;
    Ok(RunResult { report, diff: String::new(), checkpoint: None, dry_run: false })
}

async fn carry_out(
    session: &Session,
    goal: &str,
    role: Option<String>,
) -> anyhow::Result<(RunReport, Vec<String>)> {
    let context = task_context(session)?;
    let runs = Runs::default();
    let root = session::executor(session)?.confinement.root().to_path_buf();
    let root_uri = url::Url::from_directory_path(&root)
        .map_err(|()| anyhow::anyhow!("{} is not an absolute path", root.display()))?;
    let handle = runs.start(&root_uri)?;
    let request = TaskRequest {
        goal: goal.to_string(),
        plan: None,
        selection: None,
        plan_id: new_plan_id(),
        role,
        conversation: Vec::new(),
        images: Vec::new(),
    };
    let report = run_task(&context, request, handle).await;
    // what goes on after the run is kept: the summaries asked for, the old runs pruned
    context.executor.summaries.settle(SUMMARIES_SETTLE).await;
    if let Some(history) = &session.history {
        history.settle(SUMMARIES_SETTLE).await;
    }
    let changed = report
        .files_changed
        .iter()
        .filter_map(|u| u.to_file_path().ok())
        .filter_map(|p| p.strip_prefix(&root).ok().map(|p| p.to_string_lossy().to_string()))
        .collect();
    Ok((report, changed))
}

/// Carries the task out in a copy of the workspace and shows what it would change there.
async fn dry_run(root: &Path, goal: &str, options: &RunOptions) -> anyhow::Result<RunResult> {
    let root = std::fs::canonicalize(root)?;
    let copy = tempfile::Builder::new().prefix("tokamak-dry-run-").tempdir()?;
    let workspace = copy.path().join(root.file_name().unwrap_or_default());
    copy_workspace(&root, &workspace)?;
    if options.progress {
        errln!(
            "tokamak: a dry run: working in a copy of the workspace; nothing in {} changes",
            root.display()
        );
    }
    // the copy is the project minus the writes: the project's own trust, settings and tests
    let session = session::open_copy(
        &workspace,
        Some(&root),
        overrides(options),
        Approval::Yes,
        options.progress,
        false,
    )?;
    let (mut report, changed) = carry_out(&session, goal, options.role.clone()).await?;
    let mut diff = String::new();
    for file in &changed {
        let before = std::fs::read_to_string(root.join(file)).ok();
        let after = std::fs::read_to_string(workspace.join(file)).ok();
        diff.push_str(&crate::executor::unified_diff(file, before.as_deref(), after.as_deref()));
    }
    report.files_changed =
        changed.iter().filter_map(|f| url::Url::from_file_path(root.join(f)).ok()).collect();
    // the copy's checkpoint is gone with the copy: there is nothing to undo
    let summary = match report.summary.find(" Undo with tokamak rollback") {
        Some(at) => report.summary[..at].to_string(),
        None => report.summary.clone(),
    };
    report.summary = format!("{} (a dry run: nothing was written)", summary.trim_end_matches('.'));
    Ok(RunResult { report, diff, checkpoint: None, dry_run: true })
}

/// Copies a workspace for a dry run: every file but `.git`; dependency folders are linked,
/// not copied.
pub(super) fn copy_workspace(from: &Path, to: &Path) -> std::io::Result<()> {
    use crate::walk::Copied;
    const LINKED: &[&str] = &["node_modules", ".venv", "venv", ".tools", "target"];
    crate::walk::copy(from, to, &|relative, kind| {
        let name = relative.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
        if name == ".git" {
            Copied::Empty // still the root of a project
        } else if kind.is_dir() && LINKED.contains(&name.as_ref()) {
            Copied::Link
        } else {
            Copied::Copy
        }
    })
}

/// The unified diff of what run `run_id` changed, from its checkpoints.
async fn diff_of(session: &Session, run_id: &str) -> (String, Option<String>) {
    let Some(history) = &session.history else {
        return (String::new(), None);
    };
    let Ok(checkpoints) = history.checkpoints().await else {
        return (String::new(), None);
    };
    let Ok(info) = checkpoints.find(run_id).await else {
        return (String::new(), None);
    };
    let changes = checkpoints.changes(&info).await.unwrap_or_default();
    let mut diff = String::new();
    for change in changes {
        let before = change.before.as_deref().map(String::from_utf8_lossy);
        let after = change.after.as_deref().map(String::from_utf8_lossy);
        diff.push_str(&crate::executor::unified_diff(&change.relative, before.as_deref(), after.as_deref()));
    }
    (diff, Some(info.id))
}

/// The exit status for a run's result: 0 when the goal was reached.
pub fn succeeded(result: &RunResult) -> bool {
    result.report.exit_reason == ExitReason::Done
}
