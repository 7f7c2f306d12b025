//! What the language server answers, as snapshots (`expect-test`; `UPDATE_EXPECT=1` rewrites
//! them): the diagnostics of a broken file and the code actions at each `$0` cursor, read
//! from a server in this process.

use crate::support;

use expect_test::{Expect, expect};
use serde_json::{Value, json};
use support::{LspClient, cursors, range, uri};

/// Each diagnostic as `line:col-line:col severity source: message`, 1-based.
fn diagnostics(published: &Value) -> String {
    let mut out = String::new();
    for d in published["diagnostics"].as_array().expect("diagnostics") {
        let at = |end: &str, key: &str| d["range"][end][key].as_u64().unwrap_or(u64::MAX) + 1;
        out.push_str(&format!(
            "{}:{}-{}:{} {} {}: {}\n",
            at("start", "line"),
            at("start", "character"),
            at("end", "line"),
            at("end", "character"),
            d["severity"],
            d["source"].as_str().unwrap_or_default(),
            d["message"].as_str().unwrap_or_default(),
        ));
    }
    out
}

/// The code actions at each cursor, with the diagnostics there: `@line:col` then each
/// action's kind, title and command.
fn actions_at(client: &mut LspClient, file: &str, marks: &[(u32, u32)], published: &Value) -> String {
    let mut out = String::new();
    for &(line, col) in marks {
        let here: Vec<Value> = published["diagnostics"]
            .as_array()
            .expect("diagnostics")
            .iter()
            .filter(|d| d["range"]["start"]["line"] == line || d["range"]["end"]["line"] == line)
            .cloned()
            .collect();
        let response = client.request(
            "textDocument/codeAction",
            json!({"textDocument": {"uri": file}, "range": range((line, col), (line, col)), "context": {"diagnostics": here}}),
        );
        out.push_str(&format!("@{}:{}\n", line + 1, col + 1));
        for action in response["result"].as_array().expect("actions") {
            out.push_str(&format!(
                "  {} | {} | {}\n",
                action["kind"].as_str().unwrap_or("-"),
                action["title"].as_str().unwrap_or_default(),
                action["command"]["command"].as_str().unwrap_or("-"),
            ));
        }
    }
    out
}

fn check(language: &str, name: &str, marked: &str, expected_diagnostics: Expect, expected_actions: Expect) {
    let (text, marks) = cursors(marked);
    let mut client = LspClient::initialized(&[]);
    let file = uri(name);
    client.open(&file, language, 1, &text);
    let published = client.diagnostics(&file);
    expected_diagnostics.assert_eq(&diagnostics(&published));
    expected_actions.assert_eq(&actions_at(&mut client, &file, &marks, &published));
}

#[test]
fn a_python_file_with_a_missing_colon_and_paren() {
    check(
        "python",
        "app.py",
        "def total(items)$0\n    return sum(items\n\nprint(total([1, 2]))$0\n",
        expect![[r#"
            1:1-1:10 1 tokamak: unexpected "def total": expected ":" at the end of the line
            2:5-2:16 1 tokamak: unexpected "return sum(": "(" is never closed
            4:1-4:6 1 tokamak: unexpected "print"
        "#]],
        expect![[r#"
            @1:17
              quickfix | Fix with Tokamak: unexpected "def total": expected ":" at the end of the line | tokamak.fix
              source.fixAll.tokamak | Fix all with Tokamak | tokamak.fix
            @4:21
              quickfix | Fix with Tokamak: unexpected "print" | tokamak.fix
              source.fixAll.tokamak | Fix all with Tokamak | tokamak.fix
        "#]],
    );
}

#[test]
fn a_typescript_file_with_an_unclosed_call() {
    check(
        "typescript",
        "calc.ts",
        "export function add(a: number, b: number): number {\n  return a + b;\n}\nconst total = add(1, 2$0;\n",
        expect![[r#"
            4:22-4:23 1 tokamak: expected ")"
        "#]],
        expect![[r#"
            @4:23
              quickfix | Fix with Tokamak: expected ")" | tokamak.fix
              source.fixAll.tokamak | Fix all with Tokamak | tokamak.fix
        "#]],
    );
}

#[test]
fn a_clean_file_has_no_diagnostics_and_no_actions_at_a_cursor() {
    check(
        "python",
        "clean.py",
        "def f(x):\n    return x$0\n",
        expect![[r#""#]],
        expect![[r#"
        @2:13
    "#]],
    );
}
