//! The Observer with the real checkers, over the real LSP stdio connection: what each tool
//! finds arrives, exactly placed, merged with Tokamak's own diagnostics, and goes away when
//! the code is fixed.

use crate::support;

use serde_json::{Value, json};
use support::{LspClient, copy_fixture, findings, range, require_tools};

fn only(checker: &str) -> Value {
    json!({"checkers": {"enable": [checker]}})
}

fn s(code: &str) -> String {
    code.to_string()
}

#[test]
fn ruff_findings_arrive_and_clear_when_fixed() {
    if !require_tools(&["ruff"]) {
        return;
    }
    let project = copy_fixture("checkers/python");
    let path = project.path().join("app.py");
    let mut client = LspClient::for_project(project.path(), only("ruff"));
    let uri = client.open_file(&path, "python");
    let published = client.diagnostics_from(&uri, "ruff");
    assert_eq!(published["version"], 1);
    assert_eq!(findings(&published["diagnostics"], "ruff"), vec![(3, 8, s("F401")), (11, 18, s("F821"))]);

    // remove the import and define the name, save: ruff runs again and the file is clean
    let fixed = std::fs::read_to_string(&path).unwrap().replace("import os\n", "undefined_name = \"x\"\n");
    client.change(&uri, 2, json!([{"text": fixed}]));
    client.notify("textDocument/didSave", json!({"textDocument": {"uri": uri}, "text": fixed}));
    let published = client.wait_for("a clean publish", |m| {
        m["method"] == "textDocument/publishDiagnostics"
            && m["params"]["uri"] == uri.as_str()
            && m["params"]["version"] == 2
            && m["params"]["diagnostics"].as_array().is_some_and(Vec::is_empty)
    });
    assert_eq!(published["params"]["diagnostics"], json!([]));
    let observed = client.observer_diagnostics(&uri, true);
    assert_eq!(observed["diagnostics"], json!([]), "{observed}");
}

#[test]
fn pyright_findings_are_placed_in_utf16() {
    if !require_tools(&["pyright"]) {
        return;
    }
    let project = copy_fixture("checkers/python");
    let path = project.path().join("app.py");
    let mut client = LspClient::for_project(project.path(), only("pyright"));
    let uri = client.open_file(&path, "python");
    let published = client.diagnostics_from(&uri, "pyright");
    assert_eq!(
        findings(&published["diagnostics"], "pyright"),
        vec![(11, 12, s("reportReturnType")), (11, 18, s("reportUndefinedVariable"))]
    );
}

#[test]
fn mypy_checks_the_unsaved_buffer_through_its_shadow_file() {
    if !require_tools(&["mypy"]) {
        return;
    }
    let project = copy_fixture("checkers/python");
    let path = project.path().join("app.py");
    let mut client = LspClient::for_project(project.path(), only("mypy"));
    let uri = client.open_file(&path, "python");
    let published = client.diagnostics_from(&uri, "mypy");
    assert_eq!(
        findings(&published["diagnostics"], "mypy"),
        vec![(11, 12, s("return-value")), (11, 18, s("name-defined"))]
    );

    // an unsaved edit: `-> int` becomes `-> str` (line 10, columns 17..20); the file on disk
    // still has the old text, and the settled diagnostics are for the buffer
    client.change(&uri, 2, json!([{"range": range((9, 16), (9, 19)), "text": "str"}]));
    let observed = client.observer_diagnostics(&uri, true);
    assert_eq!(observed["version"], 2);
    assert_eq!(findings(&observed["diagnostics"], "mypy"), vec![(11, 18, s("name-defined"))], "{observed}");
    assert!(std::fs::read_to_string(&path).unwrap().contains("-> int"), "the file on disk is untouched");
}

