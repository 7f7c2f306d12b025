//! Reading checkers' output: one file per format, sharing the positions helpers here.

pub mod eslint;
pub mod mypy;
pub mod pattern;
pub mod pyright;
pub mod ruff;
pub mod tsc;

use std::path::{Component, Path, PathBuf};

use ropey::Rope;

use super::OutputFormat;
use crate::observer::Diagnostic;
use crate::text::{LineCol, PositionEncoding, TextRange, line_col_to_offset};

/// What a parser needs to turn a tool's positions into byte ranges of the text it checked.
pub struct ParseContext<'a> {
    /// The text the tool checked.
    pub rope: &'a Rope,
    /// The checker's name, used as the diagnostics' `source`.
    pub source: &'a str,
    /// The path the tool was given for the document (the real file or its shadow).
    pub checked_file: &'a Path,
    /// Where the tool ran; relative paths in its output are from here.
    pub cwd: &'a Path,
}

impl ParseContext<'_> {
    /// Whether a path in the tool's output is the document (tools check and report other
    /// files too: mypy follows imports, `tsc -p` checks the whole project).
    pub fn is_target(&self, reported: &str) -> bool {
        let reported = normalize(&self.cwd.join(reported));
        let checked = normalize(&self.cwd.join(self.checked_file));
        if reported == checked {
            return true;
        }
        match (std::fs::canonicalize(&reported), std::fs::canonicalize(&checked)) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        }
    }

    /// The byte offset of a zero-based `(line, column)` counted in `encoding`, clamped.
    pub fn offset(&self, line: u32, col: u32, encoding: PositionEncoding) -> usize {
        line_col_to_offset(self.rope, LineCol::new(line, col), encoding).offset
    }

    /// A range from zero-based positions; without an end, the word at the start (or one
    /// character) is covered, so the editor has something to underline.
    pub fn range(&self, start: (u32, u32), end: Option<(u32, u32)>, encoding: PositionEncoding) -> TextRange {
        let start = self.offset(start.0, start.1, encoding);
        let end = match end {
            Some((line, col)) => self.offset(line, col, encoding),
            None => self.word_end(start),
        };
        TextRange::new(start, end.max(start))
    }

    fn word_end(&self, start: usize) -> usize {
        let mut chars = self.rope.byte_slice(start..).chars();
        let mut end = start;
        match chars.next() {
            Some(c) if c == '\n' || c == '\r' => return start,
            Some(c) if c.is_alphanumeric() || c == '_' || c == '$' => end += c.len_utf8(),
            Some(c) => return start + c.len_utf8(),
            None => return start,
        }
        for c in chars {
            if !(c.is_alphanumeric() || c == '_' || c == '$') {
                break;
            }
            end += c.len_utf8();
        }
        end
    }
}

/// Removes `.` and resolves `..` lexically (no file system access).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Parses `stdout` in `format`. `Err` says why the output could not be read.
pub fn parse(
    format: &OutputFormat,
    stdout: &str,
    context: &ParseContext<'_>,
) -> Result<Vec<Diagnostic>, String> {
    match format {
        OutputFormat::Ruff => ruff::parse(stdout, context),
        OutputFormat::Pyright => pyright::parse(stdout, context),
        OutputFormat::Mypy => mypy::parse(stdout, context),
        OutputFormat::Tsc => tsc::parse(stdout, context),
        OutputFormat::Eslint => eslint::parse(stdout, context),
        OutputFormat::Pattern { regex, columns } => pattern::parse(stdout, context, regex, *columns),
    }
}

/// A short excerpt of output for an error message: the first few non-blank lines on one
/// line (the first alone is often just "Oops! Something went wrong!").
pub fn excerpt(text: &str) -> String {
    let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty()).take(3).collect();
    let joined = lines.join(" / ");
    let mut out: String = joined.chars().take(300).collect();
    if joined.chars().count() > 300 {
        out.push('…');
    }
    out
}

#[cfg(test)]
pub(crate) mod test_support {
    //! Renders parsed diagnostics for table tests.
    use super::*;

    pub fn render(text: &str, diagnostics: &[Diagnostic]) -> String {
        let rope = Rope::from_str(text);
        diagnostics
            .iter()
            .map(|d| {
                let s = crate::text::offset_to_line_col(&rope, d.range.start, PositionEncoding::Utf32);
                let e = crate::text::offset_to_line_col(&rope, d.range.end, PositionEncoding::Utf32);
                format!(
                    "{}:{}-{}:{} {} [{} {}] {}{}\n",
                    s.line + 1,
                    s.col + 1,
                    e.line + 1,
                    e.col + 1,
                    d.severity.as_str(),
                    d.source,
                    d.code.as_deref().unwrap_or("-"),
                    d.message,
                    d.fix.as_ref().map(|f| format!(" (fix: {})", f.description)).unwrap_or_default(),
                )
            })
            .collect()
    }

    pub fn context<'a>(rope: &'a Rope, source: &'a str) -> ParseContext<'a> {
        ParseContext { rope, source, checked_file: Path::new("/p/src/m.py"), cwd: Path::new("/p") }
    }
}
