//! The tree-sitter grammar for each parsed language.

use crate::text::Language;

/// The grammar for `language`, or `None` for languages Tokamak does not parse. JavaScript
/// and JSX use the TSX grammar, which accepts them.
pub fn grammar(language: Language) -> Option<tree_sitter::Language> {
    match language {
        Language::Python => Some(tree_sitter_python::LANGUAGE.into()),
        Language::TypeScript => Some(tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into()),
        Language::Tsx | Language::JavaScript | Language::Jsx => {
            Some(tree_sitter_typescript::LANGUAGE_TSX.into())
        }
        Language::PlainText => None,
    }
}
