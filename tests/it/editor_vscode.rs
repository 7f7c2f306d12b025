//! editors/vscode: the extension's unit tests (node:test) and type check (`tsc`),
//! `npm run package` producing a `.vsix`, and that `.vsix` end to end in a real VS Code:
//! code-server on 127.0.0.1 with headless Chromium (tests/vscode/e2e.mjs) fixing a file
//! through the command palette, then "Tokamak: Run…" with a goal typed into the input box and
//! the *Tokamak Plan* view following the steps — each change shown first in a diff editor and
//! approved, rejected with a reason, or approved from the palette (`approval` left at its
//! default, medium) — with the real `tokamak` binary and the scripted model.

use crate::support;

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::model_server::{ModelServer, openai_chat};

fn npm(args: &[&str]) -> std::process::Output {
    Command::new("npm")
        .args(args)
        .current_dir(support::repo_root().join("editors/vscode"))
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run npm")
}

fn ready() -> bool {
    if !support::require_tools(&["npm"]) {
        return false;
    }
    let modules = support::repo_root().join("editors/vscode/node_modules");
    if !modules.is_dir() {
        let reason = "editors/vscode/node_modules is missing: run `bash scripts/install-tools`";
        support::skip(reason);
        return false;
    }
    true
}

#[test]
fn the_extension_type_checks_and_its_unit_tests_pass_and_it_packages() {
    if !ready() {
        return;
    }
    // one test: both write editors/vscode/out
    let test = npm(&["test"]);
    let text = String::from_utf8_lossy(&test.stdout).into_owned() + &String::from_utf8_lossy(&test.stderr);
    assert!(test.status.success(), "{text}");
    assert!(text.contains("# pass 14") && text.contains("# fail 0"), "{text}");

    let vsix = support::repo_root().join("editors/vscode/tokamak.vsix");
    let _ = std::fs::remove_file(&vsix);
    let package = npm(&["run", "package"]);
    let text =
        String::from_utf8_lossy(&package.stdout).into_owned() + &String::from_utf8_lossy(&package.stderr);
    assert!(package.status.success(), "{text}");
    let bytes = std::fs::read(&vsix).expect("a .vsix");
    assert!(bytes.starts_with(b"PK"), "a .vsix is a zip");
    let listing = String::from_utf8_lossy(&bytes);
    for entry in [
        "extension/out/extension.js",
        "extension/out/logic.js",
        "extension/package.json",
        "vscode-languageclient",
    ] {
        assert!(listing.contains(entry), "{entry} is packaged");
    }

    // and the package, installed in a real VS Code, fixes a file from the command palette
    end_to_end_in_code_server(&vsix);
}

/// Kills code-server (and what it started) when the test ends, however it ends.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        // its own process group: the extension host and tokamak go too
        kill_group(self.0.id());
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn kill_group(pid: u32) {
    let _ = Command::new("kill").args(["-s", "TERM", "--", &format!("-{pid}")]).status();
}

