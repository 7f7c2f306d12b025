//! Verified candidates (SPEC V1–V2) as users meet them: `tokamak fix --candidates N` and the
//! editor's fix over stdio, the scripted model answering differently per temperature, the
//! real ruff judging each candidate's text, and the real pytest and a real TypeScript test
//! runner (tsc, then node's own `node --test`) choosing among them, in the real bubblewrap
//! sandbox and on a machine without it.

use crate::support;

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use serde_json::{Value, json};
use support::model_server::{ModelServer, Scripted, openai_chat};
use support::{LspClient, UserDirs, file_uri};

const CALC: &str = "def add(a, b):\n    return a + c\n";
const TEST_CALC: &str = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n";

/// A reply changing `return a + c` into `return {fixed}`, after a pause (so that candidates
/// asked together are answered together).
fn python_fix(fixed: &str) -> Scripted {
    let reply =
        format!("calc.py\n<<<<<<< SEARCH\n    return a + c\n=======\n    return {fixed}\n>>>>>>> REPLACE\n");
    Scripted::Delayed(Duration::from_millis(300), Box::new(openai_chat(&reply)))
}

/// The project's pytest, as seed 000's scenario runs it.
fn pytest() -> Vec<String> {
    support::scenario::PYTHON.test_command()
}

/// A Python project: `calc.py` with an undefined name, its test, ruff and pytest; `extra`
/// TOML is added to `tokamak.toml`.
fn python_project(model: &ModelServer, extra: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir(dir.path().join(".git")).expect(".git");
    std::fs::write(dir.path().join("calc.py"), CALC).expect("calc.py");
    std::fs::write(dir.path().join("test_calc.py"), TEST_CALC).expect("test_calc.py");
    let toml = format!(
        "[model]\nbase_url = {:?}\nmodel = \"scripted\"\nmax_retries = 0\n\n[test]\ncommand = {}\n\n[checkers]\nenable = [\"ruff\"]\n{extra}",
        model.url(),
        serde_json::to_string(&pytest()).unwrap()
    );
    std::fs::write(dir.path().join("tokamak.toml"), toml).expect("tokamak.toml");
    dir
}

/// `tokamak fix --format json ARGS` in `dir`, trusted, with `path` as the server's `PATH`
/// when given (a machine without bubblewrap).
fn fix(dir: &Path, args: &[&str], path: Option<&str>) -> (Output, Value) {
    fix_with(dir, args, path, &[])
}

