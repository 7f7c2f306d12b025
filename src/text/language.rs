//! Which language a document is in, from the editor's `languageId` or the file name.

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

impl Language {
    /// From an LSP `languageId`, falling back to the file name when the id is unknown
    /// (clients send ids such as `"python"`, `"typescriptreact"`, `"javascript"`).
    pub fn detect(language_id: &str, path: Option<&Path>) -> Language {
        match language_id {
            "python" => Language::Python,
            "typescript" => Language::TypeScript,
            "typescriptreact" => Language::Tsx,
            "javascript" => Language::JavaScript,
            "javascriptreact" => Language::Jsx,
            _ => path.map_or(Language::PlainText, Language::from_path),
        }
    }

    /// From a file's extension.
    pub fn from_path(path: &Path) -> Language {
        let extension = path.extension().and_then(|e| e.to_str()).unwrap_or_default();
        match extension.to_ascii_lowercase().as_str() {
            "py" | "pyi" => Language::Python,
            "ts" | "mts" | "cts" => Language::TypeScript,
            "tsx" => Language::Tsx,
            "js" | "mjs" | "cjs" => Language::JavaScript,
            "jsx" => Language::Jsx,
            _ => Language::PlainText,
        }
    }

    /// Whether Tokamak parses this language.
    pub fn is_parsed(self) -> bool {
        self != Language::PlainText
    }

    /// Languages whose files import one another share a family: Python, and TypeScript and
    /// JavaScript with their JSX dialects.
    pub fn family(self) -> &'static str {
        match self {
            Language::Python => "python",
            Language::TypeScript | Language::Tsx | Language::JavaScript | Language::Jsx => "ecmascript",
            Language::PlainText => "plaintext",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Language::Python => "python",
            Language::TypeScript => "typescript",
            Language::Tsx => "typescriptreact",
            Language::JavaScript => "javascript",
            Language::Jsx => "javascriptreact",
            Language::PlainText => "plaintext",
        }
    }
}

impl fmt::Display for Language {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
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
            ("", "a/b.mts", Language::TypeScript),
            ("", "a/b.JSX", Language::Jsx),
            ("rust", "main.rs", Language::PlainText),
            ("", "Makefile", Language::PlainText),
        ];
        for (id, path, expected) in cases {
            assert_eq!(Language::detect(id, Some(Path::new(path))), expected, "{id} {path}");
        }
    }
}
