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
    /// The index built again with the cache of the first build (a restart).
    pub warm_ms: f64,
    /// One file brought up to date after a one-character change, parsed again (a file
    /// changed on disk).
    pub update_ms: f64,
    /// The same with the document's tree at hand (an open document: the workspace keeps
    /// its tree up to date incrementally on each keystroke anyway).
    pub update_tree_ms: f64,
    /// What the keystroke itself costs the live index: marking the document (its rope and
    /// tree shared, not copied); the update above happens before the next query.
    pub mark_ms: f64,
    /// `(query, milliseconds, results)` for each query.
    pub queries: Vec<(String, f64, usize)>,
    /// The question set's hit rates, when one was given.
    pub questions: Option<QuestionScores>,
}

/// Top-1 and top-5 hit rates over a question set, Tokamak's ranking beside a plain BM25.
#[derive(Debug, Clone, Serialize)]
pub struct QuestionScores {
    pub questions: usize,
    pub top1: f64,
    pub top5: f64,
    pub bm25_top1: f64,
    pub bm25_top5: f64,
    /// The slowest question's ranking, in milliseconds.
    pub slowest_ms: f64,
    /// Questions whose expected files were not in Tokamak's top 5: `(question, its top 3)`.
    pub misses: Vec<(String, Vec<String>)>,
    /// The same rates for the questions asked in Korean and those asked in English.
    pub korean: LanguageScores,
    pub english: LanguageScores,
}

/// Tokamak's hit rates over the questions of one language.
#[derive(Debug, Clone, Default, Serialize)]
pub struct LanguageScores {
    pub questions: usize,
    pub top1: f64,
    pub top5: f64,
}

/// Reads a question set: `question TAB file,file` lines; `#` starts a comment.
pub fn read_questions(path: &Path) -> anyhow::Result<Vec<(String, Vec<String>)>> {
    let text =
        std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((question, files)) = line.split_once('\t') else {
            anyhow::bail!("{}:{}: a question, a tab, then the files that answer it", path.display(), n + 1);
        };
        out.push((question.trim().to_string(), files.split(',').map(|f| f.trim().to_string()).collect()));
    }
    Ok(out)
}

fn score_questions(index: &Index, root: &Path, questions: &[(String, Vec<String>)]) -> QuestionScores {
    let rel = |p: &Path| p.strip_prefix(root).unwrap_or(p).to_string_lossy().into_owned();
    let (mut top1, mut top5, mut bm1, mut bm5) = (0usize, 0usize, 0usize, 0usize);
    // (questions, top-1 hits, top-5 hits) for Korean and English
    let mut by_language = [(0usize, 0usize, 0usize); 2];
    let mut slowest_ms: f64 = 0.0;
    let mut misses = Vec::new();
    for (question, expected) in questions {
        let started = Instant::now();
        let ranked: Vec<String> =
            crate::context::rank(index, question, None, 5).iter().map(|r| rel(&r.path)).collect();
        slowest_ms = slowest_ms.max(ms(started));
        let plain: Vec<String> =
            crate::context::plain_bm25(index, question, 5).iter().map(|r| rel(&r.path)).collect();
        let hit = |list: &[String], n: usize| list.iter().take(n).any(|p| expected.contains(p));
        top1 += usize::from(hit(&ranked, 1));
        top5 += usize::from(hit(&ranked, 5));
        let language = &mut by_language[usize::from(!question.chars().any(is_hangul))];
        language.0 += 1;
        language.1 += usize::from(hit(&ranked, 1));
        language.2 += usize::from(hit(&ranked, 5));
        bm1 += usize::from(hit(&plain, 1));
        bm5 += usize::from(hit(&plain, 5));
        if !hit(&ranked, 5) {
            misses.push((question.clone(), ranked.into_iter().take(3).collect()));
        }
    }
    let rate = |n: usize| 100.0 * n as f64 / questions.len().max(1) as f64;
    QuestionScores {
        questions: questions.len(),
        top1: rate(top1),
        top5: rate(top5),
        bm25_top1: rate(bm1),
        bm25_top5: rate(bm5),
        slowest_ms,
        misses,
        korean: language_scores(by_language[0]),
        english: language_scores(by_language[1]),
    }
}

fn language_scores((questions, top1, top5): (usize, usize, usize)) -> LanguageScores {
    let rate = |n: usize| 100.0 * n as f64 / questions.max(1) as f64;
    LanguageScores { questions, top1: rate(top1), top5: rate(top5) }
}

fn is_hangul(c: char) -> bool {
    matches!(c, '\u{AC00}'..='\u{D7A3}' | '\u{1100}'..='\u{11FF}' | '\u{3130}'..='\u{318F}')
}

