//! An open document's index entry kept up to date piece by piece (`extract::pieces`: each
//! top-level statement, and each statement of a long top-level class or function): after an
//! edit only the pieces whose text changed are read again from the tree; the facts of the
//! others stay where they are in the entry, moved by the lines the edit added or removed. An
//! update then costs what the edit changed, not what the file holds (SPEC §4).

use ropey::Rope;
use tree_sitter::Tree;

use super::entry::{Entry, count_words, word_key};
use super::extract::{FileFacts, Piece, pieces};
use crate::text::Language;

/// What the index remembers of one piece of an open document.
#[derive(Debug, Clone)]
pub struct PieceRecord {
    key: u64,
    /// The line its node starts on.
    row: usize,
    /// How many definitions, imports and calls it added to the entry, in order.
    definitions: usize,
    imports: usize,
    calls: usize,
    /// Its words (by `word_key`), each with how often it occurs.
    words: Vec<(u64, u32)>,
}

impl PieceRecord {
    /// The piece's words (by `word_key`), each with how often it occurs.
    pub fn words(&self) -> &[(u64, u32)] {
        &self.words
    }
}

/// The facts and words of a whole text, read piece by piece, with the record of each piece.
pub fn read_all(tree: &Tree, text: &str, rope: &Rope, language: Language) -> (FileFacts, Vec<PieceRecord>) {
    let mut facts = FileFacts::default();
    let records =
        pieces(tree, text, language).iter().map(|piece| read(piece, text, rope, &mut facts)).collect();
    (facts, records)
}

/// Brings `entry` (made from the pieces `records` describe) up to date with `tree` and `text`,
/// reading again only the pieces that changed; returns the new records.
pub fn update(
    entry: &mut Entry,
    records: Vec<PieceRecord>,
    tree: &Tree,
    text: &str,
    rope: &Rope,
    language: Language,
) -> Vec<PieceRecord> {
    let now = pieces(tree, text, language);
    let keys: Vec<u64> = now.iter().map(|piece| piece.key(text)).collect();
    // the pieces before and after what changed, unchanged
    let same = |old: &PieceRecord, key: &u64| old.key == *key;
    let before = records.iter().zip(&keys).take_while(|(old, key)| same(old, key)).count();
    let after = records[before..]
        .iter()
        .rev()
        .zip(keys[before..].iter().rev())
        .take_while(|(old, key)| same(old, key))
        .count();
    let (old_middle, old_after) = (before..records.len() - after, records.len() - after..records.len());
    let new_middle = before..now.len() - after;

    // where the changed pieces' facts are in the entry
    let sum = |records: &[PieceRecord]| {
        records.iter().fold((0, 0, 0), |(d, i, c), r| (d + r.definitions, i + r.imports, c + r.calls))
    };
    let at = sum(&records[..before]);
    let removed = sum(&records[old_middle.clone()]);
    let mut added = FileFacts::default();
    let mut fresh: Vec<PieceRecord> = Vec::with_capacity(new_middle.len());
    for piece in &now[new_middle.clone()] {
        fresh.push(read(piece, text, rope, &mut added));
    }
    for record in &records[old_middle] {
        for (word, count) in &record.words {
            entry.forget_word(*word, *count);
        }
    }
    for record in &fresh {
        for (word, count) in &record.words {
            entry.add_word(*word, *count);
        }
    }
    let shift: isize = match (old_after.start < records.len(), now.get(new_middle.end)) {
        (true, Some(next)) => next.row as isize - records[old_after.start].row as isize,
        _ => 0,
    };
    let facts = &mut entry.facts;
    let (definitions, imports, calls) = (added.definitions.len(), added.imports.len(), added.calls.len());
    facts.definitions.splice(at.0..at.0 + removed.0, added.definitions);
    facts.imports.splice(at.1..at.1 + removed.1, added.imports);
    facts.calls.splice(at.2..at.2 + removed.2, added.calls);
    if shift != 0 {
        let moved = |line: &mut usize| *line = line.saturating_add_signed(shift);
        for definition in &mut facts.definitions[at.0 + definitions..] {
            moved(&mut definition.lines.0);
            moved(&mut definition.lines.1);
        }
        for import in &mut facts.imports[at.1 + imports..] {
            moved(&mut import.line);
        }
        for call in &mut facts.calls[at.2 + calls..] {
            moved(&mut call.line);
        }
    }

    let mut records = records;
    let kept_after: Vec<PieceRecord> = records.drain(records.len() - after..).collect();
    records.truncate(before);
    records.extend(fresh);
    records.extend(kept_after.into_iter().map(|mut r| {
        r.row = r.row.saturating_add_signed(shift);
        r
    }));
    // a long definition's own last line is its last member's, wherever that moved
    let mut definition = 0;
    for (piece, record) in now.iter().zip(&records) {
        if let (Some(end), Some(own)) =
            (piece.header_end_row(rope), entry.facts.definitions.get_mut(definition))
            && record.definitions > 0
        {
            own.lines.1 = end;
        }
        definition += record.definitions;
    }
    records
}

