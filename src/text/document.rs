//! A text document: a rope, its version and its language, changed edit by edit.

use ropey::Rope;

use super::position::{LineCol, PositionEncoding, line_col_to_offset, offset_to_line_col};
use crate::language::Language;

/// A half-open range of byte offsets into a document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct TextRange {
    pub start: usize,
    pub end: usize,
}

impl TextRange {
    pub const fn new(start: usize, end: usize) -> TextRange {
        TextRange { start, end }
    }

    pub const fn empty(at: usize) -> TextRange {
        TextRange { start: at, end: at }
    }

    pub const fn len(self) -> usize {
        self.end - self.start
    }

    pub const fn is_empty(self) -> bool {
        self.start == self.end
    }

    pub const fn contains(self, offset: usize) -> bool {
        self.start <= offset && offset <= self.end
    }
}

/// One change from the editor: replace `range` (in the negotiated encoding) by `text`, or
/// replace the whole document when `range` is `None`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextChange {
    pub range: Option<(LineCol, LineCol)>,
    pub text: String,
}

/// One applied edit in bytes, with `(line, byte column)` points, which is what tree-sitter
/// needs to edit its tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByteEdit {
    pub start: usize,
    pub old_end: usize,
    pub new_end: usize,
    pub start_point: LineCol,
    pub old_end_point: LineCol,
    pub new_end_point: LineCol,
}

/// What applying a [`TextChange`] did to the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppliedChange {
    /// The whole text was replaced: there is nothing to reuse.
    Full,
    Incremental(ByteEdit),
}

/// The result of applying one change, and whether its range had to be clamped or reordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChangeOutcome {
    pub applied: AppliedChange,
    pub clamped: bool,
}

/// An open (or freshly read) document.
#[derive(Debug, Clone)]
pub struct TextDocument {
    rope: Rope,
    /// The editor's version; `None` for a file read from disk.
    version: Option<i32>,
    language: Language,
}

impl TextDocument {
    pub fn new(text: &str, version: Option<i32>, language: Language) -> TextDocument {
        TextDocument { rope: Rope::from_str(text), version, language }
    }

    pub fn rope(&self) -> &Rope {
        &self.rope
    }

    pub fn version(&self) -> Option<i32> {
        self.version
    }

    pub fn set_version(&mut self, version: Option<i32>) {
        self.version = version;
    }

    pub fn language(&self) -> Language {
        self.language
    }

    /// The byte range of a `(start, end)` position pair, clamped into the document and put in
    /// order. The flag says whether anything had to be corrected.
    pub fn resolve_range(
        &self,
        (start, end): (LineCol, LineCol),
        encoding: PositionEncoding,
    ) -> (TextRange, bool) {
        let start = line_col_to_offset(&self.rope, start, encoding);
        let end = line_col_to_offset(&self.rope, end, encoding);
        let corrected = start.clamped || end.clamped || start.offset > end.offset;
        let range = TextRange::new(start.offset.min(end.offset), start.offset.max(end.offset));
        (range, corrected)
    }

    /// Applies one change. Out-of-range positions are clamped (and reported through
    /// [`ChangeOutcome::clamped`]), never a panic.
    pub fn apply_change(&mut self, change: &TextChange, encoding: PositionEncoding) -> ChangeOutcome {
        let Some(range) = change.range else {
            self.rope = Rope::from_str(&change.text);
            return ChangeOutcome { applied: AppliedChange::Full, clamped: false };
        };
        let (range, clamped) = self.resolve_range(range, encoding);
        let edit = self.replace(range, &change.text);
        ChangeOutcome { applied: AppliedChange::Incremental(edit), clamped }
    }

    /// Replaces a byte range (which must lie on character boundaries, as every range this
    /// module hands out does) and describes the edit.
    pub fn replace(&mut self, range: TextRange, text: &str) -> ByteEdit {
        let start_point = self.point(range.start);
        let old_end_point = self.point(range.end);
        let start_char = self.rope.byte_to_char(range.start);
        let end_char = self.rope.byte_to_char(range.end);
        self.rope.remove(start_char..end_char);
        self.rope.insert(start_char, text);
        let new_end = range.start + text.len();
        ByteEdit {
            start: range.start,
            old_end: range.end,
            new_end,
            start_point,
            old_end_point,
            new_end_point: self.point(new_end),
        }
    }

    /// `(line, byte column)` of an offset.
    pub fn point(&self, offset: usize) -> LineCol {
        offset_to_line_col(&self.rope, offset, PositionEncoding::Utf8)
    }

    /// The whole text as a `String` (copies: for tests, checkers and the command line).
    pub fn text(&self) -> String {
        self.rope.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(start: (u32, u32), end: (u32, u32), text: &str) -> TextChange {
        TextChange {
            range: Some((LineCol::new(start.0, start.1), LineCol::new(end.0, end.1))),
            text: text.to_string(),
        }
    }

    #[test]
    fn applies_incremental_changes_in_utf16() {
        let mut doc = TextDocument::new("print('한😀')\nx = 1\n", Some(1), Language::Python);
        // replace the emoji (UTF-16 columns 8..10) with "!"
        let outcome = doc.apply_change(&change((0, 8), (0, 10), "!"), PositionEncoding::Utf16);
        assert!(!outcome.clamped);
        assert_eq!(doc.text(), "print('한!')\nx = 1\n");
        let AppliedChange::Incremental(edit) = outcome.applied else { panic!("not incremental") };
        assert_eq!((edit.start, edit.old_end, edit.new_end), (10, 14, 11));
        assert_eq!(edit.new_end_point, LineCol::new(0, 11));
    }

    #[test]
    fn clamps_ranges_past_the_end_and_reversed_ranges() {
        let mut doc = TextDocument::new("ab\ncd", Some(1), Language::PlainText);
        let outcome = doc.apply_change(&change((1, 1), (9, 9), "X"), PositionEncoding::Utf16);
        assert!(outcome.clamped);
        assert_eq!(doc.text(), "ab\ncX");
        let outcome = doc.apply_change(&change((0, 2), (0, 0), "Y"), PositionEncoding::Utf8);
        assert!(outcome.clamped);
        assert_eq!(doc.text(), "Y\ncX");
    }

    #[test]
    fn full_change_replaces_everything() {
        let mut doc = TextDocument::new("old", Some(1), Language::PlainText);
        let outcome =
            doc.apply_change(&TextChange { range: None, text: "new\ntext".into() }, PositionEncoding::Utf16);
        assert_eq!(outcome.applied, AppliedChange::Full);
        assert_eq!(doc.text(), "new\ntext");
    }
}
