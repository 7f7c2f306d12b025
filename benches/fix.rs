//! Benchmark of the fix loop's own overhead per iteration (SPEC §4: under 10 ms), with the
//! model and the checkers taken out: a stub model answers at once and only Tokamak's syntax
//! check runs. One run = observe, prompt (summary, enclosing scope, outline), parse the
//! reply, locate and apply the block, minimal edits, record the change, observe again,
//! compare — on Python files of 200 and 2 000 lines with one error in the middle.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use criterion::{Criterion, criterion_group, criterion_main};
use tokamak::agent::{ExitReason, FixContext, FixRequest, Runs, Scope, fix};
use tokamak::config::{CheckerSettings, FixSettings, SyntaxSettings};
use tokamak::editor::{DocumentEdit, EditOutcome, Editor, MessageLevel};
use tokamak::model::{
    CallOptions, FinishReason, Model, ModelError, ModelInfo, Provider, Reply, Request, Usage,
};
use tokamak::observer::checkers::Checkers;
use tokamak::observer::{Diagnostic, Observer};
use tokamak::workspace::{DocumentSnapshot, Workspace};
use url::Url;

/// Answers every request with the same reply, at once.
struct Stub(String);

#[async_trait]
impl Model for Stub {
    fn info(&self) -> ModelInfo {
        ModelInfo {
            provider: Provider::OpenAi,
            model: "stub".into(),
            endpoint: "in-process".into(),
            tools: tokamak::model::ToolsMode::Text,
            max_tokens: 2048,
        }
    }

    async fn send(&self, _: &Request, _: &CallOptions) -> Result<Reply, ModelError> {
        Ok(Reply {
            text: self.0.clone(),
            reasoning: String::new(),
            signed: Vec::new(),
            tool_calls: Vec::new(),
            usage: Usage::default(),
            finish: FinishReason::Stop,
            model: "stub".into(),
            latency: Duration::ZERO,
        })
    }
}

/// An editor that accepts every edit (the loop records it itself, as headless).
struct Accepting;

#[async_trait]
impl Editor for Accepting {
    async fn publish_diagnostics(&self, _: &DocumentSnapshot, _: Vec<Diagnostic>) {}
    async fn clear_diagnostics(&self, _: &Url) {}
    async fn show_message(&self, _: MessageLevel, _: String) {}
    async fn apply_edit(&self, _: DocumentEdit<'_>) -> EditOutcome {
        EditOutcome::Applied { echoed: false }
    }
}

/// A Python file of `functions` two-line functions with one broken function in the middle.
fn file(functions: usize) -> String {
    let mut text = String::new();
    for i in 0..functions / 2 {
        text.push_str(&format!("def helper_{i}(value):\n    return value * {i}\n"));
    }
    text.push_str("def broken(items):\n    total = = 0\n    return total\n");
    for i in functions / 2..functions {
        text.push_str(&format!("def helper_{i}(value):\n    return value * {i}\n"));
    }
    text
}

fn bench_fix_iteration(c: &mut Criterion) {
    let reply =
        "app.py\n<<<<<<< SEARCH\n    total = = 0\n=======\n    total = 0\n>>>>>>> REPLACE\n".to_string();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let uri = Url::parse("file:///bench/app.py").unwrap();
    let checkers =
        Checkers::from_settings(&CheckerSettings { enable: Some(Vec::new()), ..Default::default() }).unwrap();
    let workspace = Arc::new(Mutex::new(Workspace::new(SyntaxSettings::default())));
    let editor: Arc<dyn Editor> = Arc::new(Accepting);
    let observer = Observer::new(workspace, Arc::clone(&editor), checkers, None);
    let context = FixContext {
        observer: Arc::clone(&observer),
        editor,
        model: Ok(Arc::new(Stub(reply))),
        settings: FixSettings::default(),
        root: None,
        history: None,
        approver: None,
    };
    let runs = Runs::default();
    for functions in [100, 1_000, 5_000] {
        let text = file(functions);
        let lines = text.lines().count();
        // what a run adds is the difference between these two
        c.bench_function(&format!("fix loop: open and close only, {lines} lines (subtract)"), |b| {
            b.iter(|| {
                runtime.block_on(async {
                    observer.open(uri.clone(), "python", 1, &text).await;
                    observer.close(&uri).await;
                })
            })
        });
        c.bench_function(&format!("fix loop: open, one model iteration, close, {lines} lines"), |b| {
            b.iter(|| {
                runtime.block_on(async {
                    observer.open(uri.clone(), "python", 1, &text).await;
                    let run = runs.start(&uri).unwrap();
                    let report =
                        fix(&context, &FixRequest { uri: uri.clone(), scope: Scope::File }, run).await;
                    assert_eq!(report.exit_reason, ExitReason::Clean, "{}", report.summary);
                    assert_eq!(report.attempts, 1);
                    observer.close(&uri).await;
                })
            })
        });
    }
}

criterion_group!(benches, bench_fix_iteration);
criterion_main!(benches);
