//! tsc's `--pretty false` lines: `path(line,col): error TS1234: message`, one-based, columns
//! in UTF-16 code units; indented lines continue the message above.

use std::sync::LazyLock;

use regex::Regex;

use super::{ParseContext, excerpt};
use crate::observer::{Diagnostic, Severity};
use crate::text::PositionEncoding;

static LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?P<file>.+)\((?P<line>\d+),(?P<col>\d+)\): (?P<severity>error|warning|message) (?P<code>TS\d+): (?P<message>.*)$")
        .unwrap_or_else(|err| unreachable!("a constant regex: {err}"))
});

pub fn parse(stdout: &str, context: &ParseContext<'_>) -> Result<Vec<Diagnostic>, String> {
    let mut diagnostics: Vec<Diagnostic> = Vec::new();
    let mut global_errors = Vec::new();
    // whether the last header line was for the document, so its continuation lines belong
    let mut continuing = false;
    for line in stdout.lines() {
        if let Some(captures) = LINE.captures(line) {
            continuing = context.is_target(&captures["file"]);
            if !continuing {
                continue;
            }
            let number = |name: &str| captures[name].parse::<u32>().unwrap_or(1).saturating_sub(1);
            let range = context.range((number("line"), number("col")), None, PositionEncoding::Utf16);
            let severity = match &captures["severity"] {
                "error" => Severity::Error,
                "warning" => Severity::Warning,
                _ => Severity::Information,
            };
            diagnostics.push(Diagnostic::new(
                range,
                severity,
                context.source,
                Some(captures["code"].to_string()),
                captures["message"].to_string(),
            ));
        } else if line.starts_with("  ") && continuing {
            if let Some(last) = diagnostics.last_mut() {
                last.message.push('\n');
                last.message.push_str(line.trim());
            }
        } else if line.starts_with("error TS") {
            continuing = false;
            global_errors.push(line.to_string());
        }
    }
    if diagnostics.is_empty() && !global_errors.is_empty() {
        return Err(format!("tsc could not check the project: {}", excerpt(&global_errors.join("\n"))));
    }
    Ok(diagnostics)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observer::checkers::formats::test_support::{context, render};
    use ropey::Rope;
    use std::path::Path;

    #[test]
    fn reads_lines_and_continuations() {
        let text = "const s = \"😀\"; const x: number = s;\nlet y = undefinedThing;\n";
        let output = "src/m.py(1,23): error TS2322: Type 'string' is not assignable to type 'number'.\n  Details follow.\nsrc/other.ts(1,1): error TS1005: ';' expected.\n  not ours\nsrc/m.py(2,9): error TS2304: Cannot find name 'undefinedThing'.\n";
        let rope = Rope::from_str(text);
        let diagnostics = parse(output, &context(&rope, "tsc")).unwrap();
        assert_eq!(
            render(text, &diagnostics),
            "1:22-1:23 error [tsc TS2322] Type 'string' is not assignable to type 'number'.\nDetails follow.\n\
             2:9-2:23 error [tsc TS2304] Cannot find name 'undefinedThing'.\n"
        );
    }

    #[test]
    fn project_errors_are_a_failure() {
        let rope = Rope::from_str("");
        let mut ctx = context(&rope, "tsc");
        ctx.checked_file = Path::new("/p/a.ts");
        let err = parse("error TS5058: The specified path does not exist: 'x'.\n", &ctx).unwrap_err();
        assert!(err.contains("TS5058"), "{err}");
    }
}
