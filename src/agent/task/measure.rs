//! What a measuring mode does when a step enters it, before the model acts (seed 000's
//! `ModeHandler.enter`): in performance profiling, the tests that reach the definitions the
//! step names run under Python's cProfile in the run's sandbox, and the hot spots inside the
//! project — calls, own and cumulative time — go to the model as the step's context and to the
//! user as a progress line; found, the step goes on to refactoring (`hotspot_found`).

use std::path::Path;

use super::Runner;
use crate::executor::Action;
use crate::modes::Mode;

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
            _ => None,
        }
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
        let Some(command) = profile_command(context.settings.test_command.as_deref(), &root, &tests) else {
            return "Profiling: the project's tests are not run with Python's pytest here, so Tokamak could not profile them; measure with the run action (python -m cProfile -s cumulative …)".to_string();
        };
        self.report(format!(
            "{name}: profiling {} with cProfile",
            if named.is_empty() { "the tests".to_string() } else { named.join(", ") }
        ))
        .await;
        let shown = format!("pytest {} under cProfile", command[3..].join(" "));
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
        let mut text =
            format!("The profile of `{shown}` (Python's cProfile; the project's code by cumulative time):\n");
        for spot in &spots {
            text.push_str(&format!(
                "- {}: {} call(s), {:.3} s own, {:.3} s cumulative\n",
                spot.place, spot.calls, spot.own_s, spot.cumulative_s
            ));
        }
        self.report(format!(
            "{name}: hot spot {} ({:.3} s cumulative)",
            spots[0].place, spots[0].cumulative_s
        ))
        .await;
        // found: on to making it faster (seed 000: profiling → refactor)
        let _ = self.outcome(name, "hotspot_found", |_| {}).await;
        text.push_str(
            "Make the hot spots faster without changing what they return; the tests must still pass.",
        );
        text
    }
}

/// The test command under cProfile, narrowed to `tests` when there are any: `python -c
/// PROFILE_PYTEST …` when the project's tests are pytest run by a Python.
fn profile_command(
    test: Option<&[String]>,
    root: &Path,
    tests: &[crate::context::TestTarget],
) -> Option<Vec<String>> {
    let test = test?;
    let focused = crate::context::focused_test_command(test, root, tests).unwrap_or_else(|| test.to_vec());
    // `<python> -m pytest ARGS`, or `pytest ARGS` with the machine's python3
    let (python, args) = match focused.as_slice() {
        [python, flag, module, rest @ ..] if flag == "-m" && module == "pytest" => {
            (python.clone(), rest.to_vec())
        }
        [pytest, rest @ ..] if Path::new(pytest).file_name().is_some_and(|n| n == "pytest") => {
            ("python3".to_string(), rest.to_vec())
        }
        _ => return None,
    };
    let mut command = vec![python, "-c".into(), crate::executor::policy::PROFILE_PYTEST.to_string()];
    command.extend(args);
    Some(command)
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
        let foreign = ["site-packages", "dist-packages", "/lib/python", "_pytest", "pluggy"]
            .iter()
            .any(|f| file.contains(f));
        let test = Path::new(file)
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("test_") || n.ends_with("_test.py") || n == "conftest.py");
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
        let command = profile_command(Some(&test), root, &[]).unwrap();
        assert_eq!(command[..2], ["/v/bin/python", "-c"]);
        assert_eq!(command[3..], ["-q"]);
        assert!(
            crate::executor::policy::allowed_profiled(&command, &[], Some(&test)),
            "the test command, profiled"
        );
        let mut other = command.clone();
        other[2] = "import os; os.system('rm -rf ~')".into();
        assert!(!crate::executor::policy::allowed_profiled(&other, &[], Some(&test)));
        let npm: Vec<String> = ["npm", "test"].iter().map(|s| s.to_string()).collect();
        assert!(profile_command(Some(&npm), root, &[]).is_none());
        assert!(profile_command(None, root, &[]).is_none());
    }
}
