//! Runs followed mode by mode (SPEC M1, P1): headless `tokamak run`s against a scripted model
//! and the real pytest and git, each asserting its whole trail of modes from the audit log —
//! tests failing once and sent back to the code, a seven-file change through multi-file
//! editing and impact analysis, and `auto_commit` ending in the git mode with a commit.

use crate::support;

use std::path::Path;
use std::process::Output;

use support::UserDirs;
use support::model_server::{ModelServer, Scripted, openai_chat};
use support::replies::{done, edit};

const TOTAL: &str = "def total(xs):\n    return 0\n";
const TEST_TOTAL: &str = "from calc import total\n\n\ndef test_total():\n    assert total([1, 2]) == 3\n";
const GOAL: &str = "Make total add the numbers in calc.py";

/// A trusted project of `files` whose `tokamak.toml` runs pytest after each step (`head`: keys
/// before its tables).
fn project(files: &[(&str, &str)], head: &str) -> tempfile::TempDir {
    project_checked(files, head, "[]")
}

/// The same, with the checkers `enable` lists.
fn project_checked(files: &[(&str, &str)], head: &str, enable: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let python = support::tools_dir().join("venv/bin/python");
    let toml = format!(
        "{head}[checkers]\nenable = {enable}\n\n[test]\ncommand = [{:?}, \"-m\", \"pytest\", \"-q\", \"-p\", \"no:cacheprovider\"]\n",
        python.display().to_string()
    );
    for (name, text) in files.iter().copied().chain([("tokamak.toml", toml.as_str())]) {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

/// `tokamak run GOAL --yes` in `root`, trusted.
fn run(root: &Path, script: Vec<Scripted>) -> (Output, UserDirs, ModelServer) {
    run_goal(root, GOAL, script)
}

fn run_goal(root: &Path, goal: &str, script: Vec<Scripted>) -> (Output, UserDirs, ModelServer) {
    let model = ModelServer::start(script);
    let user = UserDirs::trusting(&[root]);
    let output = user
        .command(&["run", goal, "--yes"])
        .current_dir(root)
        .env("TOKAMAK_LLM_URL", model.url())
        .env("TOKAMAK_MODEL", "scripted")
        .envs(support::tool_env())
        .output()
        .expect("tokamak runs");
    (output, user, model)
}

/// Each coverage measure of the run, as (new statements, those the tests ran).
fn coverage_measures(user: &UserDirs) -> Vec<(u64, u64)> {
    let measured = support::audit_events(user.cache.path(), "coverage");
    measured.iter().map(|m| (m["added"].as_u64().unwrap_or(0), m["covered"].as_u64().unwrap_or(0))).collect()
}

/// A trusted project of `files` beside a `tokamak.toml` of `settings` (no Python test command).
fn project_with(files: &[(&str, &str)], settings: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files.iter().copied().chain([("tokamak.toml", settings)]) {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    dir
}

fn said(output: &Output) -> String {
    format!("{}\n{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

/// The step's tests fail after its first edit: back to the code with the failure, edited
/// again, tested again, reviewed.
#[test]
fn tests_failing_once_send_the_step_back_to_the_code() {
    if !support::require_tools(&["pytest"]) {
        return;
    }
    let dir = project(&[("calc.py", TOTAL), ("test_calc.py", TEST_TOTAL)], "");
    let root = dir.path();
    let (output, user, model) = run(
        root,
        vec![
            openai_chat(&format!("1. {GOAL}\n")),
            edit("calc.py", "    return 0", "    return sum(xs) + 1"),
            done("added"),
            // told the tests fail
            edit("calc.py", "    return sum(xs) + 1", "    return sum(xs)"),
            done("fixed"),
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", said(&output));
    assert_eq!(
        std::fs::read_to_string(root.join("calc.py")).unwrap(),
        "def total(xs):\n    return sum(xs)\n"
    );
    // the second round was told the failure
    let requests = model.requests();
    assert_eq!(requests.len(), 5, "{}", said(&output));
    assert!(requests[3].body["messages"].to_string().contains("the project's tests fail"));
    assert_eq!(
        support::mode_trail(user.cache.path()),
        [
            "idle -plan_intent-> planning",
            "planning -plan_ready-> implementation",
            "implementation -code_complete-> test",
            "test -test_failed-> implementation",
            "implementation -code_complete-> test",
            "test -tests_passed-> qa",
            "qa -approved-> idle",
        ]
    );
    assert_eq!(
        support::phases(user.cache.path()),
        ["planning", "executing", "observing", "executing", "observing", "reflecting", "idle"]
    );
    // the model worked in each mode knowing what it is for
    assert!(requests[1].body["messages"].to_string().contains("You are in the implementation mode"));
    // and the transitions are in the progress lines
    assert!(said(&output).contains("test → implementation (test failed)"), "{}", said(&output));
}

/// A change of seven files goes through multi-file editing; it reaches a caller outside the
/// step, so impact analysis looks first, then the tests that reach it run.
#[test]
fn a_seven_file_change_goes_through_multi_file_and_impact() {
    if !support::require_tools(&["pytest"]) {
        return;
    }
    let modules: Vec<(String, String)> =
        (1..=7).map(|n| (format!("pkg/m{n}.py"), format!("def f{n}(x):\n    return x\n"))).collect();
    let imports: String = (1..=7).map(|n| format!("from pkg.m{n} import f{n}\n")).collect();
    let sum: Vec<String> = (1..=7).map(|n| format!("f{n}({n})")).collect();
    let report = format!("{imports}\n\ndef report():\n    return {}\n", sum.join(" + "));
    let test = "from report import report\n\n\ndef test_report():\n    assert report() == 56\n";
    let mut files: Vec<(&str, &str)> = modules.iter().map(|(p, t)| (p.as_str(), t.as_str())).collect();
    files.extend([("report.py", report.as_str()), ("test_report.py", test)]);
    let dir = project(&files, "");
    let root = dir.path();
    let mut script = vec![openai_chat(&format!("1. {GOAL}\n"))];
    for n in 1..=7 {
        script.push(edit(&format!("pkg/m{n}.py"), "    return x", "    return 2 * x"));
    }
    script.push(done("doubled"));
    let (output, user, _model) = run(root, script);
    assert_eq!(output.status.code(), Some(0), "{}", said(&output));
    assert_eq!(
        support::mode_trail(user.cache.path()),
        [
            "idle -plan_intent-> planning",
            "planning -plan_ready-> implementation",
            "implementation -code_complete-> multi_file",
            "multi_file -impact_check-> impact",
            "impact -affected_tests-> test",
            "test -tests_passed-> qa",
            "qa -approved-> idle",
        ],
        "{}",
        said(&output)
    );
    // what impact analysis found, audited and said
    let impact = support::audit_events(user.cache.path(), "impact");
    let looked = impact.iter().find(|i| i["for"] == "multi_file").expect("the impact of the change");
    // report.py calls the functions, its test calls report(): both reached
    assert_eq!(looked["reached"], serde_json::json!(["report.py", "test_report.py"]), "{impact:?}");
    assert!(
        said(&output).contains("the change reaches 2 file(s) outside it: report.py, test_report.py"),
        "{}",
        said(&output)
    );
}

/// `auto_commit = true`: each step reviewed goes to the git mode, which commits the step's own
/// changes in the project's repository with the step's title — a file an earlier step changed
/// too, when this step changed it again.
#[test]
fn auto_commit_ends_each_step_in_the_git_mode_with_a_commit_of_its_own() {
    if !support::require_tools(&["pytest", "git"]) {
        return;
    }
    let dir = project(&[("calc.py", TOTAL), ("test_calc.py", TEST_TOTAL)], "auto_commit = true\n\n");
    let root = dir.path();
    let git = |args: &[&str]| {
        let output = std::process::Command::new("git").arg("-C").arg(root).args(args).output().unwrap();
        assert!(output.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    git(&["init", "-q"]);
    git(&["config", "user.email", "user@example.com"]);
    git(&["config", "user.name", "A User"]);
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "start"]);
    let second = "Make total skip None values in calc.py";
    let (output, user, _model) = run(
        root,
        vec![
            openai_chat(&format!("1. {GOAL}\n2. {second} [depends: 1]\n")),
            edit("calc.py", "    return 0", "    return sum(xs)"),
            done("added"),
            edit("calc.py", "    return sum(xs)", "    return sum(x for x in xs if x is not None)"),
            support::replies::create("CHANGES.md", "total skips None\n"),
            done("skipped"),
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", said(&output));
    let trail = support::mode_trail(user.cache.path());
    let ends: Vec<&String> =
        trail.iter().filter(|t| t.starts_with("qa -approved->") || t.starts_with("git ")).collect();
    assert_eq!(
        ends,
        ["qa -approved-> git", "git -committed-> idle", "qa -approved-> git", "git -committed-> idle"],
        "{trail:?}\n{}",
        said(&output)
    );
    // two commits, each the step's title and the step's own files; nothing left uncommitted
    assert_eq!(git(&["log", "-2", "--format=%s"]).trim(), format!("{second}\n{GOAL}"));
    assert_eq!(git(&["show", "--name-only", "--format=", "HEAD~1"]).trim(), "calc.py");
    assert_eq!(git(&["show", "--name-only", "--format=", "HEAD"]).trim(), "CHANGES.md\ncalc.py");
    assert_eq!(git(&["status", "--porcelain", "--", "calc.py", "CHANGES.md"]), "");
    // and each step's note says which commit
    let head = git(&["rev-parse", "--short", "HEAD"]);
    assert!(said(&output).contains(&format!("(committed {})", head.trim())), "{}", said(&output));
}

/// A test command that does not run says nothing of the code: here the folder is not trusted
/// and nobody is at a terminal to approve it, so it is refused; the step is reviewed without
/// it, and its note says why.
#[test]
fn tests_that_do_not_run_are_skipped_to_the_review() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("calc.py"), TOTAL).unwrap();
    std::fs::write(root.join("tokamak.toml"), "[checkers]\nenable = []\n").unwrap();
    let model = ModelServer::start(vec![
        openai_chat(&format!("1. {GOAL}\n")),
        edit("calc.py", "    return 0", "    return sum(xs)"),
        done("added"),
    ]);
    // changes are made without asking; a command not on the allow-list is asked, and refused
    let user = UserDirs::new();
    user.write_settings("approval = \"low\"\n");
    let output = user
        .command(&["run", GOAL, "--test-command", "python3 -m pytest -q"])
        .current_dir(root)
        .env("TOKAMAK_LLM_URL", model.url())
        .env("TOKAMAK_MODEL", "scripted")
        .envs(support::tool_env())
        .output()
        .expect("tokamak runs");
    // the change is in and reviewed, but nothing tested it: the run ends untested, status 1
    assert_eq!(output.status.code(), Some(1), "{}", said(&output));
    assert!(said(&output).contains("[untested]"), "{}", said(&output));
    assert_eq!(
        support::mode_trail(user.cache.path())[2..],
        ["implementation -code_complete-> test", "test -tests_skipped-> qa", "qa -approved-> idle"],
        "{}",
        said(&output)
    );
    assert!(said(&output).contains("the tests did not run"), "{}", said(&output));
}

/// A run whose step adds an unused import (ruff's F401) on the way, in a project ruff checks;
/// `then`: the model's replies after the review sends the step back.
fn unused_import_run(then: Vec<Scripted>) -> (tempfile::TempDir, Output, UserDirs, ModelServer) {
    let dir = project_checked(&[("calc.py", TOTAL), ("test_calc.py", TEST_TOTAL)], "", "[\"ruff\"]");
    let mut script = vec![
        openai_chat(&format!("1. {GOAL}\n")),
        edit("calc.py", "def total(xs):\n    return 0", "import os\n\n\ndef total(xs):\n    return sum(xs)"),
        done("added"),
    ];
    script.extend(then);
    let (output, user, model) = run(dir.path(), script);
    (dir, output, user, model)
}

/// The review (QA) finds a warning the step introduced — ruff's unused import — and sends the
/// step back once; cleaned up, tested and reviewed again, it is done.
#[test]
fn the_review_sends_back_what_the_step_introduced() {
    if !support::require_tools(&["pytest", "ruff"]) {
        return;
    }
    let (dir, output, user, model) = unused_import_run(vec![
        // told what the review found
        edit("calc.py", "import os\n\n\ndef total(xs):", "def total(xs):"),
        done("cleaned up"),
    ]);
    let root = dir.path();
    assert_eq!(output.status.code(), Some(0), "{}", said(&output));
    assert_eq!(
        std::fs::read_to_string(root.join("calc.py")).unwrap(),
        "def total(xs):\n    return sum(xs)\n",
        "{}",
        said(&output)
    );
    let requests = model.requests();
    assert_eq!(requests.len(), 5, "{}", said(&output));
    let review = requests[3].body["messages"].to_string();
    assert!(review.contains("the review found what it introduced") && review.contains("F401"), "{review}");
    // the step's note keeps what it did before the review, and what the review made it do
    assert!(said(&output).contains("added; after the review: cleaned up"), "{}", said(&output));
    assert_eq!(
        support::mode_trail(user.cache.path())[2..],
        [
            "implementation -code_complete-> test",
            "test -tests_passed-> qa",
            "qa -issues_found-> implementation",
            "implementation -code_complete-> test",
            "test -tests_passed-> qa",
            "qa -approved-> idle",
        ],
        "{}",
        said(&output)
    );
}

/// "Where …": the step starts by looking (context navigation, which may change nothing), and
/// its first change is the target found, on to implementation.
#[test]
fn a_step_asking_where_starts_by_looking_and_its_first_change_is_the_target_found() {
    if !support::require_tools(&["pytest"]) {
        return;
    }
    let dir = project(&[("calc.py", TOTAL), ("test_calc.py", TEST_TOTAL)], "");
    let root = dir.path();
    let goal = "Work out where total is defined and make it add the numbers";
    let (output, user, _model) = run_goal(
        root,
        goal,
        vec![
            openai_chat(&format!("1. {goal}\n")),
            support::replies::action(serde_json::json!({"action": "search", "pattern": "def total"})),
            edit("calc.py", "    return 0", "    return sum(xs)"),
            done("found in calc.py and fixed"),
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", said(&output));
    assert_eq!(
        std::fs::read_to_string(root.join("calc.py")).unwrap(),
        "def total(xs):\n    return sum(xs)\n"
    );
    assert_eq!(
        support::mode_trail(user.cache.path()),
        [
            "idle -plan_intent-> planning",
            "planning -done-> idle",
            "idle -search_intent-> context_nav",
            "context_nav -target_found-> implementation",
            "implementation -code_complete-> test",
            "test -tests_passed-> qa",
            "qa -approved-> idle",
        ],
        "{}",
        said(&output)
    );
    assert!(support::audit_events(user.cache.path(), "refused").is_empty(), "the change was not refused");
}

/// The review sends a step back once: a warning still there after that round is said in the
/// step's note, and the step is done.
#[test]
fn what_the_review_finds_twice_is_left_and_said() {
    if !support::require_tools(&["pytest", "ruff"]) {
        return;
    }
    // told what the review found, it changes nothing
    let (_dir, output, user, _model) = unused_import_run(vec![done("the import is needed")]);
    assert_eq!(output.status.code(), Some(0), "{}", said(&output));
    assert!(said(&output).contains("(the review's 1 warning(s) are left)"), "{}", said(&output));
    let trail = support::mode_trail(user.cache.path());
    assert_eq!(trail.iter().filter(|t| t.as_str() == "qa -issues_found-> implementation").count(), 1);
    assert_eq!(trail.last().map(String::as_str), Some("qa -approved-> idle"), "{trail:?}");
}

/// A test runner that is not installed did not run — under bubblewrap (which says so in its
/// own words) as without it — rather than failing the step's tests.
#[test]
fn a_missing_test_runner_did_not_run_with_or_without_bwrap() {
    for with_bwrap in [true, false] {
        if with_bwrap && !support::require_tools(&["bwrap"]) {
            continue;
        }
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("calc.py"), TOTAL).unwrap();
        std::fs::write(
            root.join("tokamak.toml"),
            "[checkers]\nenable = []\n\n[test]\ncommand = [\"tokamak-no-such-test-runner\"]\n",
        )
        .unwrap();
        let model = ModelServer::start(vec![
            openai_chat(&format!("1. {GOAL}\n")),
            edit("calc.py", "    return 0", "    return sum(xs)"),
            done("added"),
        ]);
        let user = UserDirs::trusting(&[root]);
        let (_bin, path) = support::path_without(&["bwrap"]);
        let mut command = user.command(&["run", GOAL, "--yes"]);
        command
            .current_dir(root)
            .env("TOKAMAK_LLM_URL", model.url())
            .env("TOKAMAK_MODEL", "scripted")
            .envs(support::tool_env());
        if !with_bwrap {
            command.env("PATH", path);
        }
        let output = command.output().expect("tokamak runs");
        assert_eq!(output.status.code(), Some(1), "bwrap {with_bwrap}: {}", said(&output));
        assert!(said(&output).contains("[untested]"), "bwrap {with_bwrap}: {}", said(&output));
        assert!(
            said(&output).contains("`tokamak-no-such-test-runner` could not be started"),
            "bwrap {with_bwrap}: {}",
            said(&output)
        );
        assert!(
            support::mode_trail(user.cache.path()).contains(&"test -tests_skipped-> qa".to_string()),
            "bwrap {with_bwrap}: {}",
            said(&output)
        );
    }
}

/// Seed 000's profiling mode doing its own work: "mean 함수 성능 프로파일링해줘" starts in
/// performance profiling, which runs the tests that reach `mean` under cProfile in the sandbox
/// and gives the model the hot spots inside the project (`mean`, its `_add`); found, the step
/// goes on to refactoring, where the model makes `mean` faster and the tests still pass.
#[test]
fn profiling_reports_the_hot_spot_and_the_step_goes_on_to_refactor_it() {
    if !support::require_tools(&["pytest"]) {
        return;
    }
    let stats = "def _add(a, b):\n    return a + b\n\n\ndef mean(xs):\n    total = 0\n    for x in xs:\n        total = _add(total, x)\n    return total / len(xs)\n";
    let test =
        "from stats import mean\n\n\ndef test_mean():\n    assert mean(list(range(200001))) == 100000\n";
    let dir = project(&[("stats.py", stats), ("test_stats.py", test)], "");
    let goal = "mean 함수 성능 프로파일링해줘";
    let (output, user, model) = run_goal(
        dir.path(),
        goal,
        vec![
            openai_chat(&format!("1. {goal}\n")),
            edit(
                "stats.py",
                "    total = 0\n    for x in xs:\n        total = _add(total, x)\n    return total / len(xs)",
                "    return sum(xs) / len(xs)",
            ),
            done("mean sums with the built-in sum"),
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", said(&output));
    // the model was given the hot spots before it acted
    let step = model.requests()[1].body["messages"].to_string();
    assert!(step.contains("The profile of `pytest") && step.contains("cProfile"), "{step}");
    assert!(step.contains("stats.py:5(mean)") && step.contains("stats.py:1(_add)"), "{step}");
    let profile = support::audit_events(user.cache.path(), "profile");
    assert_eq!(profile[0]["named"], serde_json::json!(["mean"]), "{profile:?}");
    assert_eq!(profile[0]["hot_spots"][0], "stats.py:5(mean)", "{profile:?}");
    let trail = support::mode_trail(user.cache.path());
    assert!(trail.contains(&"idle -profile_intent-> profiling".to_string()), "{trail:?}");
    assert!(trail.contains(&"profiling -hotspot_found-> refactor".to_string()), "{trail:?}");
    assert!(said(&output).contains("hot spot stats.py:5(mean)"), "{}", said(&output));
    assert!(std::fs::read_to_string(dir.path().join("stats.py")).unwrap().contains("sum(xs)"));
}

/// Coverage doing its own work (seed 000's `coverage_data`): a goal that asks for coverage
/// runs the tests under a line tracer on the changed files; the branch the step added that
/// no test runs sends it back once, the model adds the test, and the coverage is measured
/// again — each measure in the audit log.
#[test]
fn coverage_sends_a_step_back_for_the_branch_no_test_runs() {
    if !support::require_tools(&["pytest"]) {
        return;
    }
    let stats = "def mean(xs):\n    return sum(xs) / len(xs)\n";
    let test = "from stats import mean\n\n\ndef test_mean():\n    assert mean([1, 2, 3]) == 2\n";
    let dir = project(&[("stats.py", stats), ("test_stats.py", test)], "");
    let goal = "Make mean return 0.0 for an empty list, with full test coverage";
    let (output, user, model) = run_goal(
        dir.path(),
        goal,
        vec![
            openai_chat("1. Make mean in stats.py return 0.0 for an empty list\n"),
            edit(
                "stats.py",
                "    return sum(xs) / len(xs)",
                "    if not xs:\n        return 0.0\n    return sum(xs) / len(xs)",
            ),
            done("mean returns 0.0 for an empty list"),
            // sent back: the branch no test runs gets its test
            edit(
                "test_stats.py",
                "    assert mean([1, 2, 3]) == 2\n",
                "    assert mean([1, 2, 3]) == 2\n\n\ndef test_mean_of_nothing():\n    assert mean([]) == 0.0\n",
            ),
            done("the empty list is tested"),
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", said(&output));
    let told = model.requests()[3].body["messages"].to_string();
    assert!(
        told.contains("no test runs these statements the run added (1 of 2 new statement(s) run by the tests; run by none: stats.py:3)"),
        "{told}"
    );
    assert!(told.contains("stats.py:3 `return 0.0`"), "{told}");
    assert_eq!(coverage_measures(&user), [(2, 1), (2, 2)]);
    assert!(
        said(&output).contains("coverage of the new code: 2 of 2 new statement(s) run by the tests"),
        "{}",
        said(&output)
    );
    let test_now = std::fs::read_to_string(dir.path().join("test_stats.py")).unwrap();
    assert!(test_now.contains("test_mean_of_nothing"), "{test_now}");
    assert!(!said(&output).contains("run by no test"), "nothing is left uncovered: {}", said(&output));
}

/// Seed 000's verification mode doing its own work: "전체 검증" runs every checker on every
/// source file and the whole test suite before the model acts; the failing test it finds
/// sends the step to debugging, where the model fixes it and the checks pass.
#[test]
fn verification_runs_every_checker_and_the_whole_suite_then_fixes_what_failed() {
    if !support::require_tools(&["pytest", "ruff"]) {
        return;
    }
    let dir = project_checked(
        &[
            ("calc.py", TOTAL),
            ("test_calc.py", TEST_TOTAL),
            ("util.py", "def double(x):\n    return x * 2\n"),
        ],
        "",
        "[\"ruff\"]",
    );
    let goal = "프로젝트 전체 검증해줘";
    let (output, user, model) = run_goal(
        dir.path(),
        goal,
        vec![
            openai_chat("1. 프로젝트 전체 검증 실행\n"),
            edit("calc.py", "    return 0", "    return sum(xs)"),
            done("total adds the numbers: the suite passes"),
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", said(&output));
    let step = model.requests()[1].body["messages"].to_string();
    assert!(
        step.contains("Verification: every checker looked at 3 source file(s) and found no error."),
        "{step}"
    );
    assert!(step.contains("The test suite fails:") && step.contains("assert 0 == 3"), "{step}");
    let verified = support::audit_events(user.cache.path(), "verification");
    assert_eq!(verified.len(), 1, "{verified:#?}");
    assert_eq!((verified[0]["files"].as_u64(), verified[0]["tests"].as_str()), (Some(3), Some("failed")));
    let trail = support::mode_trail(user.cache.path());
    assert!(trail.contains(&"idle -verify_intent-> verification".to_string()), "{trail:?}");
    assert!(trail.contains(&"verification -verification_failed-> debug".to_string()), "{trail:?}");
    assert!(said(&output).contains("verification found 0 error(s) and failing tests"), "{}", said(&output));
    assert!(std::fs::read_to_string(dir.path().join("calc.py")).unwrap().contains("sum(xs)"));
}

/// Seed 000's migration mode: the planner is told to plan in stages; each stage runs the whole
/// test suite after it (not only the tests that reach the change) and, passed, is applied and
/// verified before the next.
#[test]
fn a_migration_is_planned_in_stages_each_checked_by_the_whole_suite() {
    if !support::require_tools(&["pytest"]) {
        return;
    }
    let calc = "def total(xs):\n    return sum(xs)\n";
    let report = "from calc import total\n\n\ndef report(xs):\n    return f\"total: {total(xs)}\"\n";
    let test = "from calc import total\nfrom report import report\n\n\ndef test_total():\n    assert total([1, 2]) == 3\n\n\ndef test_report():\n    assert report([1]) == \"total: 1\"\n";
    let dir = project(&[("calc.py", calc), ("report.py", report), ("test_calc.py", test)], "");
    let goal = "Migrate callers from total to sum_all";
    let (output, user, model) = run_goal(
        dir.path(),
        goal,
        vec![
            openai_chat(
                "1. Migrate calc.py: add sum_all, keep total calling it\n2. Migrate report.py to sum_all\n",
            ),
            edit(
                "calc.py",
                "def total(xs):\n    return sum(xs)",
                "def sum_all(xs):\n    return sum(xs)\n\n\ndef total(xs):\n    return sum_all(xs)",
            ),
            done("sum_all added; total calls it"),
            edit("report.py", "from calc import total", "from calc import sum_all as total"),
            done("report uses sum_all"),
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", said(&output));
    let planned = model.requests()[0].body["messages"].to_string();
    assert!(planned.contains("This goal is a migration: plan it in stages"), "{planned}");
    let stage = model.requests()[1].body["messages"].to_string();
    assert!(stage.contains("This step is one stage of a migration"), "{stage}");
    let trail = support::mode_trail(user.cache.path());
    let applied = trail.iter().filter(|t| *t == "migration -migration_applied-> verification").count();
    let verified = trail.iter().filter(|t| *t == "verification -verified-> qa").count();
    assert_eq!((applied, verified), (2, 2), "each stage applied and verified: {trail:?}");
    assert!(
        !said(&output).contains("test(s) that reach the change"),
        "the whole suite each time: {}",
        said(&output)
    );
}

/// Profiling a TypeScript project: its tests (run by tsx on Node's test runner) run with V8's
/// CPU profiler on in every Node process they start, and the hot spot in the project's own
/// code — `mean` in stats.ts, not the test file nor node_modules — goes to the model.
#[test]
fn profiling_a_typescript_project_reports_its_hot_spot_from_v8() {
    if !support::require_tools(&["tsx", "node"]) {
        return;
    }
    let stats = "export function mean(xs: number[]): number {\n  let total = 0;\n  for (let i = 0; i < xs.length; i++) {\n    for (let j = 0; j < 200; j++) {\n      total += xs[i] / 200;\n    }\n  }\n  return total / xs.length;\n}\n";
    let test = "import { test } from \"node:test\";\nimport assert from \"node:assert\";\nimport { mean } from \"./stats.ts\";\n\ntest(\"mean\", () => {\n  const xs = Array.from({ length: 200000 }, (_, i) => i);\n  assert.ok(Math.abs(mean(xs) - 99999.5) < 1e-3);\n});\n";
    let tsx = support::tools_dir().join("node/node_modules/.bin/tsx");
    let toml = format!(
        "[checkers]\nenable = []\n\n[test]\ncommand = [{:?}, \"--test\", \"stats.test.ts\"]\n",
        tsx.display().to_string()
    );
    let dir = project_with(&[("stats.ts", stats), ("stats.test.ts", test)], &toml);
    let goal = "mean 함수 성능 프로파일링해줘";
    let (output, user, model) = run_goal(
        dir.path(),
        goal,
        vec![
            openai_chat(&format!("1. {goal}\n")),
            edit("stats.ts", "      total += xs[i] / 200;", "      total += xs[i] * 0.005;"),
            done("mean divides less"),
        ],
    );
    let step = model.requests()[1].body["messages"].to_string();
    assert!(step.contains("under V8's CPU profiler"), "{step}\n{}", said(&output));
    let spots = support::audit_events(user.cache.path(), "profile");
    let first = spots[0]["hot_spots"][0].as_str().unwrap_or_default().to_string();
    // tsx's transform moves a line or so; the function and its file are the point
    assert!(first.starts_with("stats.ts:") && first.ends_with("(mean)"), "{spots:?}");
    assert!(step.contains(&first), "the hot spot in the project's code: {step}");
    assert!(!step.contains("stats.test.ts:"), "not the test file: {step}");
    let trail = support::mode_trail(user.cache.path());
    assert!(trail.contains(&"profiling -hotspot_found-> refactor".to_string()), "{trail:?}");
    assert_eq!(output.status.code(), Some(0), "{}", said(&output));
}

/// Coverage in a JavaScript project: Node's test runner reports the lines no test ran
/// (`--experimental-test-coverage` on the test command as it is), and the branch the step
/// added that no test runs sends it back once, as for Python.
#[test]
fn coverage_of_javascript_comes_from_nodes_own_test_runner() {
    if !support::require_tools(&["node"]) {
        return;
    }
    let stats = "function mean(xs) {\n  return xs.reduce((a, b) => a + b, 0) / xs.length;\n}\nmodule.exports = { mean };\n";
    let test = "const { test } = require(\"node:test\");\nconst assert = require(\"node:assert\");\nconst { mean } = require(\"./stats.js\");\n\ntest(\"mean\", () => {\n  assert.strictEqual(mean([1, 2, 3]), 2);\n});\n";
    let toml = "[checkers]\nenable = []\n\n[test]\ncommand = [\"node\", \"--test\"]\n";
    let dir = project_with(&[("stats.js", stats), ("stats.test.js", test)], toml);
    let goal = "Make mean return 0 for an empty list, with full test coverage";
    let (output, user, model) = run_goal(
        dir.path(),
        goal,
        vec![
            openai_chat("1. Make mean in stats.js return 0 for an empty list\n"),
            edit(
                "stats.js",
                "  return xs.reduce((a, b) => a + b, 0) / xs.length;",
                "  if (xs.length === 0) {\n    return 0;\n  }\n  return xs.reduce((a, b) => a + b, 0) / xs.length;",
            ),
            done("mean returns 0 for an empty list"),
            edit(
                "stats.test.js",
                "  assert.strictEqual(mean([1, 2, 3]), 2);\n});\n",
                "  assert.strictEqual(mean([1, 2, 3]), 2);\n});\n\ntest(\"mean of nothing\", () => {\n  assert.strictEqual(mean([]), 0);\n});\n",
            ),
            done("the empty list is tested"),
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", said(&output));
    let told = model.requests()[3].body["messages"].to_string();
    assert!(told.contains("stats.js:3 `return 0;`"), "{told}");
    assert_eq!(coverage_measures(&user), [(2, 1), (2, 2)]);
}
