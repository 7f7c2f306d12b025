//! Documents over the real stdio connection: open, incremental change, save, close, and the
//! syntax diagnostics that follow each, in both position encodings.

use crate::support;

use serde_json::json;
use support::{LspClient, range, summarize, uri};

#[test]
fn diagnostics_appear_and_clear_with_versions() {
    let mut client = LspClient::initialized(&[]);
    let file = uri("app.py");
    client.open(&file, "python", 1, "def f():\n    return (1, 2\n");
    let published = client.diagnostics(&file);
    assert_eq!(published["version"], 1);
    let diagnostics = summarize(&published);
    assert_eq!(diagnostics.len(), 1, "{published}");
    let first = &published["diagnostics"][0];
    assert_eq!(first["source"], "tokamak");
    assert_eq!(first["code"], "syntax");
    assert_eq!(first["severity"], 1);

    // close the bracket: the file is clean, and an empty publish says so
    client.change(&file, 2, json!([{"range": range((1, 16), (1, 16)), "text": ")"}]));
    let published = client.diagnostics(&file);
    assert_eq!(published["version"], 2);
    assert_eq!(summarize(&published), vec![]);

    // break it again, then close the document: its diagnostics are cleared
    client.change(&file, 3, json!([{"range": range((0, 7), (0, 8)), "text": ""}]));
    let published = client.diagnostics(&file);
    assert!(!summarize(&published).is_empty(), "{published}");
    client.notify("textDocument/didClose", json!({"textDocument": {"uri": file}}));
    let published = client.diagnostics(&file);
    assert_eq!(summarize(&published), vec![]);
    assert!(published.get("version").is_none_or(|v| v.is_null()), "{published}");
}

#[test]
fn missing_token_is_reported_where_it_belongs() {
    let mut client = LspClient::initialized(&[]);
    let file = uri("main.ts");
    client.open(&file, "typescript", 1, "const a = foo(1, 2;\n");
    let published = client.diagnostics(&file);
    // on the last character before the missing token, where the squiggle shows
    assert_eq!(summarize(&published), vec![(0, 17, "expected \")\"".to_string())]);
    assert_eq!(published["diagnostics"][0]["range"], range((0, 17), (0, 18)));
}

#[test]
fn several_edits_in_one_change_apply_in_order() {
    let mut client = LspClient::initialized(&["utf-8"]);
    let file = uri("order.py");
    client.open(&file, "python", 1, "a = 1\nb = 2\n");
    client.diagnostics(&file);
    // each edit's range is in the text as the previous edit left it
    client.change(
        &file,
        2,
        json!([
            {"range": range((0, 4), (0, 5)), "text": "(10"},
            {"range": range((1, 0), (1, 0)), "text": "c = 3\n"},
            {"range": range((0, 7), (0, 7)), "text": ")"},
        ]),
    );
    assert_eq!(summarize(&client.diagnostics(&file)), vec![]);
    let symbols = client.request("textDocument/documentSymbol", json!({"textDocument": {"uri": file}}));
    assert_eq!(symbols["result"], json!([]));
    // a later full-text change replaces everything
    client.change(&file, 3, json!([{"text": "def g(:\n"}]));
    let published = client.diagnostics(&file);
    assert_eq!(published["version"], 3);
    assert!(!summarize(&published).is_empty());
}

#[test]
fn stale_versions_are_dropped() {
    let mut client = LspClient::initialized(&[]);
    let file = uri("stale.py");
    client.open(&file, "python", 5, "x = 1\n");
    client.diagnostics(&file);
    // version 4 is older than what the server has: ignored, nothing is published
    client.change(&file, 4, json!([{"range": range((0, 0), (0, 0)), "text": "((("}]));
    client.change(&file, 6, json!([{"range": range((0, 4), (0, 5)), "text": "2"}]));
    let published = client.diagnostics(&file);
    assert_eq!(published["version"], 6);
    assert_eq!(summarize(&published), vec![], "the stale edit must not have been applied");
    client.wait_for_stderr("dropped version 4");
}

