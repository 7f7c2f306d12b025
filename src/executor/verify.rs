//! The workspace's test command run on texts that are not the editor's (SPEC V2): a candidate
//! fix's file over the editor's text, each in a shadow copy of its own, placed as every other
//! command (bubblewrap where it works, else the copy at a path of its own), so two candidates'
//! test runs share nothing and the workspace is never touched. Only a trusted workspace's
//! configured `[test] command` runs this way: it is the run's own command, not the model's.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::command::{CommandSpec, place, run};
use super::{ExecutorContext, ShadowCopy, placement};

/// Lines of a failing run's output kept to say why it failed.
const WHY_LINES: usize = 6;

/// How the tests went on one text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestVerdict {
    /// The command ran and exited 0.
    pub passed: bool,
    /// It ended on its own with a failing status (not killed, not timed out): what a test
    /// runner does when tests fail.
    pub ended: bool,
    /// One sentence: "exit status 1 after 0.4 s", or why it could not run.
    pub described: String,
    /// The first lines that say why it failed (a failing test's assertion), empty when it
    /// passed.
    pub why: String,
    /// The failing tests' names as the runner printed them (pytest's `FAILED path::name`,
    /// node's `not ok`/`✖`, jest's `FAIL`, go's and cargo's), sorted; empty when none could be
    /// read.
    pub failed: Vec<String>,
    /// Time spent making the copy, and running the command.
    pub copy_time: Duration,
    pub test_time: Duration,
    /// Where it ran ("sandboxed: …" or "in a copy … (not isolated …)").
    pub placement: &'static str,
}

impl ExecutorContext {
    /// The test command candidate fixes are verified with: the configured `[test] command`
    /// of a trusted workspace (an untrusted one's runs nothing unasked).
    pub fn verification_command(&self) -> Option<&[String]> {
        let command = self.settings.test_command.as_deref().filter(|c| !c.is_empty())?;
        self.settings.trusted.then_some(command)
    }

