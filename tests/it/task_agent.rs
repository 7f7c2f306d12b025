//! The task agent end to end (seed 000's scenario): "User 클래스에 validate_email 메서드
//! 추가해줘" on a small project with a `User` class and its tests — a plan of two steps with a
//! dependency, the method added, a test for it, the project's tests run after each step and
//! passing, every step going ○ → ⚡ → ✓, and a checkpoint to roll back to; over stdio with the
//! test client as the editor and headless with `tokamak run`, in Python and TypeScript. Then
//! what goes wrong: a step that breaks the syntax is repaired by the fix loop inside the run,
//! a failing step fails its dependants and not its siblings, a cancel mid-step.

use crate::support;

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use support::model_server::{ModelServer, Scripted, openai_chat};
use support::scenario::{GOAL, Language, PYTHON, TYPESCRIPT, block, call, placed};
use support::{LspClient, UserDirs};

/// Seed 000's scenario as modes: the method implemented, tested, reviewed; then its test
/// written (the tester starts in test), tested, reviewed.
const SCENARIO_TRAIL: [&str; 8] = [
    "idle -plan_intent-> planning",
    "planning -plan_ready-> implementation",
    "implementation -code_complete-> test",
    "test -tests_passed-> qa",
    "qa -approved-> idle",
    "idle -test_intent-> test",
    "test -tests_passed-> qa",
    "qa -approved-> idle",
];

fn require() -> bool {
    support::require_tools(&["pytest", "tsc"])
}

fn command(client: &mut LspClient, name: &str, arguments: Value) -> Value {
    let response =
        client.request("workspace/executeCommand", json!({"command": name, "arguments": [arguments]}));
    assert!(response.get("error").is_none(), "{name} failed: {response}");
    response["result"].clone()
}

/// Each step's statuses in the order the editor was told them (repeats folded).
fn statuses(client: &LspClient) -> Vec<(String, Vec<String>)> {
    let updates = client.seen(|m| m["method"] == "tokamak/planUpdated");
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for update in updates {
        for step in update["params"]["steps"].as_array().unwrap() {
            let id = step["id"].as_str().unwrap().to_string();
            let status = format!("{} {}", step["glyph"].as_str().unwrap(), step["status"].as_str().unwrap());
            match out.iter_mut().find(|(i, _)| *i == id) {
                Some((_, list)) if list.last() != Some(&status) => list.push(status),
                Some(_) => {}
                None => out.push((id, vec![status])),
            }
        }
    }
    out
}

fn audit_actions(cache: &Path) -> Vec<Value> {
    support::audit_events(cache, "action")
}

