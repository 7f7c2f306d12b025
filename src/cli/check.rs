//! `tokamak check PATH…`: the Observer's diagnostics printed like a linter's.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use async_trait::async_trait;
use serde::Serialize;
use url::Url;

use crate::config::SyntaxSettings;
use crate::editor::{Editor, MessageLevel};
use crate::observer::{Diagnostic, Observer, Severity};
use crate::text::{PositionEncoding, offset_to_line_col};
use crate::workspace::{DocumentSnapshot, read_text, source_files};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// `path:line:col: severity [source/code] message`, one a line.
    Text,
    /// One JSON array of objects.
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
        }
    }

    /// `path:line:col: severity [source/code] message`.
    pub fn to_line(&self) -> String {
        let tag = match &self.code {
            Some(code) => format!("{}/{code}", self.source),
            None => self.source.clone(),
        };
        format!("{}:{}:{}: {} [{tag}] {}", self.path, self.line, self.column, self.severity, self.message)
    }
}

/// What `check` found, and what it could not check.
#[derive(Debug, Default)]
pub struct Report {
    pub findings: Vec<Finding>,
    /// `(path, reason)` for files that were not checked.
    pub skipped: Vec<(PathBuf, String)>,
    pub files_checked: usize,
}

impl Report {
    pub fn has_errors(&self) -> bool {
        self.findings.iter().any(|f| f.severity == Severity::Error.as_str())
    }
}

/// The command line's [`Editor`]: collects what the Observer publishes.
#[derive(Default)]
struct Collector {
    published: Mutex<Vec<(DocumentSnapshot, Vec<Diagnostic>)>>,
    messages: Mutex<Vec<String>>,
}

#[async_trait]
impl Editor for Collector {
    async fn publish_diagnostics(&self, snapshot: &DocumentSnapshot, diagnostics: Vec<Diagnostic>) {
        crate::sync::lock(&self.published).push((snapshot.clone(), diagnostics));
    }

    async fn show_message(&self, _: MessageLevel, message: String) {
        crate::sync::lock(&self.messages).push(message);
    }
}

/// Checks files and folders (walked with `.gitignore` respected). An unreadable path named on
/// the command line is an error; a binary or non-UTF-8 file found in a folder is skipped
/// with its reason.
pub async fn check(paths: &[PathBuf], settings: &SyntaxSettings) -> anyhow::Result<Report> {
    let files = source_files(paths)?;
    let observer = Observer::new();
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
        let snapshot = DocumentSnapshot::detached(uri, &text, settings);
        if let Some(reason) = &snapshot.syntax_skipped {
            report.skipped.push((path.clone(), reason.clone()));
        }
        let collector = Collector::default();
        observer.observe(&snapshot, &collector).await;
        report.files_checked += 1;
        for (snapshot, diagnostics) in
            collector.published.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner)
        {
            report.findings.extend(diagnostics.iter().map(|d| Finding::new(&path, &snapshot, d)));
        }
    }
    Ok(report)
}
