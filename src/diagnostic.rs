//! A diagnostic as the Observer keeps it and the `Editor` shows it: a byte range into one
//! version of a document, with its severity, source, code and the checker's own fix.

use crate::text::TextRange;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    Error,
    Warning,
    Information,
    Hint,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Information => "info",
            Severity::Hint => "hint",
        }
    }
}

/// A fix the checker itself proposes (ruff's `fix.edits`), with its edits in byte ranges of
/// the same version as the diagnostic.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CheckerFix {
    pub description: String,
    pub edits: Vec<(TextRange, String)>,
    /// The checker says applying it cannot change behaviour (ruff's "safe" applicability).
    pub safe: bool,
}

/// Another source's report of the same problem (see `problems.rs`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Related {
    pub source: String,
    pub code: Option<String>,
    pub message: String,
    pub range: TextRange,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Diagnostic {
    pub range: TextRange,
    pub severity: Severity,
    /// Who found it: `"tokamak"` for syntax, the checker's name otherwise.
    pub source: String,
    /// The source's own code for it (`"syntax"`, `"F401"`, `"TS2304"`).
    pub code: Option<String>,
    pub message: String,
    pub fix: Option<CheckerFix>,
    /// What other sources said about the same problem.
    pub related: Vec<Related>,
}

impl Diagnostic {
    pub fn new(
        range: TextRange,
        severity: Severity,
        source: &str,
        code: Option<String>,
        message: String,
    ) -> Self {
        Diagnostic {
            range,
            severity,
            source: source.to_string(),
            code,
            message,
            fix: None,
            related: Vec::new(),
        }
    }
}
