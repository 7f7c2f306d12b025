//! eslint: run on the buffer through stdin with the project's flat config (a program, so
//! only in a trusted folder); its `--format json` has one-based lines and columns, columns in
//! UTF-16 code units.

use std::path::Path;

use serde::Deserialize;

use super::{Args, InputMode, ParseContext, Tool, Trust, zero_or_one};
use crate::diagnostic::{Diagnostic, Severity};
use crate::text::{Language, PositionEncoding};

pub const TOOL: Tool = Tool {
    name: "eslint",
    command: "eslint",
    languages: &[Language::TypeScript, Language::Tsx, Language::JavaScript, Language::Jsx],
    input: InputMode::Stdin,
    args: Args::Fixed(&["--format", "json", "--no-warn-ignored", "--stdin", "--stdin-filename", "{file}"]),
    project_markers: &[
        "eslint.config.js",
        "eslint.config.mjs",
        "eslint.config.cjs",
        "eslint.config.ts",
        "eslint.config.mts",
        "eslint.config.cts",
    ],
    parse,
    reported: zero_or_one,
    not_configured: without_config,
    install: "`npm install --save-dev eslint`",
    sources: &["eslint"],
    precision: 4,
    syntax: |code, message| code.is_empty() && message.starts_with("Parsing error"),
    trust: Trust::ProjectCode(config),
    caches: &[],
};

/// eslint 9 without a flat config exits 2 saying so.
fn without_config(code: Option<i32>, stderr: &str) -> Option<String> {
    (code == Some(2) && stderr.contains("couldn't find an eslint.config"))
        .then(|| "no eslint.config.(js|mjs|cjs) file".to_string())
}

/// eslint loads `eslint.config.*`, which is a program.
fn config(project: &Path) -> Option<(String, bool)> {
    let configured = std::fs::read_dir(project)
        .map(|entries| {
            entries.flatten().any(|e| e.file_name().to_string_lossy().starts_with("eslint.config."))
        })
        .unwrap_or(false);
    Some(("eslint runs the project's eslint.config file, which is a program".to_string(), configured))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FileResult {
    file_path: String,
    messages: Vec<Message>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Message {
    rule_id: Option<String>,
    severity: u8,
    message: String,
    line: Option<u32>,
    column: Option<u32>,
    end_line: Option<u32>,
    end_column: Option<u32>,
}

pub fn parse(stdout: &str, context: &ParseContext<'_>) -> Result<Vec<Diagnostic>, String> {
    let results: Vec<FileResult> = serde_json::from_str(stdout)
        .map_err(|err| format!("eslint printed JSON Tokamak cannot read: {err}"))?;
    Ok(results
        .into_iter()
        .filter(|r| context.is_target(&r.file_path))
        .flat_map(|r| r.messages)
        .map(|m| {
            let start = (m.line.unwrap_or(1).saturating_sub(1), m.column.unwrap_or(1).saturating_sub(1));
            let end = m.end_line.zip(m.end_column).map(|(l, c)| (l.saturating_sub(1), c.saturating_sub(1)));
            let range = context.range(start, end, PositionEncoding::Utf16);
            let severity = if m.severity >= 2 { Severity::Error } else { Severity::Warning };
            Diagnostic::new(range, severity, context.source, m.rule_id, m.message)
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
    fn reads_messages_for_the_document() {
        let text = "let a = 1;\nfoo();\n";
        let output = r#"[{"filePath":"/p/src/m.py","messages":[
            {"ruleId":"prefer-const","severity":1,"message":"'a' is never reassigned.","line":1,"column":5,"endLine":1,"endColumn":6},
            {"ruleId":"no-undef","severity":2,"message":"'foo' is not defined.","line":2,"column":1,"endLine":2,"endColumn":4},
            {"ruleId":null,"fatal":true,"severity":2,"message":"Parsing error: Unexpected token","line":2,"column":4}
          ]},{"filePath":"/p/elsewhere.js","messages":[{"ruleId":"x","severity":2,"message":"no","line":1,"column":1}]}]"#;
        let rope = Rope::from_str(text);
        let diagnostics = parse(output, &context(&rope, "eslint")).unwrap();
        expect![[r#"
            1:5-1:6 warning [eslint prefer-const] 'a' is never reassigned.
            2:1-2:4 error [eslint no-undef] 'foo' is not defined.
            2:4-2:5 error [eslint -] Parsing error: Unexpected token
        "#]]
        .assert_eq(&render(text, &diagnostics));
    }
}
