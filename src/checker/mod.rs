//! What Tokamak knows of each checker program, one file per checker: its command and
//! arguments, how it takes the buffer's text, where its project starts, how to read its output
//! and its exit codes, how to install it, what other servers call it, which of its findings are
//! syntax errors, and whether it runs the project's own code (which only a trusted folder
//! allows). The Observer discovers them from [`ALL`]; adding a checker is a file here, its line
//! in `ALL`, and a test.

mod eslint;
mod mypy;
pub mod pattern;
mod pyright;
mod ruff;
mod tsc;

use std::path::{Component, Path, PathBuf};

use ropey::Rope;

use crate::diagnostic::Diagnostic;
use crate::text::{Language, LineCol, PositionEncoding, TextRange, line_col_to_offset};

/// Every built-in checker, in the order they run.
pub const ALL: &[&Tool] = &[&ruff::TOOL, &pyright::TOOL, &mypy::TOOL, &tsc::TOOL, &eslint::TOOL];

/// Tokamak's own syntax check, the most precise source of all.
pub const TOKAMAK: &str = "tokamak";

/// One checker program, described whole.
#[derive(Debug)]
pub struct Tool {
    /// Its name in settings and the `source` of its diagnostics.
    pub name: &'static str,
    /// The program run (settings may name another).
    pub command: &'static str,
    pub languages: &'static [Language],
    pub input: InputMode,
    pub args: Args,
    /// The tool runs in the nearest folder (from the file up to the root) holding one of
    /// these, as it would when run by hand in that project; else in the root.
    pub project_markers: &'static [&'static str],
    /// Reads what it printed on stdout; `Err` says why that could not be read.
    pub parse: fn(&str, &ParseContext<'_>) -> Result<Vec<Diagnostic>, String>,
    /// Whether an exit code means "ran and reported" rather than "broke".
    pub reported: fn(i32) -> bool,
    /// The tool ran but the project has not set it up (exit code, stderr) → what is missing.
    pub not_configured: fn(Option<i32>, &str) -> Option<String>,
    /// What the project lacks for it to check a file (its path, the arguments), known before
    /// it runs, as `not_configured` would say after: no process started to learn it.
    pub unconfigured: fn(&Path, &[String]) -> Option<String>,
    /// How a user installs it, for the sentence of a file only the syntax check could check.
    pub install: &'static str,
    /// The `source` an editor's own server for the same tool puts on its diagnostics
    /// (lowercase), its own name first: pyright's language server says `Pyright` (or
    /// `basedpyright`, Pylance), typescript-language-server `typescript`.
    pub sources: &'static [&'static str],
    /// Where its placement of a problem ranks among sources, lower more precise (Tokamak's own
    /// syntax check is 0; a source no tool claims comes last).
    pub precision: u8,
    /// Whether one of its diagnostics (code, message) is a syntax error, beyond the codes every
    /// tool shares (`syntax`, `invalid-syntax`, `E999`).
    pub syntax: fn(&str, &str) -> bool,
    /// Whether running it runs the project's own code (eslint's configuration, mypy's
    /// plugins), which only a trusted folder allows.
    pub trust: Trust,
    /// The folders it writes, relative to where it runs (its caches): the only ones it may
    /// write when it runs confined.
    pub caches: &'static [&'static str],
}

/// How a checker gets the buffer's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputMode {
    /// On stdin (`{file}` names the real path for the tool's messages and config lookup).
    Stdin,
    /// mypy's `--shadow-file`: `{buffer}` is a temporary file holding the text, `{file}` the
    /// real path it stands for. When the buffer is the file on disk, `--shadow-file {file}
    /// {buffer}` is left out (so its cache may answer); otherwise `--no-incremental` goes
    /// first, since mypy's cache answers for the file on disk even with a shadow.
    ShadowFile,
    /// The file itself when the buffer matches the disk; otherwise a shadow folder that
    /// mirrors the project (symlinks) with the buffer's text in place of the file, so imports
    /// and configuration still resolve.
    Mirror,
}

/// A checker's arguments, with `{file}`, `{buffer}` and `{root}` replaced when it runs.
#[derive(Debug, Clone, Copy)]
pub enum Args {
    Fixed(&'static [&'static str]),
    /// Made per run from the nearest `config` file (its path in the folder the tool runs
    /// in, if there is one), the document's path and its language.
    FromConfig {
        config: &'static str,
        make: fn(Option<&Path>, &Path, Language) -> Vec<String>,
    },
}

/// Whether a checker may run in a folder the user has not trusted.
#[derive(Debug, Clone, Copy)]
pub enum Trust {
    /// It runs only itself.
    ToolOnly,
    /// It runs the project's own code: `(why, whether the project has such code at its root)`,
    /// or `None` when this project gives it none to run.
    ProjectCode(fn(&Path) -> Option<(String, bool)>),
}

/// The tool of this name.
pub fn find(name: &str) -> Option<&'static Tool> {
    ALL.iter().copied().find(|tool| tool.name == name)
}

/// The tool whose diagnostics carry this `source`, by its own name or another server's.
pub fn by_source(source: &str) -> Option<&'static Tool> {
    let source = source.to_ascii_lowercase();
    ALL.iter().copied().find(|tool| tool.name == source || tool.sources.contains(&source.as_str()))
}

/// How precise a source's placement is, lower first ([`Tool::precision`]).
pub fn precision(source: &str) -> u8 {
    if source.eq_ignore_ascii_case(TOKAMAK) {
        return 0;
    }
    by_source(source).map_or(u8::MAX, |tool| tool.precision)
}

/// Exit codes 0 and 1 (found nothing, found something): most tools'.
pub fn zero_or_one(code: i32) -> bool {
    code == 0 || code == 1
}

/// For tools with nothing to say beyond their exit code.
pub fn always_configured(_: Option<i32>, _: &str) -> Option<String> {
    None
}

/// A tool that needs no setting up: nothing to know before it runs.
pub fn runs_anywhere(_: &Path, _: &[String]) -> Option<String> {
    None
}

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
