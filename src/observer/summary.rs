//! The error summary a model reads: each diagnostic as `path:line:col severity [source code]
//! message` with the offending lines and a marker under the range, worst first, cut to a
//! token budget with a note of what was left out.

use std::fmt::Write as _;

use super::Diagnostic;
use crate::text::{CHARS_PER_TOKEN, PositionEncoding, offset_to_line_col};
use crate::workspace::DocumentSnapshot;

/// Lines of a multi-line range shown before eliding the rest.
const MAX_LINES_SHOWN: usize = 3;

/// Longest source line echoed, in characters.
const MAX_LINE_CHARS: usize = 200;

/// Summarises `diagnostics` of `snapshot` for a prompt, within `token_budget`.
/// `path` is how the file is named to the model (relative to the workspace).
pub fn error_summary(
    snapshot: &DocumentSnapshot,
    diagnostics: &[Diagnostic],
    path: &str,
    token_budget: usize,
) -> String {
    let mut sorted: Vec<&Diagnostic> = diagnostics.iter().collect();
    sorted.sort_by_key(|d| (d.severity, d.range.start, d.range.end));
    let budget_chars = token_budget.saturating_mul(CHARS_PER_TOKEN);
    let mut out = String::new();
    for (shown, diagnostic) in sorted.iter().enumerate() {
        let entry = entry(snapshot, diagnostic, path);
        if out.len() + entry.len() > budget_chars && shown > 0 {
            let left = sorted.len() - shown;
            let _ = writeln!(
                out,
                "… {left} more diagnostic{} left out to fit the token budget",
                if left == 1 { "" } else { "s" }
            );
            return out;
        }
        out.push_str(&entry);
    }
    out
}

fn entry(snapshot: &DocumentSnapshot, diagnostic: &Diagnostic, path: &str) -> String {
    let rope = &snapshot.rope;
    let start = offset_to_line_col(rope, diagnostic.range.start, PositionEncoding::Utf32);
    let end = offset_to_line_col(rope, diagnostic.range.end, PositionEncoding::Utf32);
    let tag = match &diagnostic.code {
        Some(code) => format!("{} {code}", diagnostic.source),
        None => diagnostic.source.clone(),
    };
    let message = diagnostic.message.replace('\n', "\n    ");
    let mut out = format!(
        "{path}:{}:{} {} [{tag}] {message}\n",
        start.line + 1,
        start.col + 1,
        diagnostic.severity.as_str()
    );
    let width = (end.line + 1).to_string().len();
    let last_line = end.line.min(start.line + MAX_LINES_SHOWN as u32 - 1);
    for line in start.line..=last_line {
        let Some(text) = line_text(snapshot, line) else {
            break;
        };
        let _ = writeln!(out, "{:>width$} | {}", line + 1, text);
        let from = if line == start.line { start.col as usize } else { 0 };
        let to = if line == end.line { end.col as usize } else { text.chars().count() };
        let carets = to.saturating_sub(from).max(1);
        let _ = writeln!(
            out,
            "{:>width$} | {}{}",
            "",
            " ".repeat(from.min(MAX_LINE_CHARS)),
            "^".repeat(carets.min(MAX_LINE_CHARS))
        );
    }
    if end.line > last_line {
        let _ = writeln!(out, "{:>width$} | … ({} more lines)", "", end.line - last_line);
    }
    out
}

/// The line's text without its terminator, tabs as spaces, shortened.
fn line_text(snapshot: &DocumentSnapshot, line: u32) -> Option<String> {
    let line = line as usize;
    if line >= snapshot.rope.len_lines() {
        return None;
    }
    let text = snapshot.rope.line(line).to_string();
    let text = text.trim_end_matches(['\n', '\r']).replace('\t', " ");
    Some(text.chars().take(MAX_LINE_CHARS).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SyntaxSettings;
    use crate::observer::Severity;
    use crate::text::TextRange;

    fn snapshot(text: &str) -> DocumentSnapshot {
        DocumentSnapshot::detached(
            url::Url::parse("file:///p/app.py").unwrap(),
            text,
            &SyntaxSettings::default(),
        )
    }

    fn diagnostic(text: &str, needle: &str, severity: Severity, code: &str, message: &str) -> Diagnostic {
        let start = text.find(needle).unwrap();
        Diagnostic::new(
            TextRange::new(start, start + needle.len()),
            severity,
            "ruff",
            Some(code.into()),
            message.into(),
        )
    }

    #[test]
    fn errors_first_with_the_offending_line_marked() {
        let text = "import os\n\ndef f(한):\n    return 한 + undefined\n";
        let diagnostics = vec![
            diagnostic(text, "os", Severity::Warning, "F401", "`os` imported but unused"),
            diagnostic(text, "undefined", Severity::Error, "F821", "Undefined name `undefined`"),
        ];
        assert_eq!(
            error_summary(&snapshot(text), &diagnostics, "src/app.py", 1000),
            "src/app.py:4:16 error [ruff F821] Undefined name `undefined`\n\
             4 |     return 한 + undefined\n  |                ^^^^^^^^^\n\
             src/app.py:1:8 warning [ruff F401] `os` imported but unused\n\
             1 | import os\n  |        ^^\n"
        );
    }

    #[test]
    fn the_budget_cuts_and_says_how_many_were_left_out() {
        let text = "a = 1\n".repeat(50);
        let diagnostics: Vec<Diagnostic> = (0..50)
            .map(|i| {
                Diagnostic::new(
                    TextRange::new(i * 6, i * 6 + 1),
                    Severity::Error,
                    "mypy",
                    None,
                    format!("problem {i}"),
                )
            })
            .collect();
        let summary = error_summary(&snapshot(&text), &diagnostics, "app.py", 30);
        assert!(summary.starts_with("app.py:1:1 error [mypy] problem 0\n"), "{summary}");
        assert!(summary.len() <= 30 * CHARS_PER_TOKEN + 80, "{}", summary.len());
        let last = summary.lines().last().unwrap();
        assert!(
            last.starts_with("… ") && last.ends_with("more diagnostics left out to fit the token budget"),
            "{last}"
        );
        let shown = summary.lines().filter(|l| l.starts_with("app.py:")).count();
        assert_eq!(last, format!("… {} more diagnostics left out to fit the token budget", 50 - shown));
    }

    #[test]
    fn multi_line_ranges_are_shown_up_to_three_lines() {
        let text = "x = f(\n  1,\n  2,\n  3,\n)\n";
        let diagnostics = vec![Diagnostic::new(
            TextRange::new(4, text.len() - 1),
            Severity::Error,
            "pyright",
            None,
            "bad call".into(),
        )];
        let summary = error_summary(&snapshot(text), &diagnostics, "a.py", 1000);
        assert!(
            summary.contains("1 | x = f(\n  |     ^^") && summary.contains("… (2 more lines)"),
            "{summary}"
        );
    }
}