#[test]
fn tsc_checks_the_unsaved_buffer_in_a_shadow_of_the_project() {
    if !require_tools(&["tsc"]) {
        return;
    }
    let project = copy_fixture("checkers/typescript");
    let path = project.path().join("src/main.ts");
    let mut client = LspClient::for_project(project.path(), only("tsc"));
    let uri = client.open_file(&path, "typescript");
    let published = client.diagnostics_from(&uri, "tsc");
    assert_eq!(findings(&published["diagnostics"], "tsc"), vec![(3, 14, s("TS2322")), (4, 24, s("TS2304"))]);

    // fix the type in the buffer only; the import of ./util must still resolve in the shadow
    client.change(&uri, 2, json!([{"range": range((2, 20), (2, 26)), "text": "number"}]));
    let observed = client.observer_diagnostics(&uri, true);
    assert_eq!(findings(&observed["diagnostics"], "tsc"), vec![(4, 24, s("TS2304"))], "{observed}");
}

#[test]
fn eslint_reads_the_buffer_on_stdin_with_the_project_config() {
    if !require_tools(&["eslint"]) {
        return;
    }
    let project = copy_fixture("checkers/typescript");
    let path = project.path().join("src/legacy.js");
    let mut client = LspClient::for_project(project.path(), only("eslint"));
    let uri = client.open_file(&path, "javascript");
    let published = client.diagnostics_from(&uri, "eslint");
    assert_eq!(
        findings(&published["diagnostics"], "eslint"),
        vec![
            (1, 5, s("no-unused-vars")),
            (1, 5, s("prefer-const")),
            (2, 10, s("no-unused-vars")),
            (5, 1, s("no-undef"))
        ]
    );
    let severities: Vec<&Value> =
        published["diagnostics"].as_array().unwrap().iter().map(|d| &d["severity"]).collect();
    assert!(severities.contains(&&json!(2)), "prefer-const is a warning: {severities:?}");
}

/// A project without an eslint configuration: eslint, asked for by name, is said to be off
/// here, once, and the file's other diagnostics still arrive.
#[test]
fn eslint_without_a_configuration_is_said_to_be_off_once() {
    if !require_tools(&["eslint"]) {
        return;
    }
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("a.ts"), "export const a = 1;\n").unwrap();
    std::fs::write(project.path().join("b.ts"), "export const b = (;\n").unwrap();
    let mut client = LspClient::for_project(project.path(), only("eslint"));
    let a = client.open_file(&project.path().join("a.ts"), "typescript");
    let told = client.wait_for("eslint said to be off", |m| {
        m["method"] == "window/showMessage"
            && m["params"]["message"].as_str().is_some_and(|t| t.contains("eslint is not configured"))
    });
    assert_eq!(
        told["params"]["message"],
        "Tokamak: eslint is not configured for this project: no eslint configuration file in or above its folder; its checks are off here."
    );
    assert_eq!(told["params"]["type"], 2, "a warning: {told}");
    let b = client.open_file(&project.path().join("b.ts"), "typescript");
    let broken = client.wait_for("b.ts's syntax error", |m| {
        m["method"] == "textDocument/publishDiagnostics"
            && m["params"]["uri"] == b.as_str()
            && m["params"]["diagnostics"].as_array().is_some_and(|d| !d.is_empty())
    });
    assert!(broken["params"]["diagnostics"].as_array().unwrap().iter().all(|d| d["source"] != "eslint"));
    let clean = client.observer_diagnostics(&a, true);
    assert!(clean["diagnostics"].as_array().unwrap().is_empty(), "{clean}");
    let said = client.seen(|m| {
        m["method"] == "window/showMessage"
            && m["params"]["message"].as_str().is_some_and(|t| t.contains("eslint is not configured"))
    });
    assert!(said.is_empty(), "said once, not again for b.ts: {said:?}");
}