fn scenario_over_stdio(language: &Language, with_bwrap: bool) {
    let dir = language.project();
    let root = dir.path();
    let model = ModelServer::start(language.script());
    // a machine without bubblewrap: the same run, confined by Landlock
    let (_bin, path) = support::path_without(&["bwrap"]);
    let env = if with_bwrap { Vec::new() } else { vec![("PATH".to_string(), path)] };
    let mut client = LspClient::editor_for_project_env(root, language.options(&model), &env);
    // the source is open in the editor: its edit stays unsaved, and the tests still see it
    let source = client.open_file(&root.join(language.source), "");
    let clock = std::time::Instant::now();
    let started = command(&mut client, "tokamak.run", json!({"goal": GOAL}));
    let run_id = started["run_id"].as_str().unwrap().to_string();
    client.wait_for_and_keep("the first plan", |m| m["method"] == "tokamak/planUpdated");
    let to_plan = clock.elapsed();
    let finished = client.wait_for("the run's end", |m| {
        m["method"] == "tokamak/runFinished" && m["params"]["run_id"] == run_id
    })["params"]
        .clone();
    // measured, never asserted (`tests/it/acp.rs` measures the same run over ACP)
    eprintln!("lsp ({}): run → first plan {to_plan:?}, → end {:?}", language.folder, clock.elapsed());
    assert_eq!(finished["exit_reason"], "done", "{finished}\n{}", client.stderr());
    // the plan: two steps, the test depending on the method, each ○ → ⚡ → ✓
    let steps = statuses(&client);
    assert_eq!(steps.len(), 2, "{steps:?}");
    for (_, list) in &steps {
        assert_eq!(list, &["○ pending", "⚡ running", "✓ done"], "{steps:?}");
    }
    let last = client.seen(|m| m["method"] == "tokamak/planUpdated").pop().unwrap();
    assert_eq!(last["params"]["steps"][1]["depends_on"], json!(["1"]));
    assert_eq!(last["params"]["goal"], GOAL);
    // the method in the editor's buffer (not saved), the test on disk
    assert!(
        client.text(&source).contains(language.method.1.lines().nth(2).unwrap()),
        "{}",
        client.text(&source)
    );
    assert!(!std::fs::read_to_string(root.join(language.source)).unwrap().contains("alidate"), "unsaved");
    assert!(std::fs::read_to_string(root.join(language.tests)).unwrap().contains("alidate"));
    // the tests ran after each step, in the sandbox copy with the buffer's text, and passed
    let runs: Vec<Value> =
        audit_actions(client.user.cache.path()).into_iter().filter(|a| a["action"] == "run").collect();
    // Python: after the test step, the changed test file first (pytest knows node ids), then
    // all; the TypeScript command is a shell line, so it runs whole
    let commands: Vec<String> = runs.iter().map(|r| r["arguments"]["command"].to_string()).collect();
    if language.folder == "python" {
        assert_eq!(runs.len(), 3, "{runs:?}");
        assert!(commands[1].ends_with("\"test_user.py\"]"), "{commands:?}");
        assert!(commands[2].ends_with("\"no:cacheprovider\"]"), "{commands:?}");
    } else {
        assert_eq!(runs.len(), 2, "{runs:?}");
    }
    for run in &runs {
        assert!(run["summary"].as_str().unwrap().contains("exit status 0"), "{run}");
    }
    // the command results and the step's report say where the tests ran
    let told: Vec<String> = model
        .requests()
        .iter()
        .flat_map(|r| r.body["messages"].as_array().cloned().unwrap_or_default())
        .filter_map(|m| m["content"].as_str().map(str::to_string))
        .collect();
    let plan_seen = serde_json::to_string(&last).unwrap();
    assert!(plan_seen.contains(placed(with_bwrap)), "{plan_seen}");
    assert!(!told.iter().any(|t| t.contains(placed(!with_bwrap))), "{told:#?}");
    let notices = client.seen(|m| {
        m["method"] == "window/showMessage"
            && m["params"]["message"].as_str().unwrap_or_default().contains("without a sandbox")
    });
    assert!(notices.is_empty(), "a sandbox either way, no notice: {notices:?}");
    // the modes the run went through, whole (seed 000's scenario): each step's edits done,
    // tested, reviewed, done
    assert_eq!(support::mode_trail(client.user.cache.path()), SCENARIO_TRAIL.to_vec());
    assert!(audit_events(client.user.cache.path(), "mode_ignored").is_empty());
    // and a checkpoint to roll back to
    let checkpoints = command(&mut client, "tokamak.checkpoints", json!({}));
    assert_eq!(checkpoints[0]["run_id"], run_id.as_str(), "{checkpoints}");
    assert_eq!(checkpoints[0]["goal"], GOAL);
}

#[test]
fn the_scenario_over_stdio_in_python() {
    if require() && support::require_tools(&["bwrap"]) {
        scenario_over_stdio(&PYTHON, true);
    }
}

#[test]
fn the_scenario_over_stdio_in_typescript() {
    if require() && support::require_tools(&["bwrap"]) {
        scenario_over_stdio(&TYPESCRIPT, true);
    }
}

#[test]
fn the_scenario_over_stdio_without_bwrap_in_python() {
    if require() {
        scenario_over_stdio(&PYTHON, false);
    }
}

#[test]
fn the_scenario_over_stdio_without_bwrap_in_typescript() {
    if require() {
        scenario_over_stdio(&TYPESCRIPT, false);
    }
}

fn scenario_headless(language: &Language, with_bwrap: bool) {
    scenario_headless_with(language, with_bwrap, language.script(), None);
}

