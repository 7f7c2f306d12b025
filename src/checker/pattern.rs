//! Generic checkers: any command whose output a regex (or an errorformat) describes.

use regex::Regex;

use super::ParseContext;
use crate::diagnostic::{Diagnostic, Severity};
use crate::text::PositionEncoding;

/// Turns an errorformat (`%f:%l:%c: %m`) into an anchored regex with the named groups
/// [`parse`] reads. Unknown `%` items are taken literally.
pub fn errorformat_to_regex(format: &str) -> String {
    let mut regex = String::from("^");
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            regex.push_str(&regex::escape(&c.to_string()));
            continue;
        }
        let group = match chars.next() {
            Some('f') => r"(?P<file>.+?)",
            Some('l') => r"(?P<line>\d+)",
            Some('c') => r"(?P<col>\d+)",
            Some('e') => r"(?P<end_line>\d+)",
            Some('k') => r"(?P<end_col>\d+)",
            Some('t') => r"(?P<severity>[A-Za-z])",
            Some('n') => r"(?P<code>\d+)",
            Some('m') => r"(?P<message>.+)",
            Some('%') => "%",
            Some(other) => {
                regex.push_str(&regex::escape(&format!("%{other}")));
                continue;
            }
            None => "%",
        };
        regex.push_str(group);
    }
    regex.push('$');
    regex
}

/// One diagnostic per match. Lines and columns are one-based; without a column the whole
/// line is covered. Severity is read from its first letter (e, w, i/n, h), error otherwise.
pub fn parse(
    stdout: &str,
    context: &ParseContext<'_>,
    regex: &Regex,
    columns: PositionEncoding,
) -> Result<Vec<Diagnostic>, String> {
    let mut diagnostics = Vec::new();
    for captures in regex.captures_iter(stdout) {
        if let Some(file) = captures.name("file")
            && !context.is_target(file.as_str())
        {
            continue;
        }
        let number = |name: &str| {
            captures
                .name(name)
                .and_then(|m| m.as_str().trim().parse::<u32>().ok())
                .map(|n| n.saturating_sub(1))
        };
        let Some(line) = number("line") else {
            continue;
        };
        let range = match number("col") {
            Some(col) => {
                let end = number("end_col").map(|end_col| (number("end_line").unwrap_or(line), end_col));
                context.range((line, col), end, columns)
            }
            None => context.range((line, 0), Some((line, u32::MAX)), columns),
        };
        let severity = match captures.name("severity").and_then(|s| s.as_str().chars().next()) {
            Some('w' | 'W') => Severity::Warning,
            Some('i' | 'I' | 'n' | 'N') => Severity::Information,
            Some('h' | 'H') => Severity::Hint,
            _ => Severity::Error,
        };
        let code = captures.name("code").map(|c| c.as_str().to_string());
        let message = captures.name("message").map_or("", |m| m.as_str()).trim().to_string();
        diagnostics.push(Diagnostic::new(range, severity, context.source, code, message));
    }
    Ok(diagnostics)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::test_support::{context, render};
    use expect_test::expect;
    use ropey::Rope;

    #[test]
    fn errorformat_becomes_a_regex() {
        assert_eq!(
            errorformat_to_regex("%f:%l:%c: %t%n %m (100%%)"),
            r"^(?P<file>.+?):(?P<line>\d+):(?P<col>\d+): (?P<severity>[A-Za-z])(?P<code>\d+) (?P<message>.+) \(100%\)$"
        );
    }

    #[test]
    fn reads_matches_for_the_document() {
        let text = "echo $x\nrm -rf /\n";
        let regex = Regex::new(&format!("(?m){}", errorformat_to_regex("%f:%l:%c: %t%n %m"))).unwrap();
        let output = "src/m.py:1:6: w2086 Double quote to prevent globbing.\nother.sh:1:1: e1 not ours\nsrc/m.py:2:1: e9 Dangerous.\nnoise\n";
        let rope = Rope::from_str(text);
        let diagnostics = parse(output, &context(&rope, "sh"), &regex, PositionEncoding::Utf32).unwrap();
        expect![[r#"
            1:6-1:8 warning [sh 2086] Double quote to prevent globbing.
            2:1-2:3 error [sh 9] Dangerous.
        "#]]
        .assert_eq(&render(text, &diagnostics));
        let no_column = Regex::new(r"(?m)^line (?P<line>\d+): (?P<message>.+)$").unwrap();
        let diagnostics =
            parse("line 2: whole line\n", &context(&rope, "sh"), &no_column, PositionEncoding::Utf32)
                .unwrap();
        expect![[r#"
            2:1-2:9 error [sh -] whole line
        "#]]
        .assert_eq(&render(text, &diagnostics));
    }
}
