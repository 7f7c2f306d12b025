//! `tokamak fix` as a user runs it: the real binary on files in a temporary project, the
//! scripted model server standing in for the model, the real ruff where a checker is needed.

use crate::support;

use std::path::Path;
use std::process::Output;

use serde_json::Value;
use support::model_server::{ModelServer, openai_chat};

/// Runs `tokamak` in `dir` with no model configured unless `model` is given.
fn tokamak(args: &[&str], dir: &Path, model: Option<&ModelServer>) -> Output {
    let user = support::UserDirs::trusting(&[dir]);
    let mut command = user.command(args);
    command.current_dir(dir);
    for var in ["TOKAMAK_LLM_URL", "TOKAMAK_MODEL", "OLLAMA_HOST", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"] {
        command.env_remove(var);
    }
    for (key, value) in support::tool_env() {
        command.env(key, value);
    }
    if let Some(model) = model {
        command.env("TOKAMAK_LLM_URL", model.url()).env("TOKAMAK_MODEL", "scripted");
    }
    command.output().expect("run tokamak")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A project folder (with `.git`, so it is the root) holding `files`.
fn project(files: &[(&str, &str)], config: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir(dir.path().join(".git")).expect(".git");
    std::fs::write(dir.path().join("tokamak.toml"), config).expect("tokamak.toml");
    for (name, content) in files {
        std::fs::write(dir.path().join(name), content).expect("write");
    }
    dir
}

const SYNTAX_ONLY: &str = "[checkers]\nenable = []\n[model]\nmax_retries = 0\n";

#[test]
fn deterministic_fixes_need_no_model_and_print_the_diff() {
    let dir = project(&[("calc.ts", "const total = add(1, 2;\n")], SYNTAX_ONLY);
    let output = tokamak(&["fix", "calc.ts"], dir.path(), None);
    let stdout = text(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}{}", text(&output.stderr));
    assert!(stdout.contains("--- a/calc.ts\n+++ b/calc.ts\n"), "{stdout}");
    assert!(stdout.contains("-const total = add(1, 2;\n+const total = add(1, 2);\n"), "{stdout}");
    assert!(
        stdout.contains(
            "[clean] calc.ts: fixed 1 problem(s); checked by syntax (1 fix(es) without the model)."
        ),
        "{stdout}"
    );
    assert_eq!(std::fs::read_to_string(dir.path().join("calc.ts")).unwrap(), "const total = add(1, 2);\n");
    assert!(text(&output.stderr).contains("Tokamak: fixing calc.ts"), "progress lines on stderr");
}

#[test]
fn without_a_model_it_says_how_to_configure_one() {
    let broken = "def f(a):\n    return g(a, 2))\n";
    let dir = project(&[("m.py", broken)], SYNTAX_ONLY);
    let output = tokamak(&["fix", "m.py"], dir.path(), None);
    let stdout = text(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("[failed] m.py:"), "{stdout}");
    assert!(stdout.contains("TOKAMAK_LLM_URL") && stdout.contains("tokamak.toml"), "{stdout}");
    assert_eq!(std::fs::read_to_string(dir.path().join("m.py")).unwrap(), broken, "nothing lost");
}

#[test]
fn the_model_fixes_files_and_json_reports_each() {
    let reply = "m.py\n<<<<<<< SEARCH\n    return g(a, 2))\n=======\n    return g(a, 2)\n>>>>>>> REPLACE\n";
    let model = ModelServer::start(vec![openai_chat(reply)]);
    let dir = project(&[("m.py", "def f(a):\n    return g(a, 2))\n"), ("ok.py", "x = 1\n")], SYNTAX_ONLY);
    let output = tokamak(&["fix", "--format", "json", "."], dir.path(), Some(&model));
    assert_eq!(output.status.code(), Some(0), "{}{}", text(&output.stdout), text(&output.stderr));
    let results: Value = serde_json::from_slice(&output.stdout).expect("JSON on stdout");
    let results = results.as_array().expect("an array");
    assert_eq!(results.len(), 2);
    let fixed = results.iter().find(|r| r["path"] == "m.py").expect("m.py");
    assert_eq!(fixed["exit_reason"], "clean");
    assert_eq!(fixed["attempts"], 1);
    assert_eq!(fixed["changed"], true);
    assert_eq!(fixed["tokens"]["prompt"], 21);
    assert!(fixed["diff"].as_str().unwrap().contains("+    return g(a, 2)\n"));
    let untouched = results.iter().find(|r| r["path"] == "ok.py").expect("ok.py");
    assert_eq!(untouched["exit_reason"], "clean");
    assert_eq!(untouched["changed"], false);
    assert_eq!(std::fs::read_to_string(dir.path().join("m.py")).unwrap(), "def f(a):\n    return g(a, 2)\n");
    assert_eq!(model.requests().len(), 1, "a clean file costs nothing");
}

#[test]
fn dry_run_changes_nothing_on_disk() {
    let broken = "const list = [1, 2;\n";
    let dir = project(&[("a.ts", broken)], SYNTAX_ONLY);
    let output = tokamak(&["fix", "--dry-run", "a.ts"], dir.path(), None);
    assert_eq!(output.status.code(), Some(0));
    assert!(text(&output.stdout).contains("+const list = [1, 2];\n"));
    assert!(text(&output.stdout).contains("(a dry run: nothing was written)."), "{}", text(&output.stdout));

    // a dry run that stops before it is clean does not say its edits are kept
    let wrong = "<<<<<<< SEARCH\nnothing like this\n=======\nx\n>>>>>>> REPLACE\n";
    let model = ModelServer::start(vec![openai_chat(wrong), openai_chat("I could not match the file.")]);
    let two = project(&[("m.py", "def f(a):\n    return g(a, 2))\n\n\nx = [1, 2\n")], SYNTAX_ONLY);
    let output = tokamak(&["fix", "--dry-run", "--max-attempts", "1", "m.py"], two.path(), Some(&model));
    let stdout = text(&output.stdout);
    assert!(!stdout.contains("the edits already made are kept"), "{stdout}");
    assert!(stdout.contains("(a dry run: nothing was written)."), "{stdout}");
    assert_eq!(std::fs::read_to_string(dir.path().join("a.ts")).unwrap(), broken);
}

#[test]
fn max_attempts_from_the_command_line() {
    let wrong = "<<<<<<< SEARCH\nnothing like this\n=======\nx\n>>>>>>> REPLACE\n";
    let model = ModelServer::start(vec![openai_chat(wrong), openai_chat(wrong), openai_chat(wrong)]);
    let dir = project(&[("m.py", "def f(a):\n    return g(a, 2))\n")], SYNTAX_ONLY);
    let output = tokamak(&["fix", "--max-attempts", "1", "m.py"], dir.path(), Some(&model));
    assert_eq!(output.status.code(), Some(1));
    assert!(text(&output.stdout).contains("[max_attempts] m.py:"), "{}", text(&output.stdout));
    // one attempt, then the model's wrap-up
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert!(
        requests[1].body.to_string().contains("Your run as a coding agent was stopped"),
        "{:?}",
        requests[1]
    );
}

#[test]
fn ruff_safe_fixes_are_applied_without_the_model() {
    if !support::require_tools(&["ruff"]) {
        return;
    }
    let config = "[checkers]\nenable = [\"ruff\"]\n[model]\nmax_retries = 0\n";
    let dir = project(&[("tidy.py", "import os\nimport sys\n\nprint(sys.argv)\n")], config);
    let output = tokamak(&["fix", "tidy.py"], dir.path(), None);
    assert_eq!(output.status.code(), Some(0), "{}{}", text(&output.stdout), text(&output.stderr));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("tidy.py")).unwrap(),
        "import sys\n\nprint(sys.argv)\n"
    );
}