/// As [`fix`], with more variables in Tokamak's environment.
fn fix_with(dir: &Path, args: &[&str], path: Option<&str>, env: &[(&str, String)]) -> (Output, Value) {
    let user = UserDirs::trusting(&[dir]);
    let mut all = vec!["fix", "--format", "json"];
    all.extend_from_slice(args);
    let mut command = user.command(&all);
    command.current_dir(dir);
    for var in ["TOKAMAK_LLM_URL", "TOKAMAK_MODEL", "OLLAMA_HOST", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"] {
        command.env_remove(var);
    }
    for (key, value) in support::tool_env() {
        command.env(key, value);
    }
    if let Some(path) = path {
        command.env("PATH", path);
    }
    command.envs(env.iter().map(|(k, v)| (*k, v.as_str())));
    let output = command.output().expect("run tokamak");
    let results: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|_| {
        panic!(
            "JSON on stdout: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    });
    let first = results[0].clone();
    (output, first)
}

fn outcomes(result: &Value) -> Vec<(u64, String)> {
    result["candidates"]
        .as_array()
        .map(|list| {
            list.iter()
                .map(|c| (c["number"].as_u64().unwrap(), c["outcome"].as_str().unwrap().to_string()))
                .collect()
        })
        .unwrap_or_default()
}

fn temperatures(model: &ModelServer) -> Vec<String> {
    let mut seen: Vec<String> = model
        .requests()
        .iter()
        .filter_map(|r| r.body["temperature"].as_f64())
        .map(|t| format!("{t:.1}"))
        .collect();
    seen.sort();
    seen
}

/// The steadiest candidate breaks the test, the next passes: the second is applied, the report
/// says why the first lost, and the third is never tested.
fn second_candidate_wins(path: Option<&str>) {
    if !support::require_tools(&["ruff", "pytest"]) {
        return;
    }
    let model = ModelServer::start(Vec::new());
    model.at_temperature(0.2, vec![python_fix("a - b")]);
    model.at_temperature(0.5, vec![python_fix("a + b")]);
    model.at_temperature(0.7, vec![python_fix("b + a")]);
    let dir = python_project(&model, "");
    let (output, result) = fix(dir.path(), &["--candidates", "3", "calc.py"], path);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(result["exit_reason"], "clean", "{result:#}\n{stderr}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("calc.py")).unwrap(),
        "def add(a, b):\n    return a + b\n"
    );
    assert_eq!(
        outcomes(&result),
        [(1, "tests_failed".to_string()), (2, "passed".to_string()), (3, "not_tested".to_string())]
    );
    let first = &result["candidates"][0];
    assert_eq!(first["temperature"].as_f64().map(|t| (t * 10.0).round()), Some(2.0));
    let why = first["why"].as_str().unwrap();
    assert!(why.contains("assert") && why.contains("-1 == 5"), "the failing assertion is said: {why}");
    assert!(first["test_ms"].as_f64().is_some());
    let summary = result["summary"].as_str().unwrap();
    assert!(
        summary.contains("3 candidate(s) tried") && summary.contains("candidate 2 passed the tests"),
        "{summary}"
    );
    assert_eq!(temperatures(&model), ["0.2", "0.5", "0.7"]);
    assert_eq!(model.most_at_once(), 3, "the three candidates were asked together");
}

#[test]
fn the_first_candidate_that_passes_the_tests_is_applied_in_the_sandbox() {
    if !support::require_tools(&["bwrap"]) {
        return;
    }
    second_candidate_wins(None);
}

#[test]
fn the_first_candidate_that_passes_the_tests_is_applied_without_bubblewrap() {
    let (_bin, path) = support::path_without(&["bwrap"]);
    second_candidate_wins(Some(&path));
}

#[test]
fn when_every_candidate_fails_its_tests_nothing_changes() {
    if !support::require_tools(&["ruff", "pytest"]) {
        return;
    }
    let model = ModelServer::start(Vec::new());
    model.at_temperature(0.2, vec![python_fix("a - b")]);
    model.at_temperature(0.5, vec![python_fix("a * b")]);
    model.at_temperature(0.7, vec![python_fix("b - a")]);
    let dir = python_project(&model, "");
    let (output, result) = fix(dir.path(), &["--candidates", "3", "--max-attempts", "1", "calc.py"], None);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(result["exit_reason"], "max_attempts", "{result:#}");
    assert_eq!(result["changed"], false);
    assert_eq!(std::fs::read_to_string(dir.path().join("calc.py")).unwrap(), CALC, "nothing on disk");
    assert_eq!(
        outcomes(&result),
        [(1, "tests_failed".to_string()), (2, "tests_failed".to_string()), (3, "tests_failed".to_string())]
    );
    let summary = result["summary"].as_str().unwrap();
    assert!(
        summary.contains("nothing was applied") && summary.contains("none passed the tests"),
        "{summary}"
    );
    assert!(summary.contains("6 == 5"), "each candidate's failure is said: {summary}");
}

#[test]
fn a_candidate_that_does_not_parse_is_dropped_without_running_tests() {
    if !support::require_tools(&["ruff", "pytest"]) {
        return;
    }
    let model = ModelServer::start(Vec::new());
    model.at_temperature(0.2, vec![python_fix("a + (b")]);
    model.at_temperature(0.5, vec![python_fix("a + b")]);
    let dir = python_project(&model, "");
    let (_, result) = fix(dir.path(), &["--candidates", "2", "calc.py"], None);
    assert_eq!(result["exit_reason"], "clean", "{result:#}");
    assert_eq!(outcomes(&result), [(1, "does_not_parse".to_string()), (2, "passed".to_string())]);
    assert!(result["candidates"][0].get("test_ms").is_none(), "no test ran on it: {result:#}");
    assert!(result["candidates"][0]["why"].as_str().unwrap().starts_with("line "), "{result:#}");
}

#[test]
fn a_server_with_one_slot_is_found_out_and_asked_in_turn() {
    if !support::require_tools(&["ruff", "pytest"]) {
        return;
    }
    let model = ModelServer::start(Vec::new());
    model.one_at_a_time();
    model.at_temperature(0.2, vec![python_fix("a + b")]);
    model.at_temperature(0.5, vec![python_fix("b + a")]);
    model.at_temperature(0.7, vec![python_fix("a + b + 0")]);
    let dir = python_project(&model, "");
    let (_, result) = fix(dir.path(), &["--candidates", "3", "calc.py"], None);
    assert_eq!(result["exit_reason"], "clean", "{result:#}");
    assert!(model.refused_busy() >= 1, "the server refused a request while busy");
    assert_eq!(outcomes(&result)[0], (1, "passed".to_string()));
    assert!(
        outcomes(&result).iter().all(|(_, o)| o != "model_failed"),
        "every candidate was answered in the end: {result:#}"
    );
}

#[test]
fn a_server_set_to_one_request_at_a_time_is_never_crowded() {
    if !support::require_tools(&["ruff", "pytest"]) {
        return;
    }
    let model = ModelServer::start(Vec::new());
    model.one_at_a_time();
    model.at_temperature(0.2, vec![python_fix("a - b")]);
    model.at_temperature(0.5, vec![python_fix("a + b")]);
    let dir = python_project(&model, "");
    let toml = std::fs::read_to_string(dir.path().join("tokamak.toml")).unwrap();
    std::fs::write(
        dir.path().join("tokamak.toml"),
        toml.replace("max_retries = 0\n", "max_retries = 0\nparallel = 1\n"),
    )
    .unwrap();
    let (_, result) = fix(dir.path(), &["--candidates", "2", "calc.py"], None);
    assert_eq!(result["exit_reason"], "clean", "{result:#}");
    assert_eq!((model.most_at_once(), model.refused_busy()), (1, 0));
    assert_eq!(outcomes(&result), [(1, "tests_failed".to_string()), (2, "passed".to_string())]);
}

// ---- the tests choose: a candidate failing a test never beats one passing every test ----

const STATS: &str = "def mean(xs):\n    return sum(xs) / count\n";
const TEST_STATS: &str = "from stats import mean\n\n\ndef test_pair():\n    assert mean([1, 3]) == 2\n\n\ndef test_mean():\n    assert mean([2, 3, 4]) == 3\n";

/// A reply changing `return sum(xs) / count` into `return {fixed}`, after a pause.
fn stats_fix(fixed: &str) -> Scripted {
    let reply = format!(
        "stats.py\n<<<<<<< SEARCH\n    return sum(xs) / count\n=======\n    return {fixed}\n>>>>>>> REPLACE\n"
    );
    Scripted::Delayed(Duration::from_millis(300), Box::new(openai_chat(&reply)))
}

/// A reply whose SEARCH matches nothing in the file.
fn stats_astray() -> Scripted {
    let reply = "stats.py\n<<<<<<< SEARCH\n    return total / n\n=======\n    return 0\n>>>>>>> REPLACE\n";
    Scripted::Delayed(Duration::from_millis(300), Box::new(openai_chat(reply)))
}

/// `stats.py` whose `count` is undefined (both tests fail without a fix: a NameError), its
/// tests, ruff and pytest.
fn stats_project(model: &ModelServer) -> tempfile::TempDir {
    let dir = python_project(model, "");
    std::fs::remove_file(dir.path().join("calc.py")).unwrap();
    std::fs::remove_file(dir.path().join("test_calc.py")).unwrap();
    std::fs::write(dir.path().join("stats.py"), STATS).unwrap();
    std::fs::write(dir.path().join("test_stats.py"), TEST_STATS).unwrap();
    dir
}

/// pytest on the project as the run left it: whether every test passes, and its output.
fn pytest_after(dir: &Path) -> (bool, String) {
    let mut argv = pytest();
    let program = argv.remove(0);
    let mut command = std::process::Command::new(program);
    command.args(&argv).current_dir(dir).env("PYTHONDONTWRITEBYTECODE", "1");
    for (key, value) in support::tool_env() {
        command.env(key, value);
    }
    let output = command.output().expect("pytest");
    (output.status.success(), String::from_utf8_lossy(&output.stdout).to_string())
}

/// The steadiest candidate fixes one test and not the other (only a test that failed without
/// any fix fails on it), the next passes every test, the third does not apply: the second
/// lands, and the ending is clean because the tests pass on what landed.
#[test]
fn a_candidate_passing_every_test_beats_one_failing_only_known_failures() {
    if !support::require_tools(&["ruff", "pytest"]) {
        return;
    }
    let model = ModelServer::start(Vec::new());
    model.at_temperature(0.2, vec![stats_fix("sum(xs) / 2")]);
    model.at_temperature(0.5, vec![stats_fix("sum(xs) / len(xs)")]);
    model.at_temperature(0.7, vec![stats_astray()]);
    let dir = stats_project(&model);
    let (output, result) = fix(dir.path(), &["--candidates", "3", "stats.py"], None);
    assert_eq!(result["exit_reason"], "clean", "{result:#}");
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("stats.py")).unwrap(),
        "def mean(xs):\n    return sum(xs) / len(xs)\n"
    );
    assert_eq!(
        outcomes(&result),
        [
            (1, "passed_but_known_failures".to_string()),
            (2, "passed".to_string()),
            (3, "does_not_apply".to_string())
        ]
    );
    assert_eq!(result["candidates"][1]["chosen"], true, "{result:#}");
    let why = result["candidates"][0]["why"].as_str().unwrap();
    assert!(why.contains("not chosen: candidate 2 passes every test"), "{why}");
    let summary = result["summary"].as_str().unwrap();
    assert!(
        summary.contains("candidate 2 passed the tests") && summary.contains("the tests pass"),
        "{summary}"
    );
    assert!(result.get("left").is_none(), "nothing is left: {result:#}");
    let (passed, out) = pytest_after(dir.path());
    assert!(passed, "the ending is what pytest says: {out}");
}

