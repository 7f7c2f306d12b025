//! pyright, Python's type checker: run on the file or its shadow mirror; its `--outputjson`
//! has zero-based LSP positions in UTF-16 code units.

use serde::Deserialize;

use super::{Args, InputMode, ParseContext, Tool, Trust, always_configured, runs_anywhere, zero_or_one};
use crate::diagnostic::{Diagnostic, Severity};
use crate::text::{Language, PositionEncoding};

pub const TOOL: Tool = Tool {
    name: "pyright",
    command: "pyright",
    languages: &[Language::Python],
    input: InputMode::Mirror,
    args: Args::Fixed(&["--outputjson", "{file}"]),
    project_markers: &["pyrightconfig.json", "pyproject.toml"],
    parse,
    reported: zero_or_one,
    not_configured: always_configured,
    unconfigured: runs_anywhere,
    install: "`pip install pyright`",
    sources: &["pyright", "basedpyright", "pylance"],
    precision: 2,
    syntax: |code, message| code.is_empty() && looks_like_syntax(message),
    trust: Trust::ToolOnly,
    caches: &[],
};

/// pyright reports its parser's errors without a rule.
fn looks_like_syntax(message: &str) -> bool {
    message.starts_with("Expected ")
        || message.contains("was not closed")
        || message.starts_with("Unexpected indentation")
        || message.starts_with("Unindent")
        || message.starts_with("Statements must be separated")
        || message.contains("is unterminated")
        || message.starts_with("Invalid character")
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Output {
    general_diagnostics: Vec<Entry>,
}

#[derive(Deserialize)]
struct Entry {
    file: Option<String>,
    severity: String,
    message: String,
    range: Option<Range>,
    rule: Option<String>,
}

#[derive(Deserialize)]
struct Range {
    start: Position,
    end: Position,
}

#[derive(Deserialize)]
struct Position {
    line: u32,
    character: u32,
}

pub fn parse(stdout: &str, context: &ParseContext<'_>) -> Result<Vec<Diagnostic>, String> {
    let output: Output = serde_json::from_str(stdout)
        .map_err(|err| format!("pyright printed JSON Tokamak cannot read: {err}"))?;
    Ok(output
        .general_diagnostics
        .into_iter()
        .filter(|e| e.file.as_deref().is_none_or(|f| context.is_target(f)))
        .map(|e| {
            let range = match &e.range {
                Some(r) => context.range(
                    (r.start.line, r.start.character),
                    Some((r.end.line, r.end.character)),
                    PositionEncoding::Utf16,
                ),
                None => context.range((0, 0), Some((0, 0)), PositionEncoding::Utf16),
            };
            let severity = match e.severity.as_str() {
                "error" => Severity::Error,
                "warning" => Severity::Warning,
                _ => Severity::Information,
            };
            Diagnostic::new(range, severity, context.source, e.rule, e.message)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::test_support::{context, render};
    use expect_test::expect;
    use ropey::Rope;

    #[test]
    fn reads_utf16_positions_and_keeps_only_the_document() {
        let text = "s = \"😀\"; x = undefined_name\n";
        let output = r#"{"version":"1.1.414","generalDiagnostics":[
          {"file":"/p/src/m.py","severity":"error","message":"\"undefined_name\" is not defined","range":{"start":{"line":0,"character":14},"end":{"line":0,"character":28}},"rule":"reportUndefinedVariable"},
          {"file":"/p/src/other.py","severity":"error","message":"elsewhere","range":{"start":{"line":0,"character":0},"end":{"line":0,"character":1}}},
          {"file":"/p/src/m.py","severity":"information","message":"note","range":{"start":{"line":0,"character":0},"end":{"line":0,"character":1}}}
        ],"summary":{}}"#;
        let rope = Rope::from_str(text);
        let diagnostics = parse(output, &context(&rope, "pyright")).unwrap();
        expect![[r#"
            1:14-1:28 error [pyright reportUndefinedVariable] "undefined_name" is not defined
            1:1-1:2 info [pyright -] note
        "#]]
        .assert_eq(&render(text, &diagnostics));
    }
}
