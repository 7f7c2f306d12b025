//! What a mode does itself when a step enters it, before the model acts (seed 000's
//! `ModeHandler.enter`): in performance profiling, the tests that reach the definitions the
//! step names run under Python's cProfile in the run's sandbox, and the hot spots inside the
//! project — calls, own and cumulative time — go to the model as the step's context and to the
//! user as a progress line; found, the step goes on to refactoring (`hotspot_found`). In
//! verification, every checker looks at every source file of the project and the whole test
//! suite runs: what they find is the step's to fix (`verification_failed` → debug), or the
//! project is verified (`verified` → review). In a migration, the step is one stage: it is
//! told so, and its tests are the whole suite, not only those that reach the change; passed,
//! the stage is applied and verified (`migration_applied`, `verified`).

use std::path::Path;

use super::Runner;
use crate::executor::Action;
use crate::modes::Mode;

/// Source files verification checks at most.
const MAX_VERIFIED: usize = 200;
/// What a migration's step is told.
const MIGRATION_STAGE: &str = "This step is one stage of a migration: move what it names to the new API or version and leave the code working — after it the checkers and the whole test suite run, not only the tests that reach the change. Keep the old way working for what later stages move.";
/// Rows of the profile shown, at most.
const HOT_SPOTS: usize = 8;

/// One row of cProfile's table, inside the project.
#[derive(Debug, Clone, PartialEq)]
pub struct HotSpot {
    pub calls: String,
    pub own_s: f64,
    pub cumulative_s: f64,
    /// `path:line(function)`, the path relative to the root.
    pub place: String,
}

