//! The fix loop over the real stdio LSP connection: the test client acts as the editor
//! (applying `workspace/applyEdit` and reporting `didChange`), the model is the scripted
//! server on 127.0.0.1.

use crate::support;

use std::time::Duration;

use serde_json::{Value, json};
use support::model_server::{ModelServer, Scripted, openai_chat};
use support::{LspClient, file_uri};

const BROKEN: &str = "def mean(values):\n    total = sum(values))\n    return total / len(values)\n";
const FIXED: &str = "def mean(values):\n    total = sum(values)\n    return total / len(values)\n";

/// The reply that fixes [`BROKEN`], with prose and a fence around it.
fn good_reply() -> String {
    "The call to `sum` is closed twice.\n\n```python\nmean.py\n<<<<<<< SEARCH\n    total = sum(values))\n=======\n    total = sum(values)\n>>>>>>> REPLACE\n```\n\nThat removes the extra one.".to_string()
}

fn options(model: &ModelServer, fix: Value) -> Value {
    json!({
        "checkers": {"enable": []},
        "model": {"base_url": model.url(), "model": "scripted", "max_retries": 0, "timeout_ms": 60000},
        "fix": fix,
    })
}

struct Project {
    dir: tempfile::TempDir,
    client: LspClient,
    uri: String,
}

/// A project with `mean.py` holding `text`, opened by an editor-like client.
fn project(model: &ModelServer, fix: Value, text: &str) -> Project {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("mean.py");
    std::fs::write(&path, text).expect("write");
    let mut client = LspClient::editor_for_project(dir.path(), options(model, fix));
    let uri = client.open_file(&path, "python");
    client.diagnostics(&uri);
    Project { dir, client, uri }
}

fn start_fix(client: &mut LspClient, arguments: Value) -> Value {
    client.request("workspace/executeCommand", json!({"command": "tokamak.fix", "arguments": [arguments]}))
}

fn run_finished(client: &mut LspClient) -> Value {
    client.wait_for_notification("tokamak/runFinished")["params"].clone()
}

fn prompts(model: &ModelServer) -> Vec<String> {
    model.requests().iter().map(|r| r.body.to_string()).collect()
}

trait Body {
    fn prompt(&self) -> String;
}

impl Body for support::model_server::Recorded {
    fn prompt(&self) -> String {
        self.body["messages"].as_array().map_or_else(String::new, |m| {
            m.iter().filter_map(|m| m["content"].as_str()).collect::<Vec<_>>().join("\n")
        })
    }
}

#[test]
fn a_syntax_error_is_fixed_in_one_attempt() {
    let model = ModelServer::start(vec![openai_chat(&good_reply())]);
    let Project { dir: _dir, mut client, uri } = project(&model, json!({}), BROKEN);
    let started = start_fix(&mut client, json!({"uri": uri}));
    let run_id = started["result"]["run_id"].as_str().expect("a run id").to_string();
    let finished = run_finished(&mut client);
    assert_eq!(finished["run_id"], run_id);
    assert_eq!(finished["exit_reason"], "clean", "{finished}");
    assert_eq!(finished["attempts"], 1);
    assert_eq!(finished["files_changed"], json!([uri]));
    assert_eq!(finished["tokens"], json!({"prompt": 21, "completion": 7, "cached": 0}));
    assert_eq!(client.text(&uri), FIXED);

    // the edit was versioned and touched only the broken line
    let edits = &client.editor().edits;
    assert_eq!(edits.len(), 1);
    let change = &edits[0]["edit"]["documentChanges"][0];
    assert_eq!(change["textDocument"]["version"], 1);
    for edit in change["edits"].as_array().unwrap() {
        assert_eq!(edit["range"]["start"]["line"], 1, "{edit}");
        assert_eq!(edit["range"]["end"]["line"], 1, "{edit}");
    }

    // the prompt: the error, the function, no more
    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    let prompt = requests[0].prompt();
    assert!(prompt.contains("mean.py:2:"), "{prompt}");
    assert!(prompt.contains("unexpected \")\""), "{prompt}");
    assert!(prompt.contains("def mean(values):"), "{prompt}");

    // progress began and ended under the run's token, and the user was told
    let progress = client.seen(|m| m["method"] == "$/progress" && m["params"]["token"] == run_id);
    assert_eq!(progress.first().map(|m| m["params"]["value"]["kind"].clone()), Some(json!("begin")));
    assert_eq!(progress.last().map(|m| m["params"]["value"]["kind"].clone()), Some(json!("end")));
    assert_eq!(progress[0]["params"]["value"]["cancellable"], true);
    let shown = client.wait_for_notification("window/showMessage");
    assert!(shown["params"]["message"].as_str().unwrap().contains(": fixed "), "{shown}");

    // and the fixed version's diagnostics are empty
    let status = client.observer_diagnostics(&uri, true);
    assert_eq!(status["diagnostics"], json!([]), "{status}");
}