    /// Runs the test command on the workspace with the editor's text and `texts` (absolute
    /// path → text) over it, in a copy of its own named `label` under the run's sandbox
    /// folder, removed afterwards. `Err`: it did not run (no command, the sandbox cannot be
    /// made, the program cannot be started) — said in one sentence.
    pub async fn test_texts(
        &self,
        run_id: &str,
        label: &str,
        texts: &HashMap<PathBuf, String>,
        cancel: &CancellationToken,
    ) -> Result<TestVerdict, String> {
        let Some(argv) = self.verification_command().map(<[String]>::to_vec) else {
            return Err("no test command is configured for a trusted workspace ([test] command)".to_string());
        };
        let root = self.confinement.root().to_path_buf();
        let placed = placement(&self.settings.sandbox).map_err(|err| err.to_string())?;
        self.tell_unsandboxed(&placed).await;
        // a copy the tests ran in before, for this placement, brought up to date; else a new one
        let kept = {
            let mut kept = crate::sync::lock(&self.test_copies);
            kept.iter().position(|(p, _)| *p == placed).map(|at| kept.swap_remove(at).1)
        };
        let dir = crate::places::project_cache(&root).join("sandbox").join(format!(
            "tests-{}-{}",
            std::process::id(),
            self.test_copies_made
                .fetch_add(usize::from(kept.is_none()), std::sync::atomic::Ordering::Relaxed)
        ));
        let copy_placement = placed.clone();
        let started = Instant::now();
        let mut relative: HashMap<PathBuf, String> = self
            .buffers()
            .into_iter()
            .filter_map(|(path, text)| Some((path.strip_prefix(&root).ok()?.to_path_buf(), text)))
            .collect();
        // the texts asked for must be in the copy: a test run without them says nothing of them
        for (path, text) in texts {
            let real = std::fs::canonicalize(path).unwrap_or_else(|_| path.clone());
            let inside = path.strip_prefix(&root).or_else(|_| real.strip_prefix(&root));
            match inside {
                Ok(inside) => {
                    relative.insert(inside.to_path_buf(), text.clone());
                }
                Err(_) => return Err(format!("{} is outside the workspace's copy", path.display())),
            }
        }
        // making and filling the copy reads the whole workspace: off the async threads
        let reused = kept.is_some();
        let made = tokio::task::spawn_blocking(move || {
            let mut copy = match kept {
                Some(copy) => copy,
                None => ShadowCopy::new(&root, &dir, &copy_placement)?,
            };
            // what the last test run left is not this one's
            copy.remove_left();
            copy.sync(&relative)?;
            Ok::<_, super::SandboxError>(copy)
        })
        .await
        .map_err(|err| format!("the sandbox copy could not be made: {err}"))?;
        let copy = made.map_err(|err| err.to_string())?;
        let copy_time = started.elapsed();
        tracing::debug!("{run_id}: the tests' copy for {label} in {copy_time:?} (reused: {reused})");
        let root = self.confinement.root();
        let command = place(&placed, &copy, root, &argv, &self.settings.sandbox);
        let timeout = Duration::from_secs(self.settings.commands.timeout_s.max(1));
        let spec = CommandSpec {
            argv: &command.argv,
            cwd: &command.cwd,
            timeout,
            max_output: self.settings.commands.max_output_bytes,
            env: Some(&command.env),
            wrapper: command.wrapper.as_ref().map(|(path, args)| (path.as_path(), args.clone())),
            reaper: command.reaper,
            after_kill: command.after_kill.as_ref().map(|(path, args)| (path.as_path(), args.clone())),
        };
        let ran = run(spec, cancel).await;
        let test_time = started.elapsed().saturating_sub(copy_time);
        let mut outcome = match ran {
            Ok(outcome) => outcome,
            Err(err) => {
                self.keep_test_copy(placed, copy).await;
                return Err(format!("`{}` could not be started: {err}", argv[0]));
            }
        };
        command.repoint_back(&mut outcome, &copy, root);
        self.keep_test_copy(placed.clone(), copy).await;
        if let Some(reason) = command.not_started(&outcome, &argv[0]) {
            return Err(reason);
        }
        if let Some(why) = not_run_reason(&argv, outcome.status, &outcome.stdout, &outcome.stderr) {
            return Err(why);
        }
        let passed = outcome.status == Some(0) && !outcome.timed_out && !outcome.cancelled;
        Ok(TestVerdict {
            passed,
            ended: matches!(outcome.status, Some(1) | Some(101)) && !outcome.timed_out && !outcome.cancelled,
            described: outcome.describe(timeout),
            why: if passed { String::new() } else { why_failed(&outcome.stdout, &outcome.stderr) },
            failed: if passed { Vec::new() } else { failed_tests(&outcome.stdout, &outcome.stderr) },
            copy_time,
            test_time,
            placement: placed.describe(),
        })
    }
}

/// Test copies kept for the next test run, at most (more run side by side are removed after).
const KEPT_TEST_COPIES: usize = 4;

impl ExecutorContext {
    /// Keeps `copy` for the next test run with `placement`, or removes it (off the async
    /// threads: a whole workspace's copy) when enough are kept.
    async fn keep_test_copy(&self, placement: super::Placement, copy: ShadowCopy) {
        let extra = {
            let mut kept = crate::sync::lock(&self.test_copies);
            if kept.len() < KEPT_TEST_COPIES {
                kept.push((placement, copy));
                None
            } else {
                Some(copy)
            }
        };
        if let Some(copy) = extra {
            let _ = tokio::task::spawn_blocking(move || drop(copy)).await;
        }
    }
}

