//! `tokamak check` as a user runs it on files and folders: the command line in the test's own
//! process, and the real binary saying the same.

use crate::support;

use std::path::Path;
use std::process::Output;

fn tokamak(args: &[&str], dir: &Path) -> Output {
    support::UserDirs::new().command(args).current_dir(dir).output().expect("run tokamak")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn project_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn prints_syntax_errors_like_a_linter() {
    let output = tokamak(&["check", "--checkers", "none", "fixtures/syntax"], project_root());
    assert_eq!(
        stdout(&output),
        "fixtures/syntax/broken.py:9:32: error [tokamak/syntax] expected \":\"\n\
         fixtures/syntax/broken.py:16:18: error [tokamak/syntax] expected \")\"\n\
         fixtures/syntax/broken.ts:12:67: error [tokamak/syntax] expected \"}\"\n\
         fixtures/syntax/broken.ts:15:38: error [tokamak/syntax] expected \")\"\n"
    );
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
}

#[test]
fn the_command_line_in_this_process_says_what_the_binary_says() {
    let before = std::env::current_dir().unwrap();
    let user = support::UserDirs::new();
    let args = ["check", "--checkers", "none", "fixtures/syntax/broken.py", "fixtures/fixbench/README.md"];
    let mut here = user.command(&args);
    let here_output = here.current_dir(project_root()).output().expect("tokamak check");
    let mut binary = user.command(&args);
    let binary_output = binary.current_dir(project_root()).output().expect("tokamak check");
    // the first in this process (each test is one, under nextest), the second the binary
    assert_eq!(here.ran_in_this_process(), support::in_process::one_process_per_test());
    assert!(!binary.ran_in_this_process());
    assert_eq!(stdout(&here_output), stdout(&binary_output));
    assert_eq!(stderr(&here_output), stderr(&binary_output));
    assert_eq!(here_output.status.code(), Some(1), "{}", stderr(&here_output));
    assert_eq!(binary_output.status.code(), Some(1));
    assert!(
        stdout(&here_output).contains("broken.py:9:32: error [tokamak/syntax]"),
        "{}",
        stdout(&here_output)
    );
    // the folder and the environment are put back
    assert_eq!(std::env::current_dir().unwrap(), before);
    assert!(std::env::var_os("XDG_CONFIG_HOME").is_none_or(|dir| dir != user.config.path()));
}

#[test]
fn an_answer_that_cannot_be_written_whole_is_said_and_is_not_success() {
    let args = ["check", "--checkers", "none", "--format", "json", "fixtures/syntax/clean.py"];
    let full = std::fs::File::options().write(true).open("/dev/full").expect("/dev/full");
    let output = support::UserDirs::new()
        .command(&args)
        .current_dir(project_root())
        .stdout(full)
        .output()
        .expect("tokamak check");
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("tokamak: cannot write the output: No space left on device"),
        "{}",
        stderr(&output)
    );
    // the help and the version too: clap writes them itself
    for args in [&["--help"][..], &["--version"][..]] {
        let full = std::fs::File::options().write(true).open("/dev/full").expect("/dev/full");
        let output = support::UserDirs::new().command(args).stdout(full).output().expect("tokamak");
        assert_eq!(output.status.code(), Some(1), "{args:?}: {}", stderr(&output));
        assert!(
            stderr(&output).contains("tokamak: cannot write the output"),
            "{args:?}: {}",
            stderr(&output)
        );
    }
    // a reader that goes away early is no failure: what is left is not shown
    let mut child = support::UserDirs::new()
        .command(&["check", "--checkers", "none", "fixtures/syntax"])
        .current_dir(project_root())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("tokamak check");
    drop(child.stdout.take());
    let output = child.wait_with_output().expect("tokamak check");
    // the errors found, as when every line is read
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(!stderr(&output).contains("cannot write"), "{}", stderr(&output));
}

