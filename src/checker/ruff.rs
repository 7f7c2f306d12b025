//! ruff, Python's fast linter: run on the buffer through stdin; its `--output-format=json`
//! has rows and columns one-based, columns in characters; its own fixes (`fix.edits`) are kept
//! for the fix ladder.

use serde::Deserialize;

use super::{Args, InputMode, ParseContext, Tool, Trust, always_configured, runs_anywhere, zero_or_one};
use crate::diagnostic::{CheckerFix, Diagnostic, Severity};
use crate::text::{Language, PositionEncoding};

pub const TOOL: Tool = Tool {
    name: "ruff",
    command: "ruff",
    languages: &[Language::Python],
    input: InputMode::Stdin,
    args: Args::Fixed(&[
        "check",
        "--output-format=json",
        "--no-fix",
        "--exit-zero",
        "--force-exclude",
        "--stdin-filename",
        "{file}",
        "-",
    ]),
    project_markers: &["pyproject.toml", "ruff.toml", ".ruff.toml"],
    parse,
    reported: zero_or_one,
    not_configured: always_configured,
    unconfigured: runs_anywhere,
    install: "`pip install ruff`",
    sources: &["ruff"],
    precision: 1,
    syntax: |code, message| code.is_empty() && message.starts_with("SyntaxError"),
    trust: Trust::ToolOnly,
    caches: &[],
};

#[derive(Deserialize)]
struct Message {
    code: Option<String>,
    message: String,
    location: Location,
    end_location: Option<Location>,
    fix: Option<Fix>,
}

#[derive(Deserialize, Clone, Copy)]
struct Location {
    row: u32,
    column: u32,
}

#[derive(Deserialize)]
struct Fix {
    applicability: Option<String>,
    message: Option<String>,
    edits: Vec<Edit>,
}

#[derive(Deserialize)]
struct Edit {
    content: String,
    location: Location,
    end_location: Location,
}

fn zero_based(location: Location) -> (u32, u32) {
    (location.row.saturating_sub(1), location.column.saturating_sub(1))
}

/// Lint findings are warnings; a file ruff cannot parse (code `invalid-syntax`, or none in
/// older versions) is an error.
pub fn parse(stdout: &str, context: &ParseContext<'_>) -> Result<Vec<Diagnostic>, String> {
    let messages: Vec<Message> = serde_json::from_str(stdout)
        .map_err(|err| format!("ruff printed JSON Tokamak cannot read: {err}"))?;
    Ok(messages
        .into_iter()
        .map(|m| {
            let range = context.range(
                zero_based(m.location),
                m.end_location.map(zero_based),
                PositionEncoding::Utf32,
            );
            let syntax = m.code.as_deref().is_none_or(|code| code == "invalid-syntax");
            let severity = if syntax { Severity::Error } else { Severity::Warning };
            let fix = m.fix.map(|fix| CheckerFix {
                description: fix.message.unwrap_or_else(|| "apply ruff's fix".to_string()),
                safe: fix.applicability.as_deref() == Some("safe"),
                edits: fix
                    .edits
                    .into_iter()
                    .map(|e| {
                        let range = context.range(
                            zero_based(e.location),
                            Some(zero_based(e.end_location)),
                            PositionEncoding::Utf32,
                        );
                        (range, e.content)
                    })
                    .collect(),
            });
            Diagnostic { fix, ..Diagnostic::new(range, severity, context.source, m.code, m.message) }
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
    fn reads_locations_in_characters_and_fixes() {
        let text = "import os\ns = \"한국어 😀\"; x = undefined_name\n";
        let output = r#"[
          {"code":"F401","message":"`os` imported but unused","location":{"row":1,"column":8},"end_location":{"row":1,"column":10},
           "fix":{"applicability":"safe","message":"Remove unused import: `os`","edits":[{"content":"","location":{"row":1,"column":1},"end_location":{"row":2,"column":1}}]}},
          {"code":"F821","message":"Undefined name `undefined_name`","location":{"row":2,"column":18},"end_location":{"row":2,"column":32},"fix":null},
          {"code":null,"message":"SyntaxError: Expected an expression","location":{"row":2,"column":1},"end_location":{"row":2,"column":2},"fix":null}
        ]"#;
        let rope = Rope::from_str(text);
        let diagnostics = parse(output, &context(&rope, "ruff")).unwrap();
        expect![[r#"
            1:8-1:10 warning [ruff F401] `os` imported but unused (fix: Remove unused import: `os`)
            2:18-2:32 warning [ruff F821] Undefined name `undefined_name`
            2:1-2:2 error [ruff -] SyntaxError: Expected an expression
        "#]]
        .assert_eq(&render(text, &diagnostics));
        let fix = diagnostics[0].fix.as_ref().unwrap();
        assert!(fix.safe);
        assert_eq!(fix.edits[0].0, crate::text::TextRange::new(0, 10));
        assert!(parse("not json", &context(&rope, "ruff")).unwrap_err().contains("cannot read"));
    }
}