/// Reads one piece: its facts appended to `facts`, and its record.
fn read(piece: &Piece<'_>, text: &str, rope: &Rope, facts: &mut FileFacts) -> PieceRecord {
    let before = (facts.definitions.len(), facts.imports.len(), facts.calls.len());
    piece.facts_into(text, rope, facts);
    let mut words: std::collections::HashMap<u64, u32> = std::collections::HashMap::new();
    count_words(text.get(piece.start..piece.end).unwrap_or_default(), |word| {
        *words.entry(word_key(word)).or_insert(0) += 1;
    });
    PieceRecord {
        key: piece.key(text),
        row: piece.row,
        definitions: facts.definitions.len() - before.0,
        imports: facts.imports.len() - before.1,
        calls: facts.calls.len() - before.2,
        words: words.into_iter().collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::Index;
    use crate::syntax::SyntaxTree;

    /// A module with a long decorated class, a long function, short definitions, imports and
    /// calls at every level.
    fn python() -> String {
        let mut text = String::from(
            "import os\nfrom json import loads as load\n\n\n@dataclass(frozen=True)\nclass Long(Base, metaclass=meta()):\n    \"\"\"Long.\"\"\"\n    count = compute()\n",
        );
        for n in 0..30 {
            text.push_str(&format!(
                "\n    def method_{n}(self, value):\n        # step {n}\n        return self.helper(value) + os.path.join('a', str({n}))\n"
            ));
        }
        text.push_str("\n\ndef long_function(items):\n    total = 0\n");
        for n in 0..60 {
            text.push_str(&format!("    total += len(items[{n}]) if check(items) else {n}\n"));
        }
        text.push_str("    def inner():\n        return load('{}')\n    return inner()\n\n\ndef short():\n    return Long().method_1(2)\n\nshort()\n");
        text
    }

    fn typescript() -> String {
        let mut text = String::from(
            "import { a, b as c } from './m';\n\nexport class Service extends Base {\n  private count = start();\n",
        );
        for n in 0..30 {
            text.push_str(&format!(
                "  method{n}(x: number): number {{\n    return this.helper(x) + a({n});\n  }}\n"
            ));
        }
        text.push_str("}\n\nexport function run() {\n  return new Service().method1(c());\n}\n");
        text
    }

    fn tree(language: Language, text: &str) -> SyntaxTree {
        SyntaxTree::parse(language, &Rope::from_str(text)).unwrap().unwrap()
    }

    /// The facts as the whole tree gives them: every symbol of the document, every call and
    /// import in one walk.
    fn whole(language: Language, text: &str) -> FileFacts {
        let rope = Rope::from_str(text);
        let tree = tree(language, text);
        let mut facts = FileFacts::default();
        let symbols = crate::syntax::document_symbols(tree.tree(), &rope, language);
        super::super::extract::tests_support::flatten(&symbols, &rope, &mut facts);
        super::super::extract::tests_support::walk(tree.tree(), text, language, &mut facts);
        facts
    }

    #[test]
    fn pieces_give_the_facts_the_whole_tree_gives() {
        for (language, text) in [(Language::Python, python()), (Language::TypeScript, typescript())] {
            let syntax = tree(language, &text);
            let pieces = pieces(syntax.tree(), &text, language);
            assert!(pieces.iter().any(|p| p.header_end_row(&Rope::from_str(&text)).is_some()), "split");
            assert_eq!(pieces.first().map(|p| p.start), Some(0));
            assert_eq!(pieces.last().map(|p| p.end), Some(text.len()), "the pieces cover the text");
            assert!(pieces.windows(2).all(|w| w[0].end == w[1].start));
            let by_pieces = crate::context::facts_of_tree(syntax.tree(), &text, language);
            assert_eq!(by_pieces, whole(language, &text), "{language:?}");
        }
    }

    /// Edits anywhere — inside a method, across pieces, adding and removing lines, renaming
    /// the class — leave the entry equal to one read afresh from the new text.
    #[test]
    fn updates_read_again_only_what_changed_and_equal_a_fresh_read() {
        let path = std::path::Path::new("/p/m.py");
        let mut rng = fastrand::Rng::with_seed(7);
        let inserts = ["x", "\n", "    y = f(z)\n", "def g():\n    pass\n", "#", "(", ")", ":", "Long", ""];
        let mut text = python();
        let mut index = Index::default();
        let rope = Rope::from_str(&text);
        assert!(index.update_document(path, &rope, tree(Language::Python, &text).tree(), Language::Python));
        for step in 0..200 {
            let at = rng.usize(..=text.len());
            let at = (0..=at).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
            let end = (at + rng.usize(..4)).min(text.len());
            let end = (end..=text.len()).find(|&i| text.is_char_boundary(i)).unwrap_or(text.len());
            let insert = inserts[rng.usize(..inserts.len())];
            text.replace_range(at..end, insert);
            let rope = Rope::from_str(&text);
            let syntax = tree(Language::Python, &text);
            index.update_document(path, &rope, syntax.tree(), Language::Python);
            let mut fresh = Index::default();
            fresh.update_document(path, &rope, syntax.tree(), Language::Python);
            let (kept, read) = (index.file_facts(path).unwrap(), fresh.file_facts(path).unwrap());
            let first = |a: &FileFacts, b: &FileFacts| {
                let definition = a.definitions.iter().zip(&b.definitions).position(|(x, y)| x != y);
                let call = a.calls.iter().zip(&b.calls).position(|(x, y)| x != y);
                format!("definition {definition:?}, call {call:?}")
            };
            assert!(kept == read, "step {step}: first difference at {}\n{text}", first(kept, read));
            assert_eq!(index.words_of(path), fresh.words_of(path), "step {step}");
        }
    }
}