/// The same edit positions expressed in each encoding land on the same character.
#[test]
fn positions_after_korean_and_emoji_in_both_encodings() {
    // line 1: `s = "한국어 😀" + (` — the `(` is never closed
    let text = "x = 1\ns = \"한국어 😀\" + (\n";
    for (encoding, after_paren) in [("utf-16", 16), ("utf-8", 24)] {
        let mut client = LspClient::initialized(&[encoding]);
        let file = uri("korean.py");
        client.open(&file, "python", 1, text);
        let published = client.diagnostics(&file);
        let diagnostic = &published["diagnostics"][0];
        assert_eq!(diagnostic["range"]["start"]["line"], 1, "{published}");
        // insert `)` right after the `(`: the file becomes clean only if the column is right
        client.change(&file, 2, json!([{"range": range((1, after_paren), (1, after_paren)), "text": "0)"}]));
        let published = client.diagnostics(&file);
        assert_eq!(summarize(&published), vec![], "{encoding}: {published}");
        let symbols = client.request("textDocument/documentSymbol", json!({"textDocument": {"uri": file}}));
        assert_eq!(symbols["result"], json!([]));
    }
}

#[test]
fn crlf_documents_keep_their_lines() {
    let mut client = LspClient::initialized(&[]);
    let file = uri("crlf.py");
    client.open(&file, "python", 1, "def f():\r\n    return 1\r\n\r\ndef g(:\r\n    pass\r\n");
    let published = client.diagnostics(&file);
    let lines: Vec<u64> = summarize(&published).iter().map(|d| d.0).collect();
    assert_eq!(lines, vec![3], "{published}");
    // delete the stray `(` on line 3 by its CRLF-relative position
    client.change(&file, 2, json!([{"range": range((3, 5), (3, 6)), "text": "()"}]));
    assert_eq!(summarize(&client.diagnostics(&file)), vec![]);
}

#[test]
fn save_with_different_text_resynchronises() {
    let mut client = LspClient::initialized(&[]);
    let file = uri("saved.py");
    client.open(&file, "python", 1, "x = (\n");
    assert!(!summarize(&client.diagnostics(&file)).is_empty());
    client.notify("textDocument/didSave", json!({"textDocument": {"uri": file}, "text": "x = ()\n"}));
    assert_eq!(summarize(&client.diagnostics(&file)), vec![]);
    client.wait_for_stderr("resynchronising");
}

#[test]
fn javascript_jsx_and_tsx_are_parsed() {
    let mut client = LspClient::initialized(&[]);
    for (name, language, text) in [
        ("a.js", "javascript", "function f( {\n"),
        ("b.jsx", "javascriptreact", "const x = <div>{y</div>;\n"),
        ("c.tsx", "typescriptreact", "const x = <A b={1 />;\n"),
    ] {
        let file = uri(name);
        client.open(&file, language, 1, text);
        assert!(!summarize(&client.diagnostics(&file)).is_empty(), "{name}");
    }
    let file = uri("ok.tsx");
    client.open(&file, "typescriptreact", 1, "export const A = () => <div className=\"a\">{1}</div>;\n");
    assert_eq!(summarize(&client.diagnostics(&file)), vec![]);
}

#[test]
fn plain_text_documents_are_kept_without_diagnostics() {
    let mut client = LspClient::initialized(&[]);
    let file = uri("notes.md");
    client.open(&file, "markdown", 1, "# def f(:\n");
    assert_eq!(summarize(&client.diagnostics(&file)), vec![]);
    client.change(&file, 2, json!([{"range": range((0, 0), (0, 1)), "text": ""}]));
    assert_eq!(summarize(&client.diagnostics(&file)), vec![]);
}

