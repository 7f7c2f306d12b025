//! The language's own rules: a whole text parsed strictly, as the language's compiler would
//! — each language's parser is its `language::Spec`'s (ruff's for Python, what CPython's
//! `ast.parse` accepts; oxc's for TypeScript and JavaScript, what `tsc` accepts as syntax).
//! Tree-sitter recovers from errors wherever its grammar lets it and accepts some texts the
//! language rejects (a block header's `:` put at the end of its body line, say), so a repair
//! made on tree-sitter's word is only kept when this check agrees.

pub use crate::language::StrictError;
use crate::text::Language;

/// Whether the language has a parser of its own here.
pub fn parses_strictly(language: Language) -> bool {
    language.is_parsed()
}

/// The syntax errors of `text` under the language's own parser, in the order they appear;
/// `None` for a language without one (plain text).
pub fn strict_errors(language: Language, text: &str) -> Option<Vec<StrictError>> {
    language.strict_errors(false, text)
}

/// [`strict_errors`] for a file that may be a TypeScript declaration file (`.d.ts`, where a
/// function without a body is the rule, not an error).
pub fn strict_errors_as(language: Language, declaration: bool, text: &str) -> Option<Vec<StrictError>> {
    language.strict_errors(declaration, text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_the_language_rejects_is_an_error_where_the_language_says() {
        let header = "def f(key, a):\n    if key is None\n        lo = g(a, 1)\n    else:\n        lo = 2\n";
        let errors = strict_errors(Language::Python, header).unwrap();
        assert_eq!(errors.first().map(|e| e.at), Some(header.find("None").unwrap() + 4), "{errors:?}");
        // tree-sitter takes the `:` at the end of the body line; Python does not
        let misplaced = header.replace("lo = g(a, 1)\n", "lo = g(a, 1):\n");
        assert!(!strict_errors(Language::Python, &misplaced).unwrap().is_empty());
        let fixed = header.replace("is None\n", "is None:\n");
        assert_eq!(strict_errors(Language::Python, &fixed).unwrap(), []);

        let ts = "function f(x: number) {\n  if (x) {\n    return 1;\n}\n";
        assert!(!strict_errors(Language::TypeScript, ts).unwrap().is_empty());
        assert_eq!(strict_errors(Language::TypeScript, &format!("{ts}}}\n")).unwrap(), []);
        assert_eq!(strict_errors(Language::Tsx, "const a = <div>{1}</div>;\n").unwrap(), []);
        assert_eq!(strict_errors(Language::PlainText, "anything"), None);
    }
}
