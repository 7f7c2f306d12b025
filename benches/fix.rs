//! Benchmark of the fix loop's own overhead per iteration (SPEC §4: at most 2 ms at 10 000
//! lines), with the model and the checkers taken out: a stub model answers at once and only
//! Tokamak's syntax check runs. One run = observe, prompt (summary, enclosing scope, outline),
//! parse the reply, locate and apply the block, minimal edits, record the change, observe
//! again (tree-sitter's reparse and the language's own parser on the new text), compare — on
//! Python files of 200, 2 000 and 10 000 lines and 5 MB with one error in the middle, open and settled
//! before the run starts.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
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
            parallel: None,
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
        verify: None,
        final_tests: false,
        trusted: true,
        candidate_models: Vec::new(),
        wrap_up_tokens: None,
    };
    let runs = Runs::default();
    let settle = Duration::from_secs(10);
    // 200, 2 000 and 10 000 lines, and 5 MB (the first two when not measuring)
    let measured = if common::measuring() { 4 } else { 2 };
    for functions in [100, 1_000, 5_000, 5 * 1024 * 1024 / 44].into_iter().take(measured) {
        let text = file(functions);
        let lines = text.lines().count();
        // the document is open and its diagnostics are settled, as when a user asks for the fix
        // of one shown: a run is observe, prompt, the reply, the edit, observe again, compare
        let open = || {
            runtime.block_on(async {
                observer.close(&uri).await;
                let snapshot = observer.open(uri.clone(), "python", 1, &text).await;
                observer.settled(&uri, snapshot.version, settle).await.unwrap();
            })
        };
        let run = || {
            runtime.block_on(async {
                let run = runs.start(&uri).unwrap();
                let report = fix(&context, &FixRequest { uri: uri.clone(), scope: Scope::File }, run).await;
                assert_eq!(report.exit_reason, ExitReason::Clean, "{}", report.summary);
                assert_eq!(report.attempts, 1);
                report
            })
        };
        // a 5 MB file's open and settle between runs takes most of a second
        let mut group = c.benchmark_group("fix loop: one model iteration");
        group.sample_size(if text.len() > 1024 * 1024 { 10 } else { 50 });
        group.bench_function(format!("{lines} lines"), |b| {
            b.iter_batched(open, |()| run(), BatchSize::PerIteration)
        });
        // what the run itself does: the whole run less what it waited on — the model (a stub
        // here) and the Observer's syntax check of the text it wrote (tree-sitter's reparse and
        // the language's own parser, whole-file work that a checker's run is)
        group.bench_function(format!("its own work, {lines} lines"), |b| {
            b.iter_custom(|iterations| {
                let mut own = Duration::ZERO;
                for _ in 0..iterations {
                    open();
                    let started = std::time::Instant::now();
                    let report = run();
                    let waited = report.waited.model_ms + report.waited.checks_ms;
                    own += started.elapsed().saturating_sub(Duration::from_secs_f64(waited / 1000.0));
                }
                own
            })
        });
        group.finish();
    }
}

criterion_group!(benches, bench_fix_iteration);
criterion_main!(benches);
