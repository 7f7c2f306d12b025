//! fixtures/taskbench: every task is well formed and sound (its hidden acceptance tests fail on
//! the project as given; a question's answer is in the project), and `tokamak bench task`
//! with the scripted model — each task's `script.json` played in turn, through the
//! OpenAI-compatible wire format — solves every task and reports it as a table and as JSON.

use crate::support;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Output;

use serde_json::Value;
use support::model_server::{ModelServer, Scripted, openai_chat, openai_tool_calls};

fn bench_dir() -> std::path::PathBuf {
    support::repo_root().join("fixtures/taskbench")
}

/// `tokamak` in the repository, for a user who trusts the bench folder (its test and
/// acceptance commands are programs).
fn tokamak(args: &[&str]) -> Output {
    let user = support::UserDirs::trusting(&[&bench_dir()]);
    let mut command = user.command(args);
    command.current_dir(support::repo_root());
    for var in ["TOKAMAK_LLM_URL", "TOKAMAK_MODEL", "OLLAMA_HOST", "OPENAI_API_KEY"] {
        command.env_remove(var);
    }
    command.envs(support::tool_env());
    command.output().expect("run tokamak")
}

/// A task's scripted replies: `{"text": …}` a reply in prose, `{"call": name, "arguments": …}`
/// a native tool call.
fn script(folder: &Path) -> Vec<Scripted> {
    let text = std::fs::read_to_string(folder.join("script.json")).expect("script.json");
    let entries: Vec<Value> = serde_json::from_str(&text).expect("a JSON list");
    entries
        .iter()
        .map(|entry| match (entry["text"].as_str(), entry["call"].as_str()) {
            (Some(text), _) => openai_chat(text),
            (None, Some(name)) => openai_tool_calls("", &[(name, entry["arguments"].clone())]),
            _ => panic!("{}: an entry is neither text nor a call: {entry}", folder.display()),
        })
        .collect()
}

#[test]
fn every_task_is_well_formed_and_its_acceptance_fails_before() {
    if !support::require_tools(&["pytest", "tsc"]) {
        return;
    }
    let tasks = tokamak::cli::bench_task::tasks(&bench_dir()).expect("tasks");
    assert!(tasks.len() >= 12, "{} tasks", tasks.len());
    let mut kinds = BTreeSet::new();
    let mut languages = BTreeSet::new();
    for (name, folder, task) in &tasks {
        kinds.insert(task.kind.clone());
        languages.insert(task.language.clone());
        assert!(folder.join("project").is_dir() && folder.join("script.json").is_file(), "{name}");
        if task.kind == "question" {
            assert!(!task.answer.is_empty() && task.accept.is_empty(), "{name}: a question has answers");
            let project = walk(&folder.join("project"));
            for word in &task.answer {
                assert!(project.contains(word.as_str()), "{name}: {word} is not in the project");
            }
            continue;
        }
        // the hidden tests fail on the project as given: they test the task
        let work = tempfile::tempdir().expect("temp dir");
        support::copy_tree(&folder.join("project"), work.path());
        support::copy_tree(&folder.join("accept"), &work.path().join("accept"));
        let failed = task.accept.iter().any(|command| {
            let tools = support::tools_dir();
            let program = match command[0].as_str() {
                "python" => tools.join("venv/bin/python"),
                "tsc" => tools.join("node/node_modules/.bin/tsc"),
                other => other.into(),
            };
            let status = std::process::Command::new(program)
                .args(&command[1..])
                .current_dir(work.path())
                .output()
                .expect("run an acceptance command")
                .status;
            !status.success()
        });
        assert!(failed, "{name}: the acceptance tests pass before the task is done");
    }
    let expected: BTreeSet<String> =
        ["add", "fix", "move", "option", "question", "rename"].map(String::from).into();
    assert_eq!(kinds, expected);
    assert_eq!(languages, ["python", "typescript"].map(String::from).into());
}

