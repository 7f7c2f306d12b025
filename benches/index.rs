//! Benchmarks of the live index's update of an open document after a keystroke (SPEC §4: at
//! most 2 ms at 10 000 lines): the facts taken from the tree the Observer already parsed,
//! only the pieces the edit changed read again (`context/pieces.rs`), beside the whole file
//! read again from that tree — at 200, 2 000 and 10 000 lines and 5 MB.

mod common;

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use tokamak::context::Index;
use tokamak::syntax::SyntaxTree;
use tokamak::text::{AppliedChange, Language, LineCol, PositionEncoding, TextChange, TextDocument};

/// A document, its tree and the index that has read it, ready to be typed into.
struct Typing {
    document: TextDocument,
    tree: SyntaxTree,
    index: Index,
    path: std::path::PathBuf,
    at: LineCol,
    typed: bool,
}

impl Typing {
    fn new(folder: &std::path::Path, text: &str) -> Typing {
        let path = folder.join("big.py");
        let document = TextDocument::new(text, Some(1), Language::Python);
        let tree = SyntaxTree::parse(Language::Python, document.rope()).unwrap().unwrap();
        let mut index = Index::build(folder);
        index.update_document(&path, document.rope(), tree.tree(), Language::Python);
        // inside `self` of `        self.name = name`, halfway through
        let line = common::line_from(text, text.lines().count() / 2, "        self.name");
        Typing { document, tree, index, path, at: LineCol::new(line as u32, 12), typed: false }
    }

    /// One character typed (or the one typed before deleted), the tree told and reparsed, as
    /// the Observer does on the keystroke.
    fn keystroke(&mut self) {
        let change = if self.typed {
            TextChange {
                range: Some((self.at, LineCol::new(self.at.line, self.at.col + 1))),
                text: String::new(),
            }
        } else {
            TextChange { range: Some((self.at, self.at)), text: "x".into() }
        };
        self.typed = !self.typed;
        if let AppliedChange::Incremental(edit) =
            self.document.apply_change(&change, PositionEncoding::Utf16).applied
        {
            self.tree.edit(&edit);
        }
        self.tree.reparse(self.document.rope()).unwrap();
    }
}

fn bench_update(c: &mut Criterion) {
    let folder = tempfile::tempdir().unwrap();
    for (label, text) in common::sizes() {
        let mut typing = Typing::new(folder.path(), &text);
        c.bench_function(&format!("index update after a keystroke, {label} python file"), |b| {
            b.iter_custom(|iterations| {
                let mut spent = Duration::ZERO;
                for _ in 0..iterations {
                    typing.keystroke();
                    let Typing { index, path, document, tree, .. } = &mut typing;
                    let started = Instant::now();
                    black_box(index.update_document(path, document.rope(), tree.tree(), Language::Python));
                    spent += started.elapsed();
                }
                spent
            })
        });
        // what an update cost before the pieces: the whole file's facts read from the tree
        c.bench_function(
            &format!("index update after a keystroke, whole file read again, {label} python file"),
            |b| {
                b.iter_custom(|iterations| {
                    let mut spent = Duration::ZERO;
                    for _ in 0..iterations {
                        typing.keystroke();
                        let text = typing.document.rope().to_string();
                        let started = Instant::now();
                        black_box(typing.index.update_parsed(
                            &typing.path,
                            &text,
                            Some((typing.tree.tree(), Language::Python)),
                        ));
                        spent += started.elapsed();
                    }
                    spent
                })
            },
        );
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(Duration::from_secs(3));
    targets = bench_update
}
criterion_main!(benches);
