//! The executor's actions through the language server: `tokamak.run` with the test client
//! acting as the editor. An open document changes through a versioned
//! `workspace/applyEdit` (the disk is left to the user's save), new, renamed and deleted
//! files through resource operations when the client makes them — on disk with a logged
//! notice when it does not — and `tokamak.checkpoints` / `tokamak.rollback` undo a run,
//! open documents through the editor.

use crate::support;

use std::path::Path;

use serde_json::{Value, json};
use support::LspClient;
use support::model_server::{ModelServer, Scripted, openai_chat};

fn action(value: Value) -> Scripted {
    openai_chat(&format!("```json\n{value}\n```\n"))
}

fn action_with(value: Value, after: &str) -> Scripted {
    openai_chat(&format!("```json\n{value}\n```\n{after}"))
}

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    for (name, text) in [
        ("app.py", "def greet(name):\n    return 'hi ' + name\n"),
        ("lib.py", "LIMIT = 1\n"),
        ("a.py", "A = 1\n"),
        ("c.py", "C = 1\n"),
    ] {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    dir
}

fn script() -> Vec<Scripted> {
    vec![
        openai_chat("1. Say hello\n"),
        action_with(
            json!({"action": "edit", "path": "app.py"}),
            "<<<<<<< SEARCH\n    return 'hi ' + name\n=======\n    return 'hello ' + name\n>>>>>>> REPLACE\n",
        ),
        action_with(
            json!({"action": "edit", "path": "lib.py"}),
            "<<<<<<< SEARCH\nLIMIT = 1\n=======\nLIMIT = 2\n>>>>>>> REPLACE\n",
        ),
        action_with(json!({"action": "create", "path": "pkg/new.py"}), "```python\nNEW = True\n```\n"),
        action(json!({"action": "rename", "from": "a.py", "to": "b.py"})),
        action(json!({"action": "delete", "path": "c.py"})),
        action(json!({"action": "done", "summary": "all five changes made"})),
    ]
}

fn options(model: &ModelServer) -> Value {
    json!({"model": {"base_url": model.url(), "model": "scripted", "max_retries": 0}, "checkers": {"enable": []}})
}

fn editor(root: &Path, model: &ModelServer, resource_operations: bool) -> LspClient {
    let mut workspace_edit = json!({"documentChanges": true});
    if resource_operations {
        workspace_edit["resourceOperations"] = json!(["create", "rename", "delete"]);
    }
    let capabilities = json!({
        "general": {"positionEncodings": ["utf-16"]},
        "window": {"workDoneProgress": true},
        "workspace": {"applyEdit": true, "workspaceEdit": workspace_edit},
    });
    let mut client = LspClient::for_project_with(root, options(model), capabilities);
    client.act_as_editor();
    client
}

fn command(client: &mut LspClient, name: &str, arguments: Value) -> Value {
    let response =
        client.request("workspace/executeCommand", json!({"command": name, "arguments": [arguments]}));
    assert!(response.get("error").is_none(), "{name} failed: {response}");
    response["result"].clone()
}

fn run_finished(client: &mut LspClient, run_id: &str) -> Value {
    client.wait_for(&format!("runFinished of {run_id}"), |m| {
        m["method"] == "tokamak/runFinished" && m["params"]["run_id"] == run_id
    })["params"]
        .clone()
}

fn read(root: &Path, name: &str) -> Option<String> {
    std::fs::read_to_string(root.join(name)).ok()
}