/// Why a test command's run says nothing of the code, when it does not: the program could
/// not be found or started (exit 126, 127), the test runner is not installed (`python -m
/// pytest` answering "No module named pytest"), or the runner stopped before any test ran
/// (pytest's exit 4, a usage error, and 5, no tests collected). Said with the run's first
/// telling lines; `None` for a run whose failure is the tests'.
pub fn not_run_reason(argv: &[String], status: Option<i32>, stdout: &str, stderr: &str) -> Option<String> {
    // the lines that say why: a missing module or program, a usage error; else the first
    // lines of output (not the command line or the exit status a result starts with)
    let first = || {
        let lines: Vec<&str> = stderr
            .lines()
            .chain(stdout.lines())
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with("$ ") && !l.starts_with("exit status"))
            .collect();
        let telling: Vec<&str> = lines
            .iter()
            .filter(|l| {
                let lower = l.to_ascii_lowercase();
                ["no module named", "not found", "no such file", "usage:", "error"]
                    .iter()
                    .any(|w| lower.contains(w))
            })
            .take(2)
            .copied()
            .collect();
        let shown = if telling.is_empty() { lines.into_iter().take(2).collect() } else { telling };
        if shown.is_empty() { String::new() } else { format!(": {}", shown.join(" | ")) }
    };
    let program = argv.first().map(String::as_str).unwrap_or_default();
    if matches!(status, Some(126) | Some(127)) {
        return Some(format!(
            "`{program}` could not be run (exit status {}){}",
            status.unwrap_or(127),
            first()
        ));
    }
    // `python -m NAME` whose module is not there
    if let Some(module) = argv.windows(2).find(|w| w[0] == "-m").map(|w| w[1].as_str()) {
        let output = format!("{stderr}\n{stdout}");
        let missing = [format!("No module named {module}"), format!("No module named '{module}'")];
        if missing.iter().any(|m| output.lines().any(|l| l.trim_end().ends_with(m.as_str())))
            && !output.contains(" passed")
            && !output.contains(" failed")
        {
            return Some(format!("the test runner `{module}` is not installed for `{program}`{}", first()));
        }
    }
    let pytest = argv.iter().any(|a| a == "pytest" || a.ends_with("/pytest") || a == "py.test");
    if pytest {
        match status {
            Some(4) => {
                return Some(format!(
                    "pytest could not start the tests (exit status 4, a usage error){}",
                    first()
                ));
            }
            Some(5) => return Some("pytest found no tests to run (exit status 5)".to_string()),
            _ => {}
        }
    }
    None
}

/// The lines of a failing run that say why: the first lines naming a failure or an error
/// (pytest's `E   assert …`, `FAILED …`, node's `not ok`, an `AssertionError`), else the
/// output's last lines.
pub fn why_failed(stdout: &str, stderr: &str) -> String {
    let lines: Vec<&str> = stdout.lines().chain(stderr.lines()).map(str::trim_end).collect();
    let telling = |line: &str| {
        let trimmed = line.trim_start();
        trimmed.starts_with("E ")
            || trimmed.starts_with("FAILED")
            || trimmed.starts_with("not ok")
            || trimmed.starts_with("✖")
            || trimmed.contains("Error:")
            || trimmed.contains("AssertionError")
            || trimmed.starts_with("actual:")
            || trimmed.starts_with("expected:")
            || (trimmed.starts_with("error") && !trimmed.ends_with("|-"))
    };
    let mut picked: Vec<&str> = Vec::new();
    for line in &lines {
        if telling(line) && !picked.contains(line) {
            picked.push(line);
        }
        if picked.len() == WHY_LINES {
            break;
        }
    }
    if picked.is_empty() {
        picked = lines.iter().rev().filter(|l| !l.trim().is_empty()).take(WHY_LINES).copied().collect();
        picked.reverse();
    }
    picked.iter().map(|l| l.trim()).collect::<Vec<_>>().join("\n")
}

