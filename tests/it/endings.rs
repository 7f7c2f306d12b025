//! Endings that are true (SPEC F4, P4, §4): what a run reports is read from the state it ends
//! in. Each failure path's ending asserted whole — exit reason, status, summary, what is left,
//! the plan's states: every change rejected or refused, an approval overtaken by typing, a
//! major drift answered "go on" whose edit no longer applies, tests that cannot run — and seed
//! 000's scenario with pyright judging the open, unsaved buffers across files, with and
//! without bubblewrap, ending done without a repair round. The failure paths' endings are
//! snapshots too (`expect-test`; `UPDATE_EXPECT=1` rewrites them): every line a reader sees.

use crate::support;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use expect_test::expect;
use serde_json::{Value, json};
use support::model_server::{ModelServer, Scripted, openai_chat};
use support::scenario::{GOAL, PYTHON, block, call};
use support::{LspClient, UserDirs};

const APP: &str = "def total(items):\n    return sum(items)\n";

fn project(toml: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    std::fs::write(dir.path().join("app.py"), APP).unwrap();
    std::fs::write(dir.path().join("tokamak.toml"), format!("{toml}[checkers]\nenable = []\n")).unwrap();
    dir
}

fn options(model: &ModelServer) -> Value {
    json!({
        "approval": "medium",
        "model": {"base_url": model.url(), "model": "scripted", "max_retries": 0},
        "checkers": {"enable": []},
    })
}

/// An editor that applies edits, renders approvals itself, and has `app.py` open.
fn editor(root: &Path, options: Value) -> (LspClient, String) {
    let mut client = LspClient::approving_editor(root, options);
    let uri = client.open_file(&root.join("app.py"), "python");
    (client, uri)
}

/// The last plan the editor was sent: each step's (status, glyph).
fn last_plan(client: &LspClient) -> Vec<(String, String)> {
    let last = client.seen(|m| m["method"] == "tokamak/planUpdated").pop().expect("a plan");
    last["params"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["status"].as_str().unwrap().to_string(), s["glyph"].as_str().unwrap().to_string()))
        .collect()
}

/// A run's ending as its reader sees it, one fact a line — exit reason, summary, each step's
/// status, title and note, what is left, the files changed — with the project's folder written
/// `$ROOT`, the tools' `$TOOLS`, the run's id `$RUN` and times `N s`: what the snapshots
/// below hold whole.
fn ending(end: &Value, root: &Path) -> String {
    let canonical = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let run = regex::Regex::new(r"tokamak-run-\d+-[0-9a-f]+").unwrap();
    let seconds = regex::Regex::new(r"\d+(\.\d+)? s\b").unwrap();
    let plain = |text: &str| {
        let text = text.replace(&canonical.display().to_string(), "$ROOT");
        let text = text.replace(&root.display().to_string(), "$ROOT");
        let text = text.replace(&support::tools_dir().display().to_string(), "$TOOLS");
        let text = run.replace_all(&text, regex::NoExpand("$RUN"));
        seconds.replace_all(&text, "N s").into_owned()
    };
    let text = |value: &Value| plain(value.as_str().unwrap_or_default());
    let mut out = format!("exit_reason: {}\nsummary: {}\n", text(&end["exit_reason"]), text(&end["summary"]));
    let steps = end.get("steps").filter(|s| s.is_array()).unwrap_or(&end["step_endings"]);
    for step in steps.as_array().into_iter().flatten() {
        out.push_str(&format!(
            "step {}: {} | {}\n",
            text(&step["status"]),
            text(&step["title"]),
            text(&step["note"])
        ));
    }
    for (part, value) in end["left"].as_object().into_iter().flatten() {
        match value {
            Value::Array(items) => {
                items.iter().for_each(|item| out.push_str(&format!("left {part}: {}\n", text(item))))
            }
            other => {
                out.push_str(&format!("left {part}: {}\n", other.as_str().map_or(other.to_string(), plain)))
            }
        }
    }
    for file in end["files_changed"].as_array().into_iter().flatten() {
        let path =
            url::Url::parse(file.as_str().unwrap_or_default()).ok().and_then(|u| u.to_file_path().ok());
        out.push_str(&format!(
            "changed: {}\n",
            path.map_or_else(|| text(file), |p| plain(&p.display().to_string()))
        ));
    }
    out
}