#[test]
fn a_run_acts_through_the_editor_and_can_be_rolled_back() {
    let dir = project();
    let root = dir.path();
    let model = ModelServer::start(script());
    let mut client = editor(root, &model, true);
    let app = client.open_file(&root.join("app.py"), "python");
    let started = command(&mut client, "tokamak.run", json!({"goal": "say hello"}));
    let run_id = started["run_id"].as_str().expect("a run id").to_string();
    let finished = run_finished(&mut client, &run_id);
    assert_eq!(finished["exit_reason"], "done", "{finished}");
    assert_eq!(finished["files_changed"].as_array().map(Vec::len), Some(6), "{finished}");

    // the open document changed in the editor, with a versioned edit; its file did not
    assert_eq!(client.text(&app), "def greet(name):\n    return 'hello ' + name\n");
    assert_eq!(read(root, "app.py").unwrap(), "def greet(name):\n    return 'hi ' + name\n");
    let edit = client
        .editor()
        .edits
        .iter()
        .find(|e| e["edit"]["documentChanges"][0]["textDocument"]["uri"] == app)
        .cloned();
    assert!(edit.is_some_and(|e| e["edit"]["documentChanges"][0]["textDocument"]["version"] == 1));
    // a file that is not open changed on disk
    assert_eq!(read(root, "lib.py").unwrap(), "LIMIT = 2\n");
    // files were created, moved and deleted by the editor
    let kinds: Vec<String> = client
        .editor()
        .file_operations
        .iter()
        .map(|o| o["kind"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(kinds, ["create", "rename", "delete"]);
    assert_eq!(read(root, "pkg/new.py").unwrap(), "NEW = True\n");
    assert!(read(root, "a.py").is_none() && read(root, "b.py").unwrap() == "A = 1\n");
    assert!(read(root, "c.py").is_none());

    let status = command(&mut client, "tokamak.status", json!({}));
    let audit = Path::new(status["auditLogs"].as_str().expect("the audit folder")).to_path_buf();
    let logs: Vec<_> = std::fs::read_dir(&audit).expect("audit logs").flatten().collect();
    assert_eq!(logs.len(), 1, "{audit:?}");

    // the run's checkpoint, listed and rolled back
    let list = command(&mut client, "tokamak.checkpoints", json!({}));
    assert_eq!(list.as_array().map(Vec::len), Some(1), "{list}");
    assert_eq!(list[0]["run_id"], run_id.as_str());
    assert_eq!(list[0]["files"], json!(["a.py", "app.py", "b.py", "c.py", "lib.py", "pkg/new.py"]));
    let filtered =
        command(&mut client, "tokamak.checkpoints", json!({"uri": support::file_uri(&root.join("lib.py"))}));
    assert_eq!(filtered.as_array().map(Vec::len), Some(1));
    let none = command(
        &mut client,
        "tokamak.checkpoints",
        json!({"uri": support::file_uri(&root.join("README.md"))}),
    );
    assert_eq!(none, json!([]));
    let id = list[0]["id"].as_str().unwrap().to_string();

    // the user types in the open document: the rollback refuses, naming it
    let version = client.editor().documents[&app].0 + 1;
    client.change(&app, version, json!([{"range": support::range((0, 0), (0, 0)), "text": "# mine\n"}]));
    let rollback = command(&mut client, "tokamak.rollback", json!({"checkpoint": id}));
    let refused = run_finished(&mut client, rollback["run_id"].as_str().unwrap());
    assert_eq!(refused["exit_reason"], "failed");
    assert!(refused["summary"].as_str().unwrap().contains("app.py changed after the run"), "{refused}");
    assert_eq!(read(root, "lib.py").unwrap(), "LIMIT = 2\n", "nothing was rolled back");

    let rollback = command(&mut client, "tokamak.rollback", json!({"checkpoint": id, "force": true}));
    let restored = run_finished(&mut client, rollback["run_id"].as_str().unwrap());
    assert_eq!(restored["exit_reason"], "clean", "{restored}");
    // the open document goes back through the editor (the user can undo that), the rest on disk
    assert_eq!(client.text(&app), "def greet(name):\n    return 'hi ' + name\n");
    assert_eq!(read(root, "lib.py").unwrap(), "LIMIT = 1\n");
    assert_eq!(read(root, "a.py").unwrap(), "A = 1\n");
    assert_eq!(read(root, "c.py").unwrap(), "C = 1\n");
    assert!(read(root, "b.py").is_none() && read(root, "pkg/new.py").is_none());
}

#[test]
fn without_resource_operations_files_change_on_disk_with_a_notice() {
    let dir = project();
    let root = dir.path();
    let model = ModelServer::start(script());
    let mut client = editor(root, &model, false);
    let started = command(&mut client, "tokamak.run", json!({"goal": "say hello"}));
    let finished = run_finished(&mut client, started["run_id"].as_str().unwrap());
    assert_eq!(finished["exit_reason"], "done", "{finished}");
    assert!(client.editor().file_operations.is_empty());
    assert_eq!(read(root, "pkg/new.py").unwrap(), "NEW = True\n");
    assert!(read(root, "a.py").is_none() && read(root, "b.py").is_some() && read(root, "c.py").is_none());
    // app.py was not open: written on disk
    assert_eq!(read(root, "app.py").unwrap(), "def greet(name):\n    return 'hello ' + name\n");
    client.wait_for_stderr("the editor does not make file operations; changing the disk");
}

#[test]
fn a_run_needs_a_goal_a_workspace_and_a_model() {
    let dir = project();
    let root = dir.path();
    let model = ModelServer::start(Vec::new());
    let mut client = editor(root, &model, true);
    let response = client.request(
        "workspace/executeCommand",
        json!({"command": "tokamak.run", "arguments": [{"goal": "  "}]}),
    );
    assert!(response["error"]["message"].as_str().unwrap().contains("the goal is empty"), "{response}");
    drop(model); // nothing listens any more
    let started = command(&mut client, "tokamak.run", json!({"goal": "anything"}));
    let finished = run_finished(&mut client, started["run_id"].as_str().unwrap());
    assert_eq!(finished["exit_reason"], "failed");
    assert!(finished["summary"].as_str().unwrap().contains("the model could not be used"), "{finished}");

    let mut bare = LspClient::initialized(&["utf-16"]);
    let response = bare
        .request("workspace/executeCommand", json!({"command": "tokamak.run", "arguments": [{"goal": "x"}]}));
    assert!(response["error"]["message"].as_str().unwrap().contains("workspace folder"), "{response}");
}
