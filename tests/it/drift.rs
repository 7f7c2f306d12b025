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
    let mut args = vec!["run", "make mean safe for an empty list", "--root"];
    let root_arg = root.display().to_string();
    args.push(&root_arg);
    if yes {
        args.push("--yes");
    }
    user.command(&args)
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