/// The mirror: the steadiest candidate is right; it lands and the others are never tested.
#[test]
fn a_right_first_candidate_lands_and_the_others_are_not_tested() {
    if !support::require_tools(&["ruff", "pytest"]) {
        return;
    }
    let model = ModelServer::start(Vec::new());
    model.at_temperature(0.2, vec![stats_fix("sum(xs) / len(xs)")]);
    model.at_temperature(0.5, vec![stats_fix("sum(xs) / 2")]);
    model.at_temperature(0.7, vec![stats_astray()]);
    let dir = stats_project(&model);
    let (_, result) = fix(dir.path(), &["--candidates", "3", "stats.py"], None);
    assert_eq!(result["exit_reason"], "clean", "{result:#}");
    assert_eq!(
        outcomes(&result),
        [(1, "passed".to_string()), (2, "not_tested".to_string()), (3, "does_not_apply".to_string())]
    );
    assert!(pytest_after(dir.path()).0);
}

/// No candidate passes every test: the one failing fewest known failures lands, and the
/// ending is not clean — it names the test still failing, and `tokamak fix` exits 1.
#[test]
fn when_no_candidate_passes_every_test_the_ending_names_the_failing_ones() {
    if !support::require_tools(&["ruff", "pytest"]) {
        return;
    }
    let model = ModelServer::start(Vec::new());
    model.at_temperature(0.2, vec![stats_fix("sum(xs) / 2")]);
    model.at_temperature(0.5, vec![stats_fix("sum(xs) // 2")]);
    let dir = stats_project(&model);
    let (output, result) = fix(dir.path(), &["--candidates", "2", "stats.py"], None);
    assert_eq!(result["exit_reason"], "tests_failing", "{result:#}");
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(result["left"]["tests_failing"], json!(["test_stats.py::test_mean"]), "{result:#}");
    assert_eq!(
        outcomes(&result),
        [(1, "passed_but_known_failures".to_string()), (2, "passed_but_known_failures".to_string())]
    );
    assert_eq!(result["candidates"][0]["chosen"], true, "the steadiest of two equals: {result:#}");
    let summary = result["summary"].as_str().unwrap();
    assert!(
        summary.contains("the tests fail on it")
            && summary.contains("tests failing: test_stats.py::test_mean"),
        "{summary}"
    );
    assert!(!summary.contains("clean"), "{summary}");
    let (passed, out) = pytest_after(dir.path());
    assert!(!passed && out.contains("test_mean"), "what the ending says is what pytest says: {out}");
}