/// The scenario headless with `script` for the model; `checkers`: only these, in the project's
/// tokamak.toml (else every built-in one installed).
fn scenario_headless_with(
    language: &Language,
    with_bwrap: bool,
    script: Vec<Scripted>,
    checkers: Option<&[&str]>,
) -> String {
    let dir = language.project();
    let root = dir.path();
    if let Some(checkers) = checkers {
        let settings = format!("[checkers]\nenable = {}\n", serde_json::to_string(checkers).unwrap());
        std::fs::write(root.join("tokamak.toml"), settings).unwrap();
    }
    let model = ModelServer::start(script);
    let user = UserDirs::trusting(&[root]);
    let test_command = language
        .test_command()
        .iter()
        .map(|a| shlex::try_quote(a).unwrap().to_string())
        .collect::<Vec<_>>()
        .join(" ");
    let started = std::time::Instant::now();
    let mut command = user.command(&["run", GOAL, "--yes", "--test-command", &test_command]);
    command
        .current_dir(root)
        .env("TOKAMAK_LLM_URL", model.url())
        .env("TOKAMAK_MODEL", "scripted")
        .envs(support::tool_env());
    let (_bin, path) = support::path_without(&["bwrap"]);
    if !with_bwrap {
        command.env("PATH", path);
    }
    let output = command.output().unwrap();
    // measured, never asserted: `cargo test --test it task_agent::scenario_headless -- --nocapture`
    eprintln!("tokamak run on the {} scenario: {:?}", language.folder, started.elapsed());
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains(&format!("[done] {GOAL}: all 2 step(s) done.")), "{stdout}");
    assert!(
        stdout.contains(&format!("+++ b/{}", language.source))
            && stdout.contains(&format!("+++ b/{}", language.tests)),
        "{stdout}"
    );
    // the plan's progress on stderr
    for line in ["○ 1. ", "⚡ 1. ", "✓ 1. ", "✓ 2. "] {
        assert!(stderr.contains(line), "{line:?} missing from:\n{stderr}");
    }
    assert!(std::fs::read_to_string(root.join(language.source)).unwrap().contains("alidate"));
    // each step says where its tests ran
    assert!(
        stderr.contains(&format!(
            "✓ 2. {}",
            language
                .plan
                .lines()
                .nth(if language.folder == "python" { 2 } else { 1 })
                .unwrap()
                .trim_start_matches("2. ")
                .trim_end_matches(" [depends: 1]")
        )),
        "{stderr}"
    );
    assert_eq!(stderr.matches(placed(with_bwrap)).count(), 2, "{stderr}");
    assert_eq!(stderr.matches("no sandbox").count(), 0, "a sandbox either way: {stderr}");
    stderr.into_owned()
}

/// A model that ends each step in plain text, as OpenAI's and Anthropic's own agent loops
/// do: each answer is its step's summary, and the tests that follow decide.
#[test]
fn a_model_that_ends_each_step_in_plain_text_is_done_when_its_tests_pass() {
    if !require() {
        return;
    }
    // the claim is the steps' plain-text endings: the quick checker of each language judges
    // "no new error" (the whole set is the scenario's own tests')
    for (language, checker) in [(&PYTHON, "ruff"), (&TYPESCRIPT, "tsc")] {
        let stderr =
            scenario_headless_with(language, false, language.script_ending_in_prose(), Some(&[checker]));
        assert!(stderr.contains("— The method is there (the tests passed, run "), "{stderr}");
        assert!(stderr.contains("— Done: it is tested (the tests passed, run "), "{stderr}");
        assert_eq!(
            stderr.matches("the model answered in plain text: the step ends there").count(),
            2,
            "{stderr}"
        );
    }
}

#[test]
fn the_scenario_headless_in_python() {
    if require() && support::require_tools(&["bwrap"]) {
        scenario_headless(&PYTHON, true);
    }
}

#[test]
fn the_scenario_headless_in_typescript() {
    if require() && support::require_tools(&["bwrap"]) {
        scenario_headless(&TYPESCRIPT, true);
    }
}

#[test]
fn the_scenario_headless_without_bwrap_in_python() {
    if require() {
        scenario_headless(&PYTHON, false);
    }
}

#[test]
fn the_scenario_headless_without_bwrap_in_typescript() {
    if require() {
        scenario_headless(&TYPESCRIPT, false);
    }
}

