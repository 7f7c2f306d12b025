//! The Observer when checkers misbehave, when runs go stale, and with what the editor
//! forwards — over the real LSP stdio connection, with real programs as checkers.

use crate::support;

use serde_json::{Value, json};
use support::{LspClient, findings, range};

/// A project folder with `notes.txt` holding `text`.
fn notes(text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.txt");
    std::fs::write(&path, text).unwrap();
    (dir, path)
}

/// Settings with one generic checker `name` for `*.txt` files, read as `line:message`.
fn generic(name: &str, command: &str, args: &[&str], extra: Value) -> Value {
    let mut checker = json!({"command": command, "args": args, "files": ["*.txt"], "errorformat": "%l:%m"});
    if let (Some(checker), Some(extra)) = (checker.as_object_mut(), extra.as_object()) {
        checker.extend(extra.clone());
    }
    json!({"checkers": {"enable": [name], name: checker}})
}

fn show_message(client: &mut LspClient, containing: &str) -> String {
    let message = client.wait_for(&format!("a showMessage about {containing:?}"), |m| {
        m["method"] == "window/showMessage"
            && m["params"]["message"].as_str().is_some_and(|t| t.contains(containing))
    });
    message["params"]["message"].as_str().unwrap_or_default().to_string()
}

#[test]
fn a_generic_checker_runs_a_real_program_on_disk_and_on_the_buffer() {
    let (project, path) = notes("first\nTODO: second\n");
    let options = generic("todo", "grep", &["-n", "TODO", "{file}"], json!({}));
    let mut client = LspClient::for_project(project.path(), options);
    let uri = client.open_file(&path, "plaintext");
    let published = client.diagnostics_from(&uri, "todo");
    assert_eq!(findings(&published["diagnostics"], "todo"), vec![(2, 1, "-".to_string())]);
    assert_eq!(published["diagnostics"][0]["message"], "TODO: second");
    // an unsaved line above moves it: the buffer is checked in a shadow copy
    client.change(&uri, 2, json!([{"range": range((0, 0), (0, 0)), "text": "TODO: new\n"}]));
    let observed = client.observer_diagnostics(&uri, true);
    assert_eq!(
        findings(&observed["diagnostics"], "todo"),
        vec![(1, 1, "-".to_string()), (3, 1, "-".to_string())]
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "first\nTODO: second\n");
}

#[test]
fn a_checker_that_hangs_is_stopped_at_its_timeout() {
    let (project, path) = notes("x\n");
    let options = generic("hang", "sleep", &["30"], json!({"timeout_ms": 500}));
    let mut client = LspClient::for_project(project.path(), options);
    let uri = client.open_file(&path, "plaintext");
    let message = show_message(&mut client, "timed out");
    assert!(message.contains("hang timed out after 0.5 s"), "{message}");
    let observed = client.observer_diagnostics(&uri, true);
    assert_eq!(observed["failures"][0]["source"], "hang", "{observed}");
    assert!(client.is_running());
}

/// Unconfined (`sandbox = "off"`, or a machine with no sandbox), a checker that leaves a
/// child holding its output open is reported as that.
#[test]
fn a_checker_that_leaves_a_child_holding_its_output_is_reported_as_that() {
    let (project, path) = notes("x\n");
    // prints a finding and exits, but a background child keeps stdout open for 30 s
    let mut options =
        generic("leaky", "sh", &["-c", "sleep 30 & echo 1:found"], json!({"timeout_ms": 20000}));
    options["sandbox"] = json!("off");
    let mut client = LspClient::for_project(project.path(), options);
    client.open_file(&path, "plaintext");
    let message = show_message(&mut client, "leaky");
    assert!(message.contains("left a process running that held its output open"), "{message}");
    assert!(!message.contains("timed out"), "{message}");
}

