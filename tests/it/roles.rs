//! Roles and modes as the model meets them (SPEC M1–M3): a run's steps are routed to a role
//! by their words (or the role asked for), and the executor — not the prompt — refuses what
//! the role or its mode may not do, telling the model the rule; the files stay as they were.
//! Headless with `tokamak run --role`, and over stdio with `tokamak.run {goal, role}`.

use crate::support;

use std::path::Path;

use serde_json::{Value, json};
use support::model_server::{ModelServer, Scripted, openai_chat};
use support::replies::{action, create, done, edit, told};
use support::{LspClient, UserDirs};

const APP: &str = "def total(items):\n    return sum(items)\n";
const GUIDE: &str = "# Guide\n\nCall total().\n";

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in
        [("src/app.py", APP), ("docs/guide.md", GUIDE), ("tokamak.toml", "[checkers]\nenable = []\n")]
    {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

/// `tokamak run GOAL [--role ROLE]`: the messages the model was sent after each of its replies.
fn run(root: &Path, model: &ModelServer, goal: &str, role: Option<&str>) -> (std::process::Output, UserDirs) {
    let user = UserDirs::new();
    let mut args = vec!["run", goal, "--yes", "--root"];
    let shown = root.display().to_string();
    args.push(&shown);
    if let Some(role) = role {
        args.extend(["--role", role]);
    }
    let output = user
        .command(&args)
        .env("TOKAMAK_LLM_URL", model.url())
        .env("TOKAMAK_MODEL", "scripted")
        .envs(support::tool_env())
        .output()
        .expect("tokamak runs");
    (output, user)
}

/// The audit log's lines of `event`.
fn audit(user: &UserDirs, event: &str) -> Vec<Value> {
    support::audit_events(user.cache.path(), event)
}

#[test]
fn a_reviewer_cannot_write_and_is_told_the_rule() {
    let dir = project();
    let root = dir.path();
    let model = ModelServer::start(vec![
        openai_chat("1. Review total() for edge cases\n"),
        action(json!({"action": "read", "path": "src/app.py"})),
        edit("src/app.py", "    return sum(items)", "    return sum(items or [])"),
        action(json!({"action": "run", "command": "rm -rf src"})),
        done("total() does not handle None: MAJOR, src/app.py:2"),
    ]);
    let (output, user) = run(root, &model, "src/app.py 리뷰해줘", None);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(std::fs::read_to_string(root.join("src/app.py")).unwrap(), APP, "the file is unchanged");
    assert!(root.join("src").is_dir());
    let told = told(&model);
    assert!(told[0].starts_with("Result of read"), "{told:#?}");
    assert!(
        told[1].starts_with("Refused of edit:\nRefused: the qa mode does not allow changing files"),
        "{}",
        told[1]
    );
    assert!(told[2].contains("the reviewer role may run only ruff, mypy, pytest"), "{}", told[2]);
    // the routing and the mode are in the audit log, and so are the refusals
    let roles = audit(&user, "role");
    assert_eq!(roles[0]["role"], "reviewer", "{roles:?}");
    assert_eq!(roles[0]["words"], json!(["리뷰"]));
    let modes = audit(&user, "mode");
    assert_eq!(modes[0]["to"], "planning", "{modes:?}");
    assert_eq!(modes[0]["phase"], "planning", "{modes:?}");
    assert_eq!(audit(&user, "refused").len(), 2);
    // planned, started in review, approved, done: nothing written, no other mode entered
    assert_eq!(
        support::mode_trail(user.cache.path()),
        [
            "idle -plan_intent-> planning",
            "planning -done-> idle",
            "idle -review_intent-> qa",
            "qa -approved-> idle"
        ]
    );
    // the engine's phases, read from the modes (SPEC P1)
    let phases: Vec<&str> = modes.iter().filter_map(|m| m["phase"].as_str()).collect();
    assert_eq!(phases, ["planning", "idle", "reflecting", "idle"]);
}

/// "리팩토링해줘": the coder acts, and the machine starts in refactor (seed 000's intents),
/// whose edits done lead to review (no test command here) and the end.
#[test]
fn a_refactoring_starts_in_the_refactor_mode() {
    let dir = project();
    let root = dir.path();
    let model = ModelServer::start(vec![
        openai_chat("1. total 함수를 리팩토링해줘\n"),
        edit("src/app.py", "    return sum(items)", "    return sum(item for item in items)"),
        done("refactored"),
    ]);
    let (output, user) = run(root, &model, "total 함수를 리팩토링해줘", None);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(std::fs::read_to_string(root.join("src/app.py")).unwrap().contains("item for item"));
    // the goal's routing, then the step's, with the intent that chose where it starts
    let roles = audit(&user, "role");
    let step = roles.iter().find(|r| r.get("mode").is_some()).unwrap();
    assert_eq!((&step["role"], &step["intent"]), (&json!("coder"), &json!(["리팩토링"])), "{roles:?}");
    assert_eq!(
        support::mode_trail(user.cache.path()),
        [
            "idle -plan_intent-> planning",
            "planning -done-> idle",
            "idle -refactor_intent-> refactor",
            "refactor -refactor_complete-> qa",
            "qa -approved-> idle"
        ]
    );
    // the transitions are in the run's progress lines
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("refactor → qa (refactor complete)")
            || stderr.contains("refactor → qa (refactor complete)"),
        "{stdout}\n{stderr}"
    );
}