/// A candidate whose reply was cut at its token limit is never applied, not even its first,
/// finished block.
#[test]
fn a_candidate_cut_at_its_length_is_never_half_applied() {
    if !support::require_tools(&["ruff", "pytest"]) {
        return;
    }
    let model = ModelServer::start(Vec::new());
    let cut_reply = "stats.py\n<<<<<<< SEARCH\n    return sum(xs) / count\n=======\n    return sum(xs) / 2\n>>>>>>> REPLACE\n\nstats.py\n<<<<<<< SEARCH\ndef mean(xs):\n=======\ndef mean(xs: list";
    model.at_temperature(0.2, vec![support::model_server::json_reply(
        200,
        json!({
            "id": "chatcmpl-cut", "object": "chat.completion", "created": 1_700_000_000, "model": "scripted-model",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": cut_reply}, "finish_reason": "length"}],
            "usage": {"prompt_tokens": 21, "completion_tokens": 64, "total_tokens": 85},
        }),
    )]);
    model.at_temperature(0.5, vec![stats_fix("sum(xs) / len(xs)")]);
    let dir = stats_project(&model);
    let (_, result) = fix(dir.path(), &["--candidates", "2", "stats.py"], None);
    assert_eq!(result["exit_reason"], "clean", "{result:#}");
    assert_eq!(outcomes(&result), [(1, "cut".to_string()), (2, "passed".to_string())]);
    assert!(result["candidates"][0].get("test_ms").is_none(), "a cut reply is not tested: {result:#}");
}

