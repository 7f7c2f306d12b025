//! `tokamak check PATH…`: the Observer's diagnostics printed like a linter's — the same
//! Observer, sources and settings the editor gets.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde::Serialize;
use url::Url;

use crate::config::find_root;
use crate::editor::{Editor, MessageLevel};
use crate::executor::RefuseUnlisted;
use crate::observer::{Diagnostic, Severity};
use crate::session::{FrontEnd, Options, Session};
use crate::sync::lock;
use crate::text::{PositionEncoding, offset_to_line_col};
use crate::workspace::{DocumentSnapshot, read_text, source_files};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// For people: what the command found or did in lines (`check`: `path:line:col: severity
    /// [source/code] message`, one a line; `run` and `fix`: the progress on stderr, the diff
    /// and the ending on stdout).
    Text,
    /// For programs: one JSON value on stdout (`check`: an array of diagnostics; `run`, `fix`:
    /// the reports).
    Json,
}

/// One diagnostic as printed; lines and columns are 1-based, columns count characters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub path: String,
    pub line: u32,
    pub column: u32,
    pub end_line: u32,
    pub end_column: u32,
    pub severity: &'static str,
    pub source: String,
    pub code: Option<String>,
    pub message: String,
    /// The other sources that reported the same problem (`source` or `source/code`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub also: Vec<String>,
}

impl Finding {
    fn new(path: &Path, snapshot: &DocumentSnapshot, diagnostic: &Diagnostic) -> Finding {
        let start = offset_to_line_col(&snapshot.rope, diagnostic.range.start, PositionEncoding::Utf32);
        let end = offset_to_line_col(&snapshot.rope, diagnostic.range.end, PositionEncoding::Utf32);
        Finding {
            path: path.display().to_string(),
            line: start.line + 1,
            column: start.col + 1,
            end_line: end.line + 1,
            end_column: end.col + 1,
            severity: diagnostic.severity.as_str(),
            source: diagnostic.source.clone(),
            code: diagnostic.code.clone(),
            message: diagnostic.message.clone(),
            also: diagnostic
                .related
                .iter()
                .map(|r| match &r.code {
                    Some(code) => format!("{}/{code}", r.source),
                    None => r.source.clone(),
                })
                .collect(),
        }
    }

    /// `path:line:col: severity [source/code] message` (a multi-line message continues on
    /// indented lines).
    pub fn to_line(&self) -> String {
        let tag = match &self.code {
            Some(code) => format!("{}/{code}", self.source),
            None => self.source.clone(),
        };
        let message = self.message.replace('\n', "\n    ");
        let also =
            if self.also.is_empty() { String::new() } else { format!(" (also {})", self.also.join(", ")) };
        format!("{}:{}:{}: {} [{tag}] {message}{also}", self.path, self.line, self.column, self.severity)
    }
}

/// What `check` found, and what it could not check.
#[derive(Debug, Default)]
pub struct Report {
    pub findings: Vec<Finding>,
    /// `(path, reason)` for files (or parts of them) that were not checked.
    pub skipped: Vec<(PathBuf, String)>,
    /// What the Observer told the user (a missing or failing checker), once each.
    pub messages: Vec<String>,
    /// Files that were read and checked.
    pub checked: usize,
    /// `(path, sentence)` for files only the syntax check could check (their checkers are
    /// not installed): no findings there does not mean clean.
    pub syntax_only: Vec<(PathBuf, String)>,
}

impl Report {
    pub fn has_errors(&self) -> bool {
        self.findings.iter().any(|f| f.severity == Severity::Error.as_str())
    }
}

/// Which checkers to run.
#[derive(Debug, Clone, Default)]
pub struct CheckOptions {
    /// `None`: as `tokamak.toml` says (or every preset that is installed); `Some(names)`:
    /// exactly these (empty: syntax only).
    pub checkers: Option<Vec<String>>,
}

/// The command line's [`Editor`]: diagnostics are read from `settled`, messages collected.
#[derive(Default)]
struct Terminal {
    messages: Mutex<Vec<String>>,
}

#[async_trait]
impl Editor for Terminal {
    async fn publish_diagnostics(&self, _: &DocumentSnapshot, _: Vec<Diagnostic>) {}

    async fn clear_diagnostics(&self, _: &Url) {}

    async fn show_message(&self, _: MessageLevel, message: String) {
        lock(&self.messages).push(message);
    }
}

/// Checks files and folders (walked with `.gitignore` respected). An unreadable path named on
/// the command line or bad settings are errors; a binary or non-UTF-8 file found in a
/// folder is skipped with its reason.
pub async fn check(paths: &[PathBuf], options: &CheckOptions) -> anyhow::Result<Report> {
    let files = source_files(paths)?;
    let root = find_root(paths.first().map_or(Path::new("."), PathBuf::as_path));
    let loaded = super::load_settings(&root, serde_json::Value::Null)?;
    let mut settings = loaded.settings;
    if let Some(names) = &options.checkers {
        settings.checkers.enable = Some(names.clone());
    }
    // every checker may take its whole timeout, queued behind others
    let wait = Duration::from_millis(settings.checkers.timeout_ms.saturating_mul(2).saturating_add(5_000));
    let terminal = Arc::new(Terminal::default());
    let front =
        FrontEnd { editor: Arc::clone(&terminal) as Arc<dyn Editor>, approver: Arc::new(RefuseUnlisted) };
    let session = super::session::checked(Session::build(
        Some(root),
        settings,
        loaded.trust,
        front,
        Options::default(),
    ))?;
    let observer = session.observer;

    let mut report = Report::default();
    for path in files {
        let text = match read_text(&path) {
            Ok(text) => text,
            Err(err) => {
                report.skipped.push((path, err.to_string()));
                continue;
            }
        };
        let absolute = std::path::absolute(&path)?;
        let uri = Url::from_file_path(&absolute)
            .map_err(|()| anyhow::anyhow!("cannot make a file URI of {}", absolute.display()))?;
        let snapshot = observer.open(uri.clone(), "", 0, &text).await;
        report.checked += 1;
        if let Some(reason) = &snapshot.syntax_skipped {
            report.skipped.push((path.clone(), reason.clone()));
        }
        let settled = observer.settled(&uri, snapshot.version, wait).await?;
        for (_, reason) in &settled.failures {
            report.skipped.push((path.clone(), reason.clone()));
        }
        for source in &settled.missing {
            report.skipped.push((path.clone(), format!("{source} did not finish in time")));
        }
        report.findings.extend(settled.diagnostics.iter().map(|d| Finding::new(&path, &snapshot, d)));
        let coverage = observer.coverage(&snapshot);
        if coverage.syntax_only() {
            report.syntax_only.push((path.clone(), coverage.install_hint()));
        }
        observer.close(&uri).await;
    }
    // messages are sent from their own tasks: let them land
    tokio::task::yield_now().await;
    report.messages = std::mem::take(&mut *lock(&terminal.messages));
    Ok(report)
}
