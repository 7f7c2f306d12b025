//! Benchmarks of the text and syntax layers: opening a 10 000-line Python file, and a
//! single-character `didChange` up to its syntax diagnostics being ready, in that file and
//! in files of 1 MB and 5 MB (SPEC §4: a keystroke's cost follows the edit, not the file).

mod common;

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use tokamak::observer::{keystroke_syntax, syntax_diagnostics};
use tokamak::syntax::strict_errors;
use tokamak::text::{Language, LineCol, PositionEncoding, TextChange};
use tokamak::workspace::Workspace;
use url::Url;

fn ten_thousand_lines() -> String {
    common::lines(10_000)
}

/// What follows a pause in typing in a document tree-sitter accepts: the language's own
/// parse of the whole text (off the keystroke, on a blocking thread).
fn bench_strict(c: &mut Criterion) {
    let python = ten_thousand_lines();
    c.bench_function("the language's own parse of a 10k-line python file (ruff's parser)", |b| {
        b.iter(|| black_box(strict_errors(Language::Python, black_box(&python))))
    });
    let typescript = "export class User {\n  constructor(public name: string, private email: string) {}\n  display(): string {\n    return this.name.toUpperCase();\n  }\n  valid(): boolean {\n    return this.email.includes(\"@\");\n  }\n}\n\n"
        .repeat(1000);
    c.bench_function("the language's own parse of a 10k-line typescript file (oxc's parser)", |b| {
        b.iter(|| black_box(strict_errors(Language::TypeScript, black_box(&typescript))))
    });
}

fn bench_open(c: &mut Criterion) {
    let text = ten_thousand_lines();
    let uri = Url::parse("file:///bench/big.py").unwrap();
    c.bench_function("open 10k-line python file (parse + syntax diagnostics)", |b| {
        b.iter(|| {
            let mut workspace = Workspace::default();
            let snapshot = workspace.open(uri.clone(), "python", 1, black_box(&text));
            black_box(syntax_diagnostics(&snapshot))
        })
    });
}

/// Types one character in the middle of the file and deletes it again, alternately, so the
/// document stays the same size; each step is one `didChange` up to diagnostics.
/// `column` 12 is inside `self` of `        self.name = name`; 8 is where the indentation ends,
/// which tree-sitter-python's scanner handles by reparsing the rest of the file.
///
/// A file over `syntax.background_parse_bytes` (256 KiB) is not reparsed on the keystroke:
/// this measures what the editor waits for; [`bench_background_parse`] what follows once
/// typing pauses.
fn bench_keystroke(c: &mut Criterion, name: &str, text: &str, column: u32, character: &str) {
    let uri = Url::parse("file:///bench/big.py").unwrap();
    let mut workspace = Workspace::default();
    workspace.open(uri.clone(), "python", 0, text);
    // a line inside a method, halfway through the file
    let middle = text.lines().count() / 2;
    let line = (middle..)
        .find(|&n| text.lines().nth(n).is_some_and(|l| l.starts_with("        self.name")))
        .unwrap_or(middle) as u32;
    let at = LineCol::new(line, column);
    let mut version = 0;
    c.bench_function(name, |b| {
        b.iter(|| {
            version += 1;
            let change = if version % 2 == 1 {
                TextChange { range: Some((at, at)), text: character.to_string() }
            } else {
                TextChange { range: Some((at, LineCol::new(line, column + 1))), text: String::new() }
            };
            let (snapshot, _) = workspace.change(&uri, version, &[change], PositionEncoding::Utf16).unwrap();
            black_box(keystroke_syntax(&snapshot))
        })
    });
}

/// Placing a syntax error (the repair's re-parses), which a large document gets in the
/// background after the keystroke, and a small one on it.
fn bench_placement(c: &mut Criterion) {
    let uri = Url::parse("file:///bench/big.py").unwrap();
    for (label, text) in [
        ("10k-line", ten_thousand_lines()),
        ("60 KB", common::of_size(60 * 1024)),
        ("16 KB", common::of_size(16 * 1024)),
    ] {
        // the colon of a `def` in the middle removed
        let at = text[text.len() / 2..].find("-> str:").map(|i| text.len() / 2 + i + 6).unwrap();
        let broken = format!("{}{}", &text[..at], &text[at + 1..]);
        let mut workspace = Workspace::default();
        let snapshot = workspace.open(uri.clone(), "python", 1, &broken);
        c.bench_function(&format!("placing a removed colon's syntax error in a {label} python file"), |b| {
            b.iter(|| black_box(syntax_diagnostics(&snapshot)))
        });
    }
}

