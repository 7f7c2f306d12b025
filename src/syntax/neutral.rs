//! Edits that cannot change a document's syntax: text typed into or deleted from inside a
//! comment, with no line break and nothing that would end the comment. After such an edit
//! the syntax verdict of the text before holds for the text after (moved along with the
//! edit), so a keystroke there need not wait for a reparse; the tree follows off the
//! keystroke.

use ropey::Rope;
use tree_sitter::Tree;

use crate::text::{ByteEdit, Language};

/// A comment in the current text, as a span that edits may stay inside.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommentSpan {
    /// Where its text starts, after the marker (`#`, `//`, `/*`).
    pub content_start: usize,
    /// Where its text ends: the end of the line for a line comment (typing there extends
    /// it), before the closing `*/` for a block comment.
    pub content_end: usize,
    /// A `/* … */` comment.
    pub block: bool,
}

/// The comment `edit` was made inside, and its span in the text after the edit, when the
/// edit leaves it a comment over the same lines. `tree` is the tree of the text *before* the
/// edit (not yet told of it); `rope` is the text *after* it.
pub fn comment_edit(tree: &Tree, language: Language, rope: &Rope, edit: &ByteEdit) -> Option<CommentSpan> {
    if edit.start == 0 || !language.is_parsed() {
        return None;
    }
    // the character just before the edit is in the comment (an edit at a line comment's end
    // extends it); text before the edit is the same before and after it
    let node = tree.root_node().descendant_for_byte_range(edit.start - 1, edit.start)?;
    if node.kind() != "comment" || node.child_count() > 0 {
        return None;
    }
    let (start, end) = (node.start_byte(), node.end_byte());
    let marker = |text: &str| {
        start + text.len() <= edit.start
            && rope.get_byte_slice(start..start + text.len()).is_some_and(|s| s == text)
    };
    let spec = language.spec()?;
    let line_comment = spec.line_comment;
    let span = if marker(line_comment) {
        Some(CommentSpan { content_start: start + line_comment.len(), content_end: end, block: false })
    } else if spec.block_comments && marker("/*") && end >= start + 4 {
        Some(CommentSpan { content_start: start + 2, content_end: end - 2, block: true })
    } else {
        None
    }?;
    span.admits(rope, edit)
}

impl CommentSpan {
    /// The span after `edit` (already made to `rope`) when the edit lies inside this one and
    /// leaves the comment a comment over the same lines: no line break typed (it would end a
    /// line comment, and counts as one for JavaScript's automatic semicolons even inside a
    /// block), no NUL, and in a block comment no `*` or `/` typed and no `*` and `/` brought
    /// together by a deletion (a `*/` would end it early).
    pub fn admits(self, rope: &Rope, edit: &ByteEdit) -> Option<CommentSpan> {
        if edit.start < self.content_start || edit.old_end > self.content_end || edit.old_end < edit.start {
            return None;
        }
        let inserted = rope.get_byte_slice(edit.start..edit.new_end)?;
        let breaks = |c: char| matches!(c, '\n' | '\r' | '\u{2028}' | '\u{2029}' | '\0');
        if inserted.chars().any(|c| breaks(c) || (self.block && matches!(c, '*' | '/'))) {
            return None;
        }
        let content_end = self.content_end - (edit.old_end - edit.start) + (edit.new_end - edit.start);
        if self.block && edit.start > self.content_start {
            // a `*` before the edit and a `/` after it would now meet (the closing `*/`'s own
            // `*` is never a `/`, so `**/` at the end still closes where it did)
            let after = rope.get_byte(edit.new_end);
            if rope.byte(edit.start - 1) == b'*' && after == Some(b'/') {
                return None;
            }
        }
        Some(CommentSpan { content_end, ..self })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::SyntaxTree;
    use crate::text::{AppliedChange, LineCol, PositionEncoding, TextChange, TextDocument};

    /// Types `insert` at the `$0` in `text` (replacing `delete` bytes after it) and says whether
    /// the edit is inside a comment that stays one.
    fn neutral(language: Language, text: &str, delete: usize, insert: &str) -> bool {
        let at = text.find("$0").unwrap();
        let text = text.replace("$0", "");
        let mut document = TextDocument::new(&text, Some(1), language);
        let tree = SyntaxTree::parse(language, document.rope()).unwrap().unwrap();
        let point = |offset: usize| {
            let line = text[..offset].matches('\n').count() as u32;
            let col = (offset - text[..offset].rfind('\n').map_or(0, |n| n + 1)) as u32;
            LineCol::new(line, col)
        };
        let change = TextChange { range: Some((point(at), point(at + delete))), text: insert.to_string() };
        let AppliedChange::Incremental(edit) = document.apply_change(&change, PositionEncoding::Utf8).applied
        else {
            panic!("incremental")
        };
        let span = comment_edit(tree.tree(), language, document.rope(), &edit);
        if let Some(span) = span {
            // the span names the comment's text in the new text
            let content = document.rope().byte_slice(span.content_start..span.content_end).to_string();
            assert!(content.contains(insert), "{content:?}");
        }
        span.is_some()
    }

    #[test]
    fn typing_inside_a_comment_keeps_the_syntax() {
        use Language::{Python, TypeScript};
        // typed at a line comment's end, in its middle, right after its marker
        assert!(neutral(Python, "x = 1  # a note$0\ny = 2\n", 0, "s"));
        assert!(neutral(Python, "# a $0note\n", 0, "long "));
        assert!(neutral(Python, "#$0\n", 0, "x"));
        assert!(neutral(Python, "# a note$0", 0, "x"), "at the end of the file");
        assert!(neutral(Python, "# a $0note\n", 4, "word"), "a replacement inside");
        assert!(neutral(TypeScript, "let x = 1; // a note$0\n", 0, "s"));
        assert!(neutral(TypeScript, "/* a $0note */\nlet x = 1;\n", 0, "long "));
        assert!(neutral(TypeScript, "/**\n * a $0note\n */\n", 0, "x"));

        // not inside, or no longer a comment over the same lines
        assert!(!neutral(Python, "x = 1$0  # a note\n", 0, "2"), "code before it");
        assert!(!neutral(Python, "$0# a note\n", 0, "x"), "before its marker");
        assert!(!neutral(Python, "# a $0note\ny = 2\n", 0, "\n"), "a line break ends it");
        assert!(!neutral(Python, "# a $0note\ny = 2\n", 0, "\r"));
        assert!(!neutral(Python, "# a $0note\ny = 2\n", 6, ""), "deleting its line break");
        assert!(!neutral(Python, "s = '# $0not a comment'\n", 0, "x"), "a string");
        assert!(!neutral(TypeScript, "/* a $0note */\nlet x = 1;\n", 0, "*/"), "closing it early");
        assert!(!neutral(TypeScript, "/* a *$0x/ note */\n", 1, ""), "bringing * and / together");
        assert!(!neutral(TypeScript, "/* a $0note */ let x = 1;\n", 0, "\n"), "a line break in a block");
        assert!(!neutral(TypeScript, "let x = 1; // a$0\n", 0, "\u{2028}"), "a JavaScript line terminator");
        assert!(!neutral(TypeScript, "/* a note$0 */\n", 2, ""), "deleting the closing */");
    }
}
