//! A document's syntax tree, kept current by incremental reparsing after each edit.

use ropey::Rope;
use tree_sitter::{InputEdit, Parser, Point, Tree};

use crate::text::{ByteEdit, Language, LineCol};

#[derive(Debug, thiserror::Error)]
pub enum SyntaxError {
    /// The grammar was built for a tree-sitter ABI this library cannot load: it compiles and
    /// fails only at run time, so it is checked and reported.
    #[error("cannot load the {language} grammar: {reason}")]
    Grammar { language: Language, reason: String },
    #[error("tree-sitter gave up parsing the {language} document")]
    ParseFailed { language: Language },
}

/// A parser and the tree it last produced for one document.
pub struct SyntaxTree {
    parser: Parser,
    tree: Tree,
    language: Language,
}

impl std::fmt::Debug for SyntaxTree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SyntaxTree").field("language", &self.language).finish_non_exhaustive()
    }
}

impl SyntaxTree {
    /// Parses `rope` from scratch. `Ok(None)` for a language Tokamak does not parse.
    pub fn parse(language: Language, rope: &Rope) -> Result<Option<SyntaxTree>, SyntaxError> {
        let Some(grammar) = language.grammar() else {
            return Ok(None);
        };
        let mut parser = Parser::new();
        parser
            .set_language(&grammar)
            .map_err(|err| SyntaxError::Grammar { language, reason: err.to_string() })?;
        let tree = parse_rope(&mut parser, rope, None).ok_or(SyntaxError::ParseFailed { language })?;
        Ok(Some(SyntaxTree { parser, tree, language }))
    }

    /// Takes a tree parsed elsewhere (in the background), with a parser of its own for the
    /// reparses to come.
    pub fn from_tree(language: Language, tree: Tree) -> Result<SyntaxTree, SyntaxError> {
        Ok(SyntaxTree { parser: parser(language)?, tree, language })
    }

    pub fn tree(&self) -> &Tree {
        &self.tree
    }

    pub fn language(&self) -> Language {
        self.language
    }

    /// Tells the tree about one edit already made to the text. Call [`SyntaxTree::reparse`]
    /// once after the last edit of a change.
    pub fn edit(&mut self, edit: &ByteEdit) {
        self.tree.edit(&input_edit(edit));
    }

    /// Takes a tree parsed elsewhere (in the background) for the text as it is now, giving
    /// back the one it replaces.
    pub fn set_tree(&mut self, tree: Tree) -> Tree {
        std::mem::replace(&mut self.tree, tree)
    }

    /// Reparses `rope` reusing the edited tree (told of one change's edits); only the edited
    /// regions are parsed again. A result with errors in a document of at most
    /// [`FRESH_REPARSE_BYTES`] is parsed again from scratch (see [`reparse_rope`]).
    pub fn reparse(&mut self, rope: &Rope) -> Result<(), SyntaxError> {
        let tree = if rope.len_bytes() <= FRESH_REPARSE_BYTES {
            reparse_rope(&mut self.parser, rope, &self.tree)
        } else {
            parse_rope(&mut self.parser, rope, Some(&self.tree))
        }
        .ok_or(SyntaxError::ParseFailed { language: self.language })?;
        self.tree = tree;
        Ok(())
    }
}

/// Parses `rope` with a parser of its own (off the document's lock), reusing `old_tree`,
/// which must have been told of every edit between its text and `rope` (often several: the
/// keystrokes of a pause in typing; see [`reparse_rope`]).
pub fn reparse_detached(language: Language, rope: &Rope, old_tree: &Tree) -> Result<Tree, SyntaxError> {
    reparse_rope(&mut parser(language)?, rope, old_tree).ok_or(SyntaxError::ParseFailed { language })
}

/// Parses `rope` from scratch with a parser of its own (a large document's first parse, off
/// the editor's way).
pub fn parse_detached(language: Language, rope: &Rope) -> Result<Tree, SyntaxError> {
    parse_rope(&mut parser(language)?, rope, None).ok_or(SyntaxError::ParseFailed { language })
}

fn parser(language: Language) -> Result<Parser, SyntaxError> {
    let grammar = language.grammar().ok_or(SyntaxError::ParseFailed { language })?;
    let mut parser = Parser::new();
    parser
        .set_language(&grammar)
        .map_err(|err| SyntaxError::Grammar { language, reason: err.to_string() })?;
    Ok(parser)
}

/// On the keystroke, a document this small with syntax errors is parsed from scratch (0.9 ms
/// here, against 0.02 ms for the incremental reparse); a larger one keeps tree-sitter's
/// incremental tree (a full parse would cost a 10 000-line file 90 times as much and push it
/// to background parsing).
pub const FRESH_REPARSE_BYTES: usize = 8 * 1024;

/// An incremental parse, except that a result with errors is parsed again from scratch.
/// Tree-sitter's error recovery can take another path when it reuses nodes of the old tree
/// (tree-sitter#1645, #4001), after one edit or several; the syntax problems of a document
/// should not depend on the edits that led to its text, so such a tree is the one a fresh
/// open would get. Error-free trees, the common case, stay incremental. Used for background
/// parses (off the keystroke: only a blocking thread's time) and small documents.
fn reparse_rope(parser: &mut Parser, rope: &Rope, old_tree: &Tree) -> Option<Tree> {
    let tree = parse_rope(parser, rope, Some(old_tree))?;
    if !tree.root_node().has_error() {
        return Some(tree);
    }
    parse_rope(parser, rope, None)
}

/// An edit as tree-sitter is told of it.
pub fn input_edit(edit: &ByteEdit) -> InputEdit {
    InputEdit {
        start_byte: edit.start,
        old_end_byte: edit.old_end,
        new_end_byte: edit.new_end,
        start_position: point(edit.start_point),
        old_end_position: point(edit.old_end_point),
        new_end_position: point(edit.new_end_point),
    }
}

/// Tree-sitter counts rows by `\n` and columns in bytes; our `(line, byte column)` points
/// agree except after a lone `\r`, which LSP counts as a line break. Tree-sitter uses points
/// only to report positions, never to decide what to reparse, and Tokamak reads positions
/// from byte offsets, so that difference is harmless.
fn point(position: LineCol) -> Point {
    Point { row: position.line as usize, column: position.col as usize }
}

/// Feeds the rope to tree-sitter chunk by chunk, without copying it into one string.
fn parse_rope(parser: &mut Parser, rope: &Rope, old_tree: Option<&Tree>) -> Option<Tree> {
    let len = rope.len_bytes();
    let mut read = |offset: usize, _: Point| -> &[u8] {
        if offset >= len {
            return &[];
        }
        let (chunk, chunk_start, _, _) = rope.chunk_at_byte(offset);
        &chunk.as_bytes()[offset - chunk_start..]
    };
    parser.parse_with_options(&mut read, old_tree, None)
}
