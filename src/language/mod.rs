//! Which language a document is in, and everything Tokamak knows of each language in one place:
//! a [`Spec`] per language (`python.rs`; `ecmascript.rs` for TypeScript, JavaScript and their
//! JSX dialects) — how editors name it and which files are its, its tree-sitter grammar and its
//! own strict parser, its comments and strings, how its blocks open and what a repair tries,
//! which files are its tests, how a file's path names its module, whether coverage is measured,
//! and what its grammar calls the nodes Tokamak reads (`nodes.rs`). Adding a language is a file
//! here, its line in [`Language`] and its crates in `Cargo.toml`.

mod ecmascript;
mod nodes;
mod python;

pub use ecmascript::is_declaration_file;
pub use nodes::{Holders, Imported, Nodes, SymbolKind};

use std::fmt;
use std::path::Path;

/// The languages Tokamak understands; anything else is kept as plain text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Language {
    Python,
    TypeScript,
    Tsx,
    JavaScript,
    Jsx,
    /// A document Tokamak keeps the text of but does not parse.
    PlainText,
}

/// Every parsed language, in the order detection tries them.
const PARSED: [Language; 5] =
    [Language::Python, Language::TypeScript, Language::Tsx, Language::JavaScript, Language::Jsx];

/// A syntax error the language's own parser reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StrictError {
    /// Byte offset in the text.
    pub at: usize,
    /// Where what it is about ends (`at` for a point).
    pub end: usize,
    pub message: String,
}

/// What Tokamak knows of one language.
pub struct Spec {
    /// The `languageId` LSP gives it, and the file extensions that are its (lower case).
    pub id: &'static str,
    pub extensions: &'static [&'static str],
    /// Languages whose files import one another share a family.
    pub family: &'static str,
    /// Its tree-sitter grammar.
    pub grammar: fn() -> tree_sitter::Language,
    /// The syntax errors its own parser (its compiler's rules) finds in a whole text, in order;
    /// `true`: the file is a declaration file (`.d.ts`).
    pub strict: fn(&str, bool) -> Vec<StrictError>,
    /// What starts a comment to the end of the line; whether `/* … */` comments exist.
    pub line_comment: &'static str,
    pub block_comments: bool,
    /// A quote whose strings may span lines (JavaScript's template literals).
    pub multiline_quote: Option<char>,
    /// Blocks open with a brace (else with a `:` and indentation).
    pub braces: bool,
    /// The separators a repair tries first at a line's end.
    pub separators: &'static [&'static str],
    /// What makes an indented fragment parse alone: text before it and after it.
    pub fragment_wrappers: &'static [(&'static str, &'static str)],
    /// Block headers whose line must end with `:` (none where blocks open with a brace).
    pub colon_headers: &'static [&'static str],
    /// Whether a file's name makes it a test file (beside `tests/`, `test/`, `__tests__/`).
    pub test_file_name: fn(&str) -> bool,
    /// The test runners that run its files (a test command narrowed to them names them).
    pub test_runners: &'static [&'static str],
    /// Whether its runner takes one test by its name (pytest's `file::Class::test_name`, the
    /// test a function whose name starts with `test`); else a test file is run whole.
    pub tests_by_name: bool,
    /// A module's name from its path relative to the root, extension gone, `/` between names.
    pub module_name: fn(&str) -> String,
    /// Whether a test run's coverage of its lines is measured (it runs as written).
    pub coverage: bool,
    /// What its grammar calls the nodes Tokamak reads.
    pub nodes: Nodes,
}

impl Language {
    /// From an LSP `languageId`, falling back to the file name when the id is unknown
    /// (clients send ids such as `"python"`, `"typescriptreact"`, `"javascript"`).
    pub fn detect(language_id: &str, path: Option<&Path>) -> Language {
        PARSED
            .into_iter()
            .find(|language| language.spec().is_some_and(|spec| spec.id == language_id))
            .unwrap_or_else(|| path.map_or(Language::PlainText, Language::from_path))
    }

    /// From a file's extension.
    pub fn from_path(path: &Path) -> Language {
        let extension = path.extension().and_then(|e| e.to_str()).unwrap_or_default().to_ascii_lowercase();
        PARSED
            .into_iter()
            .find(|language| {
                language.spec().is_some_and(|spec| spec.extensions.contains(&extension.as_str()))
            })
            .unwrap_or(Language::PlainText)
    }

