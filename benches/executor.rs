//! Benchmarks of the action layer on a project of 5 000 Python files (50 folders of 100; 500
//! when run once in test mode):
//! one action's own overhead (read, search over every file, an edit on disk), a checkpoint
//! when nothing changed and when one file did, bringing the sandbox copy up to date, and
//! starting a command under bwrap. The first checkpoint and the first sandbox copy are
//! measured once and printed, with the shadow repository's size: they happen once per
//! project and once per run.

mod common;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use tokamak::config::{CheckerSettings, Settings, SyntaxSettings};
use tokamak::editor::Editor;
use tokamak::executor::{
    Action, Confinement, Executor, ExecutorContext, ExecutorSettings, Placement, RefuseUnlisted, ShadowCopy,
};
use tokamak::history::{Checkpoints, Stage};
use tokamak::observer::Observer;
use tokamak::observer::checkers::Checkers;
use tokamak::workspace::Workspace;
use tokio_util::sync::CancellationToken;

/// 5 000 files when measuring; run once to show it still runs (`scripts/test`), 500: the set-up
/// of 5 000 (written, checkpointed, copied three ways) is most of the run's time, in the kernel.
fn files() -> usize {
    if common::measuring() { 5_000 } else { 500 }
}

fn project(root: &Path) {
    for folder in 0..files() / 100 {
        let dir = root.join(format!("pkg{folder}"));
        std::fs::create_dir_all(&dir).unwrap();
        for file in 0..100 {
            let mut text = format!("\"\"\"Module {folder}.{file}.\"\"\"\n\n");
            for function in 0..20 {
                text.push_str(&format!(
                    "def handler_{function}(request):\n    return request.value + {function}\n\n"
                ));
            }
            std::fs::write(dir.join(format!("module_{file}.py")), text).unwrap();
        }
    }
    std::fs::write(root.join("target.py"), "x = 1\n").unwrap();
}

fn size_of(path: &Path) -> u64 {
    std::fs::read_dir(path)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| {
                    if e.path().is_dir() {
                        size_of(&e.path())
                    } else {
                        e.metadata().map(|m| m.len()).unwrap_or(0)
                    }
                })
                .sum()
        })
        .unwrap_or(0)
}