#[test]
fn a_search_that_matches_nothing_goes_back_to_the_model() {
    let wrong = "mean.py\n<<<<<<< SEARCH\n    subtotal = compute(numbers, weights))\n=======\n    subtotal = compute(numbers, weights)\n>>>>>>> REPLACE\n";
    let model = ModelServer::start(vec![openai_chat(wrong), openai_chat(&good_reply())]);
    let Project { dir: _dir, mut client, uri } = project(&model, json!({}), BROKEN);
    start_fix(&mut client, json!({"uri": uri}));
    let finished = run_finished(&mut client);
    assert_eq!(finished["exit_reason"], "clean", "{finished}");
    assert_eq!(finished["attempts"], 2);
    assert_eq!(client.text(&uri), FIXED);
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let second = requests[1].prompt();
    assert!(second.contains("Attempt 1: block 1:"), "{second}");
    assert!(second.contains("closest"), "the reason names the closest lines: {second}");
    assert_eq!(client.editor().edits.len(), 1, "nothing was applied for the first reply");
}

#[test]
fn the_same_error_after_a_fix_stops_the_run() {
    // the "fix" adds a comment and leaves the error
    let useless = "mean.py\n<<<<<<< SEARCH\ndef mean(values):\n=======\ndef mean(values):  # average\n>>>>>>> REPLACE\n";
    let useless_again = "mean.py\n<<<<<<< SEARCH\ndef mean(values):  # average\n=======\ndef mean(values):  # the average\n>>>>>>> REPLACE\n";
    let model = ModelServer::start(vec![
        openai_chat(useless),
        openai_chat(useless_again),
        openai_chat(&good_reply()),
    ]);
    let Project { dir: _dir, mut client, uri } = project(&model, json!({"max_attempts": 5}), BROKEN);
    start_fix(&mut client, json!({"uri": uri}));
    let finished = run_finished(&mut client);
    assert_eq!(finished["exit_reason"], "repeated_error", "{finished}");
    // one more try with the feedback, then no more tokens are burnt on a loop: only the
    // model's wrap-up is asked
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    assert!(
        requests[2]
            .prompt()
            .contains("Why it stopped: mean.py: stopped: after attempt 2 the same error is back"),
        "{}",
        requests[2].prompt()
    );
    assert_eq!(finished["wrap_up"]["kind"], "said", "{finished}");
    assert!(
        requests[1].prompt().contains("your edit was applied (line 1 changed), but problems remain"),
        "{}",
        requests[1].prompt()
    );
    assert!(client.text(&uri).contains("# the average"));
}

#[test]
fn max_attempts_ends_a_run_that_never_applies() {
    let wrong = "<<<<<<< SEARCH\nprint('nothing like this')\n=======\nprint('x')\n>>>>>>> REPLACE\n";
    let model = ModelServer::start(vec![openai_chat(wrong), openai_chat(wrong), openai_chat(wrong)]);
    let Project { dir: _dir, mut client, uri } = project(&model, json!({"max_attempts": 2}), BROKEN);
    start_fix(&mut client, json!({"uri": uri}));
    let finished = run_finished(&mut client);
    assert_eq!(finished["exit_reason"], "max_attempts", "{finished}");
    assert_eq!(finished["attempts"], 2);
    assert_eq!(finished["files_changed"], json!([]));
    // two attempts, then the wrap-up, quoted in the ending as the model's words
    assert_eq!(model.requests().len(), 3);
    assert!(
        finished["summary"].as_str().unwrap().contains("The model's wrap-up, in its words: \""),
        "{finished}"
    );
    assert_eq!(client.text(&uri), BROKEN);
}

