//! `tokamak bench syntax`: how precisely syntax errors are placed, on real code with one token
//! removed — a block's `:`, a closing bracket, an opening one in Python; a `{`, a `}`, a
//! closing bracket in TypeScript — measured for Tokamak's own syntax check beside ruff's
//! parser (Python) and tsc's (TypeScript) on the same mutated files. A case is a hit when the
//! first error reported is on the line the token was removed from (the line a person would
//! fix; when that line is left with no code, as for a `}` alone on its line, the line of code
//! before it counts too — for every checker alike); extra errors are the ones reported
//! beyond the first. Mutations are chosen
//! deterministically (a hash of the file and the kind), so runs compare.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use ropey::Rope;
use serde::Serialize;

use super::stdio::errln;
use crate::syntax::{MAX_SYNTAX_PROBLEMS, SyntaxTree, diagnose, strict_errors};
use crate::text::Language;

/// Files larger than this are left out (the mutations are about placement, not size).
const MAX_FILE_BYTES: u64 = 200 * 1024;

#[derive(Debug, Clone, Default)]
pub struct SyntaxBenchOptions {
    pub python: Vec<PathBuf>,
    pub typescript: Vec<PathBuf>,
    /// Files per language at most (spread evenly over the sorted list).
    pub files: usize,
    /// ruff and tsc to compare with; found on `PATH` (and in the tools folder) when not given.
    pub ruff: Option<PathBuf>,
    pub tsc: Option<PathBuf>,
}

/// One mutated file.
#[derive(Debug, Clone)]
pub struct Mutation {
    pub language: Language,
    pub kind: &'static str,
    /// The original file.
    pub origin: PathBuf,
    /// The line the token was removed from, 0-based.
    pub line: usize,
    /// When that line has no code left, the last line of code before it: a person puts the
    /// token back on either.
    pub also: Option<usize>,
    pub text: String,
}

impl Mutation {
    /// Whether an error first reported on `line` is where a person would fix this one.
    pub fn hit(&self, line: usize) -> bool {
        line == self.line || Some(line) == self.also
    }
}

/// Where one checker put its first syntax error, and how many it reported.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Found {
    pub first_line: Option<usize>,
    pub count: usize,
}

/// One checker's figures over the cases of one language and kind.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Score {
    pub hits: usize,
    /// Cases where it found no error at all.
    pub missed: usize,
    pub extra: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub language: String,
    pub kind: String,
    pub cases: usize,
    pub tokamak: Score,
    /// ruff (Python) or tsc (TypeScript); `None` when it could not be run.
    pub reference: Option<Score>,
    pub reference_name: String,
    /// Tokamak's own time for its syntax check, parse included, per case.
    pub tokamak_micros: u64,
}

/// Builds the mutations and scores Tokamak and the reference parsers on them.
pub fn bench_syntax(options: &SyntaxBenchOptions) -> anyhow::Result<Vec<Row>> {
    let mut rows = Vec::new();
    for (language, dirs, extension) in
        [(Language::Python, &options.python, "py"), (Language::TypeScript, &options.typescript, "ts")]
    {
        if dirs.is_empty() {
            continue;
        }
        let files = pick_files(dirs, extension, options.files.max(1));
        let mutations: Vec<Mutation> = files.iter().flat_map(|path| mutate(path, language)).collect();
        let mut ours = Vec::with_capacity(mutations.len());
        let mut micros = Vec::with_capacity(mutations.len());
        for mutation in &mutations {
            let started = Instant::now();
            ours.push(tokamak_found(mutation));
            micros.push(started.elapsed().as_micros() as u64);
        }
        if let Some(shown) = std::env::var("TOKAMAK_BENCH_MISSES").ok().and_then(|n| n.parse::<usize>().ok())
        {
            show_misses(&mutations, &ours, shown);
        }
        let (reference_name, reference) = match language {
            Language::Python => ("ruff", ruff_found(&mutations, options.ruff.as_deref())),
            _ => ("tsc", tsc_found(&mutations, options.tsc.as_deref())),
        };
        if let Err(reason) = &reference {
            errln!("tokamak: {reference_name} was not run: {reason}");
        }
        let kinds: Vec<&'static str> = kinds(language).iter().map(|(kind, _)| *kind).collect();
        for kind in kinds {
            let indices: Vec<usize> = (0..mutations.len()).filter(|&i| mutations[i].kind == kind).collect();
            if indices.is_empty() {
                continue;
            }
            let score = |found: &dyn Fn(usize) -> Found| {
                let mut score = Score::default();
                for &i in &indices {
                    let f = found(i);
                    match f.first_line {
                        None => score.missed += 1,
                        Some(line) if mutations[i].hit(line) => score.hits += 1,
                        Some(_) => {}
                    }
                    score.extra += f.count.saturating_sub(1);
                }
                score
            };
            let total: u64 = indices.iter().map(|&i| micros[i]).sum();
            rows.push(Row {
                language: language_name(language).to_string(),
                kind: kind.to_string(),
                cases: indices.len(),
                tokamak: score(&|i| ours[i]),
                reference: reference.as_ref().ok().map(|found| score(&|i| found[i])),
                reference_name: reference_name.to_string(),
                tokamak_micros: total / indices.len() as u64,
            });
        }
    }
    Ok(rows)
}