#[test]
fn every_source_is_merged_into_one_publish_per_version() {
    if !require_tools(&["ruff", "mypy"]) {
        return;
    }
    let project = copy_fixture("checkers/python");
    let path = project.path().join("app.py");
    std::fs::write(project.path().join("tokamak.toml"), "[checkers]\nenable = [\"ruff\", \"mypy\"]\n")
        .unwrap();
    let mut client = LspClient::for_project(project.path(), Value::Null);
    let uri = client.open_file(&path, "python");
    // break the syntax: each source reports it, and it is one diagnostic, Tokamak's, naming
    // the others
    client.change(&uri, 2, json!([{"range": range((5, 27), (5, 28)), "text": ""}]));
    let observed = client.observer_diagnostics(&uri, true);
    let sources: std::collections::BTreeSet<&str> =
        observed["diagnostics"].as_array().unwrap().iter().filter_map(|d| d["source"].as_str()).collect();
    assert_eq!(sources, ["tokamak"].into_iter().collect(), "{observed}");
    let related: std::collections::BTreeSet<&str> = observed["diagnostics"][0]["relatedInformation"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["message"].as_str()?.split(' ').next())
        .collect();
    assert_eq!(related, ["mypy", "ruff"].into_iter().collect(), "{observed}");
    // what was published for version 2 is that same set
    let published = client.wait_for("the publish with every source", |m| {
        m["method"] == "textDocument/publishDiagnostics"
            && m["params"]["version"] == 2
            && m["params"]["diagnostics"] == observed["diagnostics"]
    });
    assert_eq!(published["params"]["diagnostics"], observed["diagnostics"]);
}

#[test]
fn a_path_with_spaces_and_korean_works() {
    if !require_tools(&["ruff", "pyright"]) {
        return;
    }
    let outer = tempfile::tempdir().unwrap();
    let project = outer.path().join("my project/한국어 폴더");
    support::copy_tree(&support::repo_root().join("fixtures/checkers/python"), &project);
    let path = project.join("app.py");
    let mut client = LspClient::for_project(&project, json!({"checkers": {"enable": ["ruff", "pyright"]}}));
    let uri = client.open_file(&path, "python");
    client.change(&uri, 2, json!([{"range": range((0, 0), (0, 0)), "text": "# 주석 😀\n"}]));
    let observed = client.observer_diagnostics(&uri, true);
    assert_eq!(
        findings(&observed["diagnostics"], "ruff"),
        vec![(4, 8, s("F401")), (12, 18, s("F821"))],
        "{observed}"
    );
    // the undefined name both report is ruff's, with pyright's as related information
    assert_eq!(
        findings(&observed["diagnostics"], "pyright"),
        vec![(12, 12, s("reportReturnType"))],
        "{observed}"
    );
    let undefined = observed["diagnostics"].as_array().unwrap().iter().find(|d| d["code"] == "F821").unwrap();
    let related = undefined["relatedInformation"].as_array().expect("related information");
    assert!(
        related[0]["message"].as_str().unwrap().starts_with("pyright (reportUndefinedVariable): "),
        "{related:?}"
    );
    assert_eq!(related[0]["location"]["range"]["start"], json!({"line": 11, "character": 17}));
}