/// Builds the index of `root` and times `queries` (symbol searches) and, for the best hit of
/// the first, its callers and its file's importers.
pub fn bench_context(
    root: &Path,
    queries: &[String],
    questions: Option<&[(String, Vec<String>)]>,
) -> anyhow::Result<ContextBench> {
    let before = resident_mb();
    let started = Instant::now();
    let mut index = Index::build(root);
    let build_ms = ms(started);
    let memory_mb = (resident_mb() - before).max(0.0);
    let definitions = index.definition_count();

    // a restart: the same tree with the cache the first build leaves
    let cache = tempfile::tempdir()?;
    let cache_file = cache.path().join("index.json");
    index.save(&cache_file)?;
    let started = Instant::now();
    let (warm, parsed) = Index::build_cached(root, &cache_file);
    let warm_ms = ms(started);
    if parsed > 0 {
        tracing::warn!("the warm build parsed {parsed} files again");
    }
    drop(warm);

    // one keystroke in the middle of the largest file: parsed again whole, or taken from the
    // tree an open document keeps (after the document's first update, only what changed)
    let (mut update_ms, mut update_tree_ms, mut mark_ms) = (0.0, 0.0, 0.0);
    if let Some(path) = index.largest_file() {
        let text = std::fs::read_to_string(&path)?;
        let language = crate::text::Language::from_path(&path);
        // a letter typed into the name of the first definition past the middle (the text stays
        // valid), else at the end of the middle line
        let half = text[..text.len() / 2].rfind('\n').map_or(0, |n| n + 1);
        let middle = ["def ", "function ", "class "]
            .iter()
            .filter_map(|keyword| text[half..].find(keyword).map(|at| half + at + keyword.len()))
            .min()
            .unwrap_or_else(|| text[half..].find('\n').map_or(text.len(), |n| half + n));
        let typed = |letter: &str| format!("{}{letter}{}", &text[..middle], &text[middle..]);
        let started = Instant::now();
        index.update(&path, &typed("x"));
        update_ms = ms(started);
        let mut document = crate::text::TextDocument::new(&text, Some(1), language);
        if let Ok(Some(mut tree)) = crate::syntax::SyntaxTree::parse(language, document.rope()) {
            // the document as it was opened, then one character typed
            index.update_document(&path, document.rope(), tree.tree(), language);
            let at = document.point(middle);
            let change = crate::text::TextChange { range: Some((at, at)), text: "x".into() };
            if let crate::text::AppliedChange::Incremental(edit) =
                document.apply_change(&change, crate::text::PositionEncoding::Utf8).applied
            {
                tree.edit(&edit);
            }
            tree.reparse(document.rope())?;
            let started = Instant::now();
            index.update_document(&path, document.rope(), tree.tree(), language);
            update_tree_ms = ms(started);
            let live = crate::context::LiveIndex::new(root, None);
            let started = Instant::now();
            live.document_changed(&path, document.rope().clone(), Some((tree.tree().clone(), language)));
            mark_ms = ms(started);
        }
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
    let questions = questions.map(|q| score_questions(&index, root, q));
    Ok(ContextBench {
        questions,
        root: root.to_path_buf(),
        files: index.len(),
        skipped: index.skipped.len(),
        definitions,
        build_ms,
        warm_ms,
        memory_mb,
        update_ms,
        update_tree_ms,
        mark_ms,
        queries: timed,
    })
}

pub fn table(bench: &ContextBench) -> String {
    let mut out = format!(
        "{}: {} files indexed ({} skipped), {} definitions\nbuild cold {:.0} ms, warm {:.0} ms; index memory {:.1} MB; one file updated {:.2} ms (parsed again), {:.2} ms (from the open document's tree, after a keystroke); a keystroke marks it in {:.4} ms\n",
        bench.root.display(),
        bench.files,
        bench.skipped,
        bench.definitions,
        bench.build_ms,
        bench.warm_ms,
        bench.memory_mb,
        bench.update_ms,
        bench.update_tree_ms,
        bench.mark_ms
    );
    for (what, elapsed, results) in &bench.queries {
        out.push_str(&format!("{what}: {elapsed:.2} ms, {results} result(s)\n"));
    }
    if let Some(q) = &bench.questions {
        out.push_str(&format!(
            "{} questions: Tokamak top-1 {:.0}%, top-5 {:.0}% (slowest {:.1} ms); plain BM25 top-1 {:.0}%, top-5 {:.0}%\n",
            q.questions, q.top1, q.top5, q.slowest_ms, q.bm25_top1, q.bm25_top5
        ));
        for (name, scores) in [("Korean", &q.korean), ("English", &q.english)] {
            out.push_str(&format!(
                "  {name}: {} questions, top-1 {:.0}%, top-5 {:.0}%\n",
                scores.questions, scores.top1, scores.top5
            ));
        }
        for (question, top) in &q.misses {
            out.push_str(&format!("  missed {question:?}: {}\n", top.join(", ")));
        }
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
