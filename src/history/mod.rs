//! What runs leave behind to be undone and inspected: checkpoints in a shadow git repository
//! (`checkpoints.rs`, SPEC K1–K2) and one audit log per run (`audit.rs`, SPEC G5), both under
//! the project's cache folder, pruned together.
//!
//! A [`History`] belongs to one workspace; each run gets a [`Journal`] from it, which takes
//! the "before" checkpoint just before the run's first change (so a run that changes nothing
//! leaves no checkpoint), writes the audit log, and takes the "after" checkpoint when the run
//! ends.

pub mod audit;
mod checkpoints;
mod folder_lock;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Value, json};

pub use audit::AuditLog;
pub use checkpoints::{CheckpointError, CheckpointInfo, Checkpoints, FileChange, Overlay, Stage, table};
pub use folder_lock::FolderLock;

use crate::config::CheckpointSettings;
use crate::editor::{Editor, MessageLevel};
use crate::observer::Observer;
use crate::run::RunReport;

/// The checkpoints and audit logs of one workspace.
pub struct History {
    root: PathBuf,
    dir: PathBuf,
    settings: CheckpointSettings,
    key_variables: Vec<String>,
    checkpoints: tokio::sync::OnceCell<Result<Arc<Checkpoints>, String>>,
    /// The user has been told that checkpoints are off.
    told: AtomicBool,
    /// The pruning started after the last run, which a command waits for before it exits.
    pruning: std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl History {
    /// `key_variables`: environment variables holding keys under names that do not say so
    /// (the configured `api_key_env`), scrubbed from audit logs too.
    pub fn new(root: &Path, settings: CheckpointSettings, key_variables: Vec<String>) -> Arc<History> {
        let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
        Arc::new(History {
            dir: crate::places::project_cache(&root),
            root,
            settings,
            key_variables,
            checkpoints: tokio::sync::OnceCell::new(),
            told: AtomicBool::new(false),
            pruning: std::sync::Mutex::new(None),
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn audit_dir(&self) -> PathBuf {
        self.dir.join("audit")
    }

    /// The files (relative) run `run_id` noted it was about to change (its audit log's
    /// `touch` events), and whether it ended (its `exit` event: a run killed before its end
    /// has none); `None` when its log cannot be read.
    pub fn touched(&self, run_id: &str) -> Option<(std::collections::BTreeSet<String>, bool)> {
        let suffix = format!("-{run_id}.jsonl");
        let log = audit::logs(&self.audit_dir())
            .into_iter()
            .find(|path| path.file_name().is_some_and(|name| name.to_string_lossy().ends_with(&suffix)))?;
        let text = std::fs::read_to_string(log).ok()?;
        let mut touched = std::collections::BTreeSet::new();
        let mut ended = false;
        for line in text.lines() {
            let Ok(event) = serde_json::from_str::<serde_json::Value>(line) else { continue };
            if event["event"] == "touch" {
                let paths = event["paths"].as_array().into_iter().flatten();
                touched.extend(paths.filter_map(|p| p.as_str().map(str::to_string)));
            }
            ended |= event["event"] == "exit";
        }
        Some((touched, ended))
    }

    /// The shadow repository, opened on first use; the error says why there is none.
    pub async fn checkpoints(&self) -> Result<Arc<Checkpoints>, String> {
        if !self.settings.enabled {
            return Err("checkpoints are off (checkpoints.enabled = false)".to_string());
        }
        self.checkpoints
            .get_or_init(|| async {
                Checkpoints::open(&self.root, &self.dir, self.settings.max_file_bytes)
                    .await
                    .map(Arc::new)
                    .map_err(|err| err.to_string())
            })
            .await
            .clone()
    }

    /// A journal for a run that is starting.
    pub fn journal(self: &Arc<Self>, run_id: &str, goal: &str, observer: Arc<Observer>) -> Arc<Journal> {
        let audit = AuditLog::create(&self.audit_dir(), run_id, &self.key_variables);
        audit.record("start", json!({"goal": goal, "root": self.root}));
        Arc::new(Journal {
            history: Arc::clone(self),
            run_id: run_id.to_string(),
            goal: goal.to_string(),
            audit,
            observer,
            before: tokio::sync::OnceCell::new(),
        })
    }

    /// Ends the checkpoint of a run killed before its end (it has only its "before"): its
    /// "after" is the workspace as it is now. Returns the checkpoint, complete.
    pub async fn end_killed_run(
        &self,
        info: &CheckpointInfo,
        observer: &Observer,
    ) -> Result<CheckpointInfo, String> {
        let checkpoints = self.checkpoints().await?;
        let overlays = self.overlays(observer);
        checkpoints
            .record(&info.run_id, &info.goal, Stage::After, &overlays)
            .await
            .map_err(|err| err.to_string())?;
        checkpoints.find(&info.run_id).await.map_err(|err| err.to_string())
    }

    /// The text of open documents under the root that differs from the disk.
    fn overlays(&self, observer: &Observer) -> Vec<Overlay> {
        observer
            .open_documents()
            .into_iter()
            .filter_map(|snapshot| {
                let path = snapshot.path()?;
                let relative = path.strip_prefix(&self.root).ok()?.to_string_lossy().to_string();
                Some(Overlay { relative, text: snapshot.rope.to_string() })
            })
            .collect()
    }

    /// Prunes checkpoints and audit logs past `keep_runs` / `keep_days`.
    /// Waits up to `within` for the pruning the last run started (a command about to exit:
    /// killed half way, the old checkpoints would stay).
    pub async fn settle(&self, within: std::time::Duration) {
        let pruning = crate::sync::lock(&self.pruning).take();
        if let Some(pruning) = pruning {
            let abort = pruning.abort_handle();
            if tokio::time::timeout(within, pruning).await.is_err() {
                abort.abort();
            }
        }
    }

    pub async fn prune(&self) {
        if let Ok(checkpoints) = self.checkpoints().await {
            match checkpoints.prune(self.settings.keep_runs, self.settings.keep_days).await {
                Ok(removed) if !removed.is_empty() => {
                    tracing::info!("pruned the checkpoints of {} run(s)", removed.len())
                }
                Ok(_) => {}
                Err(err) => tracing::warn!("pruning checkpoints: {err}"),
            }
        }
        let max_age = std::time::Duration::from_secs(self.settings.keep_days.saturating_mul(86_400));
        audit::prune(&self.audit_dir(), self.settings.keep_runs, max_age);
    }

    /// Says once, to the user, that runs are not undoable.
    async fn tell_once(&self, editor: &dyn Editor, reason: &str) {
        if !self.told.swap(true, Ordering::Relaxed) {
            editor
                .show_message(
                    MessageLevel::Warning,
                    format!("Tokamak takes no checkpoints, so its changes cannot be rolled back: {reason}."),
                )
                .await;
        }
    }
}

/// One run's checkpoint and audit log.
pub struct Journal {
    history: Arc<History>,
    run_id: String,
    goal: String,
    audit: AuditLog,
    observer: Arc<Observer>,
    /// The "before" commit, once taken (or why not).
    before: tokio::sync::OnceCell<Result<String, String>>,
}

impl std::fmt::Debug for Journal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Journal").field("run_id", &self.run_id).finish_non_exhaustive()
    }
}

impl Journal {
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// Appends an event to the audit log.
    pub fn record(&self, event: &str, fields: Value) {
        self.audit.record(event, fields);
    }

    pub fn audit_path(&self) -> Option<&Path> {
        self.audit.path()
    }

    /// Takes the "before" checkpoint if this is the run's first change, and notes in the
    /// audit log the files (relative) about to change — what a rollback of a run killed
    /// before its end restores. A failure is logged and told to the user once, and the run
    /// goes on.
    pub async fn before_change(&self, files: &[&str]) {
        if !files.is_empty() {
            self.audit.record("touch", json!({"paths": files}));
        }
        self.before
            .get_or_init(|| async {
                let result = match self.history.checkpoints().await {
                    Ok(checkpoints) => {
                        let overlays = self.history.overlays(&self.observer);
                        let started = std::time::Instant::now();
                        let taken =
                            checkpoints.record(&self.run_id, &self.goal, Stage::Before, &overlays).await;
                        tracing::debug!("checkpoint before {} in {:?}", self.run_id, started.elapsed());
                        taken.map_err(|err| err.to_string())
                    }
                    Err(reason) => Err(reason),
                };
                match &result {
                    Ok(commit) => {
                        self.audit.record("checkpoint", json!({"stage": "before", "commit": commit}))
                    }
                    Err(reason) => {
                        tracing::warn!("{}: no checkpoint: {reason}", self.run_id);
                        self.audit.record("checkpoint", json!({"stage": "before", "error": reason}));
                        self.history.tell_once(self.observer.editor(), reason).await;
                    }
                }
                result
            })
            .await;
    }

    /// The id of the run's checkpoint, once the "before" one is taken.
    pub fn checkpoint_id(&self) -> Option<String> {
        self.before.get().and_then(|r| r.as_ref().ok()).map(|commit| commit.chars().take(12).collect())
    }

    /// The run ended: the "after" checkpoint (when a "before" one was taken), the exit in the
    /// audit log, and pruning of old runs.
    pub async fn finish(&self, report: &RunReport) {
        if let Some(Ok(_)) = self.before.get()
            && let Ok(checkpoints) = self.history.checkpoints().await
        {
            let overlays = self.history.overlays(&self.observer);
            match checkpoints.record(&self.run_id, &self.goal, Stage::After, &overlays).await {
                Ok(commit) => self.audit.record("checkpoint", json!({"stage": "after", "commit": commit})),
                Err(err) => {
                    tracing::warn!("{}: no checkpoint after the run: {err}", self.run_id);
                    self.audit.record("checkpoint", json!({"stage": "after", "error": err.to_string()}));
                }
            }
        }
        self.audit.record(
            "exit",
            json!({
                "exit_reason": report.exit_reason,
                "summary": report.summary,
                "files_changed": report.files_changed,
                "tokens": report.tokens,
                "checkpoint": self.checkpoint_id(),
            }),
        );
        let history = Arc::clone(&self.history);
        let pruning = tokio::spawn(async move { history.prune().await });
        *crate::sync::lock(&self.history.pruning) = Some(pruning);
    }
}