#[test]
fn a_dry_run_keeps_the_projects_trust_and_runs_its_tests_in_the_copy() {
    if !require() {
        return;
    }
    let dir = PYTHON.project();
    let root = dir.path();
    // the project's own test command, which only a trusted folder may set
    let command: Vec<String> = PYTHON.test_command();
    std::fs::write(
        root.join("tokamak.toml"),
        format!("[checkers]\nenable = []\n[test]\ncommand = {}\n", serde_json::to_string(&command).unwrap()),
    )
    .unwrap();
    let before = std::fs::read_to_string(root.join(PYTHON.source)).unwrap();
    let model = ModelServer::start(PYTHON.script());
    let user = UserDirs::trusting(&[root]);
    let output = user
        .command(&["run", GOAL, "--dry-run"])
        .current_dir(root)
        .env("TOKAMAK_LLM_URL", model.url())
        .env("TOKAMAK_MODEL", "scripted")
        .envs(support::tool_env())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(!stderr.contains("not trusted") && !stderr.contains("tokamak trust"), "{stderr}");
    assert!(stdout.contains("a dry run: nothing was written"), "{stdout}");
    assert!(stdout.contains(&format!("+++ b/{}", PYTHON.source)), "{stdout}");
    // the project's tests ran after each step, in the copy
    assert_eq!(stderr.matches("(the tests passed, run ").count(), 2, "{stderr}");
    // and nothing changed on disk
    assert_eq!(std::fs::read_to_string(root.join(PYTHON.source)).unwrap(), before);
    assert!(!std::fs::read_to_string(root.join(PYTHON.tests)).unwrap().contains("alidate"));

    // an untrusted project's dry run ignores the test command and names the project itself
    let model = ModelServer::start(PYTHON.script());
    let output = UserDirs::new()
        .command(&["run", GOAL, "--dry-run"])
        .current_dir(root)
        .env("TOKAMAK_LLM_URL", model.url())
        .env("TOKAMAK_MODEL", "scripted")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let canonical = std::fs::canonicalize(root).unwrap();
    assert!(stderr.contains(&format!("tokamak trust {}`", canonical.display())), "{stderr}");
    assert!(!stderr.contains("tokamak-dry-run"), "{stderr}");
}

#[test]
fn a_step_that_breaks_the_syntax_is_repaired_inside_the_run() {
    let dir = PYTHON.project();
    let root = dir.path();
    let broken = block(
        PYTHON.method.0,
        "        return self.name.title()\n\n    def validate_email(self) -> bool:\n        return (\"@\" in self.email\n",
    );
    let model = ModelServer::start(vec![
        openai_chat("1. Add validate_email to User in user.py\n"),
        call("edit", json!({"path": "user.py", "blocks": broken})),
        call("done", json!({"summary": "added"})),
    ]);
    let mut options = PYTHON.options(&model);
    options.as_object_mut().unwrap().remove("test");
    let mut client = LspClient::editor_for_project(root, options);
    let started = command(&mut client, "tokamak.run", json!({"goal": "add validate_email"}));
    let run_id = started["run_id"].as_str().unwrap().to_string();
    let finished = client.wait_for("the run's end", |m| {
        m["method"] == "tokamak/runFinished" && m["params"]["run_id"] == run_id
    })["params"]
        .clone();
    assert_eq!(finished["exit_reason"], "done", "{finished}");
    // the fix loop's deterministic rung closed the bracket: no model call for it
    assert_eq!(model.requests().len(), 3);
    assert!(
        std::fs::read_to_string(root.join("user.py")).unwrap().contains("return (\"@\" in self.email)\n")
    );
    // the broken syntax is an error introduced: debugged, repaired, back to the code, reviewed
    assert_eq!(
        support::mode_trail(client.user.cache.path()),
        [
            "idle -plan_intent-> planning",
            "planning -plan_ready-> implementation",
            "implementation -code_complete-> qa",
            "qa -error_occurred-> debug",
            "debug -fix_identified-> implementation",
            "implementation -code_complete-> qa",
            "qa -approved-> idle",
        ]
    );
}

#[test]
fn a_step_that_introduces_a_type_error_is_repaired_by_the_fix_loop() {
    if !support::require_tools(&["mypy"]) {
        return;
    }
    let dir = PYTHON.project();
    let root = dir.path();
    let wrong = "        return self.name.title()\n\n    def validate_email(self) -> bool:\n        return len(self.email)\n";
    let model = ModelServer::start(vec![
        openai_chat("1. Add validate_email to User in user.py\n"),
        call("edit", json!({"path": "user.py", "blocks": block(PYTHON.method.0, wrong)})),
        call("done", json!({"summary": "added"})),
        // the fix loop's prompt, answered with a repair
        openai_chat(&block("        return len(self.email)\n", "        return \"@\" in self.email\n")),
    ]);
    let mut options = PYTHON.options(&model);
    options.as_object_mut().unwrap().remove("test");
    options["checkers"] = json!({"enable": ["mypy"]});
    let mut client = LspClient::editor_for_project(root, options);
    let started = command(&mut client, "tokamak.run", json!({"goal": "add validate_email"}));
    let run_id = started["run_id"].as_str().unwrap().to_string();
    let finished = client.wait_for("the run's end", |m| {
        m["method"] == "tokamak/runFinished" && m["params"]["run_id"] == run_id
    })["params"]
        .clone();
    assert_eq!(finished["exit_reason"], "done", "{finished}\n{}", client.stderr());
    let requests = model.requests();
    assert_eq!(requests.len(), 4, "the plan, two tool calls, one fix");
    let fix_prompt = requests[3].body["messages"].to_string();
    assert!(
        fix_prompt.contains("Incompatible return value type"),
        "the fix loop saw mypy's error: {fix_prompt}"
    );
    assert!(std::fs::read_to_string(root.join("user.py")).unwrap().contains("return \"@\" in self.email\n"));
    // the engine's phases, read from the modes: the type error repaired in debug is fixing
    let phases = support::phases(client.user.cache.path());
    assert!(phases.windows(2).any(|w| w == ["reflecting", "fixing"]), "{phases:?}");
}

