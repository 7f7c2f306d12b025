//! fixtures/fixbench: every case is well formed and sound (the reference passes the case's
//! checkers, the broken file does not), and `tokamak bench fix` runs cases and reports them.

use crate::support;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Output;

use serde_json::Value;
use support::model_server::{ModelServer, openai_chat};

fn bench_dir() -> std::path::PathBuf {
    support::repo_root().join("fixtures/fixbench")
}

/// `tokamak` in `dir`, for a user who trusts `dir` and the bench folder (their settings name
/// the checkers, their verify commands are programs).
fn tokamak(args: &[&str], dir: &Path, env: &[(&str, String)]) -> Output {
    let user = support::UserDirs::trusting(&[dir, &bench_dir()]);
    let mut command = user.command(args);
    command.current_dir(dir);
    for var in ["TOKAMAK_LLM_URL", "TOKAMAK_MODEL", "OLLAMA_HOST", "OPENAI_API_KEY"] {
        command.env_remove(var);
    }
    for (key, value) in support::tool_env() {
        command.env(key, value);
    }
    for (key, value) in env {
        command.env(key, value);
    }
    command.output().expect("run tokamak")
}

/// A model URL nothing listens on.
fn nowhere() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    format!("http://127.0.0.1:{port}")
}

#[test]
fn every_case_is_well_formed_and_the_mix_is_broad() {
    let cases = tokamak::cli::bench::cases(&bench_dir()).expect("cases");
    assert!(cases.len() >= 40, "{} cases", cases.len());
    let mut kinds = BTreeSet::new();
    let mut languages = BTreeSet::new();
    for (name, folder, case) in &cases {
        let broken = std::fs::read_to_string(folder.join(&case.file)).expect(name);
        let reference = std::fs::read_to_string(folder.join(format!("{}.reference", case.file))).expect(name);
        assert_ne!(broken, reference, "{name}: the mutation changed nothing");
        assert!(!case.origin.is_empty() && !case.mutation.is_empty(), "{name}: say where it came from");
        assert!(!case.verify.is_empty(), "{name}: a verify command");
        assert!(folder.join("tokamak.toml").is_file(), "{name}: checkers named");
        kinds.insert(case.kind.clone());
        languages.insert(case.language.clone());
    }
    let expected: BTreeSet<String> = ["import", "lint", "name", "syntax", "type"].map(String::from).into();
    assert_eq!(kinds, expected);
    assert_eq!(languages, ["python", "typescript"].map(String::from).into());
}

/// Runs `tokamak check` on a copy of a case with `text` as its file (`checkers`: only those,
/// else the case's).
fn check(folder: &Path, file: &str, text: &str) -> Value {
    check_with(folder, file, text, None)
}

fn check_with(folder: &Path, file: &str, text: &str, checkers: Option<&str>) -> Value {
    let work = tempfile::tempdir().unwrap();
    support::copy_tree(folder, work.path());
    std::fs::create_dir(work.path().join(".git")).unwrap();
    std::fs::write(work.path().join(file), text).unwrap();
    let mut args = vec!["check", "--format", "json", file];
    if let Some(checkers) = checkers {
        args.extend(["--checkers", checkers]);
    }
    let output = tokamak(&args, work.path(), &[]);
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|err| panic!("{file}: {err}: {}", String::from_utf8_lossy(&output.stderr)))
}

