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
    project_markers: FLAT_CONFIGS,
    parse,
    reported: zero_or_one,
    not_configured: without_config,
    unconfigured: no_config_file,
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

/// The files eslint 9 finds its flat configuration in.
const FLAT_CONFIGS: &[&str] = &[
    "eslint.config.js",
    "eslint.config.mjs",
    "eslint.config.cjs",
    "eslint.config.ts",
    "eslint.config.mts",
    "eslint.config.cts",
];

/// The files of a legacy configuration (eslint 8, and 9 under `ESLINT_USE_FLAT_CONFIG=false`).
const LEGACY_CONFIGS: &[&str] =
    &[".eslintrc", ".eslintrc.js", ".eslintrc.cjs", ".eslintrc.yaml", ".eslintrc.yml", ".eslintrc.json"];

/// No eslint finds a configuration when none of its files is in the checked file's folder or
/// any above it (which holds the folder it runs in; eslint 8 looks from the file's folder) — nor
/// `eslintConfig` in a `package.json` there — and its arguments name none: it would only start
/// Node to say so (some 0.4 s a run).
fn no_config_file(file: &Path, args: &[String]) -> Option<String> {
    let named = args.iter().any(|arg| {
        arg == "-c" || arg.starts_with("--config") || arg == "--no-config-lookup" || arg == "--no-eslintrc"
    });
    let folder = file.parent().unwrap_or(file);
    let found = folder.ancestors().any(|folder| {
        FLAT_CONFIGS.iter().chain(LEGACY_CONFIGS).any(|name| folder.join(name).exists())
            || std::fs::read_to_string(folder.join("package.json"))
                .is_ok_and(|json| json.contains("\"eslintConfig\""))
    });
    (!named && !found).then(|| "no eslint configuration file in or above its folder".to_string())
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
    fn without_a_config_file_above_it_eslint_is_not_started() {
        let dir = tempfile::tempdir().unwrap();
        let package = dir.path().join("packages/app");
        std::fs::create_dir_all(package.join("src")).unwrap();
        let file = package.join("src/index.ts");
        let unconfigured = no_config_file(&file, &[]);
        assert_eq!(unconfigured.as_deref(), Some("no eslint configuration file in or above its folder"));
        // arguments that name a configuration, or run without one: eslint is asked
        for args in [&["-c", "lint.mjs"][..], &["--config=lint.mjs"], &["--no-eslintrc", "--rule", "x: 2"]] {
            let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
            assert_eq!(no_config_file(&file, &args), None, "{args:?}");
        }
        // a configuration above the folder it runs in (a monorepo's), flat or legacy, or one
        // between the file and that folder (eslint 8 looks from the file's)
        for config in ["eslint.config.mjs", "packages/app/.eslintrc.json", "packages/app/src/.eslintrc.yml"] {
            std::fs::write(dir.path().join(config), "{}\n").unwrap();
            assert_eq!(no_config_file(&file, &[]), None, "{config}");
            std::fs::remove_file(dir.path().join(config)).unwrap();
        }
        std::fs::write(package.join("package.json"), "{\"eslintConfig\": {}}\n").unwrap();
        assert_eq!(no_config_file(&file, &[]), None);
        std::fs::write(package.join("package.json"), "{\"name\": \"app\"}\n").unwrap();
        assert!(no_config_file(&file, &[]).is_some());
    }

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
