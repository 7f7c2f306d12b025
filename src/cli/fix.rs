//! `tokamak fix PATH…`: the fix loop without an editor — the same engine, with files read
//! from disk and written back atomically (only over the text the run read), progress on
//! stderr and the unified diff of what changed on stdout.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde::Serialize;
use url::Url;

use crate::agent::{self, ExitReason, FixContext, FixRequest, RunReport, Runs, Scope, Tokens};
use crate::config::{Settings, find_root};
use crate::edit::apply_edits;
use crate::editor::{DocumentEdit, EditOutcome, Editor, MessageLevel, Progress};
use crate::model::{ModelConfig, connect};
use crate::observer::checkers::Checkers;
use crate::observer::{Diagnostic, Observer};
use crate::sync::lock;
use crate::workspace::{DocumentSnapshot, Workspace, read_text, source_files, write_if_unchanged};

/// The profile whose model fixes code (`[profiles.coder]`, else `[model]`).
pub const ROLE: &str = "coder";

#[derive(Debug, Clone, Default)]
pub struct FixOptions {
    /// Overrides `fix.max_attempts`.
    pub max_attempts: Option<u32>,
    /// Change nothing on disk; print what would change.
    pub dry_run: bool,
    /// Print progress lines on stderr.
    pub progress: bool,
    /// Overrides which checkers run (as for `tokamak check --checkers`).
    pub checkers: Option<Vec<String>>,
    /// `[model]` settings laid over `tokamak.toml`'s (`null`: none).
    pub model: serde_json::Value,
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
    #[serde(skip)]
    pub wall: std::time::Duration,
    #[serde(skip)]
    pub final_text: String,
}

/// The command line's [`Editor`]: edits go to disk (or nowhere, in a dry run), progress and
/// messages to stderr.
struct Headless {
    dry_run: bool,
    progress: bool,
    messages: Mutex<Vec<String>>,
}

#[async_trait]
impl Editor for Headless {
    async fn publish_diagnostics(&self, _: &DocumentSnapshot, _: Vec<Diagnostic>) {}

    async fn clear_diagnostics(&self, _: &Url) {}

    async fn show_message(&self, _: MessageLevel, message: String) {
        if self.progress {
            eprintln!("tokamak: {message}");
        }
        lock(&self.messages).push(message);
    }

    async fn apply_edit(&self, edit: DocumentEdit<'_>) -> EditOutcome {
        if self.dry_run {
            return EditOutcome::Applied { echoed: false };
        }
        let Some(path) = edit.snapshot.path() else {
            return EditOutcome::Rejected(format!("{} is not a file", edit.snapshot.uri));
        };
        let old = edit.snapshot.rope.to_string();
        let Some(new) = apply_edits(&old, edit.edits) else {
            return EditOutcome::Rejected("an edit fell outside the text".to_string());
        };
        match write_if_unchanged(&path, &old, &new) {
            Ok(()) => EditOutcome::Applied { echoed: false },
            Err(err) => EditOutcome::Rejected(err.to_string()),
        }
    }

    async fn progress(&self, _: &str, progress: Progress) {
        if !self.progress {
            return;
        }
        match progress {
            Progress::Begin { title, .. } => eprintln!("{title}"),
            Progress::Report { message, .. } => eprintln!("  {message}"),
            Progress::End { .. } => {}
        }
    }

    async fn run_finished(&self, _: &RunReport) {}
}

/// Fixes every source file under `paths`, one after another.
pub async fn fix(paths: &[PathBuf], options: &FixOptions) -> anyhow::Result<Vec<FileResult>> {
    let files = source_files(paths)?;
    let root = find_root(paths.first().map_or(Path::new("."), PathBuf::as_path));
    let root = std::path::absolute(&root)?;
    let overrides = match &options.model {
        serde_json::Value::Null => serde_json::Value::Null,
        model => serde_json::json!({ "model": model }),
    };
    let mut settings = Settings::load(Some(&root), overrides)?;
    if let Some(max) = options.max_attempts {
        settings.fix.max_attempts = max;
    }
    if let Some(names) = &options.checkers {
        settings.checkers.enable = Some(names.clone());
    }
    let checkers = Checkers::from_settings(&settings.checkers)?;
    let env = |name: &str| std::env::var(name).ok();
    let model = ModelConfig::resolve(&settings.model, &settings.profiles, Some(ROLE), &env).and_then(connect);
    let editor = Arc::new(Headless {
        dry_run: options.dry_run,
        progress: options.progress,
        messages: Mutex::default(),
    });
    let workspace = Arc::new(Mutex::new(Workspace::new(settings.syntax.clone())));
    let observer =
        Observer::new(workspace, Arc::clone(&editor) as Arc<dyn Editor>, checkers, Some(root.clone()));
    let context = FixContext {
        observer: Arc::clone(&observer),
        editor: editor as Arc<dyn Editor>,
        model,
        settings: settings.fix.clone(),
        root: Some(root.clone()),
    };
    let runs = Runs::default();
    let mut results = Vec::new();
    for path in files {
        let text = match read_text(&path) {
            Ok(text) => text,
            Err(err) => {
                eprintln!("{}: not fixed: {err}", path.display());
                continue;
            }
        };
        let absolute = std::path::absolute(&path)?;
        let uri = Url::from_file_path(&absolute)
            .map_err(|()| anyhow::anyhow!("cannot make a file URI of {}", absolute.display()))?;
        let started = std::time::Instant::now();
        observer.open(uri.clone(), "", 0, &text).await;
        let handle = runs.start(&uri)?;
        let report = agent::fix(&context, &FixRequest { uri: uri.clone(), scope: Scope::File }, handle).await;
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
            wall: started.elapsed(),
            final_text,
        });
    }
    Ok(results)
}
