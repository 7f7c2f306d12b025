//! The command line's [`Editor`]: edits go to disk (or nowhere, in a dry run), progress and
//! messages to stderr.

use std::sync::Mutex;

use async_trait::async_trait;
use url::Url;

use super::stdio::errln;
use crate::agent::RunReport;
use crate::editor::{DocumentEdit, EditOutcome, Editor, MessageLevel, Progress};
use crate::observer::Diagnostic;
use crate::sync::lock;
use crate::workspace::DocumentSnapshot;

/// The command line's [`Editor`]: edits go to disk (or nowhere, in a dry run), progress and
/// messages to stderr.
pub struct Headless {
    /// The workspace, which a written link must not lead out of.
    root: Option<std::path::PathBuf>,
    dry_run: bool,
    progress: bool,
    messages: Mutex<Vec<String>>,
    /// The plan's lines as last shown.
    plan_shown: Mutex<std::collections::HashMap<String, String>>,
}

impl Headless {
    pub fn new(root: Option<&std::path::Path>, dry_run: bool, progress: bool) -> Headless {
        Headless {
            root: root.map(std::path::Path::to_path_buf),
            dry_run,
            progress,
            messages: Mutex::default(),
            plan_shown: Mutex::default(),
        }
    }

    /// The messages shown so far.
    pub fn messages(&self) -> Vec<String> {
        lock(&self.messages).clone()
    }
}

#[async_trait]
impl Editor for Headless {
    async fn publish_diagnostics(&self, _: &DocumentSnapshot, _: Vec<Diagnostic>) {}

    async fn clear_diagnostics(&self, _: &Url) {}

    async fn show_message(&self, level: MessageLevel, message: String) {
        // a warning is said on stderr also when stdout carries JSON
        if self.progress || matches!(level, MessageLevel::Warning | MessageLevel::Error) {
            errln!("tokamak: {message}");
        }
        lock(&self.messages).push(message);
    }

    async fn apply_edit(&self, edit: DocumentEdit<'_>) -> EditOutcome {
        if self.dry_run {
            return EditOutcome::Applied { echoed: false };
        }
        crate::executor::write_edit(&edit, self.root.as_deref())
    }

    async fn held_text(&self, uri: &Url) -> Option<String> {
        // a dry run's edits are not on the disk: its text is the Observer's alone
        if self.dry_run {
            return None;
        }
        std::fs::read_to_string(uri.to_file_path().ok()?).ok()
    }

    async fn progress(&self, _: &str, progress: Progress) {
        if !self.progress {
            return;
        }
        match progress {
            Progress::Begin { title, .. } => errln!("{title}"),
            Progress::Report { message, .. } => errln!("  {message}"),
            Progress::End { .. } => {}
        }
    }

    fn shows_step_notes(&self) -> bool {
        self.progress
    }

    async fn plan_updated(&self, _: &str, plan: &crate::run::plan::Plan) {
        if !self.progress {
            return;
        }
        // each step whose status changed, on a line of its own
        let mut shown = lock(&self.plan_shown);
        for step in &plan.steps {
            let mut line = format!("  {} {}. {}", step.status.glyph(), step.id, step.title);
            if !step.note.is_empty() {
                line.push_str(&format!(" — {}", step.note));
            }
            if shown.get(&step.id) != Some(&line) {
                errln!("{line}");
                shown.insert(step.id.clone(), line);
            }
        }
    }

    async fn run_finished(&self, _: &RunReport) {}
}