impl Runner<'_> {
    /// The work of `mode` as a step enters it: the text the step's prompt gets (`None`: the
    /// mode has none).
    pub(super) async fn enter_mode(&mut self, name: &str, goal: &str, mode: Mode) -> Option<String> {
        match mode {
            Mode::Profiling => Some(self.profile_goal(name, goal).await),
            Mode::Verification => Some(self.verify_all(name).await),
            Mode::Migration => {
                self.whole_suite = true;
                Some(MIGRATION_STAGE.to_string())
            }
            _ => None,
        }
    }

    /// What a mode leaves behind as the step ends (seed 000's `ModeHandler.exit`): a
    /// migration's stage that passed its checks and the whole suite is applied and verified.
    pub(super) async fn exit_mode(&mut self, mode: Mode, tests_passed: bool) -> Result<(), super::Stop> {
        if mode == Mode::Migration && tests_passed {
            self.outcome("migration_applied", |_| {}).await?;
            self.outcome("verified", |c| c.tests_passed = Some(true)).await?;
        }
        self.whole_suite = false;
        Ok(())
    }

    /// Verification: every checker on every source file of the project (up to
    /// [`MAX_VERIFIED`]) and the whole test suite; what they found, for the step.
    async fn verify_all(&mut self, name: &str) -> String {
        let context = self.executor.context();
        let root = context.confinement.root().to_path_buf();
        let mut files: Vec<std::path::PathBuf> = match &context.index {
            Some(live) => live.current().await.paths().map(Path::to_path_buf).collect(),
            None => Vec::new(),
        };
        files.sort();
        let total = files.len();
        files.truncate(MAX_VERIFIED);
        self.report(format!(
            "{name}: verifying: every checker on {} file(s), then the whole test suite",
            files.len()
        ))
        .await;
        let mut errors: Vec<String> = Vec::new();
        let mut unanswered = 0;
        for path in &files {
            let Ok(uri) = url::Url::from_file_path(path) else { continue };
            let Some((diagnostics, missing)) = self.diagnostics_answered(&uri).await else { continue };
            unanswered += usize::from(!missing.is_empty());
            let relative = path.strip_prefix(&root).unwrap_or(path).display().to_string();
            // lines as the checkers saw them: the open document's text, else the disk's
            let text = context.current_text(path).unwrap_or_default();
            let rope = ropey::Rope::from_str(&text);
            for diagnostic in diagnostics.iter().filter(|d| d.severity == crate::observer::Severity::Error) {
                let at = crate::text::offset_to_line_col(
                    &rope,
                    diagnostic.range.start,
                    crate::text::PositionEncoding::Utf32,
                );
                errors.push(format!(
                    "{relative}:{} [{}] {}",
                    at.line + 1,
                    diagnostic.source,
                    diagnostic.message
                ));
            }
        }
        let tests = match context.settings.test_command.clone() {
            Some(command) => {
                self.report(format!("{name}: verifying: the whole test suite")).await;
                Some(self.run_command(command).await)
            }
            None => None,
        };
        let tests_failed = matches!(tests, Some((false, _, _)));
        self.executor.record(
            "verification",
            serde_json::json!({
                "files": files.len(),
                "skipped": total - files.len(),
                "errors": errors,
                "unanswered": unanswered,
                "tests": tests.as_ref().map(|(passed, ran, _)| match (ran, passed) {
                    (false, _) => "not run",
                    (true, true) => "passed",
                    (true, false) => "failed",
                }),
            }),
        );
        let mut text = format!("Verification: every checker looked at {} source file(s)", files.len());
        if total > files.len() {
            text.push_str(&format!(" (of {total}; the others were not checked)"));
        }
        if unanswered > 0 {
            text.push_str(&format!("; {unanswered} of them were not answered for in time"));
        }
        match errors.len() {
            0 => text.push_str(" and found no error.\n"),
            n => text.push_str(&format!(
                " and found {n} error(s):\n{}\n",
                errors.iter().take(40).cloned().collect::<Vec<_>>().join("\n")
            )),
        }
        match &tests {
            None => text.push_str("The project has no test command, so no tests ran.\n"),
            Some((_, false, why)) => {
                text.push_str(&format!("The tests did not run: {}\n", crate::text::cut(why, 600)))
            }
            Some((true, true, _)) => text.push_str("The whole test suite passes.\n"),
            Some((false, true, output)) => {
                text.push_str(&format!("The test suite fails:\n{}\n", crate::text::cut(output, 3000)))
            }
        }
        let verified = errors.is_empty() && !tests_failed;
        self.report(format!(
            "{name}: {}",
            if verified {
                "verified".to_string()
            } else {
                format!(
                    "verification found {} error(s){}",
                    errors.len(),
                    if tests_failed { " and failing tests" } else { "" }
                )
            }
        ))
        .await;
        let trigger = if verified { "verified" } else { "verification_failed" };
        let _ = self
            .outcome(trigger, |c| {
                c.has_errors = !errors.is_empty();
                c.tests_passed = tests.as_ref().filter(|(_, ran, _)| *ran).map(|(passed, _, _)| *passed);
                c.last_error = errors.first().cloned();
            })
            .await;
        if verified {
            text.push_str("Nothing is to be fixed: say so and what was verified.");
        } else {
            text.push_str("Fix what verification found, the smallest change for each; the checks and the tests run again after.");
        }
        text
    }

    /// Profiles what `goal` names: its tests under cProfile; the hot spots, or why there are none.
    async fn profile_goal(&mut self, name: &str, goal: &str) -> String {
        let context = self.executor.context();
        let root = context.confinement.root().to_path_buf();
        // the definitions the goal names, and the tests that reach them
        let mut named: Vec<String> = Vec::new();
        let mut tests = Vec::new();
        if let Some(live) = &context.index {
            let index = live.current().await;
            let mut changes = Vec::new();
            for word in goal.split(|c: char| !(c.is_alphanumeric() || c == '_')).filter(|w| w.len() > 1) {
                for found in index.definitions(word).into_iter().filter(|f| f.definition.name == word) {
                    if !named.contains(&found.definition.name) {
                        named.push(found.definition.name.clone());
                    }
                    changes.push((found.path.to_path_buf(), vec![found.definition.name.clone()]));
                }
            }
            tests = crate::context::impact(&index, &changes).tests;
        }
        let Some((command, profiler)) =
            profile_command(context.settings.test_command.as_deref(), &root, &tests)
        else {
            return "Profiling: the project has no test command Tokamak can profile (pytest run by a Python, or a Node one), so Tokamak could not profile it; measure with the run action (python -m cProfile -s cumulative …, node --cpu-prof …)".to_string();
        };
        self.report(format!(
            "{name}: profiling {} with {profiler}",
            if named.is_empty() { "the tests".to_string() } else { named.join(", ") }
        ))
        .await;
        let shown = match profiler {
            CPROFILE => format!("pytest {} under {profiler}", command[3..].join(" ")),
            _ => format!("{} under {profiler}", command[3..].join(" ")),
        };
        let action = Action::Run { command: command.clone(), timeout: None };
        self.own_call("profile-1", &action).await;
        let result = match self.executor.execute(&action).await {
            Ok(result) => result,
            Err(hit) => return format!("Profiling could not run: {hit}"),
        };
        let spots = hot_spots(&result.text, &root);
        self.executor.record(
            "profile",
            serde_json::json!({"command": shown, "named": named, "hot_spots": spots.iter().map(|s| &s.place).collect::<Vec<_>>()}),
        );
        let passed = result.exit_status == Some(0);
        self.own_result(
            "profile-1",
            passed,
            format!("{} hot spot(s) in the project", spots.len()),
            Some(crate::text::cut(&result.text, 4096)),
        )
        .await;
        if spots.is_empty() {
            return format!(
                "Profiling ran `{shown}` and found no time spent in the project's own code{}",
                if passed { "" } else { " (the run failed: see its output)" }
            );
        }
        let mut text = format!("The profile of `{shown}` (the project's code by cumulative time):\n");
        for spot in &spots {
            let calls = match spot.calls.as_str() {
                "-" => String::new(),
                calls => format!("{calls} call(s), "),
            };
            text.push_str(&format!(
                "- {}: {calls}{:.3} s own, {:.3} s cumulative\n",
                spot.place, spot.own_s, spot.cumulative_s
            ));
        }
        self.report(format!(
            "{name}: hot spot {} ({:.3} s cumulative)",
            spots[0].place, spots[0].cumulative_s
        ))
        .await;
        // found: on to making it faster (seed 000: profiling → refactor)
        let _ = self.outcome("hotspot_found", |_| {}).await;
        text.push_str(
            "Make the hot spots faster without changing what they return; the tests must still pass.",
        );
        text
    }
}

