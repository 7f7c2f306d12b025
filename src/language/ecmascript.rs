//! TypeScript and JavaScript, each with its JSX dialect: tree-sitter-typescript's grammars (TSX's
//! for JavaScript and JSX, which it accepts), oxc's parser as the compilers' rules (what `tsc`
//! accepts as syntax), `//` and `/* */` comments, template strings over lines, blocks in braces,
//! `*.test.*` and `*.spec.*` files for vitest and jest, modules named by their paths, coverage
//! measured for JavaScript only (TypeScript run through a transpiler is reported on lines that
//! are not its own); what their grammars call definitions, imports and calls (the same in
//! both), and how an import is read.

use tree_sitter::Node;

use super::nodes::{Holders, Imported, Nodes, SymbolKind};
use super::{Spec, StrictError};

/// What the four share; each sets its names, grammar, parser and coverage.
const fn ecmascript(
    id: &'static str,
    extensions: &'static [&'static str],
    grammar: fn() -> tree_sitter::Language,
    strict: fn(&str, bool) -> Vec<StrictError>,
    coverage: bool,
) -> Spec {
    Spec {
        id,
        extensions,
        family: "ecmascript",
        grammar,
        strict,
        line_comment: "//",
        block_comments: true,
        multiline_quote: Some('`'),
        braces: true,
        separators: &[";", ","],
        fragment_wrappers: &[("class _ {\n", "\n}\n"), ("function _() {\n", "\n}\n"), ("_ = {\n", "\n}\n")],
        colon_headers: &[],
        test_file_name,
        test_runners: &["vitest", "jest"],
        tests_by_name: false,
        module_name: |relative| relative.to_string(),
        coverage,
        nodes: NODES,
    }
}

const NODES: Nodes = Nodes {
    definitions: &[
        ("class_declaration", SymbolKind::Class),
        ("abstract_class_declaration", SymbolKind::Class),
        ("class", SymbolKind::Class),
        ("function_declaration", SymbolKind::Function),
        ("generator_function_declaration", SymbolKind::Function),
        ("method_definition", SymbolKind::Method),
        ("method_signature", SymbolKind::Method),
        ("abstract_method_signature", SymbolKind::Method),
        ("interface_declaration", SymbolKind::Interface),
        ("enum_declaration", SymbolKind::Enum),
        ("type_alias_declaration", SymbolKind::TypeAlias),
        ("internal_module", SymbolKind::Module),
        ("module", SymbolKind::Module),
    ],
    class_functions_are_methods: false,
    decorated: &[],
    exported: &[("export_statement", "declaration")],
    bindings: &["variable_declarator", "public_field_definition"],
    function_values: &["arrow_function", "function_expression"],
    holders: Holders::AnythingBut(&["string", "comment", "template_string", "regex", "number"]),
    imports: &["import_statement"],
    read_import,
    calls: &[("call_expression", "function"), ("new_expression", "constructor")],
    identifier: "identifier",
    members: &[("member_expression", "property")],
    receivers: &["identifier", "this"],
    expression_statement: "expression_statement",
    string: "string",
    traced: &[
        "expression_statement",
        "return_statement",
        "if_statement",
        "for_statement",
        "while_statement",
        "with_statement",
        "import_statement",
        "throw_statement",
        "for_in_statement",
        "do_statement",
        "switch_statement",
        "lexical_declaration",
        "variable_declaration",
    ],
};

/// `import x, { a, b as c } from "./m"` is one import of `./m` with `a`, `c` and `x`
/// (sorted); `import * as ns from "m"` brings `ns`; an import without a source (none in valid
/// code) is none.
fn read_import(node: Node<'_>, text: &str) -> Vec<Imported> {
    let slice = |n: Node<'_>| text.get(n.byte_range()).unwrap_or_default().to_string();
    let Some(source) = node.child_by_field_name("source") else { return Vec::new() };
    let module = slice(source).trim_matches(|c| c == '"' || c == '\'' || c == '`').to_string();
    let mut names = Vec::new();
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        match n.kind() {
            "import_specifier" => {
                let name = n.child_by_field_name("alias").or_else(|| n.child_by_field_name("name"));
                names.extend(name.map(slice));
            }
            "namespace_import" => {
                let mut cursor = n.walk();
                let alias = n.children(&mut cursor).find(|c| c.kind() == "identifier");
                names.extend(alias.map(slice));
            }
            "import_clause" => {
                let mut cursor = n.walk();
                for child in n.children(&mut cursor) {
                    if child.kind() == "identifier" {
                        names.push(slice(child));
                    } else {
                        stack.push(child);
                    }
                }
            }
            _ => {
                let mut cursor = n.walk();
                stack.extend(n.children(&mut cursor).filter(|c| c.id() != source.id()));
            }
        }
    }
    names.sort();
    vec![Imported { module, names }]
}

fn typescript_grammar() -> tree_sitter::Language {
    tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into()
}

fn tsx_grammar() -> tree_sitter::Language {
    tree_sitter_typescript::LANGUAGE_TSX.into()
}

pub static TYPESCRIPT: Spec = ecmascript(
    "typescript",
    &["ts", "mts", "cts"],
    typescript_grammar,
    |text, declaration| {
        let kind = if declaration { oxc_span::SourceType::d_ts() } else { oxc_span::SourceType::ts() };
        strict(text, kind)
    },
    false,
);

pub static TSX: Spec = ecmascript(
    "typescriptreact",
    &["tsx"],
    tsx_grammar,
    |text, _| strict(text, oxc_span::SourceType::tsx()),
    false,
);

pub static JAVASCRIPT: Spec = ecmascript(
    "javascript",
    &["js", "mjs", "cjs"],
    tsx_grammar,
    |text, _| strict(text, oxc_span::SourceType::mjs()),
    true,
);

pub static JSX: Spec = ecmascript(
    "javascriptreact",
    &["jsx"],
    tsx_grammar,
    |text, _| strict(text, oxc_span::SourceType::jsx()),
    true,
);

/// Whether a file is a TypeScript declaration file, as TypeScript tells them: `.d.ts`, `.d.mts`,
/// `.d.cts`, and `.d.<extension>.ts` (one for a file of another kind, `styles.d.css.ts`).
pub fn is_declaration_file(path: &std::path::Path) -> bool {
    let name = path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
    let Some(stem) = name.strip_suffix(".ts") else {
        return name.ends_with(".d.mts") || name.ends_with(".d.cts");
    };
    stem.ends_with(".d") || stem.rsplit_once('.').is_some_and(|(before, _)| before.ends_with(".d"))
}

/// `*.test.*` and `*.spec.*`.
fn test_file_name(name: &str) -> bool {
    name.contains(".test.") || name.contains(".spec.")
}

fn strict(text: &str, source_type: oxc_span::SourceType) -> Vec<StrictError> {
    let allocator = oxc_allocator::Allocator::default();
    let parsed = oxc_parser::Parser::new(&allocator, text, source_type).parse();
    let mut errors: Vec<StrictError> = parsed
        .diagnostics
        .iter()
        .map(|diagnostic| {
            let (at, end) = diagnostic.labels.first().map_or((text.len(), text.len()), |label| {
                let span = label.span();
                (span.start as usize, span.end as usize)
            });
            StrictError { at, end, message: diagnostic.message.to_string() }
        })
        .collect();
    errors.sort_by_key(|e| e.at);
    errors
}
