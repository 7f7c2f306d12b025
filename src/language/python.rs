//! Python: `.py` and `.pyi`, tree-sitter-python's grammar, ruff's parser as CPython's own rules
//! (what `ast.parse` accepts), `#` comments, blocks opened by `:` and indentation, pytest's
//! test files, dotted module names, coverage by Python's own line tracer; what its grammar
//! calls definitions, imports and calls, and how an import is read.

use tree_sitter::Node;

use super::nodes::{Holders, Imported, Nodes, SymbolKind};
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
    tests_by_name: true,
    module_name: |relative| relative.trim_end_matches("/__init__").replace('/', "."),
    coverage: true,
    nodes: Nodes {
        definitions: &[
            ("class_definition", SymbolKind::Class),
            ("function_definition", SymbolKind::Function),
        ],
        class_functions_are_methods: true,
        decorated: &[("decorated_definition", "definition")],
        exported: &[],
        bindings: &[],
        function_values: &[],
        // only statements hold definitions, never an expression
        holders: Holders::Only(&[
            "block",
            "module",
            "if_statement",
            "elif_clause",
            "else_clause",
            "for_statement",
            "while_statement",
            "try_statement",
            "except_clause",
            "finally_clause",
            "with_statement",
            "match_statement",
            "case_clause",
            "decorated_definition",
        ]),
        imports: &["import_statement", "import_from_statement", "future_import_statement"],
        read_import,
        calls: &[("call", "function")],
        identifier: "identifier",
        members: &[("attribute", "attribute")],
        receivers: &["identifier"],
        expression_statement: "expression_statement",
        string: "string",
        traced: &[
            "expression_statement",
            "return_statement",
            "raise_statement",
            "assert_statement",
            "delete_statement",
            "if_statement",
            "elif_clause",
            "for_statement",
            "while_statement",
            "with_statement",
            "import_statement",
            "import_from_statement",
        ],
    },
};

/// `import a.b, c as d` is one import each (`d` the name `c` is known by); `from m import a,
/// b as c` one of `m` with `a` and `c`; `from __future__ import x` one of `__future__`.
fn read_import(node: Node<'_>, text: &str) -> Vec<Imported> {
    let slice = |n: Node<'_>| text.get(n.byte_range()).unwrap_or_default().to_string();
    let mut cursor = node.walk();
    if node.kind() == "import_statement" {
        let mut imports = Vec::new();
        for child in node.children_by_field_name("name", &mut cursor) {
            let (module, alias) = match child.kind() {
                "aliased_import" => (
                    child.child_by_field_name("name").map(slice),
                    child.child_by_field_name("alias").map(slice),
                ),
                _ => (Some(slice(child)), None),
            };
            if let Some(module) = module {
                imports.push(Imported { module, names: alias.into_iter().collect() });
            }
        }
        return imports;
    }
    let module = node.child_by_field_name("module_name").map_or_else(|| "__future__".to_string(), slice);
    let mut names = Vec::new();
    for child in node.children_by_field_name("name", &mut cursor) {
        let name = match child.kind() {
            "aliased_import" => child.child_by_field_name("alias").map(slice),
            _ => Some(slice(child)),
        };
        names.extend(name);
    }
    vec![Imported { module, names }]
}

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
