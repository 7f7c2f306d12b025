//! mypy, Python's type checker: run with the buffer as its `--shadow-file`; its `-O json` is
//! one JSON object a line, lines one-based, columns zero-based; it loads the plugins its
//! configuration names, so an untrusted folder's are not run.

use std::path::Path;

use serde::Deserialize;

use super::{Args, InputMode, ParseContext, Tool, Trust, always_configured, runs_anywhere, zero_or_one};
use crate::diagnostic::{Diagnostic, Severity};
use crate::text::{Language, PositionEncoding};

pub const TOOL: Tool = Tool {
    name: "mypy",
    command: "mypy",
    languages: &[Language::Python],
    input: InputMode::ShadowFile,
    args: Args::Fixed(&["-O", "json", "--no-error-summary", "--shadow-file", "{file}", "{buffer}", "{file}"]),
    project_markers: CONFIGS,
    parse,
    reported: zero_or_one,
    not_configured: always_configured,
    unconfigured: runs_anywhere,
    install: "`pip install mypy`",
    sources: &["mypy"],
    precision: 5,
    // its syntax errors carry the shared code `syntax`
    syntax: |_, _| false,
    trust: Trust::ProjectCode(plugins),
    caches: &[".mypy_cache"],
};

const CONFIGS: &[&str] = &["mypy.ini", ".mypy.ini", "pyproject.toml", "setup.cfg"];

/// mypy loads the plugins its configuration names: the project's code.
fn plugins(project: &Path) -> Option<(String, bool)> {
    CONFIGS.iter().find_map(|name| {
        let text = std::fs::read_to_string(project.join(name)).ok()?;
        text.lines()
            .any(|line| line.trim_start().starts_with("plugins"))
            .then(|| (format!("mypy would load the plugins {name} names"), true))
    })
}

#[derive(Deserialize)]
struct Entry {
    file: String,
    line: i64,
    column: i64,
    end_line: Option<i64>,
    end_column: Option<i64>,
    message: String,
    hint: Option<String>,
    code: Option<String>,
    severity: String,
}

pub fn parse(stdout: &str, context: &ParseContext<'_>) -> Result<Vec<Diagnostic>, String> {
    let mut diagnostics = Vec::new();
    for line in stdout.lines().map(str::trim).filter(|l| l.starts_with('{')) {
        let entry: Entry = serde_json::from_str(line)
            .map_err(|err| format!("mypy printed JSON Tokamak cannot read: {err}"))?;
        if !context.is_target(&entry.file) {
            continue;
        }
        let line0 = u32::try_from(entry.line - 1).unwrap_or(0);
        let end_line0 = entry.end_line.map_or(line0, |l| u32::try_from(l - 1).unwrap_or(line0));
        let (start, end) = columns(context, line0, entry.column, end_line0, entry.end_column);
        let severity = match entry.severity.as_str() {
            "error" => Severity::Error,
            "warning" => Severity::Warning,
            _ => Severity::Information,
        };
        let message = match entry.hint {
            Some(hint) if !hint.is_empty() => format!("{}\n{hint}", entry.message),
            _ => entry.message,
        };
        let range = context.range((line0, start), end.map(|end| (end_line0, end)), PositionEncoding::Utf32);
        diagnostics.push(Diagnostic::new(range, severity, context.source, entry.code, message));
    }
    Ok(diagnostics)
}

/// Character columns from mypy's. On a line with non-ASCII text mypy's columns are the
/// character index minus the extra UTF-8 bytes of the characters before it (seen with mypy
/// 2.4: `"한" + x` puts `x` at 8, not 10). That is not one-to-one, so among the positions
/// that give mypy's numbers the shortest span wins.
// FIXME: drop the correction if mypy starts reporting character columns.
fn columns(
    context: &ParseContext<'_>,
    line: u32,
    start: i64,
    end_line: u32,
    end: Option<i64>,
) -> (u32, Option<u32>) {
    let start = u32::try_from(start.max(0)).unwrap_or(0);
    let end = end.map(|e| u32::try_from(e.max(0)).unwrap_or(0));
    let text = line_text(context, line);
    if text.is_ascii() || end_line != line {
        return (start, end);
    }
    let mypy_column = |index: usize| -> i64 {
        let extra: usize = text.chars().take(index).map(|c| c.len_utf8() - 1).sum();
        index as i64 - extra as i64
    };
    let count = text.chars().count();
    let starts: Vec<usize> = (0..=count).filter(|&i| mypy_column(i) == i64::from(start)).collect();
    let Some(end) = end else {
        return (starts.first().map_or(start, |&s| s as u32), None);
    };
    let ends: Vec<usize> = (0..=count).filter(|&i| mypy_column(i) == i64::from(end)).collect();
    let best = starts.iter().filter_map(|&s| ends.iter().find(|&&e| e >= s).map(|&e| (e - s, s, e))).min();
    match best {
        Some((_, s, e)) => (s as u32, Some(e as u32)),
        None => (start, Some(end)),
    }
}

fn line_text(context: &ParseContext<'_>, line: u32) -> String {
    let line = line as usize;
    if line >= context.rope.len_lines() {
        return String::new();
    }
    context.rope.line(line).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::test_support::{context, render};
    use expect_test::expect;
    use ropey::Rope;

    #[test]
    fn reads_lines_and_corrects_columns_after_non_ascii_text() {
        let text = "x = undefined_name\ny = \"한\" + undefined_b\nz = \"😀😀\" + undefined_c\n";
        let output = concat!(
            "{\"file\": \"src/m.py\", \"line\": 1, \"column\": 4, \"end_line\": 1, \"end_column\": 18, \"message\": \"Name \\\"undefined_name\\\" is not defined\", \"hint\": null, \"code\": \"name-defined\", \"severity\": \"error\"}\n",
            "{\"file\": \"src/m.py\", \"line\": 2, \"column\": 8, \"end_line\": 2, \"end_column\": 19, \"message\": \"b\", \"hint\": null, \"code\": \"name-defined\", \"severity\": \"error\"}\n",
            "{\"file\": \"src/m.py\", \"line\": 3, \"column\": 5, \"end_line\": 3, \"end_column\": 16, \"message\": \"c\", \"hint\": \"did you mean x?\", \"code\": \"name-defined\", \"severity\": \"note\"}\n",
            "{\"file\": \"src/other.py\", \"line\": 1, \"column\": 0, \"end_line\": 1, \"end_column\": 1, \"message\": \"elsewhere\", \"hint\": null, \"code\": null, \"severity\": \"error\"}\n",
        );
        let rope = Rope::from_str(text);
        let diagnostics = parse(output, &context(&rope, "mypy")).unwrap();
        expect![[r#"
            1:5-1:19 error [mypy name-defined] Name "undefined_name" is not defined
            2:11-2:22 error [mypy name-defined] b
            3:12-3:23 info [mypy name-defined] c
            did you mean x?
        "#]]
        .assert_eq(&render(text, &diagnostics));
    }
}