/// The messages of the diagnostics from `source`.
fn messages(diagnostics: &Value, source: &str) -> Vec<String> {
    diagnostics
        .as_array()
        .expect("diagnostics")
        .iter()
        .filter(|d| d["source"] == source)
        .map(|d| d["message"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// `tokamak run "make total safe" --yes --format json` in `root`, headless.
fn headless(user: &UserDirs, root: &Path, model: &ModelServer) -> support::cli::Tokamak {
    let root_arg = root.display().to_string();
    let mut command =
        user.command(&["run", "make total safe", "--yes", "--format", "json", "--root", &root_arg]);
    command
        .current_dir(root)
        .env("TOKAMAK_LLM_URL", model.url())
        .env("TOKAMAK_MODEL", "scripted")
        .envs(support::tool_env())
        .stdin(Stdio::null());
    command
}

fn edit_call(search: &str, replace: &str) -> Scripted {
    call("edit", json!({"path": "app.py", "blocks": block(search, replace)}))
}

/// One edit rejected by the user, the next refused by the mode the rejection put the run in,
/// nothing changed: the step is `rejected`, never done, and the run says so.
#[test]
fn a_run_whose_every_change_was_rejected_or_refused_is_not_done() {
    let dir = project("");
    let root = dir.path();
    let model = ModelServer::start(vec![
        openai_chat("1. Make total safe\n"),
        edit_call("    return sum(items)\n", "    return sum(items or [])\n"),
        edit_call("def total(items):\n", "def total(items=()):\n"),
        call("done", json!({"summary": "total is safe"})),
    ]);
    let (mut client, uri) = editor(root, options(&model));
    let run_id = client.start_run("make total safe");
    let asked = client.approval_question();
    let rejected = client.execute("tokamak.reject", json!({"id": asked["id"], "reason": "not like that"}));
    assert_eq!(rejected["result"]["answer"], "rejected", "{rejected}");
    let end = client.run_finished(&run_id);
    assert_eq!(end["exit_reason"], "failed", "{end:#}");
    let summary = end["summary"].as_str().unwrap();
    assert!(
        summary.starts_with("make total safe: 0 of 1 step(s) done; step 1 (Make total safe) rejected"),
        "{summary}"
    );
    assert!(!summary.contains("all 1 step(s) done"), "{summary}");
    assert_eq!(end["steps"][0]["status"], "rejected", "{end:#}");
    let note = end["steps"][0]["note"].as_str().unwrap();
    assert!(note.contains("app.py rejected (The user rejected this (edit app.py): not like that"), "{note}");
    assert!(end["left"]["rejected"][0].as_str().unwrap().starts_with("app.py rejected"), "{end:#}");
    assert_eq!(last_plan(&client), [("rejected".to_string(), "✗".to_string())]);
    assert_eq!(client.text(&uri), APP, "nothing changed");
    assert!(end["files_changed"].as_array().unwrap().is_empty(), "{end:#}");
    expect![[r#"
        exit_reason: failed
        summary: make total safe: 0 of 1 step(s) done; step 1 (Make total safe) rejected: nothing changed: app.py rejected (The user rejected this (edit app.py): not like that.); app.py refused (the context navigation mode does not allow changing files (edit)).
        step rejected: Make total safe | nothing changed: app.py rejected (The user rejected this (edit app.py): not like that.); app.py refused (the context navigation mode does not allow changing files (edit))
        left refused: app.py refused (the context navigation mode does not allow changing files (edit))
        left rejected: app.py rejected (The user rejected this (edit app.py): not like that.)
    "#]].assert_eq(&ending(&end, root));
    client.shutdown();
}

/// The user types on the lines a waiting change touches, then approves it: the change does
/// not land (their typing wins), the editor says so at once, the model is told, and the step
/// is not done with it missing.
#[test]
fn an_approved_change_overtaken_by_typing_is_told_and_the_step_is_not_done() {
    let dir = project("");
    let root = dir.path();
    let model = ModelServer::start(vec![
        openai_chat("1. Make total safe\n"),
        edit_call("    return sum(items)\n", "    return sum(items or [])\n"),
        call("done", json!({"summary": "total is safe"})),
    ]);
    let (mut client, uri) = editor(root, options(&model));
    let run_id = client.start_run("make total safe");
    let asked = client.approval_question();
    // typed on the very line the change replaces, while the question waits
    client.type_now(&uri, Box::new(|text| text.replace("return sum(items)", "return sum(items, 0)")));
    let approved = client.execute("tokamak.approve", json!({"id": asked["id"]}));
    assert_eq!(approved["result"]["answer"], "approved", "{approved}");
    let told = client.wait_for("the notice", |m| {
        m["method"] == "window/showMessage"
            && m["params"]["message"].as_str().unwrap_or_default().contains("was not applied")
    });
    let message = told["params"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("Tokamak: the change to app.py was not applied: app.py was not changed"),
        "{message}"
    );
    assert_eq!(told["params"]["type"], 2, "a warning: {told}");
    let end = client.run_finished(&run_id);
    assert_eq!(end["exit_reason"], "failed", "{end:#}");
    assert_eq!(end["steps"][0]["status"], "not_applied", "{end:#}");
    assert!(
        end["left"]["not_applied"][0].as_str().unwrap().starts_with("app.py approved but not applied"),
        "{end:#}"
    );
    let summary = end["summary"].as_str().unwrap();
    assert!(summary.contains("0 of 1 step(s) done; step 1 (Make total safe) not applied"), "{summary}");
    assert_eq!(last_plan(&client), [("not_applied".to_string(), "✗".to_string())]);
    expect![[r#"
        exit_reason: failed
        summary: make total safe: 0 of 1 step(s) done; step 1 (Make total safe) not applied: nothing changed: app.py approved but not applied (app.py was not changed: you edited the lines the change touches, so it was not applied (your typing wins)).
        step not_applied: Make total safe | nothing changed: app.py approved but not applied (app.py was not changed: you edited the lines the change touches, so it was not applied (your typing wins))
        left not_applied: app.py approved but not applied (app.py was not changed: you edited the lines the change touches, so it was not applied (your typing wins))
    "#]].assert_eq(&ending(&end, root));
    assert_eq!(
        client.text(&uri),
        "def total(items):\n    return sum(items, 0)\n",
        "the user's typing is kept"
    );
    let results = support::replies::told(&model).join("\n");
    assert!(results.contains("app.py was not changed"), "the model is told: {results}");
    client.shutdown();
}

/// `tokamak run --yes` where a definition is renamed on disk between the model's read and its
/// edit: the major drift's "go on?" is answered yes, the edit no longer applies exactly, and
/// the step ends `not_applied` — not done with nothing changed. The exit status is 1.
#[test]
fn a_major_drift_answered_go_on_whose_edit_did_not_apply_is_not_done() {
    let dir = project("");
    let root = dir.path();
    let user = UserDirs::trusting(&[root]);
    let model = ModelServer::start(vec![
        openai_chat("1. Make total safe\n"),
        call("read", json!({"path": "app.py"})),
        Scripted::Delayed(
            Duration::from_millis(1500),
            Box::new(edit_call(
                "def total(items):\n    return sum(items)\n",
                "def total(items):\n    return sum(items or [])\n",
            )),
        ),
        call("done", json!({"summary": "total is safe"})),
    ]);
    let child = headless(&user, root, &model).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let started = Instant::now();
    while model.requests().len() < 3 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the model was asked {}",
            model.requests().len()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let theirs = "def sum_all(items):\n    return sum(items)\n";
    std::fs::write(root.join("app.py"), theirs).unwrap();
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let result: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|_| panic!("JSON: {stderr}"));
    assert_eq!(output.status.code(), Some(1), "{result:#}\n{stderr}");
    assert_eq!(result["exit_reason"], "failed", "{result:#}");
    assert_eq!(result["step_endings"][0]["status"], "not_applied", "{result:#}");
    assert!(
        result["left"]["not_applied"][0].as_str().unwrap().contains("app.py approved but not applied"),
        "{result:#}"
    );
    assert!(result["left"]["drift"][0].as_str().unwrap().starts_with("app.py: major drift"), "{result:#}");
    expect![[r#"
        exit_reason: failed
        summary: make total safe: 0 of 1 step(s) done; step 1 (Make total safe) not applied: nothing changed: app.py approved but not applied (app.py was not edited: it changed since you read it (major drift: removed total; added sum_all), so an edit is made only where each SEARCH is found exactly as it is now.); drift: app.py: major drift (removed total; added sum_all); the user was asked whether to go on.
        step not_applied: Make total safe | nothing changed: app.py approved but not applied (app.py was not edited: it changed since you read it (major drift: removed total; added sum_all), so an edit is made only where each SEARCH is found exactly as it is now.)
        left not_applied: app.py approved but not applied (app.py was not edited: it changed since you read it (major drift: removed total; added sum_all), so an edit is made only where each SEARCH is found exactly as it is now.)
        left drift: app.py: major drift (removed total; added sum_all); the user was asked whether to go on
    "#]].assert_eq(&ending(&result, root));
    assert_eq!(std::fs::read_to_string(root.join("app.py")).unwrap(), theirs, "their change is kept");
}

/// A test command whose runner is not installed: the step's change is made, the tests are
/// told as not run (with why), never sent to the model as failing code, and the run ends
/// `untested`, exit status 1.
#[test]
fn tests_that_cannot_run_end_the_run_untested_without_a_model_call() {
    let python = support::tools_dir().join("venv/bin/python").display().to_string();
    let toml = format!("[test]\ncommand = [{python:?}, \"-m\", \"no_such_test_runner_xyz\"]\n");
    let dir = project(&toml);
    let root = dir.path();
    let user = UserDirs::trusting(&[root]);
    let model = ModelServer::start(vec![
        openai_chat("1. Make total safe\n"),
        edit_call("    return sum(items)\n", "    return sum(items or [])\n"),
        call("done", json!({"summary": "total is safe"})),
    ]);
    let output = headless(&user, root, &model).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let result: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|_| panic!("JSON: {stderr}"));
    assert_eq!(result["exit_reason"], "untested", "{result:#}\n{stderr}");
    assert_eq!(output.status.code(), Some(1));
    let why = result["left"]["tests_not_run"].as_str().unwrap();
    assert!(why.contains("no_such_test_runner_xyz") && why.contains("No module named"), "{why}");
    assert_eq!(result["step_endings"][0]["status"], "done", "the change itself landed: {result:#}");
    let note = result["step_endings"][0]["note"].as_str().unwrap();
    assert!(note.contains("the tests did not run"), "{note}");
    assert!(result["summary"].as_str().unwrap().contains("the tests could not run"), "{result:#}");
    expect![[r#"
        exit_reason: untested
        summary: make total safe: all 1 step(s) done; the tests could not run: the test runner `no_such_test_runner_xyz` is not installed for `$TOOLS/venv/bin/python`: $TOOLS/venv/bin/python: No module named no_such_test_runner_xyz. Changed: app.py. Undo with tokamak rollback $RUN.
        step done: Make total safe | total is safe (the tests did not run: the test runner `no_such_test_runner_xyz` is not installed for `$TOOLS/venv/bin/python`: $TOOLS/venv/bin/python: No module named no_such_test_runner_xyz)
        left tests_not_run: the test runner `no_such_test_runner_xyz` is not installed for `$TOOLS/venv/bin/python`: $TOOLS/venv/bin/python: No module named no_such_test_runner_xyz
        changed: $ROOT/app.py
    "#]].assert_eq(&ending(&result, root));
    assert_eq!(model.requests().len(), 3, "no model call spent on tests that cannot run");
    let asked: String = model.requests().iter().map(|r| r.body.to_string()).collect();
    assert!(!asked.contains("Make them pass"), "{asked}");
    assert_eq!(
        std::fs::read_to_string(root.join("app.py")).unwrap(),
        "def total(items):\n    return sum(items or [])\n"
    );
}

/// Seed 000's scenario with pyright, both files open in the editor and left unsaved: pyright
/// checks the test file against the buffer holding the new method, not the disk without it —
/// no repair round, no model call beyond the scenario's, the run done.
fn scenario_across_buffers(with_bwrap: bool) {
    if !support::require_tools(&["pyright", "pytest"]) {
        return;
    }
    let dir = PYTHON.project();
    let root = dir.path();
    let model = ModelServer::start(PYTHON.script());
    let (_bin, path) = support::path_without(&["bwrap"]);
    let env = if with_bwrap { Vec::new() } else { vec![("PATH".to_string(), path)] };
    let mut options = PYTHON.options(&model);
    options["checkers"] = json!({"enable": ["pyright"]});
    let mut client = LspClient::editor_for_project_env(root, options, &env);
    let source = client.open_file(&root.join(PYTHON.source), "python");
    let tests = client.open_file(&root.join(PYTHON.tests), "python");
    let clock = Instant::now();
    let started = client.execute("tokamak.run", json!({"goal": GOAL}));
    let run_id = started["result"]["run_id"].as_str().unwrap().to_string();
    let end = client.run_finished(&run_id);
    eprintln!("scenario across buffers with pyright (bwrap: {with_bwrap}): {:?}", clock.elapsed());
    assert_eq!(end["exit_reason"], "done", "{end:#}\n{}", client.stderr());
    assert!(end.get("left").is_none(), "nothing is left: {end:#}");
    assert_eq!(model.requests().len(), PYTHON.script().len(), "no repair round: {end:#}");
    // both edits sit in the buffers; the disk has neither
    assert!(client.text(&source).contains("def validate_email"));
    assert!(client.text(&tests).contains("def test_validate_email"));
    assert!(!std::fs::read_to_string(root.join(PYTHON.tests)).unwrap().contains("validate_email"));
    // and what pyright says of the test file, as the user has it, is nothing
    let diagnostics = client.observer_diagnostics(&tests, true);
    let found = messages(&diagnostics["diagnostics"], "pyright");
    assert!(found.is_empty(), "pyright sees the buffers: {found:?}");
    client.shutdown();
}

#[test]
fn the_scenario_with_pyright_judges_the_unsaved_buffers_in_the_sandbox() {
    if !support::require_tools(&["bwrap"]) {
        return;
    }
    scenario_across_buffers(true);
}

#[test]
fn the_scenario_with_pyright_judges_the_unsaved_buffers_without_bubblewrap() {
    scenario_across_buffers(false);
}

/// Seed 000's Python project whose test file calls the method its source lacks, the test file
/// open with pyright on: pyright's complaint about `validate_email` is there. The client and
/// the test file's URI.
fn test_file_missing_the_method(root: &std::path::Path) -> (LspClient, String) {
    let user_test = "from user import User\n\n\ndef test_validate_email():\n    assert User(\"ada\", \"ada@example.com\").validate_email()\n";
    std::fs::write(root.join(PYTHON.tests), user_test).unwrap();
    let mut client = LspClient::editor_for_project(root, json!({"checkers": {"enable": ["pyright"]}}));
    let tests = client.open_file(&root.join(PYTHON.tests), "python");
    let before = client.observer_diagnostics(&tests, true);
    let found = messages(&before["diagnostics"], "pyright");
    assert!(found.iter().any(|m| m.contains("validate_email")), "the method is missing: {found:?}");
    (client, tests)
}

/// A checker that reads other files answers again after one of them changes: pyright's
/// "cannot access attribute" on the open test file goes once the open source file's buffer
/// gains the method, though the test file itself did not change.
#[test]
fn a_change_in_one_buffer_is_seen_by_the_checks_of_another() {
    if !support::require_tools(&["pyright"]) {
        return;
    }
    let dir = PYTHON.project();
    let root = dir.path();
    let (mut client, tests) = test_file_missing_the_method(root);
    let source = client.open_file(&root.join(PYTHON.source), "python");
    // the method is added in the source's buffer, unsaved
    let text = client.text(&source).replace(PYTHON.method.0, PYTHON.method.1);
    client.change(&source, 2, json!([{"text": text}]));
    let after = client.observer_diagnostics(&tests, true);
    let found = messages(&after["diagnostics"], "pyright");
    assert!(found.is_empty(), "checked again against the new buffer: {found:?}");
    client.shutdown();
}

/// The same when another program writes the source on disk (the source not open, the editor
/// watching no files): Tokamak's own watcher sees it and the open test file's pyright is run
/// again, its complaint gone without a keystroke in it.
#[test]
fn a_file_another_program_writes_is_seen_by_the_checks_of_an_open_one() {
    if !support::require_tools(&["pyright"]) {
        return;
    }
    let dir = PYTHON.project();
    let root = dir.path();
    let (mut client, tests) = test_file_missing_the_method(root);
    let source = std::fs::read_to_string(root.join(PYTHON.source)).unwrap();
    std::fs::write(root.join(PYTHON.source), source.replace(PYTHON.method.0, PYTHON.method.1)).unwrap();
    let deadline = std::time::Instant::now() + support::TIMEOUT;
    loop {
        let now = client.observer_diagnostics(&tests, false);
        let found = messages(&now["diagnostics"], "pyright");
        if found.is_empty() {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "never checked again: {found:?}");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    client.shutdown();
}

/// A fix whose first attempt resolves the problem while the editor still forwards its own
/// pyright's diagnostic of the old text under the new version (as VS Code does until Pylance
/// answers again): Tokamak's own pyright answered on exactly the new text, so the stale
/// forward never reaches the loop — one model call, ending clean.
#[test]
fn a_stale_forward_of_the_old_text_never_costs_a_model_call() {
    if !support::require_tools(&["pyright"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let broken = "def greet(users):\n    return \"hi \" + user\n";
    std::fs::write(root.join("greet.py"), broken).unwrap();
    let reply = "greet.py\n<<<<<<< SEARCH\n    return \"hi \" + user\n=======\n    return \"hi \" + users\n>>>>>>> REPLACE\n";
    let model = ModelServer::start(vec![openai_chat(reply), openai_chat(reply)]);
    let options = json!({
        "checkers": {"enable": ["pyright"]},
        "model": {"base_url": model.url(), "model": "scripted", "max_retries": 0},
    });
    let mut client = LspClient::editor_for_project(root, options);
    let uri = client.open_file(&root.join("greet.py"), "python");
    client.diagnostics_from(&uri, "pyright");
    let stale = json!({
        "range": {"start": {"line": 1, "character": 18}, "end": {"line": 1, "character": 22}},
        "severity": 1, "source": "Pylance", "message": "\"user\" is not defined",
    });
    client.notify("tokamak/clientDiagnostics", json!({"uri": uri, "version": 1, "diagnostics": [stale]}));
    let started = client.execute("tokamak.fix", json!({"uri": uri}));
    assert!(started.get("error").is_none(), "{started}");
    client.wait_for("the fix's edit", |m| m["method"] == "workspace/applyEdit");
    // the editor's list, unchanged since the old text, sent with the new version
    client.notify("tokamak/clientDiagnostics", json!({"uri": uri, "version": 2, "diagnostics": [stale]}));
    let end = client.wait_for_notification("tokamak/runFinished")["params"].clone();
    assert_eq!(end["exit_reason"], "clean", "{end:#}");
    assert_eq!(model.requests().len(), 1, "one model call: {end:#}");
    assert_eq!(client.text(&uri), "def greet(users):\n    return \"hi \" + users\n");
    client.shutdown();
}

/// A checker that does not answer on the fixed text within `fix.settle_timeout_ms`: the fix is
/// in, but the ending does not call the file clean — it names the checker that did not answer.
#[test]
fn a_checker_that_did_not_answer_on_the_fixed_text_keeps_the_ending_from_clean() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let broken = "def mean(values):\n    total = sum(values))\n    return total / len(values)\n";
    std::fs::write(root.join("mean.py"), broken).unwrap();
    let reply = "mean.py\n<<<<<<< SEARCH\n    total = sum(values))\n=======\n    total = sum(values)\n>>>>>>> REPLACE\n";
    let model = ModelServer::start(vec![openai_chat(reply)]);
    let slow = json!({"command": "sh", "args": ["-c", "sleep 5"], "files": ["*.py"], "errorformat": "%l:%m", "timeout_ms": 20000});
    let options = json!({
        "checkers": {"enable": ["slow"], "slow": slow},
        "fix": {"settle_timeout_ms": 400},
        "model": {"base_url": model.url(), "model": "scripted", "max_retries": 0},
    });
    let mut client = LspClient::editor_for_project(root, options);
    let uri = client.open_file(&root.join("mean.py"), "python");
    let started = client.execute("tokamak.fix", json!({"uri": uri}));
    assert!(started.get("error").is_none(), "{started}");
    let end = client.wait_for_notification("tokamak/runFinished")["params"].clone();
    assert_eq!(end["exit_reason"], "unchecked", "{end:#}");
    let summary = end["summary"].as_str().unwrap();
    assert!(summary.contains("slow did not answer on the file's text in time"), "{summary}");
    assert_eq!(end["left"]["unanswered"], json!(["slow"]), "{end:#}");
    assert!(client.text(&uri).contains("total = sum(values)\n"), "the fix itself landed");
    client.shutdown();
}

/// Seed 002's wrap-up: a run stopped by its token limit asks its model once what it did and
/// what is left; the answer is the ending's, marked as the model's words, its tokens counted.
/// With no budget kept for it, the ending says there is none and the model is not asked.
#[test]
fn a_run_stopped_by_its_token_limit_ends_with_the_models_wrap_up() {
    let wrapped = "I read app.py twice and changed nothing; total() still needs its guard for None.";
    let script = || {
        vec![
            openai_chat("1. Make total safe\n"),
            // a tool call's reply costs 52 tokens: the step's room after the plan's 28
            call("read", json!({"path": "app.py"})),
            openai_chat(wrapped),
        ]
    };
    let run = |toml: &str, model: &ModelServer| -> Value {
        let dir = project("");
        let user = UserDirs::new();
        user.write_settings(toml);
        let output = headless(&user, dir.path(), model).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{stderr}");
        serde_json::from_slice(&output.stdout).unwrap_or_else(|_| panic!("JSON: {stderr}"))
    };

    let model = ModelServer::start(script());
    let result = run("[limits]\ntokens = 80\n", &model);
    assert_eq!(result["exit_reason"], "token_limit", "{result:#}");
    let summary = result["summary"].as_str().unwrap();
    assert!(summary.starts_with("stopped after spending"), "Tokamak's own facts first: {summary}");
    assert!(summary.contains(&format!("The model's wrap-up, in its words: \"{wrapped}\"")), "{summary}");
    assert_eq!(result["wrap_up"], json!({"kind": "said", "text": wrapped, "tokens": 28}), "{result:#}");
    let total = |result: &Value| {
        result["tokens"]["prompt"].as_u64().unwrap() + result["tokens"]["completion"].as_u64().unwrap()
    };
    let with_wrap_up = total(&result);
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    let asked = requests[2].body["messages"].to_string();
    eprintln!(
        "the wrap-up's request: {} bytes of messages (~{} tokens), max_tokens {}",
        asked.len(),
        asked.len() / 4,
        requests[2].body["max_tokens"]
    );
    assert!(
        asked.contains("stopped before its end") && asked.contains("Why it stopped: stopped after spending"),
        "{asked}"
    );
    assert!(
        asked.contains("⚡ 1. Make total safe") || asked.contains("1. Make total safe"),
        "the plan: {asked}"
    );
    assert!(requests[2].body["max_tokens"].as_u64().is_some_and(|room| room <= 600), "within its budget");

    let model = ModelServer::start(script());
    let result = run("[limits]\ntokens = 80\nwrap_up_tokens = 0\n", &model);
    assert_eq!(result["exit_reason"], "token_limit");
    assert!(
        result["summary"]
            .as_str()
            .unwrap()
            .contains("No wrap-up from the model: limits.wrap_up_tokens is 0."),
        "{result:#}"
    );
    assert_eq!(result["wrap_up"]["kind"], "none");
    assert_eq!(with_wrap_up, total(&result) + 28, "the wrap-up's tokens are the run's");
    assert_eq!(model.requests().len(), 2, "the model is not asked");
}

/// The reach of a change checked (seed 000's impact check): a step changes `price`'s
/// signature and says it is done; pyright finds the caller in another file broken (on the
/// workspace as the run left it, against the same file beside the old signature), the modes go
/// debug → impact → implementation (`additional_fixes`), the caller is fixed within the step,
/// and the step's note names it.
#[test]
fn a_signature_change_that_breaks_a_caller_elsewhere_is_fixed_within_the_step() {
    if !support::require_tools(&["pyright"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir(root.join(".git")).unwrap();
    std::fs::write(root.join("pricing.py"), "def price(amount: int) -> int:\n    return amount * 2\n")
        .unwrap();
    let cart = "from pricing import price\n\n\ndef total(items: list[int]) -> int:\n    return sum(price(i) for i in items)\n";
    std::fs::write(root.join("cart.py"), cart).unwrap();
    std::fs::write(root.join("tokamak.toml"), "[checkers]\nenable = [\"pyright\"]\n").unwrap();
    let user = UserDirs::trusting(&[root]);
    let model = ModelServer::start(vec![
        openai_chat("1. Give price a currency argument\n"),
        call(
            "edit",
            json!({"path": "pricing.py", "blocks": block("def price(amount: int) -> int:\n", "def price(amount: int, currency: str) -> int:\n")}),
        ),
        call("done", json!({"summary": "price takes a currency"})),
        // the fix loop on cart.py
        openai_chat(
            "cart.py\n<<<<<<< SEARCH\n    return sum(price(i) for i in items)\n=======\n    return sum(price(i, \"KRW\") for i in items)\n>>>>>>> REPLACE\n",
        ),
    ]);
    let output = user
        .command(&[
            "run",
            "Give price a currency argument",
            "--yes",
            "--format",
            "json",
            "--root",
            &root.display().to_string(),
        ])
        .env("TOKAMAK_LLM_URL", model.url())
        .env("TOKAMAK_MODEL", "scripted")
        .envs(support::tool_env())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let result: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|_| panic!("JSON: {stderr}"));
    assert_eq!(result["exit_reason"], "done", "{result:#}\n{stderr}");
    assert_eq!(
        std::fs::read_to_string(root.join("cart.py")).unwrap(),
        cart.replace("price(i)", "price(i, \"KRW\")")
    );
    let note = result["step_endings"][0]["note"].as_str().unwrap();
    assert!(note.contains("the change broke cart.py, which it reaches; fixed there too"), "{note}");
    let changed: Vec<&str> =
        result["files_changed"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(
        changed.iter().any(|f| f.ends_with("cart.py")) && changed.iter().any(|f| f.ends_with("pricing.py")),
        "{changed:?}"
    );
    // the modes seed 000 names, in order
    let trail = support::mode_trail(user.cache.path());
    let after: Vec<&str> =
        trail.iter().map(String::as_str).skip_while(|t| *t != "qa -error_occurred-> debug").collect();
    assert_eq!(
        after,
        [
            "qa -error_occurred-> debug",
            "debug -impact_check_needed-> impact",
            "impact -additional_fixes-> implementation",
            "implementation -code_complete-> qa",
            "qa -approved-> idle"
        ],
        "{trail:?}"
    );
    let reach = support::audit_events(user.cache.path(), "reach");
    assert_eq!(reach[0]["files"], json!(["cart.py"]), "{reach:?}");
}
