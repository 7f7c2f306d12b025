//! Drift and confidence (SPEC G3–G4) as a user meets them headless: `tokamak run` on a
//! temporary project, the scripted model reading a file and editing it a moment later, and
//! the file changing on disk in between — a body changed is re-grounded, a definition renamed
//! stops the step when nobody says to go on — and a run whose edits keep failing stopping
//! once its confidence in the file falls under 40. Nothing the user wrote is lost.

use crate::support;

use std::path::Path;
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::UserDirs;
use support::model_server::{ModelServer, Scripted, openai_chat};
use support::scenario::{block, call};

const CALC: &str = "def total(xs):\n    return sum(xs)\n\n\ndef mean(xs):\n    return total(xs) / len(xs)\n";

fn project(settings: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir(dir.path().join(".git")).expect(".git");
    std::fs::write(dir.path().join("calc.py"), CALC).expect("calc.py");
    std::fs::write(dir.path().join("tokamak.toml"), format!("{settings}[checkers]\nenable = []\n"))
        .expect("toml");
    dir
}

/// `tokamak run GOAL` in `root`, started (`yes`: changes approved).
fn start(user: &UserDirs, root: &Path, model: &ModelServer, yes: bool) -> Child {
    let root_arg = root.display().to_string();
    let mut args = vec!["run", "make mean safe for an empty list", "--root", &root_arg];
    if yes {
        args.push("--yes");
    }
    spawn(user, root, model, &args)
}

/// `tokamak ARGS` in `root` with the scripted model, started.
fn spawn(user: &UserDirs, root: &Path, model: &ModelServer, args: &[&str]) -> Child {
    user.command(args)
        .current_dir(root)
        .env("TOKAMAK_LLM_URL", model.url())
        .env("TOKAMAK_MODEL", "scripted")
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .envs(support::tool_env())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start tokamak")
}