fn audit_events(cache: &Path, event: &str) -> Vec<Value> {
    support::audit_events(cache, event)
}

#[test]
fn a_failing_step_fails_its_dependants_and_not_its_siblings() {
    let dir = PYTHON.project();
    let root = dir.path();
    let model = ModelServer::start(vec![
        openai_chat("1. Break things\n2. Build on them [depends: 1]\n3. Note it in NOTES.md\n"),
        support::model_server::error(500, "the model fell over"),
        call("create", json!({"path": "NOTES.md", "text": "notes\n"})),
        call("done", json!({"summary": "noted"})),
    ]);
    let mut options = PYTHON.options(&model);
    options.as_object_mut().unwrap().remove("test");
    options["plan"] = json!({"max_replans": 0});
    let mut client = LspClient::editor_for_project(root, options);
    let started = command(&mut client, "tokamak.run", json!({"goal": "three things"}));
    let run_id = started["run_id"].as_str().unwrap().to_string();
    let finished = client.wait_for("the run's end", |m| {
        m["method"] == "tokamak/runFinished" && m["params"]["run_id"] == run_id
    })["params"]
        .clone();
    assert_eq!(finished["exit_reason"], "failed", "{finished}");
    let summary = finished["summary"].as_str().unwrap();
    assert!(summary.starts_with("three things: 1 of 3 step(s) done"), "{summary}");
    let steps = statuses(&client);
    assert_eq!(steps[0].1.last().map(String::as_str), Some("✗ failed"), "{steps:?}");
    assert_eq!(steps[1].1, ["○ pending", "✗ failed"], "never run: {steps:?}");
    assert_eq!(steps[2].1.last().map(String::as_str), Some("✓ done"), "{steps:?}");
    assert_eq!(std::fs::read_to_string(root.join("NOTES.md")).unwrap(), "notes\n");
    assert!(audit_events(client.user.cache.path(), "mode_error").is_empty());
}

#[test]
fn a_failed_step_is_planned_again_and_the_new_plan_carried_out() {
    let dir = PYTHON.project();
    let root = dir.path();
    let model = ModelServer::start(vec![
        openai_chat("1. Break things\n2. Build on them [depends: 1]\n"),
        support::model_server::error(500, "the model fell over"),
        // the new plan for what is left
        openai_chat("1. Write NOTES.md instead\n"),
        call("create", json!({"path": "NOTES.md", "text": "notes\n"})),
        call("done", json!({"summary": "noted"})),
    ]);
    let mut options = PYTHON.options(&model);
    options.as_object_mut().unwrap().remove("test");
    options["plan"] = json!({"max_replans": 1});
    let mut client = LspClient::editor_for_project(root, options);
    let started = command(&mut client, "tokamak.run", json!({"goal": "two things"}));
    let run_id = started["run_id"].as_str().unwrap().to_string();
    let finished = client.wait_for("the run's end", |m| {
        m["method"] == "tokamak/runFinished" && m["params"]["run_id"] == run_id
    })["params"]
        .clone();
    assert_eq!(std::fs::read_to_string(root.join("NOTES.md")).unwrap_or_default(), "notes\n", "{finished}");
    let replanning = model.requests()[2].body["messages"].to_string();
    assert!(replanning.contains("did not work out") && replanning.contains("Break things"), "{replanning}");
    // planned, the step failed in implementation, planned again (through idle), carried out
    let trail = support::mode_trail(client.user.cache.path());
    assert_eq!(trail.iter().filter(|t| t.ends_with("-plan_intent-> planning")).count(), 2, "{trail:?}");
    assert!(trail.contains(&"implementation -done-> idle".to_string()), "{trail:?}");
    assert!(audit_events(client.user.cache.path(), "mode_error").is_empty(), "{trail:?}");
    // the new plan replaced what was left, and it was carried out; the failed steps stay
    // in the plan and the ending, marked as replaced
    assert_eq!(finished["exit_reason"], "done", "{finished}");
    let summary = finished["summary"].as_str().unwrap();
    assert!(summary.contains("all 1 step(s) done"), "{finished}");
    assert!(
        summary.contains("step 1 (Break things) failed") && summary.contains("and was replaced by r1.1"),
        "the failure is still told: {summary}"
    );
    let steps = statuses(&client);
    let ids: Vec<&str> = steps.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["1", "2", "r1.1"], "{steps:?}");
    assert_eq!(steps[0].1.last().map(String::as_str), Some("✗ failed"), "{steps:?}");
    assert_eq!(steps[2].1.last().map(String::as_str), Some("✓ done"), "{steps:?}");
    let last = client.seen(|m| m["method"] == "tokamak/planUpdated").pop().unwrap();
    assert_eq!(last["params"]["steps"][0]["replaced_by"], json!(["r1.1"]), "{last}");
    assert_eq!(finished["steps"][0]["status"], "failed", "{finished}");
    assert_eq!(finished["steps"][0]["replaced_by"], json!(["r1.1"]), "{finished}");
}

