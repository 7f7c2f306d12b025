//! A checker added from one file, as a new one is added in `src/checker/`: the fixture tool
//! (`sh` and `grep` marking each `TODO`) described whole here, and a test that the Observer
//! discovers it, runs it on the buffer's text, reads its output and publishes what it found.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::json;
use url::Url;

use super::Checkers;
use crate::checker::{
    Args, InputMode, ParseContext, Tool, Trust, always_configured, runs_anywhere, zero_or_one,
};
use crate::config::Settings;
use crate::diagnostic::{Diagnostic, Severity};
use crate::editor::{Editor, MessageLevel};
use crate::observer::Observer;
use crate::sync::lock;
use crate::text::{Language, PositionEncoding};
use crate::workspace::{DocumentSnapshot, Workspace};

/// `todo`: every line of a Python buffer with a `TODO` on it, as `grep -n` prints it.
const TODO: Tool = Tool {
    name: "todo",
    command: "sh",
    languages: &[Language::Python],
    input: InputMode::Stdin,
    // grep exits 1 when it finds nothing: still a report
    args: Args::Fixed(&["-c", "grep -n TODO || test $? -eq 1"]),
    project_markers: &[],
    parse,
    reported: zero_or_one,
    not_configured: always_configured,
    unconfigured: runs_anywhere,
    install: "`apt install grep`",
    sources: &["todo"],
    precision: 6,
    syntax: |_, _| false,
    trust: Trust::ToolOnly,
    caches: &[],
};

/// `3:    x = 1  # TODO: name it` → a warning on that line's `TODO`.
fn parse(stdout: &str, context: &ParseContext<'_>) -> Result<Vec<Diagnostic>, String> {
    stdout
        .lines()
        .map(|line| {
            let (number, text) = line.split_once(':').ok_or_else(|| format!("not `N:line`: {line:?}"))?;
            let number: u32 = number.parse().map_err(|_| format!("not a line number: {number:?}"))?;
            let column = text.find("TODO").map_or(0, |at| text[..at].chars().count() as u32);
            let range = context.range((number - 1, column), None, PositionEncoding::Utf32);
            Ok(Diagnostic::new(range, Severity::Warning, context.source, None, "a TODO is left".to_string()))
        })
        .collect()
}

/// Keeps what the Observer published.
#[derive(Default)]
struct Published(Mutex<Vec<(Option<i32>, Vec<Diagnostic>)>>);

#[async_trait]
impl Editor for Published {
    async fn publish_diagnostics(&self, snapshot: &DocumentSnapshot, diagnostics: Vec<Diagnostic>) {
        lock(&self.0).push((snapshot.version, diagnostics));
    }

    async fn clear_diagnostics(&self, _: &Url) {}

    async fn show_message(&self, _: MessageLevel, _: String) {}
}

#[tokio::test]
async fn a_checker_described_in_one_file_runs_parses_and_publishes() {
    let dir = tempfile::tempdir().unwrap();
    let text = "def f():\n    return 1\n\nx = f()  # TODO: name it\n";
    let path = dir.path().join("m.py");
    std::fs::write(&path, text).unwrap();
    let settings = Settings::from_json(json!({})).unwrap();
    let checkers = Checkers::from_tools(&[&TODO], &settings.checkers).unwrap();
    let editor = Arc::new(Published::default());
    let workspace = Arc::new(Mutex::new(Workspace::new(settings.syntax.clone())));
    let observer = Observer::new(workspace, editor.clone(), checkers, Some(dir.path().to_path_buf()));
    let uri = Url::from_file_path(&path).unwrap();
    // the buffer differs from the disk: the tool must read the editor's text
    let buffer = text.replace("x = f()", "y = 2\nx = f()");
    let snapshot = observer.open(uri.clone(), "python", 1, &buffer).await;

    assert_eq!(observer.coverage(&snapshot).checkers, ["todo"]);
    let settled = observer.settled(&uri, Some(1), Duration::from_secs(20)).await.unwrap();
    assert!(settled.failures.is_empty() && settled.missing.is_empty(), "{settled:?}");
    let found: Vec<(u32, &str)> = settled
        .diagnostics
        .iter()
        .map(|d| {
            let at = crate::text::offset_to_line_col(&snapshot.rope, d.range.start, PositionEncoding::Utf32);
            (at.line, &buffer[d.range.start..d.range.end])
        })
        .collect();
    assert_eq!(found, [(4, "TODO")], "{:?}", settled.diagnostics);
    assert_eq!(settled.diagnostics[0].source, "todo");

    // what settled found was published for that version
    let published = lock(&editor.0).clone();
    assert!(
        published.iter().any(|(version, d)| *version == Some(1) && d.iter().any(|d| d.source == "todo")),
        "{published:?}"
    );
}