/// With every Python checker on, one mistake is one diagnostic and one "Fix with Tokamak".
#[test]
fn one_mistake_is_one_diagnostic_and_one_action() {
    if !require_tools(&["ruff", "pyright", "mypy"]) {
        return;
    }
    let project = copy_fixture("checkers/python");
    let path = project.path().join("app.py");
    std::fs::write(
        &path,
        "import sys\n\n\ndef show(text: str) -> None:\n    print(text +)\n\n\nshow(sys.argv[0])\n",
    )
    .unwrap();
    let all = json!({"checkers": {"enable": ["ruff", "pyright", "mypy"]}});
    let mut client = LspClient::for_project(project.path(), all);
    let uri = client.open_file(&path, "python");
    let observed = client.observer_diagnostics(&uri, true);
    let diagnostics = observed["diagnostics"].as_array().unwrap();
    assert_eq!(diagnostics.len(), 1, "{observed}");
    assert_eq!(diagnostics[0]["source"], "tokamak", "{observed}");
    let related: Vec<&str> = diagnostics[0]["relatedInformation"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["message"].as_str().unwrap().split([' ', ':']).next().unwrap())
        .collect();
    for source in ["ruff", "pyright", "mypy"] {
        assert!(related.contains(&source), "{source} in {related:?}");
    }
    // the menu on that line, with what the editor shows there (Tokamak's and, say, a pyright
    // server's own): one action
    let mut context = diagnostics.clone();
    context.push(json!({"range": range((4, 17), (4, 18)), "severity": 1, "source": "Pyright", "message": "Expected expression"}));
    let response = client.request(
        "textDocument/codeAction",
        json!({"textDocument": {"uri": uri}, "range": range((4, 0), (4, 0)), "context": {"diagnostics": context, "only": ["quickfix"]}}),
    );
    let actions = response["result"].as_array().unwrap();
    assert_eq!(actions.len(), 1, "{response}");
    assert!(actions[0]["title"].as_str().unwrap().starts_with("Fix with Tokamak: "), "{response}");
    assert_eq!(actions[0]["command"]["arguments"][0]["diagnostics"].as_array().map(Vec::len), Some(2));

    // an undefined name: ruff's, pyright's and mypy's are one
    let text = "import sys\n\n\ndef show(text: str) -> None:\n    print(txt)\n\n\nshow(sys.argv[0])\n";
    client.change(&uri, 2, json!([{"text": text}]));
    let observed = client.observer_diagnostics(&uri, true);
    let diagnostics = observed["diagnostics"].as_array().unwrap();
    assert_eq!(diagnostics.len(), 1, "{observed}");
    assert_eq!(diagnostics[0]["code"], "F821", "{observed}");
    assert_eq!(diagnostics[0]["relatedInformation"].as_array().map(Vec::len), Some(2), "{observed}");
}

/// An editor with its own pyright server forwards its diagnostics: Tokamak stops publishing
/// its own pyright run for the file (no double squiggles) and the agent still has both.
#[test]
fn a_checker_the_editor_runs_itself_is_not_published_twice() {
    if !require_tools(&["pyright"]) {
        return;
    }
    let project = copy_fixture("checkers/python");
    let path = project.path().join("app.py");
    let mut client = LspClient::for_project(project.path(), only("pyright"));
    let uri = client.open_file(&path, "python");
    let published = client.diagnostics_from(&uri, "pyright");
    assert_eq!(findings(&published["diagnostics"], "pyright").len(), 2, "{published}");
    // (a code-action request carrying Tokamak's own pyright diagnostics is not the editor's
    // server: it changes nothing)
    let response = client.request(
        "textDocument/codeAction",
        json!({"textDocument": {"uri": uri}, "range": range((10, 0), (10, 0)), "context": {"diagnostics": published["diagnostics"]}}),
    );
    assert!(response.get("result").is_some(), "{response}");
    client.change(&uri, 2, json!([{"range": range((0, 0), (0, 0)), "text": "# one more line\n"}]));
    let still = client.wait_for("the keystroke's publish", |m| {
        m["method"] == "textDocument/publishDiagnostics" && m["params"]["version"] == 2
    });
    assert_eq!(findings(&still["params"]["diagnostics"], "pyright").len(), 2, "{still}");
    // the editor's own pyright (its language server says `Pyright`)
    let forwarded = json!({"range": range((11, 17), (11, 31)), "severity": 1, "source": "Pyright",
        "code": "reportUndefinedVariable", "message": "\"undefined_name\" is not defined"});
    client.notify("tokamak/clientDiagnostics", json!({"uri": uri, "version": 2, "diagnostics": [forwarded]}));
    let republished = client.wait_for("a publish without Tokamak's pyright", |m| {
        m["method"] == "textDocument/publishDiagnostics"
            && m["params"]["uri"] == uri.as_str()
            && m["params"]["diagnostics"]
                .as_array()
                .is_some_and(|d| d.iter().all(|d| d["source"] != "pyright"))
    });
    assert_eq!(republished["params"]["diagnostics"], json!([]), "{republished}");
    // the agent still sees Tokamak's own run and the editor's
    let observed = client.observer_diagnostics(&uri, true);
    let codes: Vec<&str> =
        observed["diagnostics"].as_array().unwrap().iter().filter_map(|d| d["code"].as_str()).collect();
    assert!(codes.contains(&"reportReturnType"), "{observed}");
    assert!(codes.contains(&"reportUndefinedVariable"), "{observed}");
}

