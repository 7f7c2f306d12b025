//! The `run` action's sandbox with the real bubblewrap: a command runs in a copy of the
//! workspace with no network and without the API keys, what it writes stays in the copy,
//! and without bwrap Landlock confines commands in the same copy, at its own path.

use crate::support;

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};
use support::UserDirs;
use support::model_server::{ModelServer, Scripted, openai_chat};

const KEY: &str = "sk-sandbox-test-0123456789abcdef";

fn action(value: Value) -> Scripted {
    openai_chat(&format!("```json\n{value}\n```\n"))
}

fn run(user: &UserDirs, root: &Path, model: &ModelServer, path: Option<&Path>) -> Output {
    let mut command =
        user.command(&["run", "try the commands", "--yes", "--root", &root.display().to_string()]);
    command
        .current_dir(root)
        .env("TOKAMAK_LLM_URL", model.url())
        .env("TOKAMAK_MODEL", "scripted")
        .env("OPENAI_API_KEY", KEY)
        .env("MY_SERVICE_TOKEN", "token-value-123456");
    if let Some(path) = path {
        command.env("PATH", path);
    }
    command.output().expect("run tokamak")
}

fn told(model: &ModelServer) -> Vec<String> {
    support::results_told(model)
}

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir(dir.path().join(".git")).expect(".git");
    std::fs::write(dir.path().join("app.py"), "x = 1\n").expect("write");
    std::fs::write(dir.path().join("tokamak.toml"), "[checkers]\nenable = []\n").expect("settings");
    dir
}

const ALLOW: &str = "[commands]\nallow = [[\"sh\"], [\"python3\"], [\"sleep\"]]\n";

#[test]
fn commands_run_in_a_copy_without_network_or_keys() {
    if !support::require_tools(&["bwrap"]) {
        return;
    }
    let dir = project();
    let root = dir.path();
    let model = ModelServer::start(Vec::new());
    // the model server listens on this machine's loopback: reachable from here, not from
    // inside the sandbox's own network namespace
    let reach = format!(
        "import urllib.request; urllib.request.urlopen('{}/v1/models', timeout=5); print('REACHED')",
        model.url()
    );
    for reply in [
        openai_chat("1. Try the commands\n"),
        action(json!({"action": "run", "command": ["python3", "-c", reach]})),
        action(
            json!({"action": "run", "command": ["sh", "-c", "echo changed > app.py; echo new > made.txt; cat app.py"]}),
        ),
        action(json!({"action": "run", "command": ["sh", "-c", "env; cat app.py"]})),
        action(json!({"action": "run", "command": "sleep 30", "timeout": 1})),
        action(json!({"action": "run", "command": "curl -s http://example.com"})),
        action(json!({"action": "done", "summary": "tried"})),
    ] {
        model.push(reply);
    }
    let user = UserDirs::trusting_with(&[root], ALLOW);
    let output = run(&user, root, &model, None);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let told = told(&model);
    assert_eq!(told.len(), 5, "{told:#?}");
    assert!(told[0].contains("sandboxed") && told[0].contains("exit status 1"), "the network: {}", told[0]);
    assert!(told[0].contains("Connection refused") && !told[0].contains("\nREACHED"), "{}", told[0]);
    assert!(told[1].contains("exit status 0") && told[1].contains("changed"), "{}", told[1]);
    assert!(told[1].contains("what it wrote (app.py, made.txt) was not kept"), "{}", told[1]);
    assert_eq!(
        std::fs::read_to_string(root.join("app.py")).unwrap(),
        "x = 1\n",
        "the workspace is untouched"
    );
    assert!(!root.join("made.txt").exists());
    assert!(told[2].contains("x = 1"), "each command starts from the workspace as it is: {}", told[2]);
    assert!(!told[2].contains(KEY) && !told[2].contains("token-value-123456"), "keys stripped: {}", told[2]);
    assert!(told[2].contains("PATH="), "{}", told[2]);
    assert!(told[3].contains("stopped at the 1 s timeout"), "{}", told[3]);
    assert!(told[4].contains("not on the allow-list"), "{}", told[4]);
    assert!(!stderr.contains("without a sandbox"), "no notice when bwrap works: {stderr}");
}