#[test]
fn several_blocks_among_prose_and_fences_are_applied_together() {
    let text = "def area(w, h):\n    return (w * h))\n\n\ndef perimeter(w, h):\n    return 2 * (w + h))\n";
    let reply = "Two parentheses close nothing.\n\nFirst:\n```python\n<<<<<<< SEARCH\n    return (w * h))\n=======\n    return (w * h)\n>>>>>>> REPLACE\n```\nAnd then the second one:\n```\nmean.py\n<<<<<<< SEARCH\n    return 2 * (w + h))\n=======\n    return 2 * (w + h)\n>>>>>>> REPLACE\n```\nDone.";
    let model = ModelServer::start(vec![openai_chat(reply)]);
    let Project { dir: _dir, mut client, uri } = project(&model, json!({}), text);
    start_fix(&mut client, json!({"uri": uri}));
    let finished = run_finished(&mut client);
    assert_eq!(finished["exit_reason"], "clean", "{finished}");
    assert_eq!(
        client.text(&uri),
        "def area(w, h):\n    return (w * h)\n\n\ndef perimeter(w, h):\n    return 2 * (w + h)\n"
    );
}

#[test]
fn a_whole_file_reply_becomes_edits_of_the_changed_line_only() {
    let mut text = String::new();
    for i in 0..30 {
        text.push_str(&format!("def f{i}(x):\n    return x + {i}\n\n"));
    }
    let broken = text.replace("return x + 17\n", "return (x + 17))\n");
    let reply = format!("Here is the corrected file:\n\n```python\n{text}```\n");
    let model = ModelServer::start(vec![openai_chat(&reply)]);
    let Project { dir: _dir, mut client, uri } = project(&model, json!({}), &broken);
    start_fix(&mut client, json!({"uri": uri}));
    let finished = run_finished(&mut client);
    assert_eq!(finished["exit_reason"], "clean", "{finished}");
    assert_eq!(client.text(&uri), text);
    let line = broken.lines().position(|l| l.contains("(x + 17))")).unwrap() as u64;
    let edits = client.editor().edits[0]["edit"]["documentChanges"][0]["edits"].as_array().unwrap().clone();
    assert!(!edits.is_empty());
    for edit in &edits {
        assert_eq!(edit["range"]["start"]["line"], line, "{edit}");
        assert_eq!(edit["range"]["end"]["line"], line, "{edit}");
        assert!(edit["newText"].as_str().unwrap().is_empty(), "deletions of characters, not a line: {edit}");
    }
}

#[test]
fn typing_before_the_edit_arrives_is_kept_and_the_fix_still_lands() {
    let model = ModelServer::start(vec![openai_chat(&good_reply())]);
    let Project { dir: _dir, mut client, uri } = project(&model, json!({}), BROKEN);
    // the user adds a line at the top just as the edit arrives: the versioned edit is refused
    // as stale, re-grounded on the new text and sent again
    client.type_before_next_edit(&uri, Box::new(|text| format!("# typed by the user\n{text}")));
    start_fix(&mut client, json!({"uri": uri}));
    let finished = run_finished(&mut client);
    assert_eq!(finished["exit_reason"], "clean", "{finished}");
    assert_eq!(client.text(&uri), format!("# typed by the user\n{FIXED}"));
    let edits = &client.editor().edits;
    assert_eq!(edits.len(), 2, "rejected once, then re-grounded");
    assert_eq!(edits[1]["edit"]["documentChanges"][0]["textDocument"]["version"], 2);
    assert_eq!(edits[1]["edit"]["documentChanges"][0]["edits"][0]["range"]["start"]["line"], 2);
}