/// Confined, what a checker leaves running goes with it: its finding is published and nothing
/// is reported.
#[test]
fn a_confined_checker_leaves_nothing_running_and_its_finding_stands() {
    // bubblewrap here, or Landlock: what confines checkers on this machine
    if !support::require_landlock() {
        return;
    }
    let (project, path) = notes("x\n");
    let marker = format!("sleep {}", 5_000_000 + std::process::id());
    let script = format!("{marker} & echo 1:found");
    let options = generic("leaky", "sh", &["-c", &script], json!({"timeout_ms": 20000}));
    let mut client = LspClient::for_project(project.path(), options);
    let uri = client.open_file(&path, "plaintext");
    let diagnostics = client.wait_for("the finding", |m| {
        m["method"] == "textDocument/publishDiagnostics"
            && m["params"]["uri"] == uri.as_str()
            && m["params"]["diagnostics"].as_array().is_some_and(|d| !d.is_empty())
    });
    assert_eq!(diagnostics["params"]["diagnostics"][0]["message"], "found", "{diagnostics}");
    assert!(support::alive(&marker).is_empty(), "left running: {:?}", support::alive(&marker));
    let told = client.seen(|m| m["method"] == "window/showMessage");
    assert!(told.is_empty(), "{told:?}");
}

#[test]
fn a_checker_that_fails_with_garbage_is_reported_once() {
    let (project, path) = notes("x\n");
    // with terminal colours, which the user must not see as escape codes
    let options = generic(
        "broken",
        "sh",
        &["-c", "printf '\\033[31mthis is garbage\\033[0m\\n' >&2; exit 3"],
        json!({}),
    );
    let mut client = LspClient::for_project(project.path(), options);
    let uri = client.open_file(&path, "plaintext");
    let message = show_message(&mut client, "broken failed");
    assert!(message.contains("exit status 3") && message.contains("this is garbage"), "{message}");
    assert!(
        !message.contains('\u{1b}') && !message.contains("[31m"),
        "control characters shown: {message:?}"
    );
    // again on save: logged, not shown again
    client.notify("textDocument/didSave", json!({"textDocument": {"uri": uri}}));
    let observed = client.observer_diagnostics(&uri, true);
    assert!(
        observed["failures"][0]["reason"].as_str().unwrap_or_default().contains("this is garbage"),
        "{observed}"
    );
    client.request("workspace/executeCommand", json!({"command": "tokamak.status"}));
    let again = client.seen(|m| m["method"] == "window/showMessage");
    assert!(again.is_empty(), "told twice: {again:?}");
}

#[test]
fn a_checker_that_prints_nothing_reports_a_clean_file() {
    let (project, path) = notes("x\n");
    let mut client = LspClient::for_project(project.path(), generic("quiet", "true", &[], json!({})));
    let uri = client.open_file(&path, "plaintext");
    let observed = client.observer_diagnostics(&uri, true);
    assert_eq!(observed["diagnostics"], json!([]));
    assert_eq!(observed["failures"], json!([]));
    assert_eq!(observed["missing"], json!([]));
}

#[test]
fn a_missing_checker_is_reported_once() {
    let (project, path) = notes("x\n");
    std::fs::write(project.path().join("other.txt"), "y\n").unwrap();
    let mut client =
        LspClient::for_project(project.path(), generic("ghost", "tokamak-no-such-tool", &[], json!({})));
    client.open_file(&path, "plaintext");
    let message = show_message(&mut client, "ghost");
    assert!(message.contains("`tokamak-no-such-tool` was not found"), "{message}");
    let other = client.open_file(&project.path().join("other.txt"), "plaintext");
    let observed = client.observer_diagnostics(&other, true);
    assert_eq!(observed["missing"], json!([]), "a missing tool is not waited for: {observed}");
    let again = client.seen(|m| m["method"] == "window/showMessage");
    assert!(again.is_empty(), "told twice: {again:?}");
}

#[test]
fn huge_output_is_refused_not_buffered() {
    let (project, path) = notes("x\n");
    let options = generic("flood", "sh", &["-c", "yes '1:spam' | head -c 40000000"], json!({}));
    let mut client = LspClient::for_project(project.path(), options);
    client.open_file(&path, "plaintext");
    let message = show_message(&mut client, "flood");
    assert!(message.contains("more than 32 MiB"), "{message}");
}

#[test]
fn many_findings_are_all_kept() {
    let (project, path) = notes(&"line\n".repeat(3000));
    let options = generic("many", "sh", &["-c", "seq 1 3000 | sed 's/$/:finding/'"], json!({}));
    let mut client = LspClient::for_project(project.path(), options);
    let uri = client.open_file(&path, "plaintext");
    let observed = client.observer_diagnostics(&uri, true);
    assert_eq!(observed["diagnostics"].as_array().map(Vec::len), Some(3000));
}

