//! Syntax: tree-sitter grammars, incremental parsing, syntax errors, symbols and `TODO`
//! comments.

mod comments;
mod errors;
mod grammar;
mod repair;
mod strict;
mod symbols;
mod tree;

pub use comments::{TodoComment, todo_comment};
pub use errors::{SyntaxErrorKind, SyntaxProblem, syntax_problems};
pub use grammar::grammar;
pub use repair::diagnose;
pub use strict::{StrictError, strict_errors};
pub use symbols::{Symbol, SymbolKind, document_symbols, enclosing_symbol, outline};
pub use tree::{SyntaxError, SyntaxTree, reparse_detached};