/// `checkers.pyright = "on"` keeps publishing whatever the editor forwards.
#[test]
fn publish_on_keeps_tokamaks_run_published() {
    if !require_tools(&["pyright"]) {
        return;
    }
    let project = copy_fixture("checkers/python");
    let path = project.path().join("app.py");
    let mut client =
        LspClient::for_project(project.path(), json!({"checkers": {"enable": ["pyright"], "pyright": "on"}}));
    let uri = client.open_file(&path, "python");
    client.diagnostics_from(&uri, "pyright");
    let forwarded =
        json!({"range": range((10, 17), (10, 31)), "severity": 1, "source": "Pyright", "message": "x"});
    client.notify("tokamak/clientDiagnostics", json!({"uri": uri, "version": 1, "diagnostics": [forwarded]}));
    // a keystroke republishes: pyright's run is still there
    client.change(&uri, 2, json!([{"range": range((0, 0), (0, 0)), "text": "# one more line\n"}]));
    let published = client.wait_for("the keystroke's publish", |m| {
        m["method"] == "textDocument/publishDiagnostics" && m["params"]["version"] == 2
    });
    assert_eq!(findings(&published["params"]["diagnostics"], "pyright").len(), 2, "{published}");
}

/// tsc and eslint report a broken bracket too: one diagnostic, Tokamak's, naming them.
#[test]
fn one_mistake_in_typescript_and_javascript_is_one_diagnostic() {
    if !require_tools(&["tsc", "eslint"]) {
        return;
    }
    let project = copy_fixture("checkers/typescript");
    let options = json!({"checkers": {"enable": ["tsc", "eslint"]}});
    let mut client = LspClient::for_project(project.path(), options);
    let main = project.path().join("src/main.ts");
    std::fs::write(&main, "import { double } from \"./util\";\n\nexport const label: number = double(21;\n")
        .unwrap();
    let uri = client.open_file(&main, "typescript");
    let observed = client.observer_diagnostics(&uri, true);
    let diagnostics = observed["diagnostics"].as_array().unwrap();
    assert_eq!(diagnostics.len(), 1, "{observed}");
    assert_eq!(diagnostics[0]["source"], "tokamak", "{observed}");
    let related = diagnostics[0]["relatedInformation"].as_array().expect("tsc's report is related");
    assert!(
        related.iter().any(|r| r["message"].as_str().unwrap().starts_with("tsc (TS1005)")),
        "{related:?}"
    );

    let legacy = project.path().join("src/legacy.js");
    let text = std::fs::read_to_string(&legacy).unwrap();
    let broken = text.replacen(')', "", 1);
    std::fs::write(&legacy, &broken).unwrap();
    let uri = client.open_file(&legacy, "javascript");
    let observed = client.observer_diagnostics(&uri, true);
    let diagnostics = observed["diagnostics"].as_array().unwrap();
    assert_eq!(diagnostics.len(), 1, "{observed}");
    assert_eq!(diagnostics[0]["source"], "tokamak", "{observed}");
    let related = diagnostics[0]["relatedInformation"].as_array().expect("eslint's report is related");
    assert!(
        related.iter().any(|r| r["message"].as_str().unwrap().starts_with("eslint: Parsing error")),
        "{related:?}"
    );
}