/// `TOKAMAK_BENCH_MISSES=N`: the first N cases of each kind where Tokamak's first error is
/// not on the mutated line, on stderr (to see what to improve).
fn show_misses(mutations: &[Mutation], ours: &[Found], shown: usize) {
    let mut per_kind: HashMap<&str, usize> = HashMap::new();
    for (mutation, found) in mutations.iter().zip(ours) {
        if found.first_line.is_some_and(|line| mutation.hit(line)) {
            continue;
        }
        let count = per_kind.entry(mutation.kind).or_default();
        if *count >= shown {
            continue;
        }
        *count += 1;
        let rope = Rope::from_str(&mutation.text);
        let lines: Vec<String> = (mutation.line.saturating_sub(2)..(mutation.line + 3).min(rope.len_lines()))
            .map(|l| {
                format!(
                    "{:>5}{} {}",
                    l + 1,
                    if l == mutation.line { '>' } else { ' ' },
                    rope.line(l).to_string().trim_end()
                )
            })
            .collect();
        let problems = SyntaxTree::parse(mutation.language, &rope)
            .ok()
            .flatten()
            .map(|tree| diagnose(tree.tree(), &rope, mutation.language))
            .unwrap_or_default();
        let said: Vec<String> = problems
            .iter()
            .take(3)
            .map(|p| format!("line {}: {}", rope.byte_to_line(p.range.start) + 1, p.message))
            .collect();
        errln!(
            "--- {} ({})
{}
  => {}",
            mutation.kind,
            mutation.origin.display(),
            lines.join("\n"),
            said.join(" | ")
        );
    }
}

fn language_name(language: Language) -> &'static str {
    match language {
        Language::Python => "python",
        _ => "typescript",
    }
}

/// The table `tokamak bench syntax` prints.
pub fn table(rows: &[Row]) -> String {
    let mut out = String::from(
        "language    kind         cases  tokamak hit  extra/case  reference    hit  extra/case  µs/case\n",
    );
    let percent = |hits: usize, cases: usize| 100.0 * hits as f64 / cases.max(1) as f64;
    let mut totals: HashMap<String, (usize, usize, usize, usize, usize)> = HashMap::new();
    for row in rows {
        let (reference, hit, extra) = match &row.reference {
            Some(score) => (
                row.reference_name.clone(),
                format!("{:5.1}%", percent(score.hits, row.cases)),
                format!("{:10.2}", score.extra as f64 / row.cases as f64),
            ),
            None => (format!("({})", row.reference_name), "    -".into(), "         -".into()),
        };
        out.push_str(&format!(
            "{:<11} {:<12} {:>5}  {:>10.1}%  {:>10.2}  {:<10} {}  {}  {:>7}\n",
            row.language,
            row.kind,
            row.cases,
            percent(row.tokamak.hits, row.cases),
            row.tokamak.extra as f64 / row.cases as f64,
            reference,
            hit,
            extra,
            row.tokamak_micros
        ));
        let total = totals.entry(row.language.clone()).or_default();
        total.0 += row.cases;
        total.1 += row.tokamak.hits;
        total.2 += row.tokamak.extra;
        if let Some(score) = &row.reference {
            total.3 += score.hits;
            total.4 += score.extra;
        }
    }
    let mut languages: Vec<_> = totals.into_iter().collect();
    languages.sort();
    for (language, (cases, hits, extra, reference_hits, reference_extra)) in languages {
        out.push_str(&format!(
            "{language:<11} {:<12} {cases:>5}  {:>10.1}%  {:>10.2}  {:<10} {:5.1}%  {:10.2}\n",
            "all",
            percent(hits, cases),
            extra as f64 / cases.max(1) as f64,
            "",
            percent(reference_hits, cases),
            reference_extra as f64 / cases.max(1) as f64,
        ));
    }
    out
}

/// Up to `count` files with `extension` under `dirs`, spread evenly over their sorted list.
fn pick_files(dirs: &[PathBuf], extension: &str, count: usize) -> Vec<PathBuf> {
    let mut all: Vec<PathBuf> = Vec::new();
    for dir in dirs {
        for entry in crate::walk::project(dir).with_ignored().entries() {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == extension)
                && !crate::language::is_declaration_file(path)
                && entry.metadata().is_ok_and(|m| m.is_file() && m.len() <= MAX_FILE_BYTES)
            {
                all.push(path.to_path_buf());
            }
        }
    }
    all.sort();
    if all.len() <= count {
        return all;
    }
    (0..count).map(|i| all[i * all.len() / count].clone()).collect()
}