#[test]
fn references_pass_their_checkers_and_broken_files_do_not() {
    if !support::require_tools(&["ruff", "pyright", "tsc"]) {
        return;
    }
    let cases = tokamak::cli::bench::cases(&bench_dir()).expect("cases");
    // two at a time: the machine has two cores and pyright is the slow part
    let failures: Vec<String> = std::thread::scope(|scope| {
        let halves: Vec<_> = cases
            .chunks(cases.len().div_ceil(2))
            .map(|chunk| {
                scope.spawn(move || {
                    let mut failures = Vec::new();
                    for (name, folder, case) in chunk {
                        let broken = std::fs::read_to_string(folder.join(&case.file)).unwrap();
                        let reference =
                            std::fs::read_to_string(folder.join(format!("{}.reference", case.file))).unwrap();
                        // one of its checkers fails it: a syntax case's the syntax check alone,
                        // else ruff, the quick one, asked first where the case runs it, the
                        // others only when those find nothing
                        let settings = std::fs::read_to_string(folder.join("tokamak.toml")).unwrap();
                        let mut found = Value::Null;
                        if case.kind == "syntax" {
                            found = check_with(folder, &case.file, &broken, Some("none"));
                        }
                        if found.as_array().is_none_or(Vec::is_empty) && settings.contains("\"ruff\"") {
                            found = check_with(folder, &case.file, &broken, Some("ruff"));
                        }
                        if found.as_array().is_none_or(Vec::is_empty) {
                            found = check(folder, &case.file, &broken);
                        }
                        if found.as_array().is_none_or(Vec::is_empty) {
                            failures.push(format!("{name}: the broken file passes its checkers"));
                        }
                        let found = check(folder, &case.file, &reference);
                        if found.as_array().is_some_and(|f| !f.is_empty()) {
                            failures.push(format!("{name}: the reference does not pass: {found}"));
                        }
                    }
                    failures
                })
            })
            .collect();
        halves.into_iter().flat_map(|h| h.join().expect("thread")).collect()
    });
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn bench_fix_without_a_model_solves_what_needs_none() {
    if !support::require_tools(&["tsc", "ruff", "pyright"]) {
        return;
    }
    let output = tokamak(
        &["bench", "fix", "fixtures/fixbench", "--filter", "syntax", "--format", "json"],
        &support::repo_root(),
        &[("TOKAMAK_LLM_URL", nowhere()), ("TOKAMAK_MODEL", "none".to_string())],
    );
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let results: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let results = results.as_array().expect("array");
    assert!(results.len() >= 10, "{results:?}");
    let solved: BTreeSet<&str> =
        results.iter().filter(|r| r["solved"] == true).filter_map(|r| r["case"].as_str()).collect();
    for case in ["ts-syntax-isDate-paren", "ts-syntax-arrRemove-brace", "py-syntax-isleap-paren"] {
        assert!(solved.contains(case), "{case} needs no model: {results:#?}");
    }
    for result in results.iter().filter(|r| r["solved"] == false) {
        assert_eq!(result["exit_reason"], "failed", "no model to ask: {result}");
        assert_eq!(result["tokens"]["prompt"], 0);
    }
    // the fixture itself is untouched: cases run in copies
    let broken = std::fs::read_to_string(bench_dir().join("ts-syntax-isDate-paren/isDate.ts")).unwrap();
    assert!(broken.contains("as any;"));
}

#[test]
fn bench_fix_prints_a_table_for_a_model() {
    if !support::require_tools(&["ruff", "pyright"]) {
        return;
    }
    let reply = "shlex_quote.py\n<<<<<<< SEARCH\n    if not st:\n=======\n    if not s:\n>>>>>>> REPLACE\n";
    let model = ModelServer::start(vec![openai_chat(reply)]);
    let output = tokamak(
        &[
            "bench",
            "fix",
            "fixtures/fixbench",
            "--filter",
            "py-name-quote-typo",
            "--model-url",
            &model.url(),
            "--model",
            "scripted",
        ],
        &support::repo_root(),
        &[],
    );
    let table = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{table}{}", String::from_utf8_lossy(&output.stderr));
    let row = table.lines().find(|l| l.starts_with("py-name-quote-typo")).expect(&table);
    let columns: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(columns[1..6], ["name", "yes", "1", "21", "7"], "{table}");
    assert_eq!(columns.last(), Some(&"clean"));
    assert!(table.contains("total: 1/1 solved, 21 prompt + 7 completion tokens"), "{table}");
    assert!(table.contains("by kind: name 1/1"), "{table}");
}