#[test]
fn typing_while_the_model_thinks_is_regrounded_before_sending() {
    let model = ModelServer::start(vec![Scripted::Delayed(
        Duration::from_millis(1500),
        Box::new(openai_chat(&good_reply())),
    )]);
    let Project { dir: _dir, mut client, uri } = project(&model, json!({}), BROKEN);
    start_fix(&mut client, json!({"uri": uri}));
    client.wait_for("the model request", |m| {
        m["method"] == "$/progress" && m["params"]["value"]["kind"] == "report"
    });
    client.type_now(&uri, Box::new(|text| format!("{text}\nprint(mean([1, 2]))\n")));
    let finished = run_finished(&mut client);
    assert_eq!(finished["exit_reason"], "clean", "{finished}");
    assert_eq!(client.text(&uri), format!("{FIXED}\nprint(mean([1, 2]))\n"));
    assert_eq!(client.editor().edits.len(), 1, "sent once, already on the new version");
}

#[test]
fn typing_on_the_line_the_fix_changes_wins() {
    let model = ModelServer::start(vec![openai_chat(&good_reply())]);
    let Project { dir: _dir, mut client, uri } = project(&model, json!({}), BROKEN);
    let typed = BROKEN.replace("sum(values))\n", "sum(values, start=0))\n");
    let expected = typed.clone();
    client.type_before_next_edit(&uri, Box::new(move |_| typed));
    start_fix(&mut client, json!({"uri": uri}));
    let finished = run_finished(&mut client);
    assert_eq!(finished["exit_reason"], "failed", "{finished}");
    assert!(finished["summary"].as_str().unwrap().contains("your typing wins"), "{finished}");
    assert_eq!(client.text(&uri), expected, "the user's text is untouched");
}

#[test]
fn cancel_stops_a_run_while_the_model_thinks() {
    let model = ModelServer::start(vec![Scripted::Delayed(
        Duration::from_secs(20),
        Box::new(openai_chat(&good_reply())),
    )]);
    let Project { dir: _dir, mut client, uri } = project(&model, json!({}), BROKEN);
    let run_id =
        start_fix(&mut client, json!({"uri": uri}))["result"]["run_id"].as_str().unwrap().to_string();
    client.wait_for("the model request", |m| {
        m["method"] == "$/progress" && m["params"]["value"]["kind"] == "report"
    });
    let status =
        client.request("workspace/executeCommand", json!({"command": "tokamak.status", "arguments": [{}]}));
    assert_eq!(status["result"]["runs"][0]["run_id"], run_id);

    // a second fix of the same file is refused while the first runs
    let second = start_fix(&mut client, json!({"uri": uri}));
    let error = second["error"]["message"].as_str().expect("an error");
    assert!(error.contains("already fixing") && error.contains(&run_id), "{second}");

    let started = std::time::Instant::now();
    let cancelled = client.request(
        "workspace/executeCommand",
        json!({"command": "tokamak.cancel", "arguments": [{"run_id": run_id}]}),
    );
    assert_eq!(cancelled["result"]["cancelled"], json!([run_id]));
    let finished = run_finished(&mut client);
    assert_eq!(finished["exit_reason"], "cancelled");
    assert!(started.elapsed() < Duration::from_secs(15), "cancel does not wait for the model");
    assert_eq!(client.text(&uri), BROKEN);
    assert!(client.editor().edits.is_empty());
}

#[test]
fn the_progress_cancel_button_stops_a_run() {
    let model = ModelServer::start(vec![Scripted::Delayed(
        Duration::from_secs(20),
        Box::new(openai_chat(&good_reply())),
    )]);
    let Project { dir: _dir, mut client, uri } = project(&model, json!({}), BROKEN);
    let run_id =
        start_fix(&mut client, json!({"uri": uri}))["result"]["run_id"].as_str().unwrap().to_string();
    client.wait_for("progress", |m| m["method"] == "$/progress" && m["params"]["value"]["kind"] == "report");
    client.notify("window/workDoneProgress/cancel", json!({"token": run_id}));
    let finished = run_finished(&mut client);
    assert_eq!(finished["exit_reason"], "cancelled");
    // the file is free again
    let again = start_fix(&mut client, json!({"uri": uri}));
    assert!(again.get("error").is_none(), "{again}");
}