#[test]
fn a_cancel_stops_the_run_mid_step_and_leaves_a_checkpoint() {
    let dir = PYTHON.project();
    let root = dir.path();
    let model = ModelServer::start(vec![
        openai_chat("1. Change user.py\n2. Change it again [depends: 1]\n"),
        call("edit", json!({"path": "user.py", "blocks": block(PYTHON.method.0, PYTHON.method.1)})),
        Scripted::Delayed(Duration::from_secs(20), Box::new(call("done", json!({"summary": "too late"})))),
    ]);
    let mut options = PYTHON.options(&model);
    options.as_object_mut().unwrap().remove("test");
    let mut client = LspClient::editor_for_project(root, options);
    let started = command(&mut client, "tokamak.run", json!({"goal": "change things"}));
    let run_id = started["run_id"].as_str().unwrap().to_string();
    // the edit landed; the model is thinking about what comes next
    let deadline = std::time::Instant::now() + support::TIMEOUT;
    while !std::fs::read_to_string(root.join("user.py")).unwrap().contains("validate_email") {
        assert!(std::time::Instant::now() < deadline, "the edit never landed");
        std::thread::sleep(Duration::from_millis(20));
    }
    let cancelled = command(&mut client, "tokamak.cancel", json!({"run_id": run_id}));
    assert_eq!(cancelled["cancelled"], json!([run_id]));
    let finished = client.wait_for("the run's end", |m| {
        m["method"] == "tokamak/runFinished" && m["params"]["run_id"] == run_id
    })["params"]
        .clone();
    assert_eq!(finished["exit_reason"], "cancelled", "{finished}");
    let checkpoints = command(&mut client, "tokamak.checkpoints", json!({}));
    assert_eq!(checkpoints[0]["files"], json!(["user.py"]), "{checkpoints}");
}

fn code_actions(client: &mut LspClient, uri: &str, range: Value, trigger: u8) -> Vec<Value> {
    let response = client.request(
        "textDocument/codeAction",
        json!({"textDocument": {"uri": uri}, "range": range, "context": {"diagnostics": [], "triggerKind": trigger}}),
    );
    response["result"].as_array().cloned().unwrap_or_default()
}

fn titles(actions: &[Value]) -> Vec<&str> {
    actions.iter().map(|a| a["title"].as_str().unwrap()).collect()
}