#[test]
fn a_documenter_writes_documentation_only() {
    let dir = project();
    let root = dir.path();
    let model = ModelServer::start(vec![
        openai_chat("1. Document total in the guide\n"),
        edit("src/app.py", "def total(items):", "def total(items):\n    \"\"\"The sum.\"\"\""),
        edit("docs/guide.md", "Call total().", "Call total(items) for the sum of items."),
        create("README.md", "# App"),
        done("documented"),
    ]);
    let (output, _user) = run(root, &model, "total 함수 문서 업데이트", None);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let told = told(&model);
    assert!(
        told[0].contains(
            "the documenter role may write only docs/**, **/*.md, **/*.rst, *.md, *.rst, not src/app.py"
        ),
        "{}",
        told[0]
    );
    assert!(told[1].starts_with("Result of edit"), "{}", told[1]);
    assert!(told[2].starts_with("Result of create"), "{}", told[2]);
    assert_eq!(std::fs::read_to_string(root.join("src/app.py")).unwrap(), APP);
    assert!(std::fs::read_to_string(root.join("docs/guide.md")).unwrap().contains("for the sum of items"));
    assert!(root.join("README.md").is_file());
}

#[test]
fn an_architect_writes_under_docs_architecture_only_even_when_asked_for_by_name() {
    let dir = project();
    let root = dir.path();
    let model = ModelServer::start(vec![
        openai_chat("1. Describe the modules\n"),
        create("docs/guide.md", "# Replaced"),
        create("docs/architecture/modules.md", "# Modules\n\nsrc/app.py sums."),
        done("the module map is written"),
    ]);
    // the goal's words would route to the coder; the role asked for wins
    let (output, user) = run(root, &model, "Implement nothing, just map the code", Some("architect"));
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let told = told(&model);
    assert!(
        told[0].contains("the architect role may write only docs/architecture/**, not docs/guide.md"),
        "{}",
        told[0]
    );
    assert!(told[1].starts_with("Result of create"), "{}", told[1]);
    assert_eq!(std::fs::read_to_string(root.join("docs/guide.md")).unwrap(), GUIDE);
    assert!(root.join("docs/architecture/modules.md").is_file());
    let roles = audit(&user, "role");
    assert_eq!((roles[0]["role"].as_str(), roles[0]["explicit"].as_bool()), (Some("architect"), Some(true)));
    // the step's instructions are the architect's; the system message is the one every step
    // shares (with the tools, the prefix a server's prompt cache keeps across steps)
    let messages = model.requests()[1].body["messages"].clone();
    let system = messages[0]["content"].as_str().unwrap_or_default();
    assert!(system.starts_with("You are Tokamak, a careful coding agent"), "{system}");
    let first = messages[1]["content"].as_str().unwrap_or_default();
    assert!(first.contains("Your role in this step: You are the architect."), "{first}");
    // an unknown role is refused before anything runs
    let model = ModelServer::start(vec![]);
    let (output, _) = run(root, &model, "anything", Some("pilot"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains(
            "there is no role \"pilot\"; the roles are architect, coder, documenter, reviewer, tester"
        ),
        "{stdout}"
    );
    assert!(model.requests().is_empty());
}

/// Over stdio: `tokamak.run {goal, role}`, a workspace's own role file (trusted folder) with
/// its own model, and the plan and the status showing each step's role and mode.
#[test]
fn roles_over_stdio_with_a_workspace_role_file() {
    let dir = project();
    let root = dir.path();
    std::fs::create_dir_all(root.join(".tokamak/agents")).unwrap();
    std::fs::write(
        root.join(".tokamak/agents/translator.md"),
        "---\ndescription: Translates messages\nmodel: translator-model\nallowed_actions: [read, list, search, create, edit]\nwrite_paths: [\"locales/**\"]\n---\nYou translate the user-facing messages.\n",
    )
    .unwrap();
    let model = ModelServer::start(vec![
        openai_chat("1. Translate the greeting\n"),
        // slow enough for the status to show the step's role and mode meanwhile
        Scripted::Delayed(
            std::time::Duration::from_millis(1500),
            Box::new(edit("src/app.py", "    return sum(items)", "    return sum(items)  # 합계")),
        ),
        create("locales/ko.json", "{\"total\": \"합계\"}"),
        done("translated"),
    ]);
    let options = json!({"model": {"base_url": model.url(), "model": "scripted", "max_retries": 0}, "checkers": {"enable": []}});
    let mut client = LspClient::editor_for_project(root, options);
    let response = client.request(
        "workspace/executeCommand",
        json!({"command": "tokamak.run", "arguments": [{"goal": "translate the messages to Korean", "role": "translator"}]}),
    );
    assert!(response.get("error").is_none(), "{response}");
    let run_id = response["result"]["run_id"].as_str().unwrap().to_string();
    // the mode shows in the step's progress and in the status
    client.wait_for("the step's progress", |m| {
        m["method"] == "$/progress"
            && m["params"]["value"]["message"]
                .as_str()
                .is_some_and(|t| t.contains("(translator, implementation"))
    });
    let status =
        client.request("workspace/executeCommand", json!({"command": "tokamak.status", "arguments": [{}]}));
    assert_eq!(status["result"]["runs"][0]["mode"], "translator, implementation (asked for)", "{status}");
    let finished = client.wait_for("the run's end", |m| {
        m["method"] == "tokamak/runFinished" && m["params"]["run_id"] == run_id
    })["params"]
        .clone();
    assert_eq!(finished["exit_reason"], "done", "{finished}");
    assert_eq!(std::fs::read_to_string(root.join("src/app.py")).unwrap(), APP);
    assert!(root.join("locales/ko.json").is_file());
    let told = told(&model);
    assert!(told[0].contains("the translator role may write only locales/**, not src/app.py"), "{}", told[0]);
    // the role file's model serves its steps; the plan was made with the run's
    let requests = model.requests();
    assert_eq!(requests[0].body["model"], "scripted");
    assert_eq!(requests[1].body["model"], "translator-model");
    let plans = client.seen(|m| m["method"] == "tokamak/planUpdated");
    let last = &plans.last().unwrap()["params"];
    assert_eq!(last["steps"][0]["role"], "translator, implementation (asked for)", "{last}");
}
