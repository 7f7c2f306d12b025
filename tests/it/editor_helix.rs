//! Tokamak as Helix drives it: a client that sends exactly the `initialize` Helix sends
//! (capabilities read from Helix's own source, `helix-lsp/src/client.rs` at 079a789e, July
//! 2026 — Helix has no package to install here), then does what Helix does: its
//! `didChangeConfiguration` after `initialized`, documents opened at version 0, the goal run
//! as `:lsp-workspace-command tokamak.run "…"` sends it (the arguments as JSON values), each
//! `window/showMessageRequest` answered by picking an action in Helix's select (with "Show
//! diff" opening the diff as a document first), edits applied to its buffers and echoed as
//! incremental changes in the position encoding it negotiated. Seed 000's scenario, with
//! and without bubblewrap, in Python and TypeScript: the run ends `done`, the source's edit
//! stays unsaved in the buffer, and the project's tests, which need that edit, pass.

use crate::support;

use serde_json::{Value, json};
use support::model_server::ModelServer;
use support::scenario::{GOAL, Language, PYTHON, TYPESCRIPT, placed, test_runs_passed};
use support::{LspClient, UserDirs};

/// Helix's `ClientCapabilities`, as it serializes them.
fn helix_capabilities() -> Value {
    let symbol_kinds: Vec<u32> = (1..=26).collect();
    json!({
        "workspace": {
            "configuration": true,
            "didChangeConfiguration": {"dynamicRegistration": false},
            "workspaceFolders": true,
            "applyEdit": true,
            "symbol": {"dynamicRegistration": false, "symbolKind": {"valueSet": symbol_kinds}},
            "executeCommand": {"dynamicRegistration": false},
            "inlayHint": {"refreshSupport": false},
            "workspaceEdit": {
                "documentChanges": true,
                "resourceOperations": ["create", "rename", "delete"],
                "failureHandling": "abort",
                "normalizesLineEndings": false,
            },
            "didChangeWatchedFiles": {"dynamicRegistration": true, "relativePatternSupport": true},
            "fileOperations": {
                "willCreate": true, "didCreate": true, "willRename": true,
                "didRename": true, "willDelete": true, "didDelete": true,
            },
            "diagnostic": {"refreshSupport": true},
        },
        "textDocument": {
            "completion": {
                "completionItem": {
                    "snippetSupport": true,
                    "resolveSupport": {"properties": ["documentation", "detail", "additionalTextEdits"]},
                    "insertReplaceSupport": true,
                    "deprecatedSupport": true,
                    "tagSupport": {"valueSet": [1]},
                },
                "completionItemKind": {},
            },
            "hover": {"contentFormat": ["markdown"]},
            "signatureHelp": {
                "signatureInformation": {
                    "documentationFormat": ["markdown"],
                    "parameterInformation": {"labelOffsetSupport": true},
                    "activeParameterSupport": true,
                },
            },
            "rename": {"dynamicRegistration": false, "prepareSupport": true, "honorsChangeAnnotations": false},
            "formatting": {"dynamicRegistration": false},
            "codeAction": {
                "codeActionLiteralSupport": {
                    "codeActionKind": {
                        "valueSet": [
                            "", "quickfix", "refactor", "refactor.extract", "refactor.inline",
                            "refactor.rewrite", "source", "source.organizeImports", "source.fixAll",
                        ],
                    },
                },
                "isPreferredSupport": true,
                "disabledSupport": true,
                "dataSupport": true,
                "resolveSupport": {"properties": ["edit", "command"]},
            },
            "diagnostic": {"dynamicRegistration": false, "relatedDocumentSupport": true},
            "publishDiagnostics": {"versionSupport": true, "tagSupport": {"valueSet": [1, 2]}},
            "inlayHint": {"dynamicRegistration": false},
            "documentLink": {"dynamicRegistration": false, "tooltipSupport": false},
            "callHierarchy": {"dynamicRegistration": false},
            "documentSymbol": {
                "dynamicRegistration": false,
                "symbolKind": {"valueSet": symbol_kinds},
                "hierarchicalDocumentSymbolSupport": false,
            },
        },
        "window": {
            "showMessage": {"messageActionItem": {"additionalPropertiesSupport": true}},
            "workDoneProgress": true,
            "showDocument": {"support": true},
        },
        "general": {"positionEncodings": ["utf-8", "utf-32", "utf-16"]},
    })
}