#[test]
fn implement_with_tokamak_on_a_todo_comment_or_a_selection() {
    let dir = PYTHON.project();
    let root = dir.path();
    // a cursor in the TODO, and a selection of the method under it
    let marked = std::fs::read_to_string(root.join("user.py")).unwrap().replace(
        "    def display_name(self) -> str:\n        return self.name.title()\n",
        "    # TO$0DO(ada): add a validate_email method\n    # that checks for an @ and a dot\n$0    def display_name(self) -> str:\n        return self.name.title()\n$0",
    );
    let (source, marks) = support::cursors(&marked);
    let [todo, selection_start, selection_end] = marks[..] else { panic!("three cursors: {marks:?}") };
    std::fs::write(root.join("user.py"), &source).unwrap();
    let model = ModelServer::start(vec![
        openai_chat("1. Add validate_email to User in user.py\n"),
        call(
            "edit",
            json!({"path": "user.py", "blocks": block("    # TODO(ada): add a validate_email method\n    # that checks for an @ and a dot\n", "")}),
        ),
        call("done", json!({"summary": "done"})),
    ]);
    let mut options = PYTHON.options(&model);
    options.as_object_mut().unwrap().remove("test");
    let mut client = LspClient::editor_for_project(root, options);
    let uri = client.open_file(&root.join("user.py"), "python");
    // the light bulb on a plain line offers nothing of the agent; asked for, it offers a plan
    let plain = json!({"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}});
    assert!(titles(&code_actions(&mut client, &uri, plain.clone(), 2)).is_empty());
    assert_eq!(titles(&code_actions(&mut client, &uri, plain, 1)), ["Plan with Tokamak…"]);
    // a selection: implement it, with the lines it covers
    let selection = support::range(selection_start, selection_end);
    let actions = code_actions(&mut client, &uri, selection, 2);
    assert_eq!(titles(&actions), ["Implement with Tokamak", "Plan with Tokamak…"], "{actions:?}");
    let goal = actions[0]["command"]["arguments"][0]["goal"].as_str().unwrap();
    assert_eq!(goal, "Implement what the selected code in user.py (lines 13-14) declares or describes");
    assert_eq!(actions[1]["command"]["command"], "tokamak.askGoal");
    // a TODO under the cursor: its words, continuation included, are the goal
    let cursor = support::range(todo, todo);
    let actions = code_actions(&mut client, &uri, cursor, 2);
    assert_eq!(
        titles(&actions),
        [
            "Implement with Tokamak: TODO add a validate_email method that checks for an @ and a …",
            "Plan with Tokamak…"
        ],
        "{actions:?}"
    );
    assert_eq!(actions[0]["kind"], "refactor.tokamak");
    let run = &actions[0]["command"];
    assert_eq!(
        run["arguments"][0]["goal"],
        "add a validate_email method that checks for an @ and a dot (the TODO at user.py:11; remove the comment when it is done)"
    );
    // the action's command runs the task, the comment and its class in the planner's prompt
    let started = command(&mut client, run["command"].as_str().unwrap(), run["arguments"][0].clone());
    let run_id = started["run_id"].as_str().unwrap().to_string();
    let finished = client.wait_for("the run's end", |m| {
        m["method"] == "tokamak/runFinished" && m["params"]["run_id"] == run_id
    })["params"]
        .clone();
    assert_eq!(finished["exit_reason"], "done", "{finished}");
    let planning = model.requests()[0].body["messages"].to_string();
    assert!(planning.contains("The user selected lines 11-12 of user.py"), "{planning}");
    assert!(
        planning.contains("It is inside this definition") && planning.contains("class User:"),
        "{planning}"
    );
    assert!(!client.text(&uri).contains("TODO"), "{}", client.text(&uri));
    // an editor that cannot ask for a goal is told how to give one
    let response = client.request(
        "workspace/executeCommand",
        json!({"command": "tokamak.askGoal", "arguments": [{"uri": uri}]}),
    );
    assert!(
        response["error"]["message"].as_str().unwrap().contains(":lsp-workspace-command tokamak.run"),
        "{response}"
    );
}

#[test]
fn a_goal_as_a_string_and_implementing_the_last_plan() {
    let dir = PYTHON.project();
    let root = dir.path();
    let model = ModelServer::start(vec![
        openai_chat("1. Write NOTES.md\n"),
        call("create", json!({"path": "NOTES.md", "text": "notes\n"})),
        call("done", json!({"summary": "written"})),
    ]);
    let mut options = PYTHON.options(&model);
    options.as_object_mut().unwrap().remove("test");
    let mut client = LspClient::editor_for_project(root, options);
    // what Helix's `:lsp-workspace-command tokamak.plan "write notes"` sends
    let plan = command(&mut client, "tokamak.plan", json!("write notes"));
    assert_eq!(plan["goal"], "write notes");
    assert_eq!(plan["steps"][0]["title"], "Write NOTES.md", "{plan}");
    let response =
        client.request("workspace/executeCommand", json!({"command": "tokamak.run", "arguments": []}));
    assert!(
        response["error"]["message"].as_str().unwrap().contains("tokamak.run needs a goal"),
        "{response}"
    );
    // no plan id: the plan made last
    let response = client.request("workspace/executeCommand", json!({"command": "tokamak.implement"}));
    let run_id = response["result"]["run_id"].as_str().unwrap_or_else(|| panic!("{response}")).to_string();
    assert_eq!(response["result"]["plan_id"], plan["plan_id"]);
    let finished = client.wait_for("the run's end", |m| {
        m["method"] == "tokamak/runFinished" && m["params"]["run_id"] == run_id
    })["params"]
        .clone();
    assert_eq!(finished["exit_reason"], "done", "{finished}");
    assert_eq!(model.requests().len(), 3, "planned once");
    assert_eq!(std::fs::read_to_string(root.join("NOTES.md")).unwrap(), "notes\n");
    // and `tokamak.rollback` without an argument undoes the latest run
    let response = client.request("workspace/executeCommand", json!({"command": "tokamak.rollback"}));
    let rollback = response["result"]["run_id"].as_str().unwrap_or_else(|| panic!("{response}")).to_string();
    let finished = client.wait_for("the rollback", |m| {
        m["method"] == "tokamak/runFinished" && m["params"]["run_id"] == rollback
    })["params"]
        .clone();
    assert!(finished["summary"].as_str().unwrap().contains("1 file(s) restored (NOTES.md)"), "{finished}");
    assert!(!root.join("NOTES.md").exists());
}

#[test]
fn tokamak_plan_repairs_a_cycle_and_refuses_what_is_no_plan() {
    let dir = PYTHON.project();
    let root = dir.path();
    let user = UserDirs::new();
    let plan = |model: &ModelServer, format: &str| {
        user.command(&["plan", GOAL, "--format", format])
            .current_dir(root)
            .env("TOKAMAK_LLM_URL", model.url())
            .env("TOKAMAK_MODEL", "scripted")
            .output()
            .unwrap()
    };
    // a circle through a later step: the order it was written in decides
    let model = ModelServer::start(vec![openai_chat(
        "Here is the plan:\n1. Add the method [depends: 2]\n2. Test it [depends: 1]\n3. Document it [depends: 3]\n",
    )]);
    let output = plan(&model, "json");
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["goal"], GOAL);
    let depends: Vec<&Value> = json["steps"].as_array().unwrap().iter().map(|s| &s["depends_on"]).collect();
    assert_eq!(depends, [&json!([]), &json!(["1"]), &json!([])], "{json}");
    let repairs = json["repairs"].to_string();
    assert!(repairs.contains("later step") && repairs.contains("depended on itself"), "{repairs}");
    // the planning prompt had the project's files
    let prompt = model.requests()[0].body["messages"].to_string();
    assert!(prompt.contains("user.py") && prompt.contains("test_user.py"), "{prompt}");
    // text: the glyphs, and the repairs on stderr
    let model =
        ModelServer::start(vec![openai_chat("1. Add the method [depends: 2]\n2. Test it [depends: 1]\n")]);
    let output = plan(&model, "text");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("○ 1. Add the method\n○ 2. Test it [depends: 1]\n"), "{stdout}");
    assert!(String::from_utf8_lossy(&output.stderr).contains("repaired the plan"));
    // prose twice: asked once more, then refused in a sentence
    let model = ModelServer::start(vec![
        openai_chat("I would be happy to help with that!"),
        openai_chat("Sure, adding a method is easy."),
    ]);
    let output = plan(&model, "text");
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("the model's plan could not be used: the reply holds no plan"), "{stderr}");
    assert_eq!(model.requests().len(), 2);
    assert!(model.requests()[1].body["messages"].to_string().contains("Reply with the plan only"));
}