fn end_to_end_in_code_server(vsix: &std::path::Path) {
    let tools = support::tools_dir().join("code-server/node_modules");
    let code_server = tools.join(".bin/code-server");
    if !code_server.exists() || !std::path::Path::new("/usr/bin/chromium").exists() {
        let reason = "code-server or chromium is missing: run `bash scripts/install-tools`";
        support::skip(reason);
        return;
    }
    let broken = "def mean(values):\n    total = sum(values))\n    return total / len(values)\n";
    // two candidate fixes: the steadiest breaks the project's test, the next passes
    let fix = |with: &str| {
        let reply = format!(
            "mean.py\n<<<<<<< SEARCH\n    total = sum(values))\n=======\n    total = {with}\n>>>>>>> REPLACE\n"
        );
        support::model_server::Scripted::Delayed(Duration::from_millis(200), Box::new(openai_chat(&reply)))
    };
    let user_py = "class User:\n    def __init__(self, email: str) -> None:\n        self.email = email\n";
    let method = "        self.email = email\n\n    def validate_email(self) -> bool:\n        return \"@\" in self.email\n";
    let call = |name: &str, args: Value| support::model_server::openai_tool_calls("", &[(name, args)]);
    let model = ModelServer::start(vec![
        // "Tokamak: Run…": a plan of two steps, the first slow enough to be seen running
        openai_chat("1. Add validate_email to User in user.py\n2. Say so in NOTES.md [depends: 1]\n"),
        call(
            "edit",
            serde_json::json!({"path": "user.py", "blocks": format!("<<<<<<< SEARCH\n        self.email = email\n=======\n{method}>>>>>>> REPLACE\n")}),
        ),
        support::model_server::Scripted::Delayed(
            Duration::from_millis(1500),
            Box::new(call("done", serde_json::json!({"summary": "added"}))),
        ),
        call("create", serde_json::json!({"path": "NOTES.md", "text": "validate_email\n"})),
        // rejected with a reason: the model looks again, then writes where it was told
        call("list", serde_json::json!({})),
        call("create", serde_json::json!({"path": "docs/NOTES.md", "text": "validate_email\n"})),
        call("done", serde_json::json!({"summary": "noted"})),
        // the follow-up typed into the panel is a question: one answer, no plan
        openai_chat("It added validate_email to User in user.py, and a note in docs/NOTES.md."),
    ]);
    model.at_temperature(0.2, vec![fix("sum(values) + 1")]);
    model.at_temperature(0.5, vec![fix("sum(values)")]);
    let dir = tempfile::tempdir().expect("temp dir");
    let project = dir.path().join("project");
    std::fs::create_dir_all(project.join(".git")).unwrap();
    std::fs::write(project.join("mean.py"), broken).unwrap();
    std::fs::write(project.join("user.py"), user_py).unwrap();
    std::fs::write(
        project.join("test_mean.py"),
        "from mean import mean\n\n\ndef test_mean():\n    assert mean([1, 2, 3]) == 2\n",
    )
    .unwrap();
    let pytest = serde_json::to_string(&support::scenario::PYTHON.test_command()).unwrap();
    std::fs::write(
        project.join("tokamak.toml"),
        format!("[checkers]\nenable = []\n[model]\nmax_retries = 0\n[test]\ncommand = {pytest}\n[fix]\ncandidates = 2\n"),
    )
    .unwrap();
    let (data, extensions) = (dir.path().join("data"), dir.path().join("extensions"));
    std::fs::create_dir_all(data.join("User")).unwrap();
    let settings = serde_json::json!({
        "tokamak.server.path": env!("CARGO_BIN_EXE_tokamak"),
        "tokamak.model.baseUrl": model.url(),
        "tokamak.model.model": "scripted",
        "workbench.startupEditor": "none",
        "security.workspace.trust.enabled": false,
        "telemetry.telemetryLevel": "off",
        // code-server saves on focus changes by default; the test needs to see unsaved edits stay so
        "files.autoSave": "off",
    });
    std::fs::write(data.join("User/settings.json"), settings.to_string()).unwrap();
    let base = |command: &mut Command| {
        command
            .arg("--user-data-dir")
            .arg(&data)
            .arg("--extensions-dir")
            .arg(&extensions)
            .env("XDG_CONFIG_HOME", dir.path().join("config"))
            .env("XDG_CACHE_HOME", dir.path().join("cache"))
            .env("XDG_DATA_HOME", dir.path().join("xdg-data"));
    };
    let mut install = Command::new(&code_server);
    base(&mut install);
    let installed =
        install.arg("--install-extension").arg(vsix).output().expect("code-server --install-extension");
    let said =
        String::from_utf8_lossy(&installed.stdout).into_owned() + &String::from_utf8_lossy(&installed.stderr);
    assert!(installed.status.success() && said.contains("successfully installed"), "{said}");

    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut serve = Command::new(&code_server);
    base(&mut serve);
    serve
        .args(["--auth", "none", "--bind-addr", &format!("127.0.0.1:{port}")])
        .args(["--disable-telemetry", "--disable-update-check", "--disable-workspace-trust"])
        .arg(&project)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0);
    let mut server = Killed(serve.spawn().expect("start code-server"));
    let stdout = server.0.stdout.take().expect("stdout");
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if line.contains("HTTP server listening") {
                let _ = ready_tx.send(());
            }
        }
    });
    ready_rx.recv_timeout(Duration::from_secs(60)).expect("code-server to listen");

    // the screenshots are the test's artefacts (and the README's pictures)
    let shots = support::repo_root().join("target/screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let started = Instant::now();
    let run = Command::new("node")
        .arg(support::repo_root().join("tests/vscode/e2e.mjs"))
        .env("E2E_PLAYWRIGHT", format!("{}/", tools.display()))
        .env("E2E_URL", format!("http://127.0.0.1:{port}/?folder={}", project.display()))
        .env("E2E_FILE", "mean.py")
        .env("E2E_EXPECTED", "    total = sum(values)\n")
        .env("E2E_GOAL", "User 클래스에 validate_email 메서드 추가해줘")
        .env("E2E_PLAN_FILE", "user.py")
        .env("E2E_PLAN_STEPS", "2")
        .env("E2E_PLAN_EXPECTED", "def validate_email(self) -> bool:")
        .env("E2E_ANSWERS", "approve,reject:put the notes in docs/NOTES.md,palette")
        .env("E2E_FOLLOW_UP", "Which methods does @user have now?")
        .env("E2E_SCREENSHOT", shots.join("vscode-failure.png"))
        .env("E2E_PANEL_SHOT_APPROVAL", shots.join("vscode-panel-approval.png"))
        .env("E2E_PANEL_SHOT", shots.join("vscode-panel-done.png"))
        .env("E2E_PANEL_SHOT_END", shots.join("vscode-panel-follow-up.png"))
        .output()
        .expect("run node tests/vscode/e2e.mjs");
    let printed = String::from_utf8_lossy(&run.stdout);
    let report: Value = printed
        .lines()
        .last()
        .and_then(|line| serde_json::from_str(line).ok())
        .unwrap_or_else(|| panic!("no report: {printed}\n{}", String::from_utf8_lossy(&run.stderr)));
    assert_eq!(report["ok"], true, "{report:#} (after {:?})", started.elapsed());
    assert_eq!(
        report["steps"],
        serde_json::json!([
            "workbench",
            "opened",
            "diagnostic",
            "command",
            "clean",
            "plan file",
            "panel",
            "goal",
            "planned and done",
            "follow-up",
            "undone"
        ])
    );
    eprintln!(
        "the panel showed the first plan line {} ms after the goal was typed",
        report["first_plan_line_ms"]
    );
    assert!(report["text"].as_str().unwrap().contains("    total = sum(values)\n    return"), "{report:#}");
    // an edit made in the editor stays in the buffer until the user saves
    assert_eq!(std::fs::read_to_string(project.join("mean.py")).unwrap(), broken);
    // the panel's plan showed the first step running, then every step done, and the ending
    let rows: Vec<String> = report["plan_rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap().replace(' ', ""))
        .collect();
    let first =
        |glyph: &str| rows.iter().position(|r| r.starts_with(&format!("{glyph}1.Addvalidate_emailtoUser")));
    assert!(first("⚡").is_some() && first("⚡") < first("✓"), "{rows:?}");
    assert!(rows.iter().any(|r| r.starts_with("✓2.SaysoinNOTES.md")), "{rows:?}");
    assert_eq!(report["exit"], "done", "{report:#}");
    assert!(report["ending"].as_str().unwrap().contains("Done."), "{report:#}");
    assert!(report["plan_text"].as_str().unwrap().contains("return \"@\" in self.email"), "{report:#}");
    // the status bar followed the running step and its mode
    let status: Vec<&str> =
        report["status_bar"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
    assert!(status.iter().any(|s| s.contains("Tokamak: step 1/2 Add validate_email")), "{status:?}");
    // the tool calls showed in the conversation, with their diffs
    let tools = report["tools"].to_string();
    assert!(tools.contains("user.py"), "{report:#}");
    // each change was shown in the panel and the diff editor, and answered before it landed
    let approvals = report["approvals"].as_array().expect("approvals");
    assert_eq!(approvals.len(), 3, "{report:#}");
    assert!(
        approvals[0]["message"].as_str().unwrap().contains("Tokamak wants to edit user.py"),
        "{report:#}"
    );
    assert_eq!(approvals[0]["diff_editor"], true, "{report:#}");
    assert!(approvals[0]["inline_diff"].as_u64().unwrap() >= 1, "{report:#}");
    assert!(
        approvals[0]["modified"].as_str().unwrap().contains("def validate_email(self) -> bool:"),
        "{report:#}"
    );
    assert!(approvals[0]["tab"].as_str().unwrap().contains("Tokamak wants to edit user.py"), "{report:#}");
    assert!(approvals[1]["message"].as_str().unwrap().contains("create NOTES.md"), "{report:#}");
    assert!(approvals[2]["message"].as_str().unwrap().contains("create docs/NOTES.md"), "{report:#}");
    assert_eq!(report["toasts_left"], 0, "no approval notification is left up: {report:#}");
    assert!(!project.join("NOTES.md").exists(), "the rejected file was not written");
    // the fix tried two candidates, and its summary said so
    let said = report["fix_message"].as_str().unwrap_or_default();
    assert!(
        said.contains("2 candidate(s) tried") && said.contains("candidate 2 passed the tests"),
        "{report:#}"
    );
    // the follow-up: answered in the same conversation, without a plan
    let follow_up = &report["follow_up"];
    assert!(follow_up["said"].as_str().unwrap().contains("It added validate_email"), "{report:#}");
    let requests = model.requests();
    assert_eq!(requests.len(), 10, "two candidate fixes, the plan, six tool calls, one answer");
    assert!(
        requests[6].body.to_string().contains("put the notes in docs/NOTES.md"),
        "the reason reached the model"
    );
    assert_eq!(report["mention_offered"], "user.py", "{report:#}");
    assert_eq!(report["typed"], "Which methods does @user.py have now?", "{report:#}");
    let asked = requests[9].body.to_string();
    assert!(asked.contains("Files mentioned: user.py"), "the @-mention went with the question: {asked}");
    assert!(
        asked.contains("The conversation so far")
            && asked.contains("User 클래스에 validate_email 메서드 추가해줘"),
        "the follow-up carried the conversation: {asked}"
    );
    // and "Undo this run" took the run's changes back
    assert!(report["undone"].as_str().unwrap().contains("restored"), "{report:#}");
    assert!(!project.join("docs/NOTES.md").exists(), "the run's new file is gone: {report:#}");
    assert!(!report["after_undo"].as_str().unwrap().contains("validate_email"), "{report:#}");
}