/// A Helix that opened `root` with `config` on its `[language-server.tokamak]` entry, the
/// server started with `env` added.
fn helix(root: &std::path::Path, config: Value, env: &[(String, String)]) -> LspClient {
    let mut all = support::tool_env();
    all.extend(env.iter().cloned());
    let all: Vec<(&str, &str)> = all.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let mut client = LspClient::start_with(UserDirs::new(), &all);
    client.act_as_editor();
    let uri = support::file_uri(root);
    let name = root.file_name().and_then(|n| n.to_str()).unwrap_or("project").to_string();
    let response = client.request(
        "initialize",
        json!({
            "processId": std::process::id(),
            "workspaceFolders": [{"uri": uri, "name": name}],
            "rootPath": root.display().to_string(),
            "rootUri": uri,
            "initializationOptions": config,
            "capabilities": helix_capabilities(),
            "clientInfo": {"name": "helix", "version": "25.07.1 (079a789e)"},
        }),
    );
    assert!(response.get("error").is_none(), "initialize failed: {response}");
    client.encoding =
        response["result"]["capabilities"]["positionEncoding"].as_str().unwrap_or("utf-16").to_string();
    client.notify("initialized", json!({}));
    // as Helix does for a server with a config, "probably a good idea for compatibility"
    client.notify("workspace/didChangeConfiguration", json!({"settings": config}));
    client
}

fn scenario_in_helix(language: &Language, with_bwrap: bool) {
    let dir = language.project();
    let root = dir.path();
    let model = ModelServer::start(language.script());
    let (_bin, path) = support::path_without(&["bwrap"]);
    let env = if with_bwrap { Vec::new() } else { vec![("PATH".to_string(), path)] };
    // the user's `config = { … }`: trusted (Helix has no workspace trust), the project's test
    // command; approvals left at the default, medium
    let mut options = language.options(&model);
    options["trusted"] = json!(true);
    let mut client = helix(root, options, &env);
    assert_eq!(client.encoding, "utf-8", "Helix offers UTF-8 first");
    let source = support::file_uri(&root.join(language.source));
    let text = std::fs::read_to_string(root.join(language.source)).expect("the source");
    client.open(&source, language.folder, 0, &text);
    // the person picks "Show diff" on the first question, then Approve, and Approve again
    client.answer_in_turn(
        "window/showMessageRequest",
        vec![json!({"title": "Show diff"}), json!({"title": "Approve"}), json!({"title": "Approve"})],
    );
    // `:lsp-workspace-command tokamak.run "User 클래스에 …"`
    let started =
        client.request("workspace/executeCommand", json!({"command": "tokamak.run", "arguments": [GOAL]}));
    assert!(started.get("error").is_none(), "{started}");
    let run_id = started["result"]["run_id"].as_str().expect("a run id").to_string();
    let finished = client.wait_for("the run's end", |m| {
        m["method"] == "tokamak/runFinished" && m["params"]["run_id"] == run_id
    })["params"]
        .clone();
    assert_eq!(finished["exit_reason"], "done", "{finished}\n{}", client.stderr());
    // Helix's status line: how the run ended
    let end = client.wait_for("the closing message", |m| {
        m["method"] == "window/showMessage"
            && m["params"]["message"].as_str().is_some_and(|t| t.starts_with("Tokamak done: "))
    });
    let said = end["params"]["message"].as_str().unwrap_or_default();
    assert!(said.contains("all 2 step(s) done"), "{end}");
    // the source's edit is in Helix's buffer, not on disk: the ending says so
    assert!(said.contains(&format!("Not saved yet: {} (changed in the editor", language.source)), "{end}");
    // the questions, as Helix's select shows them: the first one twice (after its diff)
    let asked: Vec<Value> = client.seen(|m| m["method"] == "window/showMessageRequest");
    let messages: Vec<&str> = asked.iter().filter_map(|m| m["params"]["message"].as_str()).collect();
    assert_eq!(messages.len(), 3, "{messages:?}");
    assert!(messages[0].ends_with(&format!("wants to edit {}.", language.source)), "{messages:?}");
    assert_eq!(messages[0], messages[1], "asked again after the diff");
    assert!(messages[2].ends_with(&format!("wants to edit {}.", language.tests)), "{messages:?}");
    let titles: Vec<&str> = asked[0]["params"]["actions"]
        .as_array()
        .expect("actions")
        .iter()
        .filter_map(|a| a["title"].as_str())
        .collect();
    assert_eq!(titles, ["Approve", "Reject", "Show diff"]);
    // the diff Helix opened, before anything changed
    let shown = &client.editor().shown;
    assert_eq!(shown.len(), 1, "{shown:?}");
    assert!(
        shown[0].1.contains(&format!("+{}", language.method.1.lines().nth(2).expect("a line"))),
        "{shown:?}"
    );
    // the method in Helix's buffer, unsaved; the test on disk
    assert!(
        client.text(&source).contains(language.method.1.lines().nth(2).expect("a line")),
        "{}",
        client.text(&source)
    );
    assert_eq!(std::fs::read_to_string(root.join(language.source)).expect("the source"), text, "unsaved");
    assert!(std::fs::read_to_string(root.join(language.tests)).expect("the tests").contains("alidate"));
    // every test run passed — the last after the test that needs the buffer's method — and
    // where they ran is said, with the notice once without bwrap
    test_runs_passed(client.user.cache.path(), 2);
    // Helix shows no plan, but its spinner shows each step's report, with where its tests ran
    let reports: Vec<String> = client
        .seen(|m| m["method"] == "$/progress" && m["params"]["value"]["kind"] == "report")
        .iter()
        .filter_map(|m| m["params"]["value"]["message"].as_str().map(str::to_string))
        .filter(|m| m.contains(" done: "))
        .collect();
    assert_eq!(reports.len(), 2, "{reports:?}");
    for report in &reports {
        assert!(report.contains("the tests passed") && report.contains(placed(with_bwrap)), "{reports:?}");
    }
    let said: Vec<String> = client
        .seen(|m| m["method"] == "window/showMessage")
        .iter()
        .filter_map(|m| m["params"]["message"].as_str().map(str::to_string))
        .collect();
    assert_eq!(said.iter().filter(|m| m.contains("no sandbox")).count(), 0, "a sandbox either way: {said:?}");
}