/// The same keystroke (inside an identifier) with tree-sitter alone: the part of a keystroke
/// that is the parser's, for comparison.
fn bench_bare_reparse(c: &mut Criterion, label: &str, text: &str) {
    use tree_sitter::{InputEdit, Parser, Point};
    let mut text = text.to_string();
    let middle = text.lines().count() / 2;
    let line = (middle..)
        .find(|&n| text.lines().nth(n).is_some_and(|l| l.starts_with("        self.name")))
        .unwrap_or(middle);
    let offset: usize = text.lines().take(line).map(|l| l.len() + 1).sum::<usize>() + 12;
    let mut parser = Parser::new();
    parser.set_language(&tree_sitter_python::LANGUAGE.into()).unwrap();
    let mut tree = parser.parse(&text, None).unwrap();
    let (at, after) = (Point::new(line, 12), Point::new(line, 13));
    let mut typed = false;
    c.bench_function(&format!("keystroke in a {label} python file, tree-sitter's reparse alone"), |b| {
        b.iter(|| {
            let edit = if typed {
                text.remove(offset);
                InputEdit {
                    start_byte: offset,
                    old_end_byte: offset + 1,
                    new_end_byte: offset,
                    start_position: at,
                    old_end_position: after,
                    new_end_position: at,
                }
            } else {
                text.insert(offset, 'x');
                InputEdit {
                    start_byte: offset,
                    old_end_byte: offset,
                    new_end_byte: offset + 1,
                    start_position: at,
                    old_end_position: at,
                    new_end_position: after,
                }
            };
            typed = !typed;
            tree.edit(&edit);
            tree = parser.parse(&text, Some(&tree)).unwrap();
            black_box(&tree);
        })
    });
}

/// The background parse that follows a pause in typing in a large file: one keystroke's
/// edit, then the parse of the pending tree (off the keystroke, on a blocking thread).
fn bench_background_parse(c: &mut Criterion, label: &str, text: &str) {
    let uri = Url::parse("file:///bench/big.py").unwrap();
    let mut workspace = Workspace::default();
    workspace.open(uri.clone(), "python", 0, text);
    let middle = text.lines().count() / 2;
    let line = (middle..)
        .find(|&n| text.lines().nth(n).is_some_and(|l| l.starts_with("        self.name")))
        .unwrap_or(middle) as u32;
    let mut version = 0;
    c.bench_function(&format!("background parse after a keystroke in a {label} python file"), |b| {
        b.iter(|| {
            version += 1;
            let change = if version % 2 == 1 {
                TextChange {
                    range: Some((LineCol::new(line, 12), LineCol::new(line, 12))),
                    text: "x".to_string(),
                }
            } else {
                TextChange {
                    range: Some((LineCol::new(line, 12), LineCol::new(line, 13))),
                    text: String::new(),
                }
            };
            workspace.change(&uri, version, &[change], PositionEncoding::Utf16).unwrap();
            let job = workspace.parse_job(&uri).expect("a pending parse");
            let tree = job.parse().unwrap();
            black_box(syntax_diagnostics(&workspace.finish_parse(&job, tree).unwrap()))
        })
    });
}

fn bench_keystrokes(c: &mut Criterion) {
    let text = ten_thousand_lines();
    bench_keystroke(c, "keystroke in 10k-line python file (identifier char)", &text, 12, "x");
    bench_keystroke(c, "keystroke in 10k-line python file (breaks syntax)", &text, 12, "(");
    // at most syntax::FRESH_REPARSE_BYTES: a tree with errors is parsed again from scratch
    let small = common::of_size(7 * 1024);
    bench_keystroke(c, "keystroke in a 7 KiB python file (identifier char)", &small, 12, "x");
    bench_keystroke(c, "keystroke in a 7 KiB python file (breaks syntax)", &small, 12, "(");
    let measured = if common::measuring() { 2 } else { 1 };
    for (megabytes, label) in [(1, "1 MB"), (5, "5 MB")].into_iter().take(measured) {
        let text = common::of_size(megabytes * 1024 * 1024);
        bench_keystroke(c, &format!("keystroke in a {label} python file (identifier char)"), &text, 12, "x");
        bench_keystroke(c, &format!("keystroke in a {label} python file (breaks syntax)"), &text, 12, "(");
        bench_keystroke(
            c,
            &format!("keystroke in a {label} python file (at the indentation)"),
            &text,
            8,
            "x",
        );
        bench_keystroke(
            c,
            &format!("keystroke in a {label} python file (breaks syntax at the indentation)"),
            &text,
            8,
            "(",
        );
        bench_bare_reparse(c, label, &text);
        bench_background_parse(c, label, &text);
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30);
    targets = bench_open, bench_keystrokes, bench_placement, bench_strict
}
criterion_main!(benches);