/// The fix loop's single fix, cut at its length after one finished block: nothing from it is
/// applied (the finished block alone is a wrong fix), the model is told and asked again.
#[test]
fn a_reply_cut_at_its_length_is_never_half_applied_by_the_fix_loop() {
    if !support::require_tools(&["ruff", "pytest"]) {
        return;
    }
    let cut_reply = "calc.py\n<<<<<<< SEARCH\n    return a + c\n=======\n    return a - b\n>>>>>>> REPLACE\n\ncalc.py\n<<<<<<< SEARCH\ndef add(a, b):\n=======\ndef add(a, b, c=0";
    let model = ModelServer::start(vec![
        support::model_server::json_reply(
            200,
            json!({
                "id": "chatcmpl-cut", "object": "chat.completion", "created": 1_700_000_000, "model": "scripted-model",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": cut_reply}, "finish_reason": "length"}],
                "usage": {"prompt_tokens": 21, "completion_tokens": 64, "total_tokens": 85},
            }),
        ),
        python_fix("a + b"),
    ]);
    let dir = python_project(&model, "");
    let (_, result) = fix(dir.path(), &["--candidates", "1", "calc.py"], None);
    assert_eq!(result["exit_reason"], "clean", "{result:#}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("calc.py")).unwrap(),
        "def add(a, b):\n    return a + b\n",
        "the cut reply's finished block never landed"
    );
    let requests = model.requests();
    assert_eq!(requests.len(), 2, "asked again after the cut reply");
    let second = requests[1].body.to_string();
    assert!(second.contains("cut off at the token limit"), "the model is told: {second}");
    assert_eq!(result["attempts"], 2);
}

#[test]
fn a_test_failing_without_any_fix_does_not_stop_a_candidate_that_fixes_the_rest() {
    if !support::require_tools(&["ruff", "pytest"]) {
        return;
    }
    let model = ModelServer::start(Vec::new());
    model.at_temperature(0.2, vec![python_fix("a + b")]);
    model.at_temperature(0.5, vec![python_fix("b + a")]);
    let dir = python_project(&model, "");
    // a test that fails whatever the fix
    std::fs::write(
        dir.path().join("test_other.py"),
        "def test_other():\n    assert False, 'broken elsewhere'\n",
    )
    .unwrap();
    let (output, result) = fix(dir.path(), &["--candidates", "2", "calc.py"], None);
    // the fix lands, but the ending is not clean: a test still fails
    assert_eq!(result["exit_reason"], "tests_failing", "{result:#}");
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("calc.py")).unwrap(),
        "def add(a, b):\n    return a + b\n"
    );
    assert_eq!(
        outcomes(&result),
        [(1, "passed_but_known_failures".to_string()), (2, "passed_but_known_failures".to_string())],
        "every candidate is tested before one failing a test lands"
    );
    let why = result["candidates"][0]["why"].as_str().unwrap();
    assert!(why.contains("test_other.py::test_other"), "{why}");
    assert_eq!(result["left"]["tests_failing"], json!(["test_other.py::test_other"]), "{result:#}");
    let summary = result["summary"].as_str().unwrap();
    assert!(
        summary.contains("candidate 1 passed all but the tests that failed without any fix")
            && summary.contains("tests failing: test_other.py::test_other"),
        "{summary}"
    );
}