#[test]
fn the_same_state_a_third_time_across_rounds_ends_the_run() {
    let dir = PYTHON.project();
    let root = dir.path();
    let read = || call("read", json!({"path": "user.py"}));
    let done = || call("done", json!({"summary": "looked"}));
    // the tests never pass, and each round the model only reads the same file again
    let wrap_up = openai_chat("I read user.py three times; the tests still fail and nothing changed.");
    let model = ModelServer::start(vec![
        openai_chat("1. Look at user.py\n"),
        read(),
        done(),
        read(),
        done(),
        read(),
        wrap_up,
    ]);
    let user = UserDirs::trusting(&[root]);
    let output = user
        .command(&["run", "look", "--yes", "--test-command", "sh -c 'echo 1 failed; exit 1'"])
        .current_dir(root)
        .env("TOKAMAK_LLM_URL", model.url())
        .env("TOKAMAK_MODEL", "scripted")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("[repeated_state]"), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    // six to act, and the model's wrap-up of a run that stopped in a loop
    assert_eq!(model.requests().len(), 7);
    assert!(stdout.contains("The model's wrap-up, in its words: \"I read user.py three times"), "{stdout}");
    // the model heard why the round came back: the tests' output
    assert!(model.requests()[3].body["messages"].to_string().contains("1 failed"));
}
