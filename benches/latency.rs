//! Benchmarks of what a user waits on in the editor, through the Observer as the server runs
//! it (the live index told of every parsed version, no checkers): `didOpen` → the first
//! diagnostics published, and a keystroke (`didChange`) → its diagnostics published, typed
//! into code and into a comment at the top, in the middle and at the end of Python files of
//! 200, 2 000 and 10 000 lines and 5 MB (SPEC §4). Beside criterion's estimate, each
//! keystroke benchmark prints its median, p90 and p99 over every keystroke it timed.
//! `tokamak bench latency` measures the same over stdio, beside another server.

mod common;

use std::cell::RefCell;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use tokamak::config::{CheckerSettings, SyntaxSettings};
use tokamak::context::LiveIndex;
use tokamak::observer::Observer;
use tokamak::observer::checkers::Checkers;
use tokamak::text::{LineCol, PositionEncoding, TextChange};
use tokamak::workspace::Workspace;
use url::Url;

/// An Observer wired as the server wires it, on a folder of its own.
fn observer(root: &std::path::Path) -> Arc<Observer> {
    let checkers =
        Checkers::from_settings(&CheckerSettings { enable: Some(Vec::new()), ..Default::default() }).unwrap();
    let workspace = Arc::new(Mutex::new(Workspace::new(SyntaxSettings::default())));
    let observer = Observer::new(workspace, Arc::new(common::Quiet), checkers, Some(root.to_path_buf()));
    let index = LiveIndex::new(root, None);
    observer.on_parsed(Box::new(move |snapshot| {
        if let Some(path) = snapshot.path() {
            let tree = snapshot.tree.clone().map(|tree| (tree, snapshot.language));
            index.document_changed(&path, snapshot.rope.clone(), tree);
        }
    }));
    observer
}

fn bench_open(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let folder = tempfile::tempdir().unwrap();
    let observer = observer(folder.path());
    let uri = Url::from_file_path(folder.path().join("big.py")).unwrap();
    for (label, text) in common::sizes() {
        c.bench_function(&format!("didOpen → first diagnostics, {label} python file"), |b| {
            b.iter_custom(|iterations| {
                let mut waited = Duration::ZERO;
                for _ in 0..iterations {
                    runtime.block_on(async {
                        observer.close(&uri).await;
                        let started = Instant::now();
                        let snapshot = observer.open(uri.clone(), "python", 1, &text).await;
                        waited += started.elapsed();
                        // the tree that follows a large document's first diagnostics, off the clock
                        observer.settled(&uri, snapshot.version, Duration::from_secs(60)).await.unwrap();
                    });
                }
                waited
            })
        });
    }
}

/// Keystrokes at one place: a character typed and deleted again, alternately, so the text
/// stays the same size; each is timed from the change to its diagnostics being published.
fn bench_keystrokes(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let folder = tempfile::tempdir().unwrap();
    let observer = observer(folder.path());
    let uri = Url::from_file_path(folder.path().join("big.py")).unwrap();
    for (label, text) in common::sizes() {
        let count = text.lines().count();
        let version = RefCell::new(1);
        runtime.block_on(async {
            observer.close(&uri).await;
            let snapshot = observer.open(uri.clone(), "python", 1, &text).await;
            observer.settled(&uri, snapshot.version, Duration::from_secs(60)).await.unwrap();
        });
        for (place, from) in [("top", 0), ("middle", count / 2), ("end", count.saturating_sub(20))] {
            // inside `self` of `        self.name = name`, and after `# explain` in a comment
            for (kind, line, column) in [
                ("code", common::line_from(&text, from, "        self.name"), 12),
                ("a comment", common::line_from(&text, from, "        # explain"), 17),
            ] {
                let (line, column) = (line as u32, column as u32);
                let samples = RefCell::new(Vec::new());
                let name = format!("keystroke → diagnostics, in {kind} at the {place}, {label} python file");
                c.bench_function(&name, |b| {
                    b.iter_custom(|iterations| {
                        let mut waited = Duration::ZERO;
                        for _ in 0..iterations {
                            let mut version = version.borrow_mut();
                            *version += 1;
                            let change = if *version % 2 == 0 {
                                let at = LineCol::new(line, column);
                                TextChange { range: Some((at, at)), text: "x".into() }
                            } else {
                                let range = (LineCol::new(line, column), LineCol::new(line, column + 1));
                                TextChange { range: Some(range), text: String::new() }
                            };
                            let started = Instant::now();
                            runtime
                                .block_on(observer.change(&uri, *version, &[change], PositionEncoding::Utf16))
                                .unwrap();
                            let elapsed = started.elapsed();
                            samples.borrow_mut().push(elapsed.as_secs_f64() * 1000.0);
                            waited += elapsed;
                        }
                        waited
                    })
                });
                let mut samples = samples.into_inner();
                if samples.is_empty() {
                    continue; // filtered out on the command line
                }
                samples.sort_by(f64::total_cmp);
                println!(
                    "{name}: median {:.3} ms, p90 {:.3} ms, p99 {:.3} ms over {} keystrokes",
                    common::percentile(&samples, 0.5),
                    common::percentile(&samples, 0.9),
                    common::percentile(&samples, 0.99),
                    samples.len()
                );
            }
        }
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(Duration::from_secs(3));
    targets = bench_open, bench_keystrokes
}
criterion_main!(benches);