/// Python's profiler, and V8's.
const CPROFILE: &str = "cProfile";
const V8: &str = "V8's CPU profiler";

/// The test command under a profiler, narrowed to `tests` when there are any, and the
/// profiler's name: `python -c PROFILE_PYTEST …` when the project's tests are pytest run by a
/// Python; `node -e PROFILE_NODE …` when they are run by Node (`node`, `npm`, `npx`, `vitest`,
/// `jest`, `tsx`, or a project with a `package.json`).
fn profile_command(
    test: Option<&[String]>,
    root: &Path,
    tests: &[crate::context::TestTarget],
) -> Option<(Vec<String>, &'static str)> {
    let test = test?;
    let focused = crate::context::focused_test_command(test, root, tests).unwrap_or_else(|| test.to_vec());
    let program = |argv: &[String]| {
        argv.first().and_then(|p| Path::new(p).file_name()).and_then(|n| n.to_str()).unwrap_or("").to_string()
    };
    // `<python> -m pytest ARGS`, or `pytest ARGS` with the machine's python3
    let python = match focused.as_slice() {
        [python, flag, module, rest @ ..] if flag == "-m" && module == "pytest" => {
            Some((python.clone(), rest.to_vec()))
        }
        [_, rest @ ..] if program(&focused) == "pytest" => Some(("python3".to_string(), rest.to_vec())),
        _ => None,
    };
    if let Some((python, args)) = python {
        let mut command = vec![python, "-c".into(), crate::executor::policy::PROFILE_PYTEST.to_string()];
        command.extend(args);
        return Some((command, CPROFILE));
    }
    let node = ["node", "npm", "npx", "pnpm", "yarn", "vitest", "jest", "tsx"]
        .contains(&program(&focused).as_str())
        || root.join("package.json").is_file();
    if !node {
        return None;
    }
    let mut command =
        vec!["node".to_string(), "-e".into(), crate::executor::policy::PROFILE_NODE.to_string()];
    command.extend(focused);
    Some((command, V8))
}