#[test]
fn one_candidate_or_no_test_command_is_the_fix_as_it_comes() {
    if !support::require_tools(&["ruff"]) {
        return;
    }
    let model = ModelServer::start(vec![python_fix("a - b")]);
    let dir = python_project(&model, "");
    let (_, result) = fix(dir.path(), &["--candidates", "1", "calc.py"], None);
    // the checkers are satisfied with the wrong fix; the tests, run on what landed, are not
    assert_eq!(result["exit_reason"], "tests_failing", "{result:#}");
    assert_eq!(result["left"]["tests_failing"], json!(["test_calc.py::test_add"]), "{result:#}");
    assert!(result.get("candidates").is_none(), "{result:#}");
    assert_eq!(model.requests().len(), 1);
}

// ---- TypeScript: tsc, then node's own test runner ----

const SUM_TS: &str =
    "export function sum(values: number[]): number {\n    return values.reduce((a, b) => a + b, start);\n}\n";
const SUM_TEST_TS: &str = "import { test } from \"node:test\";\nimport assert from \"node:assert/strict\";\nimport { sum } from \"./sum.js\";\n\ntest(\"sum adds\", () => {\n    assert.equal(sum([1, 2, 3]), 6);\n});\n";

fn ts_fix(fixed: &str) -> Scripted {
    let reply = format!(
        "sum.ts\n<<<<<<< SEARCH\n    return values.reduce((a, b) => a + b, start);\n=======\n    return values.reduce((a, b) => a + b, {fixed});\n>>>>>>> REPLACE\n"
    );
    Scripted::Delayed(Duration::from_millis(200), Box::new(openai_chat(&reply)))
}