#[test]
fn help_and_version_are_said_on_stdout_with_status_zero() {
    for (args, said) in [
        (&["--help"][..], "Usage: tokamak [OPTIONS] [COMMAND]"),
        (&["check", "--help"][..], "Usage: tokamak check [OPTIONS] <PATHS>..."),
        (&["--version"][..], "tokamak 0.1.0"),
    ] {
        let output = tokamak(args, project_root());
        assert_eq!(output.status.code(), Some(0), "{args:?}: {}", stderr(&output));
        assert!(stdout(&output).contains(said), "{args:?}: {}", stdout(&output));
        assert_eq!(stderr(&output), "", "{args:?}");
    }
}

#[test]
fn clean_files_exit_zero_and_print_nothing() {
    let output = tokamak(
        &["check", "--checkers", "none", "fixtures/syntax/clean.py", "fixtures/syntax/clean.tsx"],
        project_root(),
    );
    assert_eq!(stdout(&output), "");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
}

/// Text tree-sitter's grammar takes and the language does not (a Python 2 `print`, a
/// parameter without a default after one with) is not clean: `tokamak check` says what Python
/// says, where Python says it.
#[test]
fn what_python_rejects_is_not_clean() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("old.py"), "def f(x=1, y):\n    print \"y\"\n").expect("write");
    let output = tokamak(&["check", "--checkers", "none", "old.py"], dir.path());
    assert_eq!(
        stdout(&output),
        "old.py:1:12: error [tokamak/syntax] Parameter without a default cannot follow a parameter with a default\n\
         old.py:2:11: error [tokamak/syntax] Simple statements must be separated by newlines or semicolons\n"
    );
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
}

#[test]
fn json_format_has_every_field() {
    let output = tokamak(
        &["check", "--checkers", "none", "--format", "json", "fixtures/syntax/broken.ts"],
        project_root(),
    );
    assert_eq!(output.status.code(), Some(1));
    let findings: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON on stdout");
    assert_eq!(
        findings[0],
        serde_json::json!({
            "path": "fixtures/syntax/broken.ts", "line": 12, "column": 67, "end_line": 12, "end_column": 68,
            "severity": "error", "source": "tokamak", "code": "syntax", "message": "expected \"}\"",
        })
    );
    assert_eq!(findings.as_array().map(Vec::len), Some(2));
    let clean = tokamak(
        &["check", "--checkers", "none", "--format", "json", "fixtures/syntax/clean.py"],
        project_root(),
    );
    assert_eq!(stdout(&clean).trim(), "[]");
}

#[test]
fn folders_are_walked_with_gitignore_respected() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("src/나의 모듈")).unwrap();
    std::fs::create_dir_all(root.join("build")).unwrap();
    std::fs::write(root.join(".gitignore"), "build/\n").unwrap();
    std::fs::write(root.join("src/나의 모듈/bad.py"), "x = (\n").unwrap();
    std::fs::write(root.join("src/ok.ts"), "export const x = 1;\n").unwrap();
    std::fs::write(root.join("build/generated.py"), "def (\n").unwrap();
    std::fs::write(root.join("notes.txt"), "def (\n").unwrap();
    std::fs::write(root.join("src/blob.py"), b"\x00\x01binary").unwrap();
    std::fs::write(root.join("src/latin1.py"), b"x = '\xe9'\n").unwrap();
    let output = tokamak(&["check", "--checkers=none", "."], root);
    let printed = stdout(&output);
    assert_eq!(printed, "./src/나의 모듈/bad.py:1:5: error [tokamak/syntax] expected \")\"\n");
    let notes = stderr(&output);
    assert!(notes.contains("blob.py: not checked") && notes.contains("NUL"), "{notes}");
    assert!(notes.contains("latin1.py: not checked") && notes.contains("not UTF-8"), "{notes}");
    assert_eq!(output.status.code(), Some(1));
}

