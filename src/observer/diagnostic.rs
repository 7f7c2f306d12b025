//! A diagnostic as the Observer keeps it: a byte range into one version of a document.

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

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Diagnostic {
    pub range: TextRange,
    pub severity: Severity,
    /// Who found it: `"tokamak"` for syntax, the checker's name otherwise.
    pub source: String,
    /// The source's own code for it (`"syntax"`, `"F401"`, `"TS2304"`).
    pub code: Option<String>,
    pub message: String,
}
