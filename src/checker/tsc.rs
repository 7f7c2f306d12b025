//! tsc, TypeScript's compiler: run with the project's `tsconfig.json` or the file alone; its
//! `--pretty false` lines are `path(line,col): error TS1234: message`, one-based, columns
//! in UTF-16 code units; indented lines continue the message above.

use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;

use super::{Args, InputMode, ParseContext, Tool, Trust, always_configured, excerpt, runs_anywhere};
use crate::diagnostic::{Diagnostic, Severity};
use crate::language::is_declaration_file;
use crate::text::{Language, PositionEncoding};

pub const TOOL: Tool = Tool {
    name: "tsc",
    command: "tsc",
    languages: &[Language::TypeScript, Language::Tsx],
    input: InputMode::Mirror,
    args: Args::FromConfig { config: "tsconfig.json", make: args },
    project_markers: &["tsconfig.json", "package.json"],
    parse,
    // 1 and 2: errors found (2 when tsc also emitted nothing)
    reported: |code| (0..=2).contains(&code),
    not_configured: always_configured,
    unconfigured: runs_anywhere,
    install: "`npm install --save-dev typescript`",
    sources: &["tsc", "typescript", "ts"],
    precision: 3,
    syntax: |code, _| is_syntax(code),
    trust: Trust::ToolOnly,
    caches: &[],
};

/// tsc's arguments: the project's nearest `tsconfig.json` when there is one (so its options
/// and paths apply), else the file alone with modern defaults. Declaration files are not
/// checked (`--skipLibCheck`) unless `file` is one, which is then checked whatever the
/// tsconfig says (`--skipLibCheck false`): what tsc reports in other declaration files is never
/// about the file checked, and checking the libraries' is most of its time (2.3 s → 1.0 s on a
/// project of two files).
pub fn args(tsconfig: Option<&Path>, file: &Path, language: Language) -> Vec<String> {
    let mut args: Vec<String> = ["--noEmit", "--pretty", "false"].iter().map(|a| a.to_string()).collect();
    args.push("--skipLibCheck".to_string());
    if is_declaration_file(file) {
        args.push("false".to_string());
    }
    match tsconfig {
        Some(config) => {
            args.push("-p".to_string());
            args.push(config.display().to_string());
        }
        None => {
            for arg in ["--target", "es2022", "--module", "esnext", "--moduleResolution", "bundler"] {
                args.push(arg.to_string());
            }
            if language == Language::Tsx {
                args.extend(["--jsx".to_string(), "preserve".to_string()]);
            }
            args.push("{file}".to_string());
        }
    }
    args
}

/// tsc's syntax errors are numbered 1000–1999.
fn is_syntax(code: &str) -> bool {
    let digits = code.strip_prefix("TS").unwrap_or(code);
    digits.len() == 4 && digits.starts_with('1') && digits.chars().all(|c| c.is_ascii_digit())
}

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
    use crate::checker::test_support::{context, render};
    use expect_test::expect;
    use ropey::Rope;
    use std::path::Path;

    #[test]
    fn reads_lines_and_continuations() {
        let text = "const s = \"😀\"; const x: number = s;\nlet y = undefinedThing;\n";
        let output = "src/m.py(1,23): error TS2322: Type 'string' is not assignable to type 'number'.\n  Details follow.\nsrc/other.ts(1,1): error TS1005: ';' expected.\n  not ours\nsrc/m.py(2,9): error TS2304: Cannot find name 'undefinedThing'.\n";
        let rope = Rope::from_str(text);
        let diagnostics = parse(output, &context(&rope, "tsc")).unwrap();
        expect![[r#"
            1:22-1:23 error [tsc TS2322] Type 'string' is not assignable to type 'number'.
            Details follow.
            2:9-2:23 error [tsc TS2304] Cannot find name 'undefinedThing'.
        "#]]
        .assert_eq(&render(text, &diagnostics));
    }

    #[test]
    fn project_errors_are_a_failure() {
        let rope = Rope::from_str("");
        let mut ctx = context(&rope, "tsc");
        ctx.checked_file = Path::new("/p/a.ts");
        let err = parse("error TS5058: The specified path does not exist: 'x'.\n", &ctx).unwrap_err();
        assert!(err.contains("TS5058"), "{err}");
    }

    #[test]
    fn syntax_errors_are_the_1000s() {
        assert!(is_syntax("TS1005") && is_syntax("1128") && !is_syntax("TS2304"));
    }

    #[test]
    fn the_tsconfig_is_used_when_there_is_one() {
        let file = Path::new("/p/src/a.ts");
        assert_eq!(
            args(Some(Path::new("/p/tsconfig.json")), file, Language::TypeScript)[3..],
            ["--skipLibCheck", "-p", "/p/tsconfig.json"]
        );
        let alone = args(None, Path::new("/p/src/a.tsx"), Language::Tsx);
        assert!(
            alone.contains(&"--jsx".to_string()) && alone.last() == Some(&"{file}".to_string()),
            "{alone:?}"
        );
        assert!(alone.contains(&"--skipLibCheck".to_string()), "{alone:?}");
    }

    #[test]
    fn a_declaration_file_is_checked_itself() {
        for file in ["/p/types/env.d.ts", "/p/a.d.mts", "/p/styles.d.css.ts"] {
            let with = args(Some(Path::new("/p/tsconfig.json")), Path::new(file), Language::TypeScript);
            assert_eq!(with[3..], ["--skipLibCheck", "false", "-p", "/p/tsconfig.json"], "{file}");
            let alone = args(None, Path::new(file), Language::TypeScript);
            assert_eq!(alone[3..5], ["--skipLibCheck", "false"], "{file}");
        }
    }
}
