//! Syntax: tree-sitter grammars, incremental parsing, syntax errors, symbols and `TODO`
//! comments.

mod comments;
mod errors;
mod neutral;
mod repair;
mod strict;
mod symbols;
mod tree;

pub use comments::{TodoComment, todo_comment};
pub use errors::{MAX_SYNTAX_PROBLEMS, SyntaxErrorKind, SyntaxProblem, syntax_problems};
pub use neutral::{CommentSpan, comment_edit};
pub use repair::{Placement, diagnose, place};
pub use strict::{StrictError, parses_strictly, strict_errors, strict_errors_as};
pub use symbols::{
    Symbol, SymbolKind, document_symbols, enclosing_symbol, node_symbols, outline, own_symbol,
};
pub use tree::{SyntaxError, SyntaxTree, input_edit, parse_detached, reparse_detached};
