//! `tokamak fix PATH…`: the fix loop without an editor — the same engine, with files read
//! from disk and written back atomically (only over the text the run read), progress on
//! stderr and the unified diff of what changed on stdout.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;
use url::Url;

use super::Headless;
use super::stdio::errln;
use crate::agent::{self, ExitReason, FixRequest, Runs, Scope, Tokens};
use crate::config::find_root;
use crate::executor::RefuseUnlisted;
use crate::session::{FrontEnd, Options, Session};
use crate::workspace::{read_text, source_files};

#[derive(Debug, Clone, Default)]
pub struct FixOptions {
    /// Overrides `fix.max_attempts`.
    pub max_attempts: Option<u32>,
    /// Overrides `fix.candidates` (verified by `[test] command`; at most 5).
    pub candidates: Option<u32>,
    /// Change nothing on disk; print what would change.
    pub dry_run: bool,
    /// Print progress lines on stderr.
    pub progress: bool,
    /// Overrides which checkers run (as for `tokamak check --checkers`).
    pub checkers: Option<Vec<String>>,
    /// `[model]` settings laid over `tokamak.toml`'s (`null`: none).
    pub model: serde_json::Value,
    /// Trust the workspace (or not) whatever the user's settings file says.
    pub trusted: Option<bool>,
}

/// One file's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct FileResult {
    pub path: String,
    pub exit_reason: ExitReason,
    pub summary: String,
    pub attempts: u32,
    pub deterministic_fixes: u32,
    pub tokens: Tokens,
    /// Problems the run aimed at when it started (0: nothing to fix).
    pub targets: usize,
    /// Whether the file's text changed (on disk, unless a dry run).
    pub changed: bool,
    /// The unified diff of the change (empty when nothing changed).
    pub diff: String,
    /// Each candidate fix tried (none when one fix was asked for at a time).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub candidates: Vec<crate::run::CandidateReport>,
    /// What the run leaves undone (errors, failing tests, tests that could not run).
    #[serde(skip_serializing_if = "crate::run::Left::is_empty")]
    pub left: crate::run::Left,
    /// A run stopped before its end: the model's wrap-up, or why there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wrap_up: Option<crate::run::WrapUp>,
    #[serde(skip)]
    pub wall: std::time::Duration,
    #[serde(skip)]
    pub final_text: String,
}

/// Fixes every source file under `paths`, one after another.
pub async fn fix(paths: &[PathBuf], options: &FixOptions) -> anyhow::Result<Vec<FileResult>> {
    let files = source_files(paths)?;
    let root = find_root(paths.first().map_or(Path::new("."), PathBuf::as_path));
    let root = std::path::absolute(&root)?;
    let mut overrides = serde_json::json!({});
    if !options.model.is_null() {
        overrides["model"] = options.model.clone();
    }
    if let Some(trusted) = options.trusted {
        overrides["trusted"] = serde_json::Value::Bool(trusted);
    }
    let loaded = super::load_settings(&root, overrides)?;
    let mut settings = loaded.settings;
    if let Some(max) = options.max_attempts {
        settings.fix.max_attempts = max;
    }
    if let Some(count) = options.candidates {
        settings.fix.candidates = count.clamp(1, crate::config::MAX_CANDIDATES);
    }
    if let Some(names) = &options.checkers {
        settings.checkers.enable = Some(names.clone());
    }
    let front = FrontEnd {
        editor: Arc::new(Headless::new(Some(&root), options.dry_run, options.progress)),
        // `tokamak fix` is the user's own command on the files named (`--dry-run` to look first)
        approver: Arc::new(RefuseUnlisted),
    };
    // a dry run changes nothing, so there is nothing to undo
    let session_options =
        Options { history: !options.dry_run, agent: false, workspace: None, watch: false, mcp: Vec::new() };
    let session = super::session::checked(Session::build(
        Some(root.clone()),
        settings,
        loaded.trust,
        front,
        session_options,
    ))?;
    let observer = Arc::clone(&session.observer);
    let context = session.fix_context(None);
    let runs = Runs::default();
    let mut results = Vec::new();
    for path in files {
        let text = match read_text(&path) {
            Ok(text) => text,
            Err(err) => {
                errln!("{}: not fixed: {err}", path.display());
                continue;
            }
        };
        let absolute = std::path::absolute(&path)?;
        let uri = Url::from_file_path(&absolute)
            .map_err(|()| anyhow::anyhow!("cannot make a file URI of {}", absolute.display()))?;
        let started = std::time::Instant::now();
        observer.open(uri.clone(), "", 0, &text).await;
        let handle = runs.start(&uri)?;
        let mut report =
            agent::fix(&context, &FixRequest { uri: uri.clone(), scope: Scope::File }, handle).await;
        if options.dry_run {
            // nothing was kept: the edits went nowhere
            let summary = report.summary.replace("; the edits already made are kept", "");
            report.summary = format!("{} (a dry run: nothing was written).", summary.trim_end_matches('.'));
        }
        let final_text = observer.snapshot(&uri).map(|s| s.rope.to_string()).unwrap_or_else(|| text.clone());
        observer.close(&uri).await;
        let shown = agent::display_path(Some(&root), &uri);
        let diff = similar::TextDiff::from_lines(&text, &final_text)
            .unified_diff()
            .context_radius(3)
            .header(
                &format!("a/{}", shown.trim_start_matches('/')),
                &format!("b/{}", shown.trim_start_matches('/')),
            )
            .to_string();
        results.push(FileResult {
            path: shown,
            exit_reason: report.exit_reason,
            summary: report.summary,
            attempts: report.attempts,
            deterministic_fixes: report.deterministic_fixes,
            tokens: report.tokens,
            targets: report.targets_before,
            changed: final_text != text,
            diff,
            candidates: report.candidates,
            left: report.left,
            wrap_up: report.wrap_up,
            wall: started.elapsed(),
            final_text,
        });
    }
    // the old runs' pruning is not cut off by the exit
    if let Some(history) = &session.history {
        history.settle(std::time::Duration::from_secs(60)).await;
    }
    Ok(results)
}