/// The names of the tests a run's output says failed, sorted, each once.
pub fn failed_tests(stdout: &str, stderr: &str) -> Vec<String> {
    let mut names: Vec<String> = stdout
        .lines()
        .chain(stderr.lines())
        .filter_map(|line| {
            let line = line.trim();
            let name =
                if let Some(rest) = line.strip_prefix("FAILED ").or_else(|| line.strip_prefix("ERROR ")) {
                    // pytest: `FAILED test_calc.py::test_add - assert 5 == 4`, and `ERROR …` for a
                    // test that could not be set up or collected
                    rest.split(" - ").next()?
                } else if let Some(rest) = line.strip_prefix("not ok ") {
                    // TAP (node --test, …): `not ok 1 - sum adds`
                    rest.split_once(" - ")?.1.split(" # ").next()?
                } else if let Some(rest) = line.strip_prefix("✖ ") {
                    // node's spec reporter: `✖ sum adds (1.2ms)`
                    if rest.ends_with("failing tests:") {
                        return None;
                    }
                    rest.rsplit_once(" (").map_or(rest, |(name, _)| name)
                } else if let Some(rest) = line.strip_prefix("--- FAIL: ") {
                    rest.split(" (").next()?
                } else if let Some(rest) = line.strip_prefix("FAIL ") {
                    // jest: `FAIL src/a.test.ts (5.2 s)`: the time is not the test's name
                    rest.rsplit_once(" (").map_or(rest, |(name, _)| name)
                } else {
                    line.strip_prefix("test ").and_then(|r| r.strip_suffix(" ... FAILED"))?
                };
            let name = name.trim();
            (!name.is_empty()).then(|| name.to_string())
        })
        .collect();
    names.sort();
    names.dedup();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_is_said_by_its_telling_lines() {
        let pytest = "collected 2 items\n\ntest_calc.py .F\n\n    def test_add():\n>       assert add(2, 2) == 4\nE       assert 5 == 4\nE        +  where 5 = add(2, 2)\n\nFAILED test_calc.py::test_add - assert 5 == 4\n1 failed, 1 passed in 0.02s\n";
        let why = why_failed(pytest, "");
        assert!(why.starts_with("E       assert 5 == 4"), "{why}");
        assert!(why.contains("FAILED test_calc.py::test_add"), "{why}");
        let silent = why_failed("a\nb\n\nc\n", "");
        assert_eq!(silent, "a\nb\nc");
        assert_eq!(failed_tests(pytest, ""), ["test_calc.py::test_add"]);
    }

    #[test]
    fn tests_that_cannot_run_are_told_apart_from_failing_ones() {
        let argv = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let python = argv(&["python3", "-m", "pytest", "-q"]);
        let why = not_run_reason(&python, Some(1), "", "/usr/bin/python3: No module named pytest\n").unwrap();
        assert!(why.contains("`pytest` is not installed") && why.contains("No module named pytest"), "{why}");
        let why = not_run_reason(&argv(&["no-such-runner"]), Some(127), "", "sh: no-such-runner: not found")
            .unwrap();
        assert!(why.contains("exit status 127") && why.contains("not found"), "{why}");
        assert!(not_run_reason(&python, Some(5), "no tests ran in 0.01s", "").unwrap().contains("no tests"));
        assert!(not_run_reason(&python, Some(4), "", "ERROR: usage: …").unwrap().contains("usage error"));
        // the code's own failures are the tests' to report
        let failing = "E   ModuleNotFoundError: No module named 'calc'\nFAILED test_calc.py::test_add\n1 failed in 0.1s";
        assert_eq!(not_run_reason(&python, Some(1), failing, ""), None);
        assert_eq!(not_run_reason(&python, Some(2), "ERROR test_calc.py - ImportError", ""), None);
        assert_eq!(not_run_reason(&argv(&["npm", "test"]), Some(1), "1 failing", ""), None);
    }

    #[test]
    fn failing_tests_are_named_as_each_runner_prints_them() {
        let node = "✖ sum adds (1.1ms)\nℹ tests 2\n✖ failing tests:\n\n✖ sum adds (1.1ms)\n  AssertionError [ERR_ASSERTION]\n";
        assert_eq!(failed_tests(node, ""), ["sum adds"]);
        let tap = "TAP version 13\nnot ok 1 - sum adds\nok 2 - other\n";
        assert_eq!(failed_tests(tap, ""), ["sum adds"]);
        let cargo = "test tests::one ... ok\ntest tests::two ... FAILED\n";
        assert_eq!(failed_tests(cargo, ""), ["tests::two"]);
        assert!(failed_tests("all good\n", "").is_empty());
    }
}