#[test]
fn an_unreachable_model_fails_the_run_with_the_reason() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mean.py");
    std::fs::write(&path, BROKEN).unwrap();
    let options = json!({
        "checkers": {"enable": []},
        "model": {"base_url": format!("http://127.0.0.1:{closed}"), "model": "m", "max_retries": 0},
    });
    let mut client = LspClient::editor_for_project(dir.path(), options);
    let uri = client.open_file(&path, "python");
    start_fix(&mut client, json!({"uri": uri}));
    let finished = run_finished(&mut client);
    assert_eq!(finished["exit_reason"], "failed");
    let summary = finished["summary"].as_str().unwrap();
    assert!(summary.contains("cannot reach the model") && summary.contains(&closed.to_string()), "{summary}");
    assert_eq!(client.text(&uri), BROKEN);
    assert!(client.is_running());
}

#[test]
fn missing_punctuation_is_fixed_without_the_model() {
    let model = ModelServer::start(vec![]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("calc.ts");
    std::fs::write(&path, "const total = add(1, 2;\nconst list = [1, 2;\n").unwrap();
    let mut client = LspClient::editor_for_project(dir.path(), options(&model, json!({})));
    let uri = client.open_file(&path, "typescript");
    start_fix(&mut client, json!({"uri": uri}));
    let finished = run_finished(&mut client);
    assert_eq!(finished["exit_reason"], "clean", "{finished}");
    assert_eq!(finished["deterministic_fixes"], 2);
    assert_eq!(finished["attempts"], 0);
    assert_eq!(client.text(&uri), "const total = add(1, 2);\nconst list = [1, 2];\n");
    assert!(model.requests().is_empty(), "the model was not asked");
}

#[test]
fn code_actions_offer_a_fix_for_any_diagnostic_and_fix_all_for_the_file() {
    let model = ModelServer::start(vec![openai_chat(&good_reply())]);
    let Project { dir: _dir, mut client, uri } = project(&model, json!({}), BROKEN);
    // a diagnostic from another language server the editor runs
    let foreign = json!({
        "range": support::range((1, 12), (1, 15)), "severity": 1, "source": "Pylance",
        "message": "\"(\" was not closed",
    });
    let response = client.request(
        "textDocument/codeAction",
        json!({"textDocument": {"uri": uri}, "range": support::range((1, 12), (1, 15)), "context": {"diagnostics": [foreign]}}),
    );
    let actions = response["result"].as_array().expect("actions").clone();
    let quick = actions.iter().find(|a| a["kind"] == "quickfix").expect("a quickfix");
    assert!(quick["title"].as_str().unwrap().starts_with("Fix with Tokamak"), "{quick}");
    assert_eq!(quick["command"]["command"], "tokamak.fix");
    assert_eq!(quick["command"]["arguments"][0]["diagnostics"][0]["source"], "Pylance");
    assert!(actions.iter().any(|a| a["kind"] == "source.fixAll.tokamak"));

    // asked for by kind only the fix-all comes back
    let only = client.request(
        "textDocument/codeAction",
        json!({"textDocument": {"uri": uri}, "range": support::range((0, 0), (0, 0)), "context": {"diagnostics": [], "only": ["source.fixAll"]}}),
    );
    let kinds: Vec<Value> = only["result"].as_array().unwrap().iter().map(|a| a["kind"].clone()).collect();
    assert_eq!(kinds, vec![json!("source.fixAll.tokamak")]);

    // running the quickfix's command fixes it
    let command = quick["command"].clone();
    let started = client.request(
        "workspace/executeCommand",
        json!({"command": command["command"], "arguments": command["arguments"]}),
    );
    assert!(started["result"]["run_id"].is_string(), "{started}");
    let finished = run_finished(&mut client);
    assert_eq!(finished["exit_reason"], "clean", "{finished}");
    assert_eq!(client.text(&uri), FIXED);
    // the editor did not forward its diagnostics again: the summary does not claim more
    // than Tokamak saw
    let summary = finished["summary"].as_str().unwrap();
    assert!(summary.contains("1 of them came from the editor's own checkers"), "{summary}");
}

#[test]
fn a_file_uri_that_is_not_open_is_a_clear_error() {
    let model = ModelServer::start(vec![]);
    let dir = tempfile::tempdir().unwrap();
    let mut client = LspClient::editor_for_project(dir.path(), options(&model, json!({})));
    let response = start_fix(&mut client, json!({"uri": file_uri(&dir.path().join("nope.py"))}));
    assert!(response["error"]["message"].as_str().unwrap().contains("is not open"), "{response}");
    let bad = client
        .request("workspace/executeCommand", json!({"command": "tokamak.fix", "arguments": [{"url": 1}]}));
    assert!(bad["error"]["message"].as_str().unwrap().contains("bad command argument"), "{bad}");
    assert!(prompts(&model).is_empty());
}

#[test]
fn a_token_budget_stops_the_run_before_the_next_call() {
    let wrong = "<<<<<<< SEARCH\nprint('nothing like this')\n=======\nprint('x')\n>>>>>>> REPLACE\n";
    let model = ModelServer::start(vec![openai_chat(wrong), openai_chat(wrong)]);
    // each scripted reply reports 28 tokens
    let Project { dir: _dir, mut client, uri } = project(&model, json!({"max_tokens": 20}), BROKEN);
    start_fix(&mut client, json!({"uri": uri}));
    let finished = run_finished(&mut client);
    assert_eq!(finished["exit_reason"], "token_limit", "{finished}");
    // one attempt, then only the wrap-up, from the tokens kept for it
    assert_eq!(model.requests().len(), 2);
    assert_eq!(finished["wrap_up"]["kind"], "said", "{finished}");
    assert_eq!(finished["wrap_up"]["tokens"], 28, "{finished}");
    assert_eq!(finished["tokens"], json!({"prompt": 42, "completion": 14, "cached": 0}));
}

#[test]
fn a_time_limit_stops_a_run_whose_model_is_too_slow() {
    let slow = Scripted::Delayed(Duration::from_secs(20), Box::new(openai_chat(&good_reply())));
    let model = ModelServer::start(vec![slow]);
    let Project { dir: _dir, mut client, uri } = project(&model, json!({"time_limit_s": 1}), BROKEN);
    let started = std::time::Instant::now();
    start_fix(&mut client, json!({"uri": uri}));
    let finished = run_finished(&mut client);
    assert_eq!(finished["exit_reason"], "time_limit", "{finished}");
    assert!(started.elapsed() < Duration::from_secs(15));
    assert_eq!(client.text(&uri), BROKEN);
}

#[test]
fn a_range_fixes_only_what_it_covers() {
    let text = "def area(w, h):\n    return (w * h))\n\n\ndef perimeter(w, h):\n    return 2 * (w + h))\n";
    let reply = "<<<<<<< SEARCH\n    return 2 * (w + h))\n=======\n    return 2 * (w + h)\n>>>>>>> REPLACE\n";
    let model = ModelServer::start(vec![openai_chat(reply)]);
    let Project { dir: _dir, mut client, uri } = project(&model, json!({}), text);
    start_fix(&mut client, json!({"uri": uri, "range": support::range((5, 0), (5, 30))}));
    let finished = run_finished(&mut client);
    assert_eq!(finished["exit_reason"], "clean", "the error outside the range is not a target: {finished}");
    assert_eq!(client.text(&uri), text.replace("(w + h))", "(w + h)"));
    let prompt = model.requests()[0].prompt();
    assert!(prompt.contains("mean.py:6:") && !prompt.contains("mean.py:2:"), "{prompt}");
}

#[test]
fn a_snippet_is_not_taken_for_the_whole_file() {
    let snippet = "Close it like this:\n```python\n    total = sum(values)\n```\n";
    let model = ModelServer::start(vec![openai_chat(snippet), openai_chat(&good_reply())]);
    let Project { dir: _dir, mut client, uri } = project(&model, json!({}), BROKEN);
    start_fix(&mut client, json!({"uri": uri}));
    let finished = run_finished(&mut client);
    assert_eq!(finished["exit_reason"], "clean", "{finished}");
    assert_eq!(finished["attempts"], 2);
    assert_eq!(client.text(&uri), FIXED, "the rest of the file is still there");
    assert!(model.requests()[1].prompt().contains("not the whole file"));
}

#[test]
fn a_block_for_a_file_elsewhere_is_refused_by_its_path() {
    let block =
        "<<<<<<< SEARCH\n    total = sum(values))\n=======\n    total = sum(values)\n>>>>>>> REPLACE\n";
    let model = ModelServer::start(vec![
        openai_chat(&format!("../../other/mean.py\n{block}")),
        openai_chat(&format!("my_mean.py\n{block}")),
        openai_chat(&good_reply()),
    ]);
    let Project { dir: _dir, mut client, uri } = project(&model, json!({}), BROKEN);
    start_fix(&mut client, json!({"uri": uri}));
    let finished = run_finished(&mut client);
    assert_eq!(finished["exit_reason"], "clean", "{finished}");
    assert_eq!(finished["attempts"], 3);
    let requests = model.requests();
    let second = requests[1].prompt();
    assert!(
        second.contains("block 1 is for ../../other/mean.py, but this run may change only mean.py"),
        "{second}"
    );
    assert!(second.contains("leads outside"), "{second}");
    assert!(requests[2].prompt().contains("block 1 is for my_mean.py"), "{}", requests[2].prompt());
    assert_eq!(client.editor().edits.len(), 1, "only the third reply was applied");
    assert_eq!(client.text(&uri), FIXED);
}

/// A project opened by an editor that applies edits but does not version them (no
/// `workspaceEdit.documentChanges`).
fn unversioned_project(model: &ModelServer, text: &str) -> Project {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("mean.py");
    std::fs::write(&path, text).expect("write");
    let capabilities = json!({
        "general": {"positionEncodings": ["utf-16"]},
        "workspace": {"applyEdit": true},
    });
    let mut client = LspClient::for_project_with(dir.path(), options(model, json!({})), capabilities);
    client.act_as_editor();
    let uri = client.open_file(&path, "python");
    client.diagnostics(&uri);
    Project { dir, client, uri }
}

#[test]
fn an_unversioned_editor_gets_the_edit_and_its_echo_is_checked() {
    let model = ModelServer::start(vec![openai_chat(&good_reply())]);
    let Project { dir: _dir, mut client, uri } = unversioned_project(&model, BROKEN);
    start_fix(&mut client, json!({"uri": uri}));
    let finished = run_finished(&mut client);
    assert_eq!(finished["exit_reason"], "clean", "{finished}");
    assert_eq!(client.text(&uri), FIXED);
    let edits = &client.editor().edits;
    assert!(edits[0]["edit"]["changes"].is_object(), "unversioned: {:?}", edits[0]);
}

#[test]
fn an_unversioned_edit_that_landed_on_moved_lines_is_said_not_repeated() {
    let model = ModelServer::start(vec![openai_chat(&good_reply())]);
    let Project { dir: _dir, mut client, uri } = unversioned_project(&model, BROKEN);
    // a line typed at the top just before the edit arrives: this editor applies the edit at
    // the old line numbers, on the wrong line
    client.type_before_next_edit(&uri, Box::new(|text| format!("# typed by the user\n{text}")));
    start_fix(&mut client, json!({"uri": uri}));
    let finished = run_finished(&mut client);
    assert_eq!(finished["exit_reason"], "failed", "{finished}");
    assert!(
        finished["summary"].as_str().unwrap().contains("may have landed in the wrong place"),
        "{finished}"
    );
    assert_eq!(client.editor().edits.len(), 1, "never sent again");
}

#[test]
fn a_reply_about_other_code_never_lands_by_a_fuzzy_match() {
    // the model's SEARCH is about `numbers`; the file says `values`
    let about_numbers = "mean.py\n<<<<<<< SEARCH\ndef mean(numbers):\n    total = sum(numbers))\n    return total / len(numbers)\n=======\ndef mean(numbers):\n    total = sum(numbers)\n    return total / len(numbers)\n>>>>>>> REPLACE\n";
    let model = ModelServer::start(vec![openai_chat(about_numbers), openai_chat(&good_reply())]);
    let Project { dir: _dir, mut client, uri } = project(&model, json!({"similarity": 0.5}), BROKEN);
    start_fix(&mut client, json!({"uri": uri}));
    let finished = run_finished(&mut client);
    assert_eq!(finished["exit_reason"], "clean", "{finished}");
    assert_eq!(client.text(&uri), FIXED, "only the second reply was applied");
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert!(requests[1].prompt().contains("only roughly matches"), "{}", requests[1].prompt());
}