/// A document over the keystroke's budget (16 KiB) gets its syntax errors placed in the
/// background: the publish for the keystroke keeps the earlier errors (moved with the edit),
/// and the placed one follows for the same version.
#[test]
fn a_large_documents_syntax_error_is_placed_off_the_keystroke() {
    let mut client = LspClient::initialized(&[]);
    let file = uri("large.py");
    let body: String = (0..2500).map(|i| format!("def f{i}(x):\n    return x + {i}\n\n")).collect();
    assert!(body.len() > 16 * 1024);
    client.open(&file, "python", 1, &body);
    let published = client.diagnostics(&file);
    assert_eq!(summarize(&published), vec![]);
    // remove the colon of `def f2000(x):` (line 6000)
    let line = 3 * 2000;
    client.change(&file, 2, json!([{"range": range((line, 12), (line, 13)), "text": ""}]));
    let placed = client.wait_for("the placed syntax error", |m| {
        m["method"] == "textDocument/publishDiagnostics"
            && m["params"]["version"] == 2
            && m["params"]["diagnostics"].as_array().is_some_and(|d| !d.is_empty())
    });
    assert_eq!(summarize(&placed["params"]), vec![(line as u64, 11, "expected \":\"".to_string())]);
    // typing elsewhere keeps the error where it is until it is placed again
    client.change(&file, 3, json!([{"range": range((0, 0), (0, 0)), "text": "# top\n"}]));
    let published = publish_of(&mut client, &file, 3);
    assert_eq!(summarize(&published), vec![(line as u64 + 1, 11, "expected \":\"".to_string())]);
    // fixing it clears it once the document is parsed again (also off the keystroke here)
    client.change(&file, 4, json!([{"range": range((line + 1, 12), (line + 1, 12)), "text": ":"}]));
    client.wait_for("the cleared publish", |m| {
        m["method"] == "textDocument/publishDiagnostics"
            && m["params"]["version"] == 4
            && m["params"]["diagnostics"].as_array().is_some_and(Vec::is_empty)
    });
}

/// The first publish for `version` of `uri`.
fn publish_of(client: &mut LspClient, uri: &str, version: i32) -> serde_json::Value {
    client.wait_for(&format!("diagnostics for version {version}"), |m| {
        m["method"] == "textDocument/publishDiagnostics"
            && m["params"]["uri"] == uri
            && m["params"]["version"] == version
    })["params"]
        .clone()
}

/// What tree-sitter's recovery accepts and the language rejects is a syntax error too — found
/// by the language's own parser (ruff's for Python, oxc's for TypeScript) off the keystroke,
/// placed where Python and tsc place it, and gone when the text is right. A declaration file
/// is read as one.
#[test]
fn what_the_language_rejects_is_an_error_though_tree_sitter_accepts_it() {
    let mut client = LspClient::initialized(&[]);
    let file = uri("defaults.py");
    // Python: "non-default argument follows default argument"
    client.open(&file, "python", 1, "def f(x=1, y):\n    return y\n");
    let strict = |m: &serde_json::Value, file: &str| {
        m["method"] == "textDocument/publishDiagnostics"
            && m["params"]["uri"] == file
            && m["params"]["diagnostics"].as_array().is_some_and(|d| !d.is_empty())
    };
    let published = client.wait_for("the language's own verdict", |m| strict(m, &file))["params"].clone();
    assert_eq!(published["version"], 1);
    assert_eq!(
        summarize(&published),
        vec![(0, 11, "Parameter without a default cannot follow a parameter with a default".to_string())]
    );
    assert_eq!(published["diagnostics"][0]["code"], "syntax");
    assert_eq!(published["diagnostics"][0]["source"], "tokamak");
    // settled (what `tokamak check` and the fix loop see) holds it too
    let settled = client.observer_diagnostics(&file, true);
    assert_eq!(settled["diagnostics"].as_array().map(Vec::len), Some(1), "{settled}");
    // right: clean once the language's parser has looked (until then, the error stays where
    // it was, moved with the text, so nothing flickers while typing)
    client.change(&file, 2, json!([{"range": range((0, 12), (0, 12)), "text": "=2"}]));
    client.wait_for("the cleared publish", |m| {
        m["method"] == "textDocument/publishDiagnostics"
            && m["params"]["version"] == 2
            && m["params"]["diagnostics"].as_array().is_some_and(Vec::is_empty)
    });
    let settled = client.observer_diagnostics(&file, true);
    assert_eq!(settled["diagnostics"], json!([]), "{settled}");
    // Python 2's print, which tree-sitter's grammar still takes
    client.change(&file, 3, json!([{"range": range((2, 0), (2, 0)), "text": "print \"y\"\n"}]));
    let published = client
        .wait_for("the print statement's error", |m| strict(m, &file) && m["params"]["version"] == 3)["params"]
        .clone();
    assert_eq!(summarize(&published)[0].0, 2, "{published}");

    // TypeScript: tsc's TS2779, then TS1155 (oxc, like tsc, may stop at a first error)
    for (name, text, expected) in [
        ("assign.ts", "let a: any = {};\na?.b = 1;\n", (1, "Cannot assign to this expression")),
        ("const.ts", "export const x: number;\n", (0, "Missing initializer in const declaration")),
    ] {
        let file = uri(name);
        client.open(&file, "typescript", 1, text);
        let published = client.wait_for("tsc's verdict", |m| strict(m, &file))["params"].clone();
        let found: Vec<(u64, String)> = summarize(&published).into_iter().map(|(l, _, m)| (l, m)).collect();
        assert_eq!(found, vec![(expected.0, expected.1.to_string())]);
    }
    // in a declaration file, a const without a value is the rule
    let file = uri("types.d.ts");
    client.open(&file, "typescript", 1, "export const x: number;\nexport function g(y: number): number;\n");
    let settled = client.observer_diagnostics(&file, true);
    assert_eq!(settled["diagnostics"], json!([]), "{settled}");
}