#[test]
fn bad_settings_are_a_usage_error() {
    let dir = project(&[("a.py", "x = 1\n")], "[fix]\nmax_attempts = \"three\"\n");
    let output = tokamak(&["fix", "a.py"], dir.path(), None);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output.stderr).contains("max_attempts"), "{}", text(&output.stderr));
}

#[test]
fn blocks_for_other_files_are_refused_by_path_and_a_link_stays_a_link() {
    let fix = "<<<<<<< SEARCH\n    return g(a, 2))\n=======\n    return g(a, 2)\n>>>>>>> REPLACE\n";
    let model = ModelServer::start(vec![
        openai_chat(&format!("../../other/m.py\n{fix}")),
        openai_chat(&format!("/abs/elsewhere/m.py\n{fix}")),
        openai_chat(&format!("src/mm.py\n{fix}")),
        openai_chat(&format!("src/m.py\n{fix}")),
    ]);
    let dir = project(&[], "[checkers]\nenable = []\n[model]\nmax_retries = 0\n[fix]\nmax_attempts = 4\n");
    std::fs::create_dir_all(dir.path().join("real")).unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("real/m.py"), "def f(a):\n    return g(a, 2))\n").unwrap();
    std::os::unix::fs::symlink("../real/m.py", dir.path().join("src/m.py")).unwrap();
    let output = tokamak(&["fix", "src/m.py"], dir.path(), Some(&model));
    let stdout = text(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}{}", text(&output.stderr));
    assert!(stdout.contains("[clean] src/m.py"), "{stdout}");
    let requests = model.requests();
    assert_eq!(requests.len(), 4);
    let said = |n: usize| requests[n].body["messages"].to_string();
    assert!(
        said(1).contains("block 1 is for ../../other/m.py, but this run may change only src/m.py"),
        "{}",
        said(1)
    );
    assert!(said(2).contains("block 1 is for /abs/elsewhere/m.py"), "{}", said(2));
    assert!(said(3).contains("block 1 is for src/mm.py"), "{}", said(3));
    let link = dir.path().join("src/m.py");
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link is still a link");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("real/m.py")).unwrap(),
        "def f(a):\n    return g(a, 2)\n"
    );
}