/// The mutation kinds of a language: a name, and whether a token (its kind, its parent's
/// kind) is one to remove.
type Picker = fn(&str, &str) -> bool;

fn kinds(language: Language) -> &'static [(&'static str, Picker)] {
    const PYTHON: &[(&str, Picker)] = &[
        ("block colon", |token, parent| {
            token == ":"
                && matches!(
                    parent,
                    "function_definition"
                        | "class_definition"
                        | "if_statement"
                        | "elif_clause"
                        | "else_clause"
                        | "for_statement"
                        | "while_statement"
                        | "with_statement"
                        | "try_statement"
                        | "except_clause"
                        | "finally_clause"
                )
        }),
        ("close bracket", |token, _| matches!(token, ")" | "]" | "}")),
        ("open bracket", |token, _| matches!(token, "(" | "[" | "{")),
    ];
    const TYPESCRIPT: &[(&str, Picker)] = &[
        ("open brace", |token, _| token == "{"),
        ("close brace", |token, _| token == "}"),
        ("close bracket", |token, _| matches!(token, ")" | "]")),
    ];
    match language {
        Language::Python => PYTHON,
        _ => TYPESCRIPT,
    }
}

/// One mutation per kind of the file (none if it does not parse cleanly to begin with).
fn mutate(path: &Path, language: Language) -> Vec<Mutation> {
    let Ok(text) = std::fs::read_to_string(path) else { return Vec::new() };
    let rope = Rope::from_str(&text);
    let Ok(Some(tree)) = SyntaxTree::parse(language, &rope) else { return Vec::new() };
    if tree.tree().root_node().has_error() {
        return Vec::new();
    }
    let mut tokens: Vec<(usize, usize, String, String)> = Vec::new();
    let mut cursor = tree.tree().walk();
    'walk: loop {
        let node = cursor.node();
        if node.child_count() == 0 && !node.is_named() {
            let parent = node.parent().map(|p| p.kind().to_string()).unwrap_or_default();
            tokens.push((node.start_byte(), node.end_byte(), node.kind().to_string(), parent));
        }
        if cursor.goto_first_child() {
            continue;
        }
        while !cursor.goto_next_sibling() {
            if !cursor.goto_parent() {
                break 'walk;
            }
        }
    }
    let mut out = Vec::new();
    for (kind, picks) in kinds(language) {
        let candidates: Vec<&(usize, usize, String, String)> =
            tokens.iter().filter(|(_, _, token, parent)| picks(token, parent)).collect();
        if candidates.is_empty() {
            continue;
        }
        let index = (fnv(&format!("{}#{kind}", path.display())) % candidates.len() as u64) as usize;
        let (start, end, _, _) = candidates[index];
        let mut mutated = text.clone();
        mutated.replace_range(*start..*end, "");
        let line = rope.byte_to_line(*start);
        let mutated_rope = Rope::from_str(&mutated);
        let blank =
            |l: usize| l >= mutated_rope.len_lines() || mutated_rope.line(l).to_string().trim().is_empty();
        let also = blank(line).then(|| (0..line).rev().find(|&l| !blank(l))).flatten();
        out.push(Mutation { language, kind, origin: path.to_path_buf(), line, also, text: mutated });
    }
    out
}

fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| (hash ^ byte as u64).wrapping_mul(0x100_0000_01b3))
}

/// What Tokamak's syntax check (the Observer's) reports on the mutated text: tree-sitter's
/// placed errors, or, for a text tree-sitter accepts, what the language's own parser rejects.
fn tokamak_found(mutation: &Mutation) -> Found {
    let rope = Rope::from_str(&mutation.text);
    let Ok(Some(tree)) = SyntaxTree::parse(mutation.language, &rope) else { return Found::default() };
    let starts: Vec<usize> = if tree.tree().root_node().has_error() {
        diagnose(tree.tree(), &rope, mutation.language).iter().map(|p| p.range.start).collect()
    } else {
        strict_errors(mutation.language, &mutation.text).unwrap_or_default().iter().map(|e| e.at).collect()
    };
    Found {
        first_line: starts.iter().map(|&at| rope.byte_to_line(at.min(rope.len_bytes()))).min(),
        count: starts.len().min(MAX_SYNTAX_PROBLEMS),
    }
}