/// A checker that takes a second, then reports the TODO lines.
fn slow(run_on_change: bool) -> Value {
    let mut options = generic("slow", "sh", &["-c", "sleep 1; grep -n TODO \"$0\"", "{file}"], json!({}));
    options["checkers"]["run_on_change"] = json!(run_on_change);
    options["checkers"]["debounce_ms"] = json!(0);
    options
}

#[test]
fn a_run_made_stale_by_a_newer_version_is_cancelled() {
    let (project, path) = notes("TODO one\n");
    let mut client = LspClient::for_project(project.path(), slow(true));
    let uri = client.open_file(&path, "plaintext");
    client.change(&uri, 2, json!([{"range": range((0, 0), (0, 0)), "text": "\n\n"}]));
    let published = client.diagnostics_from(&uri, "slow");
    assert_eq!(published["version"], 2);
    assert_eq!(findings(&published["diagnostics"], "slow"), vec![(3, 1, "-".to_string())]);
    client.wait_for_stderr("cancelled slow");
}

#[test]
fn results_for_an_old_version_are_discarded() {
    let (project, path) = notes("TODO one\n");
    let mut client = LspClient::for_project(project.path(), slow(false));
    let uri = client.open_file(&path, "plaintext");
    // version 2 arrives while version 1 is being checked; nothing runs for it on change
    client.change(&uri, 2, json!([{"range": range((0, 0), (0, 0)), "text": "\n\n"}]));
    let deadline = std::time::Instant::now() + support::TIMEOUT;
    while !client.stderr().contains("discarded slow's results for version Some(1)") {
        assert!(std::time::Instant::now() < deadline, "{}", client.stderr());
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // nothing from version 1 was published; asking now checks version 2
    client.request("workspace/executeCommand", json!({"command": "tokamak.status"}));
    let stale = client.seen(|m| {
        m["method"] == "textDocument/publishDiagnostics"
            && m["params"]["diagnostics"].as_array().is_some_and(|d| d.iter().any(|d| d["source"] == "slow"))
    });
    assert!(stale.is_empty(), "stale results were published: {stale:?}");
    let observed = client.observer_diagnostics(&uri, true);
    assert_eq!(findings(&observed["diagnostics"], "slow"), vec![(3, 1, "-".to_string())]);
}

#[test]
fn a_save_that_replaces_the_text_drops_runs_on_the_old_text() {
    let (project, path) = notes("TODO one\n");
    let mut client = LspClient::for_project(project.path(), slow(false));
    let uri = client.open_file(&path, "plaintext");
    // the editor saves text we never saw, under the same version: a run on the old text is
    // still going and must not be believed
    client.notify("textDocument/didSave", json!({"textDocument": {"uri": uri}, "text": "\n\nTODO one\n"}));
    let published = client.diagnostics_from(&uri, "slow");
    assert_eq!(findings(&published["diagnostics"], "slow"), vec![(3, 1, "-".to_string())], "{published}");
    client.request("workspace/executeCommand", json!({"command": "tokamak.status"}));
    let wrong = client.seen(|m| {
        m["method"] == "textDocument/publishDiagnostics"
            && m["params"]["diagnostics"]
                .as_array()
                .is_some_and(|d| d.iter().any(|d| d["source"] == "slow" && d["range"]["start"]["line"] == 0))
    });
    assert!(wrong.is_empty(), "results for the old text were published: {wrong:?}");
}

#[test]
fn forwarded_diagnostics_are_observed_never_published() {
    let (project, path) = notes("alpha\nbeta\n");
    let mut client = LspClient::for_project(project.path(), json!({"checkers": {"enable": []}}));
    let uri = client.open_file(&path, "plaintext");
    client.diagnostics(&uri);
    let forwarded = json!({"range": range((1, 0), (1, 4)), "severity": 1, "source": "Pylance", "code": "reportX", "message": "from the editor"});
    client.notify("tokamak/clientDiagnostics", json!({"uri": uri, "version": 1, "diagnostics": [forwarded]}));
    let observed = client.observer_diagnostics(&uri, false);
    assert_eq!(findings(&observed["diagnostics"], "Pylance"), vec![(2, 1, "reportX".to_string())]);

    // a change moves it along with the text, and the publish does not include it
    client.change(&uri, 2, json!([{"range": range((0, 0), (0, 0)), "text": "new\n"}]));
    let published = client.diagnostics(&uri);
    assert_eq!(published["diagnostics"], json!([]), "re-published: {published}");
    let observed = client.observer_diagnostics(&uri, false);
    assert_eq!(findings(&observed["diagnostics"], "Pylance"), vec![(3, 1, "reportX".to_string())]);

    // a report for an older version is dropped; an empty list clears
    client.notify("tokamak/clientDiagnostics", json!({"uri": uri, "version": 1, "diagnostics": []}));
    assert_eq!(client.observer_diagnostics(&uri, false)["diagnostics"].as_array().map(Vec::len), Some(1));
    client.notify("tokamak/clientDiagnostics", json!({"uri": uri, "diagnostics": []}));
    assert_eq!(client.observer_diagnostics(&uri, false)["diagnostics"], json!([]));
}

#[test]
fn code_action_contexts_are_observed() {
    let (project, path) = notes("alpha\nbeta\n");
    let mut client = LspClient::for_project(project.path(), json!({"checkers": {"enable": []}}));
    let uri = client.open_file(&path, "plaintext");
    let seen = json!({"range": range((0, 0), (0, 5)), "severity": 2, "source": "eslint-in-editor", "message": "seen"});
    let response = client.request(
        "textDocument/codeAction",
        json!({"textDocument": {"uri": uri}, "range": range((0, 0), (0, 5)), "context": {"diagnostics": [seen]}}),
    );
    assert!(response["result"].is_array(), "{response}");
    let observed = client.observer_diagnostics(&uri, false);
    assert_eq!(findings(&observed["diagnostics"], "eslint-in-editor"), vec![(1, 1, "-".to_string())]);
}

#[test]
fn bad_checker_settings_are_reported_and_defaults_used() {
    let (project, path) = notes("x\n");
    std::fs::write(project.path().join("tokamak.toml"), "[checkers.lint]\ncommand = \"x\"\n").unwrap();
    let mut client = LspClient::for_project(project.path(), Value::Null);
    let message = show_message(&mut client, "default checkers");
    assert!(message.contains("checkers.lint needs exactly one of `pattern` and `errorformat`"), "{message}");
    let uri = client.open_file(&path, "plaintext");
    assert_eq!(client.observer_diagnostics(&uri, true)["diagnostics"], json!([]));
}

/// `tokamak.diagnostics {wait: true}` waits on its own task: keystrokes typed meanwhile are
/// handled and published while it still waits.
#[test]
fn typing_during_a_long_diagnostics_wait_is_published_meanwhile() {
    let (project, path) = notes("TODO one\n");
    let options = generic("slow", "sh", &["-c", "sleep 600"], json!({"timeout_ms": 600000}));
    let mut client = LspClient::for_project(project.path(), options);
    let notes_uri = client.open_file(&path, "plaintext");
    client.send(&json!({"jsonrpc": "2.0", "id": "wait", "method": "workspace/executeCommand", "params": {
        "command": "tokamak.diagnostics",
        "arguments": [{"uri": notes_uri, "wait": true, "timeout_ms": 600000}],
    }}));
    let code = support::file_uri(&project.path().join("main.py"));
    client.open(&code, "python", 1, "x = 1\n");
    client.change(&code, 2, json!([{"range": range((0, 5), (0, 5)), "text": " +"}]));
    let published = client.wait_for("the keystroke's publish", |m| {
        m["method"] == "textDocument/publishDiagnostics"
            && m["params"]["uri"] == code
            && m["params"]["version"] == 2
    });
    assert_eq!(published["params"]["diagnostics"].as_array().map(Vec::len), Some(1), "{published}");
    // the wait is still going: nothing answered it
    assert!(client.seen(|m| m["id"] == "wait").is_empty());
    // and the status is answered meanwhile too
    let status = client.request("workspace/executeCommand", json!({"command": "tokamak.status"}));
    assert!(status.get("result").is_some(), "{status}");
}