#[test]
fn a_tool_that_lives_under_tmp_still_runs_in_the_sandbox() {
    if !support::require_tools(&["bwrap"]) {
        return;
    }
    // the private /tmp inside the sandbox must not hide a tool installed in /tmp (CI clones
    // the repository, and so its tools folder, there)
    let tool = tempfile::Builder::new().prefix("tokamak-tool").tempdir_in("/tmp").unwrap();
    let script = tool.path().join("hello.sh");
    std::fs::write(&script, "#!/bin/sh\necho hello from the tool\n").unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let dir = project();
    let root = dir.path();
    let model = ModelServer::start(Vec::new());
    for reply in [
        openai_chat("1. Run the tool\n"),
        action(json!({"action": "run", "command": [script.display().to_string()]})),
        action(
            json!({"action": "run", "command": ["sh", "-c", format!("{} && echo and the shell", script.display())]}),
        ),
        action(json!({"action": "done", "summary": "ran"})),
    ] {
        model.push(reply);
    }
    let allow = format!("[commands]\nallow = [[\"{}\"], [\"sh\"]]\n", script.display());
    let user = UserDirs::trusting_with(&[root], &allow);
    let output = run(&user, root, &model, None);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let told = told(&model);
    assert_eq!(told.len(), 2, "{told:#?}");
    for answer in &told {
        assert!(answer.contains("sandboxed") && answer.contains("hello from the tool"), "{answer}");
    }
    assert!(told[1].contains("and the shell"), "{}", told[1]);
}

#[test]
fn without_bwrap_commands_run_in_the_copy_under_landlock() {
    if !support::require_landlock() {
        return;
    }
    let dir = project();
    let root = dir.path();
    // a PATH with sh, git and cat but no bwrap
    let bin = tempfile::tempdir().expect("temp dir");
    for program in ["sh", "git", "cat"] {
        let found = which(program).expect("sh and git are on PATH");
        std::os::unix::fs::symlink(found, bin.path().join(program)).expect("symlink");
    }
    let model = ModelServer::start(vec![
        openai_chat("1. Try the commands\n"),
        action(json!({"action": "run", "command": ["sh", "-c", "echo made > made.txt; pwd"]})),
        action(
            json!({"action": "run", "command": ["sh", "-c", "echo again >> made.txt; cat made.txt app.py"]}),
        ),
        action(json!({"action": "done", "summary": "ran"})),
    ]);
    let user = UserDirs::trusting_with(&[root], ALLOW);
    let output = run(&user, root, &model, Some(bin.path()));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("no sandbox"), "Landlock confines them: {stderr}");
    let told_now = told(&model);
    assert_eq!(told_now.len(), 2, "{told_now:#?}");
    for answer in &told_now {
        assert!(answer.contains("exit status 0") && answer.contains("sandboxed (Landlock)"), "{answer}");
    }
    // it ran in the copy, shown with the workspace's path; what it wrote stays there
    assert!(
        told_now[0].contains(&std::fs::canonicalize(root).unwrap().display().to_string()),
        "{}",
        told_now[0]
    );
    assert!(told_now[0].contains("what it wrote (made.txt) was not kept"), "{}", told_now[0]);
    assert!(told_now[1].contains("made\nagain\nx = 1"), "{}", told_now[1]);
    assert!(!root.join("made.txt").exists(), "the workspace is untouched");

    // sandbox = "bwrap" without bwrap refuses instead
    let model = ModelServer::start(vec![
        openai_chat("1. Try the commands\n"),
        action(json!({"action": "run", "command": ["sh", "-c", "echo no > no.txt"]})),
        action(json!({"action": "done", "summary": "refused"})),
    ]);
    let user = UserDirs::trusting_with(&[root], &format!("sandbox = \"bwrap\"\n{ALLOW}"));
    let output = run(&user, root, &model, Some(bin.path()));
    assert_eq!(output.status.code(), Some(0));
    assert!(
        told(&model)[0]
            .contains("sandbox = \"bwrap\" but it cannot be used here (bubblewrap (bwrap) is not installed)"),
        "{:?}",
        told(&model)
    );
    assert!(!root.join("no.txt").exists());
}

fn which(program: &str) -> Option<std::path::PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?).map(|d| d.join(program)).find(|p| p.is_file())
}