/// With no checker installed for Python, a misspelled name cannot be seen: `tokamak fix` does
/// not call the file clean, and says what to install; `tokamak check` says it too.
#[test]
fn a_file_only_the_syntax_check_saw_is_not_called_clean() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    std::fs::write(dir.path().join("greet.py"), "def greet(name):\n    return \"hi \" + nme\n").unwrap();
    let bare = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_tokamak"))
            .args(args)
            .current_dir(dir.path())
            .env_remove("TOKAMAK_TOOLS")
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", dir.path())
            .env("XDG_CONFIG_HOME", dir.path().join("config"))
            .stdin(std::process::Stdio::null())
            .output()
            .expect("tokamak runs")
    };
    let fixed = bare(&["fix", "greet.py"]);
    let stdout = String::from_utf8_lossy(&fixed.stdout);
    assert!(
        stdout.starts_with("[unchecked] greet.py: no syntax errors, but only Tokamak's syntax check ran"),
        "{stdout}"
    );
    assert!(stdout.contains("pip install ruff"), "{stdout}");
    assert!(!stdout.contains("[clean]"), "{stdout}");
    assert_eq!(fixed.status.code(), Some(1));
    let checked = bare(&["check", "greet.py"]);
    let stderr = String::from_utf8_lossy(&checked.stderr);
    assert!(
        stderr.contains("greet.py: only Tokamak's syntax check ran (ruff, pyright, mypy not installed"),
        "{stderr}"
    );
}

/// The header's `:` goes on the header (where `tokamak check` places it), never at the end
/// of its body line, which tree-sitter accepts and Python does not; the summary agrees with
/// `tokamak check` and Python on the result.
#[test]
fn a_missing_colon_is_repaired_on_the_header_as_python_wants() {
    let broken = "def insort(a, x, lo=0, hi=None, *, key=None):\n    if key is None\n        lo = bisect_right(a, x, lo, hi)\n    else:\n        lo = bisect_right(a, key(x), lo, hi, key=key)\n    a.insert(lo, x)\n";
    let dir = project(&[("b.py", broken)], "[checkers]\nenable = []\n");
    let check = tokamak(&["check", "b.py"], dir.path(), None);
    assert!(
        text(&check.stdout).contains("b.py:2:18: error [tokamak/syntax] expected \":\""),
        "{}",
        text(&check.stdout)
    );
    let output = tokamak(&["fix", "b.py"], dir.path(), None);
    let stdout = text(&output.stdout);
    let fixed = std::fs::read_to_string(dir.path().join("b.py")).unwrap();
    assert_eq!(fixed, broken.replace("is None\n", "is None:\n"), "{stdout}\n{}", text(&output.stderr));
    assert!(stdout.contains("fixed 1 problem(s)"), "{stdout}");
    let check = tokamak(&["check", "b.py"], dir.path(), None);
    assert_eq!(check.status.code(), Some(0), "{}", text(&check.stdout));
    let python = std::process::Command::new("python3")
        .args(["-c", "import ast, sys; ast.parse(open(sys.argv[1]).read())"])
        .arg(dir.path().join("b.py"))
        .status()
        .expect("python3");
    assert!(python.success(), "Python accepts it");
}