#[test]
fn bad_usage_exits_two() {
    let missing = tokamak(&["check", "no/such/file.py"], project_root());
    assert_eq!(missing.status.code(), Some(2));
    assert!(stderr(&missing).contains("cannot read no/such/file.py"), "{}", stderr(&missing));
    let no_paths = tokamak(&["check"], project_root());
    assert_eq!(no_paths.status.code(), Some(2));
    assert!(stderr(&no_paths).contains("required arguments were not provided"), "{}", stderr(&no_paths));
    assert_eq!(stdout(&no_paths), "");
    let bad_flag = tokamak(&["check", "--format", "xml", "fixtures"], project_root());
    assert_eq!(bad_flag.status.code(), Some(2));
    assert!(stderr(&bad_flag).contains("xml"));
}

fn tokamak_with_tools(args: &[&str], dir: &Path) -> Output {
    support::UserDirs::trusting(&[dir])
        .command(args)
        .current_dir(dir)
        .envs(support::tool_env())
        .output()
        .expect("run tokamak")
}

#[test]
fn check_runs_the_same_checkers_as_the_editor() {
    if !support::require_tools(&["ruff", "mypy"]) {
        return;
    }
    let project = support::copy_fixture("checkers/python");
    let output = tokamak_with_tools(&["check", "--checkers", "ruff", "app.py"], project.path());
    assert_eq!(
        stdout(&output),
        "app.py:3:8: warning [ruff/F401] `os` imported but unused\n\
         app.py:11:18: warning [ruff/F821] Undefined name `undefined_name`\n"
    );
    assert_eq!(output.status.code(), Some(0), "warnings only: {}", stderr(&output));
    let output =
        tokamak_with_tools(&["check", "--checkers", "ruff,mypy", "--format", "json", "."], project.path());
    let findings: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let codes: Vec<&str> = findings.as_array().unwrap().iter().filter_map(|f| f["code"].as_str()).collect();
    // the undefined name both report is one finding
    assert_eq!(codes, ["F401", "return-value", "F821"]);
    assert_eq!(findings[2]["also"], serde_json::json!(["mypy/name-defined"]));
    assert_eq!(output.status.code(), Some(1), "mypy's are errors");
}

#[test]
fn bad_settings_and_unknown_checkers_exit_two() {
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("a.py"), "x = 1\n").unwrap();
    let unknown = tokamak(&["check", "--checkers", "lintomatic", "a.py"], project.path());
    assert_eq!(unknown.status.code(), Some(2));
    assert!(
        stderr(&unknown).contains("\"lintomatic\", which is neither a preset nor configured"),
        "{}",
        stderr(&unknown)
    );
    std::fs::write(project.path().join("tokamak.toml"), "[checkers\n").unwrap();
    let bad = tokamak(&["check", "a.py"], project.path());
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("tokamak.toml is not valid TOML"), "{}", stderr(&bad));
}

#[test]
fn nothing_checked_is_not_success() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("blob.py"), b"\x00\x01binary").unwrap();
    std::fs::write(dir.path().join("latin1.py"), b"x = '\xe9'\n").unwrap();
    let output = tokamak(&["check", "blob.py", "latin1.py"], dir.path());
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("nothing was checked: every file was skipped"), "{}", stderr(&output));
    let output =
        support::UserDirs::new().command(&["fix", "blob.py"]).current_dir(dir.path()).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("nothing was fixed"), "{output:?}");
}

/// Tokamak's cache (checkpoints, audit logs, sandbox copies holding a project's `.env`) is the
/// user's alone: made 0700, and a folder an earlier version left readable is closed.
#[test]
fn the_cache_is_readable_by_its_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let user = support::UserDirs::new();
    let cache = user.cache.path().join("tokamak");
    std::fs::create_dir_all(cache.join("projects")).unwrap();
    std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o755)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.py"), "x = 1\n").unwrap();
    let output = user.command(&["check", "a.py"]).current_dir(dir.path()).output().expect("tokamak");
    assert!(output.status.code().is_some(), "{output:?}");
    let mode = std::fs::metadata(&cache).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "{mode:o}");
}