fn bench_actions(c: &mut Criterion) {
    let files = files();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("project");
    let cache = dir.path().join("cache");
    std::fs::create_dir_all(&root).unwrap();
    project(&root);

    // checkpoints: the first (every file hashed) once, then warm ones
    let checkpoints = runtime.block_on(Checkpoints::open(&root, &cache, 2 * 1024 * 1024)).unwrap();
    let started = Instant::now();
    runtime.block_on(checkpoints.record("bench-first", "first", Stage::Before, &[])).unwrap();
    let first = started.elapsed();
    println!(
        "first checkpoint of {files} files: {:.2} s; shadow repository: {:.1} MB (project: {:.1} MB)",
        first.as_secs_f64(),
        size_of(checkpoints.git_dir()) as f64 / 1e6,
        size_of(&root) as f64 / 1e6
    );
    let mut run = 0u64;
    c.bench_function(&format!("checkpoint, {files} files, nothing changed"), |b| {
        b.iter(|| {
            run += 1;
            runtime
                .block_on(checkpoints.record(&format!("bench-{run}"), "same", Stage::Before, &[]))
                .unwrap();
        })
    });
    c.bench_function(&format!("checkpoint, {files} files, one changed"), |b| {
        b.iter(|| {
            run += 1;
            std::fs::write(root.join("target.py"), format!("x = {run}\n")).unwrap();
            runtime.block_on(checkpoints.record(&format!("bench-{run}"), "one", Stage::Before, &[])).unwrap();
        })
    });

    // the copy every command runs in, with an open buffer's text: the first once (a run's
    // first command), then brought up to date after that buffer changed (a later command) —
    // without bwrap (linked dependency folders) and with it (mount points)
    let landlock_placement =
        Placement::Landlock { helper: PathBuf::from(env!("CARGO_BIN_EXE_tokamak")), enforced: String::new() };
    for placement in [landlock_placement.clone(), Placement::Bwrap(PathBuf::from("bwrap"))] {
        let name = if placement.at_workspace_path() { "bwrap" } else { "no bwrap" };
        let mut copy =
            ShadowCopy::new(&root, &dir.path().join(format!("sandbox-{}", placement.backend())), &placement)
                .unwrap();
        let buffer = |n: u64| {
            std::collections::HashMap::from([(
                std::path::PathBuf::from("target.py"),
                format!("x = {n} # unsaved\n"),
            )])
        };
        let started = Instant::now();
        let stats = copy.sync(&buffer(0)).unwrap();
        println!(
            "first copy of {files} files with one buffer ({name}): {:.2} s ({stats:?})",
            started.elapsed().as_secs_f64()
        );
        let mut edit = 0u64;
        c.bench_function(
            &format!("copy brought up to date after one buffer changed, {files} files ({name})"),
            |b| {
                b.iter(|| {
                    edit += 1;
                    copy.sync(&buffer(edit)).unwrap()
                })
            },
        );
    }
    // a candidate's test copy (issue 39): made anew for each candidate, as it was, against the
    // kept copy brought up to date — what the last test run left removed, the candidate's text
    // written in — as it is now
    let candidate = |n: u64| {
        std::collections::HashMap::from([(
            std::path::PathBuf::from("target.py"),
            format!("x = {n} # candidate\n"),
        )])
    };
    let started = Instant::now();
    {
        let mut copy =
            ShadowCopy::new(&root, &dir.path().join("candidate-new"), &landlock_placement).unwrap();
        copy.sync(&candidate(0)).unwrap();
    }
    println!("a candidate's copy of {files} files made anew: {:.3} s", started.elapsed().as_secs_f64());
    let mut kept = ShadowCopy::new(&root, &dir.path().join("candidate-kept"), &landlock_placement).unwrap();
    kept.sync(&candidate(0)).unwrap();
    let started = Instant::now();
    kept.remove_left();
    kept.sync(&candidate(1)).unwrap();
    println!(
        "a candidate's kept copy of {files} files brought up to date: {:.3} s",
        started.elapsed().as_secs_f64()
    );
    let mut next = 1u64;
    c.bench_function(&format!("a candidate's kept copy brought up to date, {files} files"), |b| {
        b.iter(|| {
            next += 1;
            // what a test run leaves
            std::fs::write(kept.dir().join("leftover.txt"), "x").unwrap();
            kept.remove_left();
            kept.sync(&candidate(next)).unwrap()
        })
    });

    // one command (`true`) under each backend this machine has, against none
    let bwrap_placement = Placement::Bwrap(PathBuf::from("bwrap"));
    let copy = ShadowCopy::new(&root, &dir.path().join("sandbox"), &bwrap_placement).unwrap();
    let argv = ["true".to_string()];
    c.bench_function("a command unconfined (true)", |b| {
        b.iter(|| assert!(std::process::Command::new("true").status().unwrap().success()))
    });
    if let Ok(bwrap) = which::which("bwrap") {
        let args = copy.bwrap_args(Path::new(""), &argv, &[], false);
        c.bench_function("a command under bwrap (true)", |b| {
            b.iter(|| {
                let status = std::process::Command::new(&bwrap).args(&args).status().unwrap();
                assert!(status.success());
            })
        });
    }
    if tokamak::sandbox::landlock::kernel_abi().is_some() {
        let home = dirs::home_dir();
        let policy = tokamak::sandbox::Policy {
            writable: vec![copy.dir().to_path_buf()],
            hidden: tokamak::sandbox::secrets::hidden(home.as_deref(), &[], &tokamak::places::cache_dir()),
            network: false,
        };
        let args = tokamak::sandbox::landlock::command_line(&policy, &argv);
        c.bench_function("a command under Landlock (true)", |b| {
            b.iter(|| {
                let status =
                    std::process::Command::new(env!("CARGO_BIN_EXE_tokamak")).args(&args).status().unwrap();
                assert!(status.success());
            })
        });
    }

    // one action's own overhead, without a journal (no audit log or checkpoint)
    let checkers =
        Checkers::from_settings(&CheckerSettings { enable: Some(Vec::new()), ..Default::default() }).unwrap();
    let workspace = Arc::new(Mutex::new(Workspace::new(SyntaxSettings::default())));
    let editor: Arc<dyn Editor> = Arc::new(common::Quiet);
    let observer = Observer::new(workspace, Arc::clone(&editor), checkers, Some(root.clone()));
    let mut settings = ExecutorSettings::from_settings(&Settings::default(), true);
    settings.limits.tool_calls = u32::MAX;
    settings.limits.revisions = u32::MAX;
    // measured without a person to ask
    settings.approval = tokamak::config::ApprovalLevel::Low;
    let context = ExecutorContext::new(
        Confinement::new(&root).unwrap(),
        observer,
        editor,
        settings,
        Arc::new(RefuseUnlisted),
        None,
        Some(tokamak::context::LiveIndex::new(&root, None)),
    );
    let executor = Executor::new(context, "bench", None, CancellationToken::new());
    // a module in the last folder there is (the eighth when measuring)
    let folder = (files / 100 - 1).min(7);
    let read = Action::Read { path: format!("pkg{folder}/module_42.py"), lines: None };
    c.bench_function("action: read one file", |b| {
        b.iter(|| runtime.block_on(executor.execute(&read)).unwrap())
    });
    let search = Action::Search { pattern: "def handler_19".into(), glob: None };
    let mut group = c.benchmark_group("slow");
    group.sample_size(10).measurement_time(Duration::from_secs(10));
    group.bench_function(format!("action: search {files} files"), |b| {
        b.iter(|| runtime.block_on(executor.execute(&search)).unwrap())
    });
    group.finish();
    let edits = [
        Action::Edit {
            path: "target.py".into(),
            blocks: "<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n".into(),
        },
        Action::Edit {
            path: "target.py".into(),
            blocks: "<<<<<<< SEARCH\nx = 2\n=======\nx = 1\n>>>>>>> REPLACE\n".into(),
        },
    ];
    std::fs::write(root.join("target.py"), "x = 1\n").unwrap();
    let mut turn = 0usize;
    c.bench_function("action: edit a file on disk", |b| {
        b.iter(|| {
            let action = &edits[turn % 2];
            turn += 1;
            let result = runtime.block_on(executor.execute(action)).unwrap();
            assert!(result.ok, "{}", result.text);
        })
    });
}

criterion_group!(benches, bench_actions);
criterion_main!(benches);