#[test]
fn the_scenario_in_helix_in_python() {
    if support::require_tools(&["pytest", "bwrap"]) {
        scenario_in_helix(&PYTHON, true);
    }
}

#[test]
fn the_scenario_in_helix_without_bwrap_in_python() {
    if support::require_tools(&["pytest"]) {
        scenario_in_helix(&PYTHON, false);
    }
}

#[test]
fn the_scenario_in_helix_in_typescript() {
    if support::require_tools(&["tsc", "bwrap"]) {
        scenario_in_helix(&TYPESCRIPT, true);
    }
}

#[test]
fn the_scenario_in_helix_without_bwrap_in_typescript() {
    if support::require_tools(&["tsc"]) {
        scenario_in_helix(&TYPESCRIPT, false);
    }
}

/// Helix drops what `:lsp-workspace-command` answers: the plan of `tokamak.plan`, the status
/// and the checkpoints reach the user as a document Tokamak opens (`window/showDocument`),
/// `tokamak.checkModel` as a message; the ending's message puts its reason first.
#[test]
fn what_a_command_answers_reaches_helix_as_a_document_or_a_message() {
    let dir = PYTHON.project();
    let root = dir.path();
    let model = ModelServer::start(vec![
        support::model_server::openai_chat(
            "1. Write NOTES.md\n   A line about validate_email.\n2. Test it [depends: 1]\n",
        ),
        support::model_server::openai_chat("OK"),
    ]);
    let mut options = PYTHON.options(&model);
    options["trusted"] = json!(true);
    let mut client = helix(root, options, &[]);
    let opened = |client: &mut LspClient, what: &str| -> String {
        let asked = client.wait_for(what, |m| m["method"] == "window/showDocument");
        let uri = asked["params"]["uri"].as_str().expect("a file").to_string();
        assert_eq!(asked["params"]["takeFocus"], true, "{asked}");
        let path = url::Url::parse(&uri).unwrap().to_file_path().unwrap();
        std::fs::read_to_string(&path).expect("the answer's file")
    };
    let plan = client.request(
        "workspace/executeCommand",
        json!({"command": "tokamak.plan", "arguments": ["write notes"]}),
    );
    assert_eq!(plan["result"]["goal"], "write notes", "{plan}");
    let shown = opened(&mut client, "the plan's document");
    assert!(
        shown.starts_with("# Plan ")
            && shown.contains("1. Write NOTES.md\n   A line about validate_email.\n2. Test it [depends: 1]"),
        "{shown}"
    );
    assert!(shown.contains("tokamak.implement"), "{shown}");
    let status =
        client.request("workspace/executeCommand", json!({"command": "tokamak.status", "arguments": []}));
    assert!(status.get("result").is_some(), "{status}");
    let shown = opened(&mut client, "the status's document");
    assert!(shown.contains("Model:    scripted (openai at"), "{shown}");
    assert!(shown.contains("Trust:    trusted"), "{shown}");
    let checked =
        client.request("workspace/executeCommand", json!({"command": "tokamak.checkModel", "arguments": []}));
    assert_eq!(checked["result"]["ok"], true, "{checked}");
    let said = client.wait_for("the model check's message", |m| {
        m["method"] == "window/showMessage"
            && m["params"]["message"].as_str().is_some_and(|t| t.starts_with("Tokamak: model scripted at"))
    });
    assert!(said["params"]["message"].as_str().unwrap().contains(" ms"), "{said}");
}
