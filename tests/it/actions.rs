//! The executor's actions as a user meets them headless: `tokamak run` on a temporary
//! project, the scripted model choosing one action per reply (the text protocol), the real
//! file system, git and bwrap. What the model asks for is untrusted: paths stay in the
//! workspace, commands are gated, nothing outside changes.

use crate::support;

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};
use support::UserDirs;
use support::model_server::{ModelServer, Scripted, openai_chat};

const KEY: &str = "sk-test-never-in-a-log-0123456789";

/// A reply asking for one action.
fn action(value: Value) -> Scripted {
    openai_chat(&format!("I will do this next.\n```json\n{value}\n```\n"))
}

/// A reply asking for an action followed by raw text (SEARCH/REPLACE blocks, a code block).
fn action_with(value: Value, after: &str) -> Scripted {
    openai_chat(&format!("```json\n{value}\n```\n{after}"))
}

/// The planner's reply: one step.
fn plan() -> Scripted {
    openai_chat("1. Carry out the task\n")
}

fn done(summary: &str) -> Scripted {
    action(json!({"action": "done", "summary": summary}))
}

/// A project folder with a git repository holding `files`, committed.
fn project(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    for (name, content) in files {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("folders");
        std::fs::write(path, content).expect("write");
    }
    // the checkers are not what these tests are about
    std::fs::write(dir.path().join("tokamak.toml"), "[checkers]\nenable = []\n").expect("settings");
    git(dir.path(), &["init", "-q"]);
    git(dir.path(), &["add", "-A"]);
    git(dir.path(), &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start"]);
    dir
}

fn git(dir: &Path, args: &[&str]) -> String {
    let output = std::process::Command::new("git").args(args).current_dir(dir).output().expect("git");
    assert!(output.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// `tokamak run GOAL` in `root` against `model`, as `user`.
fn run(user: &UserDirs, root: &Path, model: &ModelServer, goal: &str) -> Output {
    user.command(&["run", goal, "--yes", "--root", &root.display().to_string()])
        .current_dir(root)
        .env("TOKAMAK_LLM_URL", model.url())
        .env("TOKAMAK_MODEL", "scripted")
        .env("OPENAI_API_KEY", KEY)
        .env_remove("ANTHROPIC_API_KEY")
        .envs(support::tool_env())
        .output()
        .expect("run tokamak")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// What the model was told after each of its replies (the last user message of each request
/// after the first).
fn results(model: &ModelServer) -> Vec<String> {
    model
        .requests()
        .iter()
        .filter_map(|r| {
            let last = r.body["messages"].as_array().and_then(|m| m.last()).cloned().unwrap_or_default();
            let content = last["content"].as_str().unwrap_or_default().to_string();
            let feedback = ["Result of", "Refused of", "Error:"].iter().any(|p| content.starts_with(p));
            (last["role"] == "tool" || feedback).then_some(content)
        })
        .collect()
}

/// Every line of every audit log of the user's cache.
fn audit_lines(user: &UserDirs) -> Vec<Value> {
    let mut lines = Vec::new();
    for entry in walk(user.cache.path()) {
        if entry.extension().is_some_and(|e| e == "jsonl") {
            let text = std::fs::read_to_string(&entry).expect("audit log");
            assert!(!text.contains(KEY), "the key is in the audit log {}", entry.display());
            lines.extend(text.lines().map(|l| serde_json::from_str::<Value>(l).expect("a JSON line")));
        }
    }
    lines
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn every_file_action_works_headless_and_the_model_sees_each_result() {
    let dir = project(&[
        ("src/app.py", "def login(user):\n    return user\n"),
        ("src/old.py", "OLD = 1\n"),
        ("src/moved.py", "MOVED = 1\n"),
        ("README.md", "# app\n"),
    ]);
    let root = dir.path();
    let model = ModelServer::start(vec![
        plan(),
        action(json!({"action": "list", "dir": "src"})),
        action(json!({"action": "search", "pattern": "def login"})),
        action(json!({"action": "read", "path": "src/app.py", "lines": "1-1"})),
        action_with(
            json!({"action": "edit", "path": "src/app.py"}),
            "<<<<<<< SEARCH\n    return user\n=======\n    return user.strip()\n>>>>>>> REPLACE\n",
        ),
        action_with(
            json!({"action": "create", "path": "tests/test_app.py"}),
            "```python\ndef test_login():\n    pass\n```\n",
        ),
        action(json!({"action": "rename", "from": "src/moved.py", "to": "src/renamed.py"})),
        action(json!({"action": "delete", "path": "src/old.py"})),
        done("login strips the user name"),
    ]);
    let user = UserDirs::new();
    let output = run(&user, root, &model, "make login strip the name");
    let stdout = text(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "stdout:\n{stdout}\nstderr:\n{}", text(&output.stderr));
    assert_eq!(
        std::fs::read_to_string(root.join("src/app.py")).unwrap(),
        "def login(user):\n    return user.strip()\n"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("tests/test_app.py")).unwrap(),
        "def test_login():\n    pass\n"
    );
    assert!(!root.join("src/moved.py").exists() && root.join("src/renamed.py").is_file());
    assert!(!root.join("src/old.py").exists());
    // the diff at the end, and the exit reason
    assert!(
        stdout.contains("+    return user.strip()") && stdout.contains("+++ b/tests/test_app.py"),
        "{stdout}"
    );
    assert!(stdout.contains("--- a/src/old.py\n+++ /dev/null"), "{stdout}");
    assert!(stdout.contains("[done] make login strip the name: all 1 step(s) done."), "{stdout}");
    // one id everywhere: the run's, as `tokamak checkpoints` lists it first
    let undo = stdout.split("Undo with tokamak rollback ").nth(1).unwrap_or_else(|| panic!("{stdout}"));
    assert!(undo.starts_with("tokamak-run-"), "{stdout}");

    let told = results(&model);
    assert_eq!(told.len(), 7, "{told:#?}");
    assert!(told[0].contains("app.py") && told[0].contains("old.py"), "list: {}", told[0]);
    assert!(told[1].contains("src/app.py:1: def login(user):"), "search: {}", told[1]);
    assert!(
        told[2].contains("src/app.py lines 1-1 of 2") && !told[2].contains("return user"),
        "read: {}",
        told[2]
    );
    assert!(told[3].contains("edited src/app.py (+1 -1 lines)"), "edit: {}", told[3]);
    assert!(told[4].contains("created tests/test_app.py"), "create: {}", told[4]);
    assert!(told[5].contains("moved src/moved.py to src/renamed.py"), "rename: {}", told[5]);
    assert!(told[6].contains("deleted src/old.py"), "delete: {}", told[6]);

    // the audit log has the phases of the run: start, checkpoint, each action, exit
    let lines = audit_lines(&user);
    let events: Vec<&str> = lines.iter().filter_map(|l| l["event"].as_str()).collect();
    assert_eq!(events.first(), Some(&"start"));
    assert_eq!(events.last(), Some(&"exit"));
    assert_eq!(events.iter().filter(|e| **e == "action").count(), 7, "{events:?}");
    // the engine's phases, read from the modes the run went through (SPEC P1)
    let phases: Vec<&str> =
        lines.iter().filter(|l| l["event"] == "mode").filter_map(|l| l["phase"].as_str()).collect();
    assert_eq!(phases, ["planning", "executing", "reflecting", "idle"], "{events:?}");
    assert!(!events.contains(&"mode_error"), "{events:?}");
    let prompts: Vec<&Value> = lines.iter().filter(|l| l["event"] == "prompt").collect();
    assert_eq!(prompts.len(), 8, "one per model call");
    assert_eq!(
        (prompts[0]["prompt_tokens"].as_u64(), prompts[0]["completion_tokens"].as_u64()),
        (Some(21), Some(7))
    );
    let edit =
        lines.iter().find(|l| l["event"] == "edit" && l["path"] == "src/app.py").expect("an edit line");
    assert_eq!((edit["added"].as_u64(), edit["removed"].as_u64()), (Some(1), Some(1)));
    let create = lines.iter().find(|l| l["action"] == "create").expect("the create action");
    assert_eq!(create["arguments"]["text"], "[27 bytes, 2 lines]", "long text is not logged: {create}");
}

#[test]
fn what_the_model_must_not_do_is_refused_and_the_run_goes_on() {
    let outside = tempfile::tempdir().expect("temp dir");
    let dir = project(&[("app.py", "x = 1\n")]);
    let root = dir.path();
    std::os::unix::fs::symlink(outside.path(), root.join("elsewhere")).expect("symlink");
    let model = ModelServer::start(vec![
        plan(),
        action(json!({"action": "read", "path": "/etc/passwd"})),
        action_with(json!({"action": "create", "path": "../x.py"}), "```\nx\n```\n"),
        action_with(json!({"action": "create", "path": "elsewhere/y.py"}), "```\ny\n```\n"),
        action(json!({"action": "run", "command": "curl -s http://example.com"})),
        action(json!({"action": "delete", "path": "."})),
        action_with(
            json!({"action": "edit", "path": ".git/config"}),
            "<<<<<<< SEARCH\n[core]\n=======\n[core]\n\thooksPath = /tmp\n>>>>>>> REPLACE\n",
        ),
        action(json!({"action": "fly", "to": "the moon"})),
        // an action it tried to write and broke: not a final answer
        openai_chat("```json\n{\"action\": \"read\", \"path\": }\n```"),
        action(json!({"action": "read", "path": "app.py"})),
        done("gave up on the forbidden things"),
    ]);
    let user = UserDirs::new();
    let head_before = std::fs::read(root.join(".git/config")).unwrap();
    let output = run(&user, root, &model, "do forbidden things");
    // every change it asked for was refused: the step changed nothing and is not done
    assert_eq!(output.status.code(), Some(1), "{}\n{}", text(&output.stdout), text(&output.stderr));
    let printed = text(&output.stdout);
    assert!(
        printed.contains("[failed]")
            && printed.contains("0 of 1 step(s) done")
            && printed.contains("nothing changed"),
        "{printed}"
    );
    let told = results(&model);
    let expected = [
        "outside the workspace",
        "`..` leads outside",
        "symbolic link",
        "not on the allow-list",
        "the workspace root itself",
        "inside .git",
        "there is no action \"fly\"",
        "called no tool",
        "x = 1",
    ];
    assert_eq!(told.len(), expected.len(), "{told:#?}");
    for (said, part) in told.iter().zip(expected) {
        assert!(said.contains(part), "expected {part:?} in {said}");
    }
    assert!(told[3].contains("not trusted"), "an untrusted folder says why: {}", told[3]);
    assert!(!dir.path().parent().unwrap().join("x.py").exists());
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0, "nothing written outside");
    assert!(root.join("app.py").is_file());
    assert_eq!(std::fs::read(root.join(".git/config")).unwrap(), head_before);
    let refused =
        audit_lines(&user).into_iter().filter(|l| l["event"] == "action" && l["ok"] == false).count();
    assert_eq!(refused, 6, "every refused action is audited");
}

#[test]
fn limits_end_the_run_and_name_their_setting() {
    let dir = project(&[("a.py", "a = 1\n"), ("b.py", "b = 1\n")]);
    let model = ModelServer::start(vec![
        plan(),
        action(json!({"action": "read", "path": "a.py"})),
        action(json!({"action": "read", "path": "b.py"})),
        action(json!({"action": "read", "path": "a.py", "lines": "1-1"})),
        done("never reached"),
    ]);
    let user = UserDirs::new();
    user.write_settings("[limits]\ntool_calls = 2\n");
    let output = run(&user, dir.path(), &model, "read everything");
    let stdout = text(&output.stdout);
    assert_eq!(output.status.code(), Some(1));
    assert!(stdout.contains("[tool_call_limit] stopped at 2 actions (limits.tool_calls)"), "{stdout}");

    // a model that repeats itself on an unchanged state
    let model = ModelServer::start(vec![
        plan(),
        action(json!({"action": "search", "pattern": "nothing-here"})),
        action(json!({"action": "search", "pattern": "nothing-here"})),
        action(json!({"action": "search", "pattern": "nothing-here"})),
        done("never reached"),
    ]);
    let output = run(&UserDirs::new(), dir.path(), &model, "look");
    assert!(text(&output.stdout).contains("[repeated_state]"), "{}", text(&output.stdout));

    // changes to files
    let edit = |n: u32| {
        action_with(
            json!({"action": "edit", "path": "a.py"}),
            &format!("<<<<<<< SEARCH\na = {n}\n=======\na = {}\n>>>>>>> REPLACE\n", n + 1),
        )
    };
    let model = ModelServer::start(vec![plan(), edit(1), edit(2), edit(3), done("never reached")]);
    let user = UserDirs::new();
    user.write_settings("[limits]\nrevisions = 2\n");
    let output = run(&user, dir.path(), &model, "count up");
    assert!(
        text(&output.stdout).contains("[revision_limit] stopped at 2 changes to files (limits.revisions)")
    );
    assert_eq!(std::fs::read_to_string(dir.path().join("a.py")).unwrap(), "a = 3\n");
}

#[test]
fn checkpoints_roll_a_run_back_byte_for_byte_and_leave_the_projects_git_alone() {
    let dir = project(&[("app.py", "x = 1\r\ny = 'é'\n"), ("keep.txt", "keep\n"), ("gone.py", "G = 1\n")]);
    let root = dir.path();
    std::fs::write(root.join(".gitignore"), "ignored/\n").unwrap();
    std::fs::create_dir_all(root.join("ignored")).unwrap();
    std::fs::write(root.join("ignored/big.log"), "log\n").unwrap();
    let git_state = |root: &Path| {
        let read = |p: &str| std::fs::read(root.join(".git").join(p)).unwrap_or_default();
        (
            read("HEAD"),
            read("index"),
            read("config"),
            git(root, &["show-ref"]),
            git(root, &["status", "--porcelain"]),
        )
    };
    let before = git_state(root);
    let original = std::fs::read(root.join("app.py")).unwrap();
    let model = ModelServer::start(vec![
        plan(),
        action_with(
            json!({"action": "edit", "path": "app.py"}),
            "<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n",
        ),
        action_with(json!({"action": "create", "path": "new.py"}), "```\nNEW = 1\n```\n"),
        action(json!({"action": "delete", "path": "gone.py"})),
        done("changed three files"),
    ]);
    let user = UserDirs::new();
    let output = run(&user, root, &model, "change things");
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(std::fs::read(root.join("app.py")).unwrap(), b"x = 2\r\ny = '\xc3\xa9'\n", "CRLF kept");

    let listed = user.command(&["checkpoints", "--format", "json"]).current_dir(root).output().unwrap();
    let list: Value = serde_json::from_slice(&listed.stdout).expect("JSON");
    assert_eq!(list.as_array().map(Vec::len), Some(1), "{list}");
    let checkpoint = &list[0];
    for key in ["id", "run_id", "time", "goal", "files"] {
        assert!(checkpoint.get(key).is_some(), "{key} missing: {checkpoint}");
    }
    assert_eq!(checkpoint["files"], json!(["app.py", "gone.py", "new.py"]));
    assert_eq!(checkpoint["goal"], "change things");
    let id = checkpoint["id"].as_str().unwrap().to_string();
    let shadow = walk(user.cache.path()).into_iter().any(|p| p.ends_with("checkpoints.git/HEAD"));
    assert!(shadow, "the shadow repository lives in the cache");

    // the user edits a file the run changed: the rollback refuses, naming it
    std::fs::write(root.join("new.py"), "NEW = 'mine'\n").unwrap();
    let refused = user.command(&["rollback", &id]).current_dir(root).output().unwrap();
    assert_eq!(refused.status.code(), Some(1));
    assert!(text(&refused.stderr).contains("new.py changed after the run"), "{}", text(&refused.stderr));
    assert!(
        text(&refused.stderr).contains(&format!("tokamak rollback {id} --force")),
        "the flag that does it, by name: {}",
        text(&refused.stderr)
    );
    assert_eq!(std::fs::read_to_string(root.join("new.py")).unwrap(), "NEW = 'mine'\n", "nothing restored");

    let forced = user.command(&["rollback", &id, "--force"]).current_dir(root).output().unwrap();
    assert_eq!(forced.status.code(), Some(0), "{}", text(&forced.stderr));
    assert_eq!(std::fs::read(root.join("app.py")).unwrap(), original, "byte for byte");
    assert_eq!(std::fs::read_to_string(root.join("gone.py")).unwrap(), "G = 1\n");
    assert!(!root.join("new.py").exists());
    assert_eq!(std::fs::read_to_string(root.join("keep.txt")).unwrap(), "keep\n");
    assert_eq!(git_state(root), before, "the project's .git and status are as they were");

    // the rollback is a run of its own: undoing it brings the run's changes back
    let undo = text(&forced.stdout)
        .lines()
        .last()
        .and_then(|l| l.split("tokamak rollback ").nth(1))
        .map(str::to_string);
    let undo = undo.expect("the rollback says how to undo it");
    let redo = user.command(&["rollback", &undo]).current_dir(root).output().unwrap();
    assert_eq!(redo.status.code(), Some(0), "{}", text(&redo.stderr));
    assert!(std::fs::read_to_string(root.join("app.py")).unwrap().starts_with("x = 2"));
    assert!(!root.join("gone.py").exists());
}

#[test]
fn old_checkpoints_are_pruned() {
    let dir = project(&[("a.py", "a = 0\n")]);
    let user = UserDirs::new();
    user.write_settings("[checkpoints]\nkeep_runs = 2\n");
    for n in 0..3 {
        let model = ModelServer::start(vec![
            plan(),
            action_with(
                json!({"action": "edit", "path": "a.py"}),
                &format!("<<<<<<< SEARCH\na = {n}\n=======\na = {}\n>>>>>>> REPLACE\n", n + 1),
            ),
            done("counted"),
        ]);
        let output = run(&user, dir.path(), &model, &format!("count {n}"));
        assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    }
    // pruning runs after each run ends; the third run's pruning may still be going on
    let deadline = std::time::Instant::now() + support::TIMEOUT;
    loop {
        let listed =
            user.command(&["checkpoints", "--format", "json"]).current_dir(dir.path()).output().unwrap();
        let list: Value = serde_json::from_slice(&listed.stdout).expect("JSON");
        let goals: Vec<&str> = list.as_array().unwrap().iter().filter_map(|c| c["goal"].as_str()).collect();
        if goals == ["count 2", "count 1"] {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "never pruned: {goals:?}");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let logs =
        walk(user.cache.path()).into_iter().filter(|p| p.extension().is_some_and(|e| e == "jsonl")).count();
    assert!(logs <= 3, "audit logs are pruned with them ({logs})");
}

#[test]
fn git_commit_commits_only_the_runs_files_and_only_when_allowed() {
    let dir = project(&[("app.py", "x = 1\n"), ("other.py", "o = 1\n")]);
    let root = dir.path();
    // the user's own uncommitted change, which the run must not commit
    std::fs::write(root.join("other.py"), "o = 2\n").unwrap();
    let script = || {
        vec![
            plan(),
            action_with(
                json!({"action": "edit", "path": "app.py"}),
                "<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n",
            ),
            action_with(json!({"action": "create", "path": "new.py"}), "```\nN = 1\n```\n"),
            action(json!({"action": "git_commit", "message": "Bump x"})),
            done("committed"),
        ]
    };
    // not allowed: refused, nothing committed
    let model = ModelServer::start(script());
    let output = run(&UserDirs::new(), root, &model, "bump x");
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(results(&model)[2].contains("need the user's approval or auto_commit"), "{:?}", results(&model));
    assert_eq!(git(root, &["log", "--format=%s"]).trim(), "start");

    git(root, &["checkout", "--", "app.py"]);
    std::fs::remove_file(root.join("new.py")).unwrap();
    let model = ModelServer::start(script());
    let user = UserDirs::trusting_with(&[root], "auto_commit = true\n");
    let output = run(&user, root, &model, "bump x");
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(results(&model)[2].contains("committed 2 file(s)"), "{:?}", results(&model));
    assert_eq!(git(root, &["log", "--format=%s"]).trim(), "Bump x\nstart");
    assert_eq!(git(root, &["show", "--name-only", "--format=", "HEAD"]).trim(), "app.py\nnew.py");
    assert_eq!(git(root, &["status", "--porcelain"]).trim(), "M other.py", "the user's change is left alone");
}

#[test]
fn native_tool_calls_drive_a_run_in_every_provider_format() {
    use support::model_server::{
        anthropic_message, anthropic_tool_use, ollama_chat, ollama_tool_calls, openai_tool_calls,
    };
    for provider in ["openai", "anthropic", "ollama"] {
        let dir = project(&[("app.py", "x = 1\n")]);
        let calls = |name: &str, args: Value| -> Scripted {
            let call = [(name, args)];
            match provider {
                "openai" => openai_tool_calls("", &call),
                "anthropic" => anthropic_tool_use("", &call),
                _ => ollama_tool_calls(&call),
            }
        };
        let model = ModelServer::start(vec![
            match provider {
                "openai" => plan(),
                "anthropic" => anthropic_message("1. Make x 2\n"),
                _ => ollama_chat("1. Make x 2\n"),
            },
            calls("read", json!({"path": "app.py"})),
            calls(
                "edit",
                json!({"path": "app.py", "blocks": "<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n"}),
            ),
            calls("read", json!({"path": "../outside.py"})),
            calls("edit", json!({"path": 7})),
            calls("teleport", json!({"to": "mars"})),
            calls("done", json!({"summary": "x is 2"})),
        ]);
        let user = UserDirs::new();
        let output = user
            .command(&[
                "run",
                "make x 2",
                "--yes",
                "--provider",
                provider,
                "--model-url",
                &model.url(),
                "--model",
                "scripted",
            ])
            .current_dir(dir.path())
            .env("ANTHROPIC_API_KEY", KEY)
            .output()
            .unwrap();
        let stdout = text(&output.stdout);
        assert_eq!(output.status.code(), Some(0), "{provider}: {stdout}{}", text(&output.stderr));
        assert!(stdout.contains("[done] make x 2: all 1 step(s) done."), "{provider}: {stdout}");
        assert_eq!(std::fs::read_to_string(dir.path().join("app.py")).unwrap(), "x = 2\n", "{provider}");
        let requests = model.requests();
        assert_eq!(requests.len(), 7, "{provider}: the plan, then six tool calls");
        let sent = requests[6].body["messages"].to_string();
        assert!(sent.contains("edited app.py (+1 -1 lines)"), "{provider}: the results went back: {sent}");
        assert!(sent.contains("`..` leads outside"), "{provider}: a refusal is a tool result");
        assert!(sent.contains("bad arguments for edit"), "{provider}: malformed arguments are a tool result");
        assert!(
            sent.contains("there is no action \\\"teleport\\\""),
            "{provider}: an unknown tool is a tool result: {sent}"
        );
        assert!(requests[0].body.get("tools").is_none(), "{provider}: no tools for planning");
        assert!(!requests[1].body["tools"].as_array().unwrap().is_empty(), "{provider}: tools offered");
    }
}

#[test]
fn a_server_that_refuses_tools_gets_the_text_protocol_and_the_user_is_told() {
    let dir = project(&[("app.py", "x = 1\n")]);
    let model = ModelServer::start(vec![
        plan(),
        support::model_server::error(400, "tools param requires --jinja flag"),
        action(json!({"action": "read", "path": "app.py"})),
        done("read it"),
    ]);
    let output = run(&UserDirs::new(), dir.path(), &model, "read the app");
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let stderr = text(&output.stderr);
    assert_eq!(stderr.matches("refused tool calls").count(), 1, "{stderr}");
    let requests = model.requests();
    assert!(requests[1].body.get("tools").is_some());
    assert!(requests[2].body.get("tools").is_none(), "the text protocol from then on");
    assert!(
        requests[2].body["messages"][0]["content"].as_str().unwrap().contains("```json"),
        "it is explained"
    );
}

#[test]
fn navigation_actions_answer_from_the_index_and_follow_the_runs_own_edits() {
    let dir = project(&[
        ("app/__init__.py", ""),
        (
            "app/auth.py",
            "from .models import User\n\n\ndef login(name, password):\n    user = User(name)\n    return check_password(user, password)\n\n\ndef check_password(user, password):\n    return user.password == password\n",
        ),
        (
            "app/models.py",
            "class User:\n    def __init__(self, name):\n        self.name = name\n\n    def validate_email(self):\n        return '@' in self.name\n",
        ),
        (
            "app/views.py",
            "from app.auth import login\n\n\ndef login_view(request):\n    return login(request.name, request.password)\n",
        ),
        ("app/cookies.py", "def set_cookie(response, value):\n    response.headers['Set-Cookie'] = value\n"),
    ]);
    let root = dir.path();
    let model = ModelServer::start(vec![
        plan(),
        action(json!({"action": "symbols", "query": "ValidateEmail"})),
        action(json!({"action": "definition", "name": "check_password"})),
        action(json!({"action": "callers", "name": "check_password", "depth": 3})),
        action(json!({"action": "importers", "module": "app/models.py"})),
        action(json!({"action": "locate", "query": "쿠키 설정은 어디서 해?"})),
        action_with(
            json!({"action": "edit", "path": "app/auth.py"}),
            "<<<<<<< SEARCH\n    return check_password(user, password)\n=======\n    return verify_password(user, password)\n>>>>>>> REPLACE\n",
        ),
        action(json!({"action": "callers", "name": "verify_password"})),
        action(json!({"action": "definition", "name": "nowhere_at_all"})),
        done("looked around"),
    ]);
    let user = UserDirs::new();
    let output = run(&user, root, &model, "find your way around");
    assert_eq!(output.status.code(), Some(0), "stderr:\n{}", text(&output.stderr));
    let told = results(&model);
    assert_eq!(told.len(), 8, "{told:#?}");
    assert!(told[0].contains("app/models.py:5 method User.validate_email"), "symbols: {}", told[0]);
    assert!(
        told[1].contains("app/auth.py:9-10 function check_password")
            && told[1].contains("return user.password == password"),
        "definition: {}",
        told[1]
    );
    assert!(
        told[2].contains("level 1: app/auth.py:6 in login")
            && told[2].contains("level 2: app/views.py:5 in login_view"),
        "callers: {}",
        told[2]
    );
    assert!(told[3].contains("app/auth.py:1"), "importers: {}", told[3]);
    let first = told[4].lines().nth(1).unwrap_or_default();
    assert!(first.starts_with("app/cookies.py"), "locate: {}", told[4]);
    // the run's own edit is in the index at once
    assert!(told[6].contains("level 1: app/auth.py:6 in login"), "callers after the edit: {}", told[6]);
    assert!(
        told[7].starts_with("Refused of definition")
            && told[7].contains("no definition of \"nowhere_at_all\""),
        "{}",
        told[7]
    );
}

/// A long step's history is compressed (SPEC C4): past `[context] compress_turns` replies the
/// model gets the step's first message with a structured summary, and the last replies as
/// they were; the audit log says so.
#[test]
fn a_long_step_is_compressed_into_a_summary() {
    let dir =
        project(&[("app/models.py", "class User:\n    pass\n"), ("app/views.py", "def view():\n    pass\n")]);
    let root = dir.path();
    std::fs::write(
        root.join("tokamak.toml"),
        "[checkers]\nenable = []\n[context]\ncompress_turns = 3\nkeep_turns = 1\n",
    )
    .unwrap();
    let model = ModelServer::start(vec![
        plan(),
        action(json!({"action": "read", "path": "app/models.py"})),
        action(json!({"action": "symbols", "query": "User"})),
        action(json!({"action": "read", "path": "app/views.py"})),
        action(json!({"action": "list", "dir": "app"})),
        done("looked at everything"),
    ]);
    let user = UserDirs::new();
    let output = run(&user, root, &model, "look at the user model");
    assert_eq!(output.status.code(), Some(0), "stderr:\n{}", text(&output.stderr));
    let requests = model.requests();
    assert_eq!(requests.len(), 6);
    // the fifth reply's request: compressed (four replies in, more than three)
    let messages = requests[5].body["messages"].as_array().unwrap().clone();
    let first = messages[1]["content"].as_str().unwrap();
    assert!(
        first.contains("Earlier in this step (compressed after 4 replies; the last 1 are below"),
        "{first}"
    );
    assert!(first.contains("Concepts looked up: User\n"), "{first}");
    assert!(first.contains("Files read: app/models.py, app/views.py\n"), "{first}");
    assert!(first.contains("- symbols → symbols like User: 1\n"), "{first}");
    assert_eq!(messages.len(), 4, "system, the first message, the last reply and its result: {messages:#?}");
    assert!(messages[3]["content"].as_str().unwrap().starts_with("Result of list:"), "{messages:#?}");
    let events: Vec<Value> = audit_lines(&user).into_iter().filter(|l| l["event"] == "compressed").collect();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["messages_removed"], 6);
}

/// Impact (SPEC C6): after a step changes a definition, the tests that reach it run first —
/// pytest node ids of the test functions calling it directly or through a caller — then the
/// whole suite; the model can ask for the same with the `impact` action.
#[test]
fn the_tests_that_reach_a_change_run_first() {
    if !support::require_tools(&["pytest"]) {
        return;
    }
    let dir = project(&[
        ("conftest.py", "# puts the project on pytest's path\n"),
        ("app/__init__.py", ""),
        (
            "app/models.py",
            "class User:\n    def __init__(self, email):\n        self.email = email\n\n    def validate_email(self):\n        return '@' in self.email\n",
        ),
        (
            "app/signup.py",
            "from app.models import User\n\n\ndef signup(email):\n    return User(email).validate_email()\n",
        ),
        ("app/other.py", "def unrelated():\n    return 1\n"),
        (
            "tests/test_models.py",
            "from app.models import User\n\n\nclass TestUser:\n    def test_valid(self):\n        assert User('a@b.c').validate_email()\n",
        ),
        (
            "tests/test_signup.py",
            "from app.signup import signup\n\n\ndef test_signup_refuses():\n    assert not signup('nope')\n",
        ),
        (
            "tests/test_other.py",
            "from app.other import unrelated\n\n\ndef test_unrelated():\n    assert unrelated() == 1\n",
        ),
    ]);
    let root = dir.path();
    let model = ModelServer::start(vec![
        plan(),
        action_with(
            json!({"action": "edit", "path": "app/models.py"}),
            "<<<<<<< SEARCH\n        return '@' in self.email\n=======\n        return '@' in self.email and '.' in self.email\n>>>>>>> REPLACE\n",
        ),
        action(json!({"action": "impact"})),
        done("emails need a dot"),
    ]);
    // the test command runs only in a folder the user trusts
    let user = UserDirs::trusting(&[root]);
    let python = support::tools_dir().join("venv/bin/python").display().to_string();
    let test_command = format!("{python} -m pytest -q -p no:cacheprovider");
    let output = user
        .command(&[
            "run",
            "emails need a dot",
            "--yes",
            "--root",
            &root.display().to_string(),
            "--test-command",
            &test_command,
        ])
        .current_dir(root)
        .env("TOKAMAK_LLM_URL", model.url())
        .env("TOKAMAK_MODEL", "scripted")
        .env("OPENAI_API_KEY", KEY)
        .envs(support::tool_env())
        .output()
        .expect("run tokamak");
    let told = results(&model);
    let audit: Vec<Value> = audit_lines(&user).into_iter().filter(|l| l["action"] == "run").collect();
    assert_eq!(
        output.status.code(),
        Some(0),
        "stdout:\n{}\nstderr:\n{}\ntold: {told:#?}\nruns: {audit:#?}",
        text(&output.stdout),
        text(&output.stderr)
    );
    assert!(told[1].contains("Changed: validate_email (app/models.py)"), "{}", told[1]);
    assert!(
        told[1].contains("Tests that reach it (2): tests/test_models.py::TestUser::test_valid, tests/test_signup.py::test_signup_refuses"),
        "{}",
        told[1]
    );
    let runs: Vec<Vec<String>> = audit_lines(&user)
        .into_iter()
        .filter(|l| l["event"] == "action" && l["action"] == "run")
        .map(|l| serde_json::from_value(l["arguments"]["command"].clone()).unwrap())
        .collect();
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert_eq!(
        runs[0][6..],
        ["tests/test_models.py::TestUser::test_valid", "tests/test_signup.py::test_signup_refuses"]
    );
    assert_eq!(runs[1].len(), 6, "then the whole suite: {runs:?}");
    let impact: Vec<Value> = audit_lines(&user).into_iter().filter(|l| l["event"] == "impact").collect();
    assert_eq!(impact[0]["changed"], json!(["validate_email"]), "{impact:?}");
    // the run's checks are events of their own: each test run a tool call with its outcome,
    // then the step's check (errors introduced, tests), which the terminal shows as lines
    let stderr = text(&output.stderr);
    assert_eq!(stderr.matches("the tests passed (ran `").count(), 2, "{stderr}");
    assert!(stderr.contains("step 1 checked: 0 error(s) introduced; the tests pass"), "{stderr}");
}

/// `delete` of a name that is a symbolic link never reaches the file it points at: it is
/// refused with the reason, and both stay as they were.
#[test]
fn deleting_a_link_never_deletes_its_target() {
    let dir = project(&[("app.py", "x = 1\n")]);
    let root = dir.path();
    std::os::unix::fs::symlink("app.py", root.join("alias.py")).expect("symlink");
    let model = ModelServer::start(vec![
        plan(),
        action(json!({"action": "delete", "path": "alias.py"})),
        done("could not delete it"),
    ]);
    let user = UserDirs::trusting(&[root]);
    let output = run(&user, root, &model, "delete alias.py");
    let told = results(&model);
    assert!(told[0].contains("is a symbolic link") && told[0].contains("nothing was deleted"), "{told:#?}");
    assert_eq!(std::fs::read_to_string(root.join("app.py")).unwrap(), "x = 1\n", "the target is untouched");
    assert!(std::fs::symlink_metadata(root.join("alias.py")).unwrap().file_type().is_symlink());
    // and the step, which changed nothing, is not done
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stdout));
}

/// With `auto_commit`, a file the model named `*` is committed as a file named `*`: the user's
/// untracked and unstaged files are never staged by it.
#[test]
fn a_file_named_like_a_pattern_commits_only_itself() {
    // the project is a repository with app.py committed; the user's untracked secrets.txt and
    // unstaged change to app.py are theirs
    let dir = project(&[("app.py", "x = 1\n")]);
    let root = dir.path();
    std::fs::write(root.join("secrets.txt"), "token\n").unwrap();
    std::fs::write(root.join("app.py"), "x = 2\n").unwrap();
    let model = ModelServer::start(vec![
        plan(),
        action(json!({"action": "create", "path": "*", "text": "star\n"})),
        action(json!({"action": "git_commit", "message": "add a star"})),
        done("committed"),
    ]);
    let user = UserDirs::trusting_with(&[root], "auto_commit = true\n");
    let output = run(&user, root, &model, "add a file named star");
    let told = results(&model);
    assert!(told.iter().any(|t| t.contains("committed 1 file(s)")), "{told:#?}\n{}", text(&output.stdout));
    let committed = git(root, &["show", "--name-only", "--format=", "HEAD"]);
    assert_eq!(committed.trim(), "*", "only the run's own file: {committed}");
    let status = git(root, &["status", "--porcelain"]);
    assert!(
        status.contains("?? secrets.txt") && status.contains(" M app.py"),
        "nothing else staged: {status}"
    );
}

/// A run deletes only what its checkpoint can restore: a gitignored `.env` and a file of a
/// nested repository are not in the checkpoint, so their deletion is refused with the reason;
/// a tracked file is deleted (and its checkpoint holds it).
#[test]
fn a_file_the_checkpoint_cannot_restore_is_not_deleted() {
    let dir = project(&[("app.py", "x = 1\n"), (".gitignore", ".env\n")]);
    let root = dir.path();
    std::fs::write(root.join(".env"), "SECRET=1\n").unwrap();
    std::fs::create_dir_all(root.join("vendor/lib/.git")).unwrap();
    std::fs::write(root.join("vendor/lib/code.py"), "y = 2\n").unwrap();
    let model = ModelServer::start(vec![
        plan(),
        action(json!({"action": "delete", "path": ".env"})),
        action(json!({"action": "delete", "path": "vendor/lib/code.py"})),
        action(json!({"action": "delete", "path": "app.py"})),
        done("deleted what could be"),
    ]);
    let user = UserDirs::trusting(&[root]);
    let output = run(&user, root, &model, "delete the files");
    let told = results(&model);
    for (said, file) in told.iter().zip([".env", "vendor/lib/code.py"]) {
        assert!(
            said.contains(&format!("{file} was not deleted"))
                && said.contains("ignored by the project's .gitignore or inside a repository of its own"),
            "{said}"
        );
    }
    assert!(told[2].contains("deleted app.py"), "{told:#?}");
    assert_eq!(std::fs::read_to_string(root.join(".env")).unwrap(), "SECRET=1\n");
    assert_eq!(std::fs::read_to_string(root.join("vendor/lib/code.py")).unwrap(), "y = 2\n");
    assert!(!root.join("app.py").exists(), "{}", text(&output.stdout));
}

/// A rollback names what it cannot restore before it changes anything (issue 39's H4): a
/// file the run edited that its checkpoint could not hold (over `max_file_bytes`) stops the
/// rollback whole, the other file left as the run made it; forced, the rest is restored and
/// that one named.
#[test]
fn a_rollback_names_what_it_cannot_restore_before_changing_anything() {
    let big = format!("{}\nEND\n", "z".repeat(3000));
    let dir = project(&[("app.py", "x = 1\n"), ("big.txt", &big)]);
    let root = dir.path();
    let edit = |path: &str, from: &str, to: &str| {
        action_with(
            json!({"action": "edit", "path": path}),
            &format!("<<<<<<< SEARCH\n{from}\n=======\n{to}\n>>>>>>> REPLACE\n"),
        )
    };
    let model = ModelServer::start(vec![
        plan(),
        edit("app.py", "x = 1", "x = 2"),
        edit("big.txt", "END", "CHANGED"),
        done("changed both"),
    ]);
    let user = UserDirs::trusting_with(&[root], "[checkpoints]\nmax_file_bytes = 1000\n");
    let output = run(&user, root, &model, "change both");
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(std::fs::read_to_string(root.join("app.py")).unwrap(), "x = 2\n");
    let listed = text(&user.command(&["checkpoints"]).current_dir(root).output().unwrap().stdout);
    let run_id = listed.split_whitespace().find(|w| w.starts_with("tokamak-")).expect("a run").to_string();

    let refused = user.command(&["rollback", &run_id]).current_dir(root).output().unwrap();
    let said = text(&refused.stderr) + &text(&refused.stdout);
    assert_ne!(refused.status.code(), Some(0), "{said}");
    assert!(
        said.contains(
            "nothing was rolled back: big.txt cannot be restored (its checkpoint could not hold it"
        ),
        "{said}"
    );
    assert_eq!(std::fs::read_to_string(root.join("app.py")).unwrap(), "x = 2\n", "nothing changed");

    let forced = user.command(&["rollback", &run_id, "--force"]).current_dir(root).output().unwrap();
    let said = text(&forced.stdout) + &text(&forced.stderr);
    assert!(said.contains("restored app.py") && said.contains("not restored big.txt"), "{said}");
    assert_eq!(std::fs::read_to_string(root.join("app.py")).unwrap(), "x = 1\n");
}
