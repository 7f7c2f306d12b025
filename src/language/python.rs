//! Python: `.py` and `.pyi`, tree-sitter-python's grammar, ruff's parser as CPython's own rules
//! (what `ast.parse` accepts), `#` comments, blocks opened by `:` and indentation, pytest's
//! test files, dotted module names, coverage by Python's own line tracer.

use super::{Spec, StrictError};

pub static PYTHON: Spec = Spec {
    id: "python",
    extensions: &["py", "pyi"],
    family: "python",
    grammar: || tree_sitter_python::LANGUAGE.into(),
    strict,
    line_comment: "#",
    block_comments: false,
    multiline_quote: None,
    braces: false,
    separators: &[":", ","],
    fragment_wrappers: &[("if 1:\n", ""), ("class _:\n", "")],
    colon_headers: &[
        "if", "elif", "else", "for", "while", "def", "class", "with", "try", "except", "finally", "async",
        "match", "case",
    ],
    test_file_name,
    test_runners: &["pytest", "py.test"],
    module_name: |relative| relative.trim_end_matches("/__init__").replace('/', "."),
    coverage: true,
};

/// `test_*.py`, `*_test.py`, `conftest.py`.
fn test_file_name(name: &str) -> bool {
    let stem = name.split('.').next().unwrap_or_default();
    name.ends_with(".py") && (stem.starts_with("test_") || stem.ends_with("_test") || stem == "conftest")
}

fn strict(text: &str, _declaration: bool) -> Vec<StrictError> {
    let parsed = ruff_python_parser::parse_unchecked(
        text,
        ruff_python_parser::ParseOptions::from(ruff_python_parser::Mode::Module),
    );
    let mut errors: Vec<StrictError> = parsed
        .errors()
        .iter()
        .map(|error| StrictError {
            at: error.location.start().to_usize(),
            end: error.location.end().to_usize(),
            message: error.error.to_string(),
        })
        .collect();
    errors.sort_by_key(|e| e.at);
    errors
}