fn typescript(path: Option<&str>) {
    if !support::require_tools(&["tsc", "node"]) {
        return;
    }
    let model = ModelServer::start(Vec::new());
    model.at_temperature(0.2, vec![ts_fix("1")]);
    model.at_temperature(0.5, vec![ts_fix("0")]);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir(root.join(".git")).unwrap();
    std::fs::write(root.join("sum.ts"), SUM_TS).unwrap();
    std::fs::write(root.join("sum.test.ts"), SUM_TEST_TS).unwrap();
    std::fs::write(
        root.join("tsconfig.json"),
        r#"{"compilerOptions": {"target": "es2022", "module": "nodenext", "moduleResolution": "nodenext", "strict": true, "outDir": "dist", "types": []}, "include": ["*.ts"]}"#,
    )
    .unwrap();
    std::fs::write(root.join("package.json"), r#"{"type": "module"}"#).unwrap();
    // node's own modules, as much of them as the test uses (no @types/node here)
    std::fs::write(
        root.join("node.d.ts"),
        "declare module \"node:test\" {\n    export function test(name: string, body: () => void): void;\n}\ndeclare module \"node:assert/strict\" {\n    const assert: { equal(actual: unknown, expected: unknown): void };\n    export default assert;\n}\n",
    )
    .unwrap();
    let tools = support::tools_dir();
    let tsc = tools.join("node/node_modules/.bin/tsc");
    let command =
        ["sh".to_string(), "-c".to_string(), format!("{} -p . && node --test dist/", tsc.display())];
    std::fs::write(
        root.join("tokamak.toml"),
        format!(
            "[model]\nbase_url = {:?}\nmodel = \"scripted\"\nmax_retries = 0\n\n[test]\ncommand = {}\n\n[checkers]\nenable = [\"tsc\"]\n",
            model.url(),
            serde_json::to_string(&command).unwrap()
        ),
    )
    .unwrap();
    let (output, result) = fix(root, &["--candidates", "2", "sum.ts"], path);
    assert_eq!(result["exit_reason"], "clean", "{result:#}\n{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(outcomes(&result), [(1, "tests_failed".to_string()), (2, "passed".to_string())]);
    let why = result["candidates"][0]["why"].as_str().unwrap();
    assert!(
        why.contains("sum adds") && why.contains("7"),
        "node's failing test and assertion are said: {why}"
    );
    assert!(std::fs::read_to_string(root.join("sum.ts")).unwrap().contains("a + b, 0)"));
    assert!(!root.join("dist").exists(), "the tests ran in copies: the workspace has no build output");
}

#[test]
fn typescript_candidates_are_chosen_by_a_real_test_runner_in_the_sandbox() {
    if !support::require_tools(&["bwrap"]) {
        return;
    }
    typescript(None);
}

#[test]
fn typescript_candidates_are_chosen_by_a_real_test_runner_without_bubblewrap() {
    let (_bin, path) = support::path_without(&["bwrap"]);
    typescript(Some(&path));
}

// ---- the editor's fix, over stdio ----

/// The editor's fix on a buffer whose unsaved text differs from the disk: the candidates are
/// tested on the buffer's text, the passing one lands in the buffer, and `runFinished` and
/// the progress say how many were tried.
#[test]
fn the_editors_fix_tests_candidates_on_the_buffer_and_lands_the_passing_one() {
    if !support::require_tools(&["ruff", "pytest"]) {
        return;
    }
    let model = ModelServer::start(Vec::new());
    model.at_temperature(0.2, vec![python_fix("a - b")]);
    model.at_temperature(0.5, vec![python_fix("a + b")]);
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir(root.join(".git")).unwrap();
    // on disk the function is something else: only the buffer has the broken `add`
    std::fs::write(root.join("calc.py"), "def add(a, b):\n    return 0\n").unwrap();
    std::fs::write(root.join("test_calc.py"), TEST_CALC).unwrap();
    let options = json!({
        "checkers": {"enable": ["ruff"]},
        "model": {"base_url": model.url(), "model": "scripted", "max_retries": 0},
        "test": {"command": pytest()},
        "fix": {"candidates": 2},
    });
    let user = UserDirs::trusting(&[&root]);
    let capabilities = json!({
        "general": {"positionEncodings": ["utf-16"]},
        "window": {"workDoneProgress": true},
        "workspace": {"applyEdit": true, "workspaceEdit": {"documentChanges": true}},
    });
    let mut client = LspClient::for_project_in(user, &root, options, capabilities, &[]);
    client.act_as_editor();
    let uri = file_uri(&root.join("calc.py"));
    client.open(&uri, "python", 1, CALC);
    client.diagnostics_from(&uri, "ruff");
    let started = client
        .request("workspace/executeCommand", json!({"command": "tokamak.fix", "arguments": [{"uri": uri}]}));
    let run_id = started["result"]["run_id"].as_str().expect("a run id").to_string();
    let finished = client.wait_for_notification("tokamak/runFinished")["params"].clone();
    assert_eq!(finished["exit_reason"], "clean", "{finished:#}");
    assert_eq!(client.text(&uri), "def add(a, b):\n    return a + b\n");
    assert_eq!(std::fs::read_to_string(root.join("calc.py")).unwrap(), "def add(a, b):\n    return 0\n");
    let outcomes: Vec<&str> =
        finished["candidates"].as_array().unwrap().iter().map(|c| c["outcome"].as_str().unwrap()).collect();
    assert_eq!(outcomes, ["tests_failed", "passed"]);
    assert!(finished["summary"].as_str().unwrap().contains("2 candidate(s) tried"), "{finished:#}");
    let reports: Vec<String> = client
        .seen(|m| m["method"] == "$/progress" && m["params"]["token"] == run_id.as_str())
        .iter()
        .filter_map(|m| m["params"]["value"]["message"].as_str().map(str::to_string))
        .collect();
    assert!(reports.iter().any(|r| r == "candidate 1/2: running tests"), "{reports:?}");
    assert!(reports.iter().any(|r| r == "candidate 2/2: running tests"), "{reports:?}");
    client.shutdown();
}

#[test]
fn tests_that_cannot_run_leave_the_choice_to_the_checkers_and_say_so() {
    if !support::require_tools(&["ruff"]) {
        return;
    }
    let model = ModelServer::start(Vec::new());
    model.at_temperature(0.2, vec![python_fix("a + d")]);
    model.at_temperature(0.5, vec![python_fix("a + b")]);
    let dir = python_project(&model, "");
    let toml = std::fs::read_to_string(dir.path().join("tokamak.toml")).unwrap();
    let runner = serde_json::to_string(&pytest()).unwrap();
    std::fs::write(dir.path().join("tokamak.toml"), toml.replace(&runner, "[\"no-such-test-runner\"]"))
        .unwrap();
    let (output, result) = fix(dir.path(), &["--candidates", "2", "calc.py"], None);
    // the checkers' choice lands, and the ending says that nothing tested it
    assert_eq!(result["exit_reason"], "untested", "{result:#}");
    assert_eq!(output.status.code(), Some(1));
    assert!(
        result["left"]["tests_not_run"].as_str().is_some_and(|why| why.contains("no-such-test-runner")),
        "{result:#}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("calc.py")).unwrap(),
        "def add(a, b):\n    return a + b\n"
    );
    assert_eq!(outcomes(&result), [(1, "not_tested".to_string()), (2, "chosen_by_checkers".to_string())]);
    let summary = result["summary"].as_str().unwrap();
    assert!(
        summary.contains("the tests could not be run") && summary.contains("no-such-test-runner"),
        "{summary}"
    );
    assert!(summary.contains("so the checkers chose candidate 2"), "{summary}");
}

/// Tokamak's cache inside the project (a user whose cache folder is under their home and who
/// opens their home): each candidate's copy leaves out the cache, where the other copies are
/// being made and removed, so the candidates' tests still decide.
#[test]
fn a_cache_folder_inside_the_project_is_not_copied_into_the_candidates_copies() {
    if !support::require_tools(&["ruff", "pytest"]) {
        return;
    }
    let model = ModelServer::start(Vec::new());
    model.at_temperature(0.2, vec![python_fix("a - b")]);
    model.at_temperature(0.5, vec![python_fix("a + b")]);
    let dir = python_project(&model, "");
    let cache = dir.path().join(".cache").display().to_string();
    let (_, result) =
        fix_with(dir.path(), &["--candidates", "2", "calc.py"], None, &[("XDG_CACHE_HOME", cache)]);
    assert_eq!(result["exit_reason"], "clean", "{result:#}");
    assert_eq!(outcomes(&result), [(1, "tests_failed".to_string()), (2, "passed".to_string())], "{result:#}");
}

/// Seed 002's Multi-LLM: two models, each at its own endpoint (a `[profiles.NAME]` each), are
/// asked together; the local one's candidate breaks the test, the hosted one's passes and is
/// applied; the report names each candidate's model and the winner's.
#[test]
fn candidates_from_two_models_compete_under_the_tests() {
    if !support::require_tools(&["ruff", "pytest"]) {
        return;
    }
    let local = ModelServer::start(Vec::new());
    local.at_temperature(0.2, vec![python_fix("a - b")]);
    local.at_temperature(0.7, vec![python_fix("a * b")]);
    let hosted = ModelServer::start(Vec::new());
    hosted.at_temperature(0.2, vec![python_fix("a + b")]);
    let extra = format!(
        "\n[profiles.local]\nbase_url = {:?}\nmodel = \"local-7b\"\n\n[profiles.hosted]\nbase_url = {:?}\nmodel = \"hosted-large\"\n\n[[fix.candidate_models]]\nprofile = \"local\"\ntemperatures = [0.2, 0.7]\n\n[[fix.candidate_models]]\nprofile = \"hosted\"\ntemperatures = [0.2]\n",
        local.url(),
        hosted.url()
    );
    let dir = python_project(&local, &extra);
    // the project's settings name the servers: trusted, as `fix` makes it
    let (output, result) = fix(dir.path(), &["calc.py"], None);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(result["exit_reason"], "clean", "{result:#}\n{stderr}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("calc.py")).unwrap(),
        "def add(a, b):\n    return a + b\n"
    );
    let models: Vec<(u64, String, String)> = result["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["number"].as_u64().unwrap(),
                c["model"].as_str().unwrap_or_default().to_string(),
                c["outcome"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert!(models.contains(&(3, "hosted".to_string(), "passed".to_string())), "{models:?}");
    assert!(models.iter().any(|(n, m, o)| *n == 1 && m == "local" && o == "tests_failed"), "{models:?}");
    let winner = result["candidates"].as_array().unwrap().iter().find(|c| c["chosen"] == true).unwrap();
    assert_eq!(winner["model"], "hosted");
    let summary = result["summary"].as_str().unwrap();
    assert!(summary.contains("candidate 3 (from hosted) passed the tests"), "{summary}");
    // each server was asked by its own model name, at its own temperatures, together
    let asked = |server: &ModelServer| -> Vec<String> {
        server.requests().iter().filter_map(|r| r.body["model"].as_str().map(str::to_string)).collect()
    };
    assert_eq!(asked(&local), ["local-7b", "local-7b"]);
    assert_eq!(asked(&hosted), ["hosted-large"]);
    assert_eq!(temperatures(&local), ["0.2", "0.7"]);
}