/// The rows of cProfile's table for files inside `root` (or given relative), best first.
pub fn hot_spots(output: &str, root: &Path) -> Vec<HotSpot> {
    let mut spots = Vec::new();
    let mut in_table = false;
    let root_shown = root.to_string_lossy().to_string();
    for line in output.lines() {
        if line.trim_start().starts_with("ncalls") && line.contains("cumtime") {
            in_table = true;
            continue;
        }
        if !in_table {
            continue;
        }
        let columns: Vec<&str> = line.split_whitespace().collect();
        if columns.len() < 6 {
            continue;
        }
        let place = columns[5..].join(" ");
        let (Ok(own), Ok(cumulative)) = (columns[1].parse::<f64>(), columns[3].parse::<f64>()) else {
            continue;
        };
        // the project's own code: not the interpreter's, not an installed package's, not a test
        let file = place.split(':').next().unwrap_or_default();
        let inside = file.starts_with(&root_shown)
            || (!file.starts_with('/')
                && !file.starts_with('{')
                && !file.starts_with('<')
                && !file.starts_with('~'));
        let foreign = ["site-packages", "dist-packages", "/lib/python", "_pytest", "pluggy", "node_modules"]
            .iter()
            .any(|f| file.contains(f));
        let test = crate::context::is_test_file(Path::new(file));
        if !inside || foreign || test || file.is_empty() {
            continue;
        }
        let place = place.strip_prefix(&format!("{root_shown}/")).unwrap_or(&place).to_string();
        spots.push(HotSpot { calls: columns[0].to_string(), own_s: own, cumulative_s: cumulative, place });
        if spots.len() == HOT_SPOTS {
            break;
        }
    }
    spots
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hot_spots_are_the_projects_rows_of_cprofiles_table() {
        let output = "........\n         48233 function calls (46000 primitive calls) in 0.912 seconds\n\n   Ordered by: cumulative time\n\n   ncalls  tottime  percall  cumtime  percall filename:lineno(function)\n    245/1    0.002    0.000    0.912    0.912 {built-in method builtins.exec}\n        1    0.000    0.000    0.900    0.900 /usr/lib/python3.11/site-packages/_pytest/main.py:10(main)\n        3    0.001    0.000    0.850    0.283 /work/p/test_stats.py:4(test_mean)\n        3    0.790    0.263    0.849    0.283 /work/p/stats.py:3(mean)\n   300000    0.059    0.000    0.059    0.000 /work/p/stats.py:12(_add)\n";
        let spots = hot_spots(output, Path::new("/work/p"));
        let places: Vec<&str> = spots.iter().map(|s| s.place.as_str()).collect();
        assert_eq!(places, ["stats.py:3(mean)", "stats.py:12(_add)"]);
        assert_eq!((spots[0].calls.as_str(), spots[0].own_s, spots[0].cumulative_s), ("3", 0.790, 0.849));
        assert!(hot_spots("no table here", Path::new("/x")).is_empty());
    }

    #[test]
    fn the_profile_command_is_the_test_command_under_cprofile() {
        let root = Path::new("/p");
        let test: Vec<String> =
            ["/v/bin/python", "-m", "pytest", "-q"].iter().map(|s| s.to_string()).collect();
        let (command, profiler) = profile_command(Some(&test), root, &[]).unwrap();
        assert_eq!(profiler, CPROFILE);
        assert_eq!(command[..2], ["/v/bin/python", "-c"]);
        assert_eq!(command[3..], ["-q"]);
        assert!(
            crate::executor::policy::allowed_measured(&command, &[], Some(&test)),
            "the test command, profiled"
        );
        let mut other = command.clone();
        other[2] = "import os; os.system('rm -rf ~')".into();
        assert!(!crate::executor::policy::allowed_measured(&other, &[], Some(&test)));
        // a Node project's tests, under V8's profiler
        let npm: Vec<String> = ["npm", "test"].iter().map(|s| s.to_string()).collect();
        let (command, profiler) = profile_command(Some(&npm), root, &[]).unwrap();
        assert_eq!((profiler, &command[..2]), (V8, &["node".to_string(), "-e".to_string()][..]));
        assert_eq!(command[3..], ["npm", "test"]);
        assert!(crate::executor::policy::allowed_measured(&command, &[], Some(&npm)));
        let mut other = command.clone();
        other[3] = "rm".into();
        assert!(!crate::executor::policy::allowed_measured(&other, &[], Some(&npm)), "only the test command");
        let make: Vec<String> = ["make", "check"].iter().map(|s| s.to_string()).collect();
        assert!(profile_command(Some(&make), root, &[]).is_none());
        assert!(profile_command(None, root, &[]).is_none());
    }
}
