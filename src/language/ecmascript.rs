//! TypeScript and JavaScript, each with its JSX dialect: tree-sitter-typescript's grammars (TSX's
//! for JavaScript and JSX, which it accepts), oxc's parser as the compilers' rules (what `tsc`
//! accepts as syntax), `//` and `/* */` comments, template strings over lines, blocks in braces,
//! `*.test.*` and `*.spec.*` files for vitest and jest, modules named by their paths, coverage
//! measured for JavaScript only (TypeScript run through a transpiler is reported on lines that
//! are not its own).

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
        module_name: |relative| relative.to_string(),
        coverage,
    }
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