fn program(given: Option<&Path>, name: &str) -> Result<PathBuf, String> {
    if let Some(path) = given {
        return Ok(path.to_path_buf());
    }
    // the test suite's tools folder (scripts/install-tools), then PATH
    if let Some(tools) = std::env::var_os("TOKAMAK_TOOLS").map(PathBuf::from) {
        for candidate in [tools.join("venv/bin").join(name), tools.join("node/node_modules/.bin").join(name)]
        {
            if candidate.is_file() {
                return Ok(candidate);
            }
        }
    }
    which::which(name).map_err(|_| format!("{name} is not on PATH (pass --{name} PATH)"))
}

/// Writes the mutations to a folder, one file each (`case<N>.<ext>`).
fn write_cases(mutations: &[Mutation], extension: &str) -> Result<tempfile::TempDir, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    for (i, mutation) in mutations.iter().enumerate() {
        std::fs::write(dir.path().join(format!("case{i}.{extension}")), &mutation.text)
            .map_err(|e| e.to_string())?;
    }
    Ok(dir)
}

fn case_index(path: &str) -> Option<usize> {
    let name = Path::new(path).file_stem()?.to_str()?;
    name.strip_prefix("case")?.parse().ok()
}

/// ruff's syntax errors (`invalid-syntax`) per mutation.
fn ruff_found(mutations: &[Mutation], given: Option<&Path>) -> Result<Vec<Found>, String> {
    let ruff = program(given, "ruff")?;
    let dir = write_cases(mutations, "py")?;
    let output = Command::new(&ruff)
        .args([
            "check",
            "--no-cache",
            "--isolated",
            "--select",
            "E9",
            "--output-format",
            "json",
            "--exit-zero",
        ])
        .arg(dir.path())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", ruff.display()))?;
    let reports: Vec<serde_json::Value> = serde_json::from_slice(&output.stdout).map_err(|e| {
        format!("ruff's output is not JSON ({e}): {}", String::from_utf8_lossy(&output.stderr))
    })?;
    let mut found = vec![Found::default(); mutations.len()];
    for report in reports {
        let syntax = report["code"].is_null() || report["code"] == "invalid-syntax";
        let Some(i) = report["filename"].as_str().and_then(case_index) else { continue };
        if !syntax || i >= found.len() {
            continue;
        }
        let line = report["location"]["row"].as_u64().unwrap_or(1).saturating_sub(1) as usize;
        found[i].count += 1;
        found[i].first_line = Some(found[i].first_line.map_or(line, |l| l.min(line)));
    }
    Ok(found)
}

/// tsc's syntax errors (TS1xxx) per mutation, from one run over every file.
fn tsc_found(mutations: &[Mutation], given: Option<&Path>) -> Result<Vec<Found>, String> {
    let tsc = program(given, "tsc")?;
    let dir = write_cases(mutations, "ts")?;
    let files: Vec<PathBuf> = (0..mutations.len()).map(|i| dir.path().join(format!("case{i}.ts"))).collect();
    let output = Command::new(&tsc)
        .args([
            "--noEmit",
            "--pretty",
            "false",
            "--skipLibCheck",
            "--noResolve",
            "--noLib",
            "--target",
            "es2022",
        ])
        .args(&files)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", tsc.display()))?;
    let mut found = vec![Found::default(); mutations.len()];
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        // path(line,col): error TS1005: ';' expected.
        let Some((location, rest)) = line.split_once("): error TS") else { continue };
        let Some((path, position)) = location.rsplit_once('(') else { continue };
        let code: u32 = rest.split(':').next().and_then(|c| c.parse().ok()).unwrap_or(0);
        if !(1000..2000).contains(&code) {
            continue;
        }
        let Some(i) = case_index(path) else { continue };
        let row: usize = position.split(',').next().and_then(|r| r.parse().ok()).unwrap_or(1);
        if i < found.len() {
            found[i].count += 1;
            let line = row.saturating_sub(1);
            found[i].first_line = Some(found[i].first_line.map_or(line, |l| l.min(line)));
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mutation(language: Language, text: &str) -> Mutation {
        Mutation {
            language,
            kind: "test",
            origin: PathBuf::new(),
            line: 0,
            also: None,
            text: text.to_string(),
        }
    }

    #[test]
    fn tokamak_is_measured_as_the_observer_publishes() {
        // tree-sitter's placed error
        let found = tokamak_found(&mutation(Language::Python, "x = 1\ndef f(x)\n    return x\n"));
        assert_eq!(found, Found { first_line: Some(1), count: 1 });
        // a text tree-sitter accepts and Python rejects: the language's own parser's verdict
        let found = tokamak_found(&mutation(Language::Python, "x = 1\ndef f(x=1, y):\n    return y\n"));
        assert_eq!(found, Found { first_line: Some(1), count: 1 });
        assert_eq!(tokamak_found(&mutation(Language::TypeScript, "let a = 1;\n")), Found::default());
    }
}