/// Waits until the model has been asked `count` times.
fn wait_for_requests(model: &ModelServer, count: usize) {
    let started = Instant::now();
    while model.requests().len() < count {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the model was asked {} times",
            model.requests().len()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn finish(child: Child) -> (Output, String) {
    let output = child.wait_with_output().expect("tokamak ends");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    (output, stdout)
}

/// The audit lines of `event` under the user's cache.
fn events(user: &UserDirs, event: &str) -> Vec<Value> {
    support::audit_events(user.cache.path(), event)
}

/// What the model was told after each of its tool calls.
fn results(model: &ModelServer) -> String {
    model
        .requests()
        .iter()
        .filter_map(|r| r.body["messages"].as_array().and_then(|m| m.last()).cloned())
        .filter(|m| m["role"] == "tool")
        .filter_map(|m| m["content"].as_str().map(str::to_string))
        .collect::<Vec<_>>()
        .join("\n---\n")
}

/// The model reads calc.py, and edits mean a moment later.
fn read_then_edit() -> Vec<Scripted> {
    let edit = block("    return total(xs) / len(xs)\n", "    return total(xs) / len(xs) if xs else 0.0\n");
    vec![
        openai_chat("1. Make mean return 0.0 for an empty list in calc.py\n"),
        call("read", json!({"path": "calc.py"})),
        Scripted::Delayed(
            Duration::from_millis(1500),
            Box::new(call("edit", json!({"path": "calc.py", "blocks": edit}))),
        ),
        call("done", json!({"summary": "mean is safe"})),
    ]
}

#[test]
fn a_body_changed_on_disk_between_read_and_edit_is_regrounded() {
    let dir = project("");
    let user = UserDirs::trusting(&[dir.path()]);
    let model = ModelServer::start(read_then_edit());
    let child = start(&user, dir.path(), &model, true);
    // the model has read the file and is thinking about its edit: someone changes a body
    wait_for_requests(&model, 3);
    let theirs = CALC.replace("    return sum(xs)\n", "    return sum(xs, 0)\n");
    std::fs::write(dir.path().join("calc.py"), &theirs).unwrap();
    let (output, stdout) = finish(child);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let now = std::fs::read_to_string(dir.path().join("calc.py")).unwrap();
    assert!(now.contains("return sum(xs, 0)"), "their change is kept: {now}");
    assert!(now.contains("if xs else 0.0"), "the edit landed on their text: {now}");
    let told = results(&model);
    assert!(told.contains("moderate drift: code inside its definitions changed"), "{told}");
    let drift = events(&user, "drift");
    assert_eq!(drift.len(), 1, "{drift:#?}");
    assert_eq!(
        (drift[0]["file"].as_str(), drift[0]["severity"].as_str()),
        (Some("calc.py"), Some("moderate"))
    );
    let confidence = events(&user, "confidence");
    assert_eq!(confidence[0]["to"], 85, "{confidence:#?}");
}

#[test]
fn a_definition_renamed_between_read_and_edit_stops_the_step_when_nobody_says_go_on() {
    // approval "low": changes are not asked; the question about the drift is, and there is no
    // terminal to answer it
    let dir = project("approval = \"low\"\n");
    let user = UserDirs::trusting(&[dir.path()]);
    let model = ModelServer::start(read_then_edit());
    let child = start(&user, dir.path(), &model, false);
    wait_for_requests(&model, 3);
    let theirs = CALC.replace("total", "sum_all");
    std::fs::write(dir.path().join("calc.py"), &theirs).unwrap();
    let (output, stdout) = finish(child);
    assert_ne!(output.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("[unsure]"), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.contains("calc.py changed under the run (removed total; added sum_all)"), "{stdout}");
    assert_eq!(std::fs::read_to_string(dir.path().join("calc.py")).unwrap(), theirs, "nothing clobbered");
    let drift = events(&user, "drift");
    assert_eq!(drift[0]["severity"], "major", "{drift:#?}");
    let asked = events(&user, "approval");
    assert!(asked.iter().any(|a| a["action"] == "go_on" && a["answer"] == "refused"), "{asked:#?}");
}

#[test]
fn edits_that_keep_failing_lower_confidence_until_the_run_stops_and_asks() {
    let dir = project("approval = \"low\"\n");
    let user = UserDirs::trusting(&[dir.path()]);
    let mut script = vec![openai_chat("1. Make mean return 0.0 for an empty list in calc.py\n")];
    script.push(call("read", json!({"path": "calc.py"})));
    for attempt in 1..=6 {
        let wrong = block(&format!("    return nothing_like_this_{attempt}\n"), "    return 0\n");
        script.push(call("edit", json!({"path": "calc.py", "blocks": wrong})));
    }
    script.push(call("done", json!({"summary": "gave up"})));
    let model = ModelServer::start(script);
    let child = start(&user, dir.path(), &model, false);
    let (output, stdout) = finish(child);
    assert!(stdout.contains("[unsure]"), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.contains("Tokamak's confidence in calc.py fell to 25"), "{stdout}");
    assert!(stdout.contains("an edit did not apply"), "the reason is said: {stdout}");
    assert_eq!(std::fs::read_to_string(dir.path().join("calc.py")).unwrap(), CALC);
    let scores: Vec<i64> = events(&user, "confidence").iter().filter_map(|c| c["to"].as_i64()).collect();
    assert_eq!(scores, [85, 70, 55, 40, 25]);
}

/// In the editor the user's typing is drift too: a comment typed while the model thinks is
/// absorbed — the edit lands beside it — and `tokamak.status` shows the run's confidence in
/// the file while it runs.
#[test]
fn typing_a_comment_in_the_editor_during_a_run_is_minor_drift_and_status_shows_confidence() {
    let dir = project("");
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let edit = block("    return total(xs) / len(xs)\n", "    return total(xs) / len(xs) if xs else 0.0\n");
    let model = ModelServer::start(vec![
        openai_chat("1. Make mean return 0.0 for an empty list in calc.py\n"),
        call("read", json!({"path": "calc.py"})),
        Scripted::Delayed(
            Duration::from_millis(1500),
            Box::new(call("edit", json!({"path": "calc.py", "blocks": edit}))),
        ),
        Scripted::Delayed(
            Duration::from_millis(1500),
            Box::new(call("done", json!({"summary": "mean is safe"}))),
        ),
    ]);
    let options = json!({
        "checkers": {"enable": []},
        "model": {"base_url": model.url(), "model": "scripted", "max_retries": 0},
    });
    let mut client = support::LspClient::editor_for_project(&root, options);
    let uri = client.open_file(&root.join("calc.py"), "python");
    let started = client.request(
        "workspace/executeCommand",
        json!({"command": "tokamak.run", "arguments": [{"goal": "make mean safe for an empty list"}]}),
    );
    let run_id = started["result"]["run_id"].as_str().expect("a run id").to_string();
    // the model has read the file and thinks about its edit: the user types a comment
    wait_for_requests(&model, 3);
    client.type_now(&uri, Box::new(|text| format!("# keep this fast\n{text}")));
    client.wait_for("the edit", |m| m["method"] == "workspace/applyEdit");
    let status =
        client.request("workspace/executeCommand", json!({"command": "tokamak.status", "arguments": [{}]}));
    let runs = status["result"]["runs"].as_array().expect("runs").clone();
    let run = runs.iter().find(|r| r["run_id"] == run_id.as_str()).expect("the run is listed");
    assert_eq!(run["confidence"][0]["file"], "calc.py", "{run:#}");
    assert_eq!(run["confidence"][0]["confidence"], 95, "{run:#}");
    let finished = client.wait_for("the run's end", |m| {
        m["method"] == "tokamak/runFinished" && m["params"]["run_id"] == run_id.as_str()
    })["params"]
        .clone();
    assert_eq!(finished["exit_reason"], "done", "{finished:#}");
    let text = client.text(&uri);
    assert!(text.starts_with("# keep this fast\n") && text.contains("if xs else 0.0"), "{text}");
    assert!(
        results(&model).contains("minor drift: only whitespace or comments changed"),
        "{}",
        results(&model)
    );
    client.shutdown();
}

/// A whole-file write made from the text the model read is refused once the file changed, and
/// stays refused when the model simply sends it again: only reading the file again lets it
/// through.
#[test]
fn a_whole_file_write_after_drift_stays_refused_until_the_file_is_read_again() {
    let dir = project("");
    let user = UserDirs::trusting(&[dir.path()]);
    let mine = CALC.replace("/ len(xs)", "/ len(xs) if xs else 0.0");
    let whole = format!("calc.py\n```python\n{mine}```\n");
    let model = ModelServer::start(vec![
        openai_chat("1. Make mean return 0.0 for an empty list in calc.py\n"),
        call("read", json!({"path": "calc.py"})),
        Scripted::Delayed(
            Duration::from_millis(1500),
            Box::new(call("edit", json!({"path": "calc.py", "blocks": whole}))),
        ),
        call("edit", json!({"path": "calc.py", "blocks": whole})),
        call("done", json!({"summary": "gave up"})),
    ]);
    let child = start(&user, dir.path(), &model, true);
    wait_for_requests(&model, 3);
    let theirs = CALC.replace("    return sum(xs)\n", "    return sum(xs, 0)\n");
    std::fs::write(dir.path().join("calc.py"), &theirs).unwrap();
    let (output, stdout) = finish(child);
    assert_eq!(std::fs::read_to_string(dir.path().join("calc.py")).unwrap(), theirs, "{stdout}");
    let told = results(&model);
    assert_eq!(told.matches("so it was not replaced; read it again first").count(), 2, "{told}");
    let drift = events(&user, "drift");
    assert_eq!(drift.len(), 1, "drift is audited and charged once: {drift:#?}");
    let _ = output;
}

const BROKEN: &str = "def f(a):\n    return g(a, 2))\n\n\ndef h():\n    return 1\n";

/// `tokamak fix m.py` in `root`, started.
fn start_fix(user: &UserDirs, root: &Path, model: &ModelServer, extra: &[&str]) -> Child {
    let mut args = vec!["fix", "m.py"];
    args.extend_from_slice(extra);
    spawn(user, root, model, &args)
}

fn fix_project() -> tempfile::TempDir {
    let dir = project("");
    std::fs::write(dir.path().join("m.py"), BROKEN).expect("m.py");
    dir
}

/// The fix the model sends for `f`'s line, a moment after it was asked.
fn late_fix() -> Scripted {
    let reply = "m.py\n<<<<<<< SEARCH\n    return g(a, 2))\n=======\n    return g(a, 2)\n>>>>>>> REPLACE\n";
    Scripted::Delayed(Duration::from_millis(1500), Box::new(openai_chat(reply)))
}

/// seed 003 in `tokamak fix`: another function changed on disk while the model thinks is
/// moderate drift — the fix lands on the new text beside it, and the ending says so.
#[test]
fn a_body_changed_on_disk_during_tokamak_fix_is_regrounded_and_named() {
    let dir = fix_project();
    let user = UserDirs::trusting(&[dir.path()]);
    let model = ModelServer::start(vec![late_fix()]);
    let child = start_fix(&user, dir.path(), &model, &[]);
    wait_for_requests(&model, 1);
    let theirs = BROKEN.replace("    return 1\n", "    return 2\n");
    std::fs::write(dir.path().join("m.py"), &theirs).unwrap();
    let (output, stdout) = finish(child);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let now = std::fs::read_to_string(dir.path().join("m.py")).unwrap();
    assert_eq!(now, "def f(a):\n    return g(a, 2)\n\n\ndef h():\n    return 2\n", "both changes are there");
    assert!(stdout.contains("[clean] m.py: fixed 1 problem(s)"), "{stdout}");
    assert!(
        stdout.contains(
            "drift: m.py: moderate drift (code inside its definitions changed); the fix was made on its text as it is now, where it still applies"
        ),
        "the ending names the drift: {stdout}"
    );
    let drift = events(&user, "drift");
    assert_eq!(drift.len(), 1, "{drift:#?}");
    assert_eq!((drift[0]["file"].as_str(), drift[0]["severity"].as_str()), (Some("m.py"), Some("moderate")));
    let scores: Vec<i64> = events(&user, "confidence").iter().filter_map(|c| c["to"].as_i64()).collect();
    assert_eq!(scores, [85], "moderate drift costs 15");
}

/// A definition added on disk while the model thinks is major drift: the fix is not applied,
/// the next attempt is asked about the file as it is now, and its fix lands.
#[test]
fn a_definition_added_during_tokamak_fix_is_not_overwritten_and_the_next_attempt_sees_it() {
    let dir = fix_project();
    let user = UserDirs::trusting(&[dir.path()]);
    let again = "m.py\n<<<<<<< SEARCH\n    return g(a, 2))\n=======\n    return g(a, 3)\n>>>>>>> REPLACE\n";
    let model = ModelServer::start(vec![late_fix(), openai_chat(again)]);
    let child = start_fix(&user, dir.path(), &model, &[]);
    wait_for_requests(&model, 1);
    let theirs = format!("{BROKEN}\n\ndef k():\n    return 3\n");
    std::fs::write(dir.path().join("m.py"), &theirs).unwrap();
    let (output, stdout) = finish(child);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let now = std::fs::read_to_string(dir.path().join("m.py")).unwrap();
    assert_eq!(
        now,
        theirs.replace("return g(a, 2))", "return g(a, 3)"),
        "the second attempt's fix, theirs kept"
    );
    assert!(stdout.contains("[clean] m.py: fixed 1 problem(s)"), "{stdout}");
    assert!(stdout.contains("(2 model attempt(s)"), "{stdout}");
    assert!(
        stdout.contains("drift: m.py: major drift (added k); the fix was not applied and the next attempt starts from its text as it is now"),
        "{stdout}"
    );
    let second = model.requests()[1].body.to_string();
    assert!(second.contains("changed under the run (major drift: added k)"), "the model is told: {second}");
    assert!(second.contains("def h()\\ndef k()"), "and shown the file as it is now: {second}");
    let drift = events(&user, "drift");
    assert_eq!(drift[0]["severity"], "major", "{drift:#?}");
}

/// A fix run stopped at its attempts asks the model once for its wrap-up; a reply that does
/// not apply lowers the run's confidence in the file.
#[test]
fn a_fix_run_out_of_attempts_ends_with_the_models_wrap_up() {
    let dir = fix_project();
    let user = UserDirs::trusting(&[dir.path()]);
    let wrong =
        "m.py\n<<<<<<< SEARCH\n    return nothing_like_this\n=======\n    return 0\n>>>>>>> REPLACE\n";
    let wrap_up =
        "I tried to fix the parenthesis in f but my edit did not match the file; line 2 still needs it.";
    let model = ModelServer::start(vec![openai_chat(wrong), openai_chat(wrap_up)]);
    let child = start_fix(&user, dir.path(), &model, &["--max-attempts", "1"]);
    let (output, stdout) = finish(child);
    assert_eq!(output.status.code(), Some(1), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.contains("[max_attempts]"), "{stdout}");
    assert!(stdout.contains(&format!("The model's wrap-up, in its words: \"{wrap_up}\"")), "{stdout}");
    assert_eq!(std::fs::read_to_string(dir.path().join("m.py")).unwrap(), BROKEN, "nothing lost");
    let asked = model.requests()[1].body.to_string();
    assert!(asked.contains("Model attempts: 1"), "the wrap-up is told what the run did: {asked}");
    // again, with nothing left for the wrap-up
    model.push(openai_chat(wrong));
    let json = user
        .command(&["fix", "m.py", "--max-attempts", "1", "--format", "json", "--dry-run"])
        .current_dir(dir.path())
        .env("TOKAMAK_LLM_URL", model.url())
        .env("TOKAMAK_MODEL", "scripted")
        .envs(support::tool_env())
        .output()
        .expect("tokamak");
    let results: Value = serde_json::from_slice(&json.stdout).expect("JSON");
    // the scripted model has nothing more to say: the wrap-up's absence is said, and why
    assert_eq!(results[0]["wrap_up"]["kind"], "none", "{results}");
    assert!(
        results[0]["wrap_up"]["why"].as_str().unwrap().contains("the model could not be asked"),
        "{results}"
    );
    let wrapped = events(&user, "wrap_up");
    assert_eq!(wrapped.len(), 1, "the first run's (a dry run keeps no audit log): {wrapped:#?}");
    let scores: Vec<i64> = events(&user, "confidence").iter().filter_map(|c| c["to"].as_i64()).collect();
    assert_eq!(scores, [85], "a fix that did not apply costs 15");
}

/// Re-grounding reaches a drifted file's dependents: a signature changed under the run names
/// the places that use it, and a file among them the model read is not written whole until
/// it reads it again.
#[test]
fn a_signature_changed_under_the_run_names_its_dependents_and_they_must_be_read_again() {
    let dir = project("");
    let report = "from calc import total\n\n\ndef report(xs):\n    return f\"total: {total(xs)}\"\n";
    std::fs::write(dir.path().join("report.py"), report).unwrap();
    let user = UserDirs::trusting(&[dir.path()]);
    let edit = block("    return total(xs) / len(xs)\n", "    return total(xs) / len(xs) if xs else 0.0\n");
    let model = ModelServer::start(vec![
        openai_chat("1. Make mean return 0.0 for an empty list in calc.py\n"),
        call("read", json!({"path": "report.py"})),
        call("read", json!({"path": "calc.py"})),
        Scripted::Delayed(
            Duration::from_millis(1500),
            Box::new(call("edit", json!({"path": "calc.py", "blocks": edit}))),
        ),
        call(
            "edit",
            json!({"path": "report.py", "blocks": "report.py\n```python\ndef report(xs):\n    return ''\n```\n"}),
        ),
        call("done", json!({"summary": "mean is safe"})),
    ]);
    let child = start(&user, dir.path(), &model, true);
    wait_for_requests(&model, 4);
    let theirs = CALC.replace("def total(xs):", "def total(xs, start=0):");
    std::fs::write(dir.path().join("calc.py"), &theirs).unwrap();
    let (output, stdout) = finish(child);
    assert!(output.status.code().is_some(), "{stdout}");
    let told = results(&model);
    assert!(
        told.contains("the signature of total changed; what uses it, which may no longer match it and which you should read again before changing: report.py:"),
        "{told}"
    );
    assert!(
        told.contains("report.py may no longer match a file it uses, which changed under the run, since you read it, so it was not replaced; read it again first"),
        "the dependent is not written whole unread: {told}"
    );
    assert_eq!(std::fs::read_to_string(dir.path().join("report.py")).unwrap(), report, "untouched");
    let dependents = events(&user, "drift_dependents");
    assert_eq!(dependents.len(), 1, "{dependents:#?}");
}

/// A file the prompt showed whole counts as read: changed before the model's edit without
/// any read action, it is drift all the same.
#[test]
fn a_file_the_prompt_showed_is_read_and_a_change_before_the_edit_is_drift() {
    let dir = project("");
    let user = UserDirs::trusting(&[dir.path()]);
    let edit = block("    return total(xs) / len(xs)\n", "    return total(xs) / len(xs) if xs else 0.0\n");
    let model = ModelServer::start(vec![
        openai_chat("1. Make mean return 0.0 for an empty list in calc.py\n"),
        Scripted::Delayed(
            Duration::from_millis(1500),
            Box::new(call("edit", json!({"path": "calc.py", "blocks": edit}))),
        ),
        call("done", json!({"summary": "mean is safe"})),
    ]);
    let child = start(&user, dir.path(), &model, true);
    wait_for_requests(&model, 2);
    let step = model.requests()[1].body.to_string();
    assert!(step.contains("def mean(xs):"), "the step's prompt shows calc.py: {step}");
    let theirs = CALC.replace("    return sum(xs)\n", "    return sum(xs, 0)\n");
    std::fs::write(dir.path().join("calc.py"), &theirs).unwrap();
    let (output, stdout) = finish(child);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let now = std::fs::read_to_string(dir.path().join("calc.py")).unwrap();
    assert!(now.contains("return sum(xs, 0)") && now.contains("if xs else 0.0"), "{now}");
    let drift = events(&user, "drift");
    assert_eq!(drift.len(), 1, "{drift:#?}");
    assert_eq!(drift[0]["severity"], "moderate");
}