fn walk(dir: &Path) -> String {
    let mut text = String::new();
    for entry in std::fs::read_dir(dir).expect("a folder").flatten() {
        let path = entry.path();
        if path.is_dir() {
            text.push_str(&walk(&path));
        } else {
            text.push_str(&std::fs::read_to_string(&path).unwrap_or_default());
        }
    }
    text
}

#[test]
fn bench_task_with_the_scripted_model_solves_every_task() {
    if !support::require_tools(&["pytest", "tsc"]) {
        return;
    }
    let tasks = tokamak::cli::bench_task::tasks(&bench_dir()).expect("tasks");
    let replies: Vec<Scripted> = tasks.iter().flat_map(|(_, folder, _)| script(folder)).collect();
    let expected = replies.len();
    let model = ModelServer::start(replies);
    let url = model.url();
    let output = tokamak(&[
        "bench",
        "task",
        "fixtures/taskbench",
        "--model-url",
        &url,
        "--model",
        "scripted",
        "--format",
        "json",
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let results: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let results = results.as_array().expect("a list");
    assert_eq!(results.len(), tasks.len());
    for result in results {
        assert_eq!(result["solved"], true, "{result:#}\n{stderr}");
        assert_eq!(result["exit_reason"], "done", "{result:#}");
        assert!(result["steps"].as_u64().is_some_and(|s| s >= 1), "{result:#}");
        assert!(result["tool_calls"].as_u64().is_some_and(|c| c >= 1), "{result:#}");
        assert!(result["tokens"]["prompt"].as_u64().is_some_and(|t| t > 0), "{result:#}");
        assert!(result["tokens"]["cached"].is_u64(), "{result:#}");
    }
    assert_eq!(model.requests().len(), expected, "every scripted reply was used, no more");
    // py-fix-bug's model explains the bug in prose before fixing it: an early end the tests
    // send back; ts-fix-bug's ends in prose when it is done
    let endings = |task: &str| {
        let result = results.iter().find(|r| r["task"] == task).expect(task);
        (result["endings"]["plain"].as_u64(), result["endings"]["early"].as_u64())
    };
    assert_eq!(endings("py-fix-bug"), (Some(1), Some(1)));
    assert_eq!(endings("ts-fix-bug"), (Some(1), Some(0)));
    // measured, never asserted: `cargo test --test it taskbench:: -- --nocapture`
    let sum =
        |key: &str| results.iter().map(|r| r.pointer(key).and_then(Value::as_u64).unwrap_or(0)).sum::<u64>();
    eprintln!(
        "bench task, scripted model: {} tasks, {} steps ({} ended in plain text, {} early), {} actions, {} prompt ({} cached) + {} completion tokens, {:.1} s",
        results.len(),
        sum("/steps"),
        sum("/endings/plain"),
        sum("/endings/early"),
        sum("/tool_calls"),
        sum("/tokens/prompt"),
        sum("/tokens/cached"),
        sum("/tokens/completion"),
        sum("/wall_ms") as f64 / 1000.0
    );
    // the fixtures are untouched: tasks run in copies, the hidden tests stay hidden
    assert!(!bench_dir().join("py-add-method/project/accept").exists());
    assert!(
        !std::fs::read_to_string(bench_dir().join("py-fix-bug/project/stats.py"))
            .expect("stats.py")
            .contains("% 2 == 0")
    );

    // the table, for one task
    let model = ModelServer::start(script(&bench_dir().join("py-question")));
    let url = model.url();
    let output = tokamak(&[
        "bench",
        "task",
        "fixtures/taskbench",
        "--filter",
        "py-question",
        "--model-url",
        &url,
        "--model",
        "scripted",
    ]);
    let table = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{table}{}", String::from_utf8_lossy(&output.stderr));
    let row = table.lines().find(|l| l.starts_with("py-question")).expect(&table);
    assert!(row.contains(" question ") && row.contains(" yes "), "{table}");
    assert!(table.contains("total: 1/1 solved"), "{table}");
}