/// A large document is first shown what the language's own parser finds (the few
/// milliseconds of ruff's parser, not the tens of tree-sitter's first parse), then what
/// tree-sitter finds once its tree is made in the background — one account of each error at
/// a time; what needs the tree (symbols) waits for that parse rather than parsing again.
#[test]
fn a_large_document_shows_the_languages_verdict_first_then_its_tree() {
    let mut client = LspClient::initialized(&[]);
    let file = uri("large.py");
    let mut text = String::new();
    for n in 0..400 {
        text.push_str(&format!("def helper_{n}(value):\n    return value * {n}\n\n"));
    }
    assert!(text.len() > 16 * 1024, "larger than documents parsed on opening");
    text.push_str("def broken(:\n    pass\n");
    let last = text.lines().count() as u64 - 2;
    client.open(&file, "python", 1, &text);
    let first = client.diagnostics(&file);
    assert_eq!(first["version"], 1);
    let errors = summarize(&first);
    assert!(!errors.is_empty() && errors.iter().all(|e| e.0 == last), "the language's own parser: {first}");
    // tree-sitter's account of the same error replaces it, never beside it
    let placed = client.wait_for("tree-sitter's diagnostics", |m| {
        m["method"] == "textDocument/publishDiagnostics"
            && m["params"]["uri"] == file.as_str()
            && summarize(&m["params"]) != errors
    });
    let placed = summarize(&placed["params"]);
    assert_eq!(placed.len(), 1, "{placed:?}");
    assert_eq!(placed[0].0, last);
    assert!(!errors.iter().any(|e| e.2 == placed[0].2), "{errors:?} then {placed:?}");
    let symbols = client.request("textDocument/documentSymbol", json!({"textDocument": {"uri": file}}));
    assert_eq!(symbols["result"].as_array().map(Vec::len), Some(401), "the broken def too");

    // a clean large document: nothing to show at once, and nothing flickers after
    let clean = uri("clean.py");
    client.open(&clean, "python", 1, &text.replace("def broken(:", "def broken():"));
    assert_eq!(summarize(&client.diagnostics(&clean)), vec![]);
    let symbols = client.request("textDocument/documentSymbol", json!({"textDocument": {"uri": clean}}));
    assert_eq!(symbols["result"].as_array().map(Vec::len), Some(401));
    assert!(
        client
            .seen(|m| m["method"] == "textDocument/publishDiagnostics"
                && m["params"]["uri"] == clean.as_str()
                && !summarize(&m["params"]).is_empty())
            .is_empty(),
        "never an error on the clean document"
    );
}
