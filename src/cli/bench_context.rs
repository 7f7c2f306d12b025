//! `tokamak bench context`: the workspace index on a real tree — built cold, one file
//! updated, and a few queries (symbol search, callers, importers) — with the times and the
//! process's resident memory before and after, as a table or JSON.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;

use crate::context::Index;

#[derive(Debug, Clone, Serialize)]
pub struct ContextBench {
    pub root: PathBuf,
    pub files: usize,
    pub skipped: usize,
    pub definitions: usize,
    pub build_ms: f64,
    /// Resident memory the index added (from `/proc/self/status`), in MB.
    pub memory_mb: f64,
    /// One file brought up to date after a one-character change.
    pub update_ms: f64,
    /// `(query, milliseconds, results)` for each query.
    pub queries: Vec<(String, f64, usize)>,
}

/// Builds the index of `root` and times `queries` (symbol searches) and, for the best hit of
/// the first, its callers and its file's importers.
pub fn bench_context(root: &Path, queries: &[String]) -> anyhow::Result<ContextBench> {
    let before = resident_mb();
    let started = Instant::now();
    let mut index = Index::build(root);
    let build_ms = ms(started);
    let memory_mb = (resident_mb() - before).max(0.0);
    let definitions = index.definition_count();

    // one keystroke: the largest file changed by one character
    let mut update_ms = 0.0;
    if let Some(path) = index.largest_file() {
        let text = std::fs::read_to_string(&path)?;
        let changed = format!("{text}#\n");
        let started = Instant::now();
        index.update(&path, &changed);
        update_ms = ms(started);
    }
    let mut timed = Vec::new();
    for query in queries {
        let started = Instant::now();
        let found = index.search(query, 20);
        let elapsed = ms(started);
        timed.push((format!("search {query:?}"), elapsed, found.len()));
        if let Some(best) = found.first() {
            let name = best.definition.name.clone();
            let module = crate::context::module_name(root, best.path);
            let started = Instant::now();
            let callers = index.callers(&name, 3);
            timed.push((format!("callers of {name} (3 levels)"), ms(started), callers.len()));
            let started = Instant::now();
            let importers = index.importers(&module);
            timed.push((format!("importers of {module}"), ms(started), importers.len()));
        }
    }
    Ok(ContextBench {
        root: root.to_path_buf(),
        files: index.len(),
        skipped: index.skipped.len(),
        definitions,
        build_ms,
        memory_mb,
        update_ms,
        queries: timed,
    })
}

pub fn table(bench: &ContextBench) -> String {
    let mut out = format!(
        "{}: {} files indexed ({} skipped), {} definitions\nbuild (cold) {:.0} ms, index memory {:.1} MB, one file updated {:.2} ms\n",
        bench.root.display(),
        bench.files,
        bench.skipped,
        bench.definitions,
        bench.build_ms,
        bench.memory_mb,
        bench.update_ms
    );
    for (what, elapsed, results) in &bench.queries {
        out.push_str(&format!("{what}: {elapsed:.2} ms, {results} result(s)\n"));
    }
    out
}

fn ms(started: Instant) -> f64 {
    started.elapsed().as_secs_f64() * 1000.0
}

/// The process's resident memory in MB (0 where `/proc` is not there).
fn resident_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}