    /// What Tokamak knows of the language; `None` for plain text.
    pub fn spec(self) -> Option<&'static Spec> {
        match self {
            Language::Python => Some(&python::PYTHON),
            Language::TypeScript => Some(&ecmascript::TYPESCRIPT),
            Language::Tsx => Some(&ecmascript::TSX),
            Language::JavaScript => Some(&ecmascript::JAVASCRIPT),
            Language::Jsx => Some(&ecmascript::JSX),
            Language::PlainText => None,
        }
    }

    /// Whether Tokamak parses this language.
    pub fn is_parsed(self) -> bool {
        self.spec().is_some()
    }

    /// Languages whose files import one another share a family: Python, and TypeScript and
    /// JavaScript with their JSX dialects.
    pub fn family(self) -> &'static str {
        self.spec().map_or("plaintext", |spec| spec.family)
    }

    pub fn name(self) -> &'static str {
        self.spec().map_or("plaintext", |spec| spec.id)
    }

    /// What its grammar calls the nodes Tokamak reads; `None` for plain text.
    pub fn nodes(self) -> Option<&'static Nodes> {
        self.spec().map(|spec| &spec.nodes)
    }

    /// Its tree-sitter grammar; `None` for plain text.
    pub fn grammar(self) -> Option<tree_sitter::Language> {
        self.spec().map(|spec| (spec.grammar)())
    }

    /// The syntax errors of `text` under the language's own parser, in the order they appear;
    /// `None` for plain text. `declaration`: a TypeScript declaration file (`.d.ts`, where a
    /// function without a body is the rule, not an error).
    pub fn strict_errors(self, declaration: bool, text: &str) -> Option<Vec<StrictError>> {
        self.spec().map(|spec| (spec.strict)(text, declaration))
    }
}

impl fmt::Display for Language {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Every test runner a language names (`Spec::test_runners`), in the languages' order.
pub fn test_runners() -> impl Iterator<Item = &'static str> {
    PARSED.into_iter().filter_map(Language::spec).flat_map(|spec| spec.test_runners.iter().copied())
}

/// Whether a path is a test file: anything under `tests/`, `test/` or `__tests__/`, and the
/// files its language's names make tests (`test_*.py`, `*.spec.ts` …).
pub fn is_test_file(path: &Path) -> bool {
    let name = path.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
    let in_tests =
        path.components().any(|c| matches!(c.as_os_str().to_str(), Some("tests" | "test" | "__tests__")));
    in_tests || Language::from_path(path).spec().is_some_and(|spec| (spec.test_file_name)(&name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_from_language_id_then_extension() {
        let cases = [
            ("python", "x.txt", Language::Python),
            ("typescriptreact", "x", Language::Tsx),
            ("", "a/b.py", Language::Python),
            ("", "a/b.pyi", Language::Python),
            ("", "a/b.mts", Language::TypeScript),
            ("", "a/b.cjs", Language::JavaScript),
            ("", "a/b.JSX", Language::Jsx),
            ("rust", "main.rs", Language::PlainText),
            ("", "Makefile", Language::PlainText),
        ];
        for (id, path, expected) in cases {
            assert_eq!(Language::detect(id, Some(Path::new(path))), expected, "{id} {path}");
        }
        for language in PARSED {
            assert_eq!(Language::detect(language.name(), None), language, "its own id");
        }
    }

    #[test]
    fn test_files_by_folder_and_by_name() {
        assert!(is_test_file(Path::new("pkg/test_a.py")) && is_test_file(Path::new("a/b_test.py")));
        assert!(is_test_file(Path::new("conftest.py")) && is_test_file(Path::new("tests/helpers.py")));
        assert!(is_test_file(Path::new("src/__tests__/x.ts")) && is_test_file(Path::new("src/x.spec.tsx")));
        assert!(is_test_file(Path::new("src/x.test.mjs")));
        assert!(!is_test_file(Path::new("src/latest.py")) && !is_test_file(Path::new("src/contest.ts")));
        assert!(!is_test_file(Path::new("docs/x.test.md")), "not a language Tokamak knows");
    }

    #[test]
    fn declaration_files_as_typescript_tells_them() {
        for name in ["a.d.ts", "x/env.d.mts", "b.d.cts", "styles.d.css.ts", "a.b.d.ts"] {
            assert!(is_declaration_file(Path::new(name)), "{name}");
        }
        for name in ["a.ts", "d.ts", "a.D.TS", "a.d.js", "my.data.ts", "a.d.css.mts", "a.d"] {
            assert!(!is_declaration_file(Path::new(name)), "{name}");
        }
    }

    #[test]
    fn module_names_follow_each_languages_imports() {
        let name = |language: Language, relative: &str| (language.spec().unwrap().module_name)(relative);
        assert_eq!(name(Language::Python, "pkg/models"), "pkg.models");
        assert_eq!(name(Language::Python, "pkg/__init__"), "pkg");
        assert_eq!(name(Language::TypeScript, "src/util"), "src/util");
    }
}
