//! The coverage of a run's new code (seed 000's `coverage_data`; seed 004's tester: "커버리지
//! 확인"): when the goal asks for coverage, pytest runs under a line tracer on the source
//! files the run changed (`executor::policy::COVER_PYTEST`: Python's own tracer, nothing to
//! install) and Node's test runner with its own coverage (`--experimental-test-coverage`,
//! which names the lines no test ran); the statements the run added that no test runs send
//! the step back once to test them; what is still uncovered after that is named in the
//! step's note.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::Runner;
use crate::sync::lock;
use crate::text::Language;

/// The marker the traced run prints its lines after.
const MARKER: &str = "TOKAMAK-COVERAGE ";
/// Uncovered statements named at most.
const NAMED: usize = 12;

/// What a measured test run says of each file's lines (one-based), by path relative to the
/// root.
pub type Hits = BTreeMap<String, Lines>;

/// A file's lines as a coverage tool reports them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lines {
    /// The lines that ran (a tracer's report: a line not named did not run).
    Ran(BTreeSet<usize>),
    /// The lines that did not run (Node's report: a line not named ran, or is no code).
    Missed(BTreeSet<usize>),
}

impl Lines {
    fn ran(&self, line: usize) -> bool {
        match self {
            Lines::Ran(ran) => ran.contains(&line),
            Lines::Missed(missed) => !missed.contains(&line),
        }
    }
}

/// Node's test runner's coverage flag.
const NODE_COVERAGE: &str = "--experimental-test-coverage";

/// The coverage of a run's new code.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct NewCode {
    /// The statements the run added, and those of them the tests ran.
    pub added: usize,
    pub covered: usize,
    /// The others, as `file:line` with the line's text.
    pub uncovered: Vec<String>,
}

impl NewCode {
    /// One line for the user: "5 of 6 new statements run by the tests; calc.py:7 by none".
    pub fn describe(&self) -> String {
        let mut out = format!("{} of {} new statement(s) run by the tests", self.covered, self.added);
        if !self.uncovered.is_empty() {
            let places: Vec<&str> =
                self.uncovered.iter().map(|u| u.split(' ').next().unwrap_or(u)).take(NAMED).collect();
            out.push_str(&format!("; run by none: {}", places.join(", ")));
        }
        out
    }
}

impl Runner<'_> {
    /// The test command as the run runs it: under the line tracer on the Python files it
    /// changed, when the goal asks for coverage and the tests are pytest's.
    pub(super) fn traced(&self, command: Vec<String>) -> Vec<String> {
        if !self.coverage {
            return command;
        }
        covered_command(&command, &self.executor.changed_files()).unwrap_or(command)
    }

    /// A test run's output without the tracer's line; what a measured run says of the lines
    /// is kept as the run's last hits.
    pub(super) fn took_hits(&self, argv: &[String], output: String) -> String {
        if argv.get(2).is_some_and(|script| script == crate::executor::policy::COVER_PYTEST) {
            let (rest, hits) = read_hits(&output);
            *lock(&self.coverage_hits) = hits;
            return rest;
        }
        if argv.iter().any(|a| a == NODE_COVERAGE) {
            *lock(&self.coverage_hits) = read_node_report(&output);
        }
        output
    }

    /// The coverage of the run's new code by the last traced test run, audited and told;
    /// `None`: the tests were not traced (another runner, no Python file changed).
    pub(super) async fn new_code_coverage(&self, name: &str) -> Option<NewCode> {
        let hits = lock(&self.coverage_hits).clone()?;
        let root = self.executor.context().confinement.root().to_path_buf();
        let files: Vec<(String, Option<String>, String)> = self
            .executor
            .changed_files()
            .into_iter()
            .filter(|f| measured_language(f))
            .filter(|f| !crate::context::is_test_file(Path::new(f)))
            .filter_map(|f| {
                let now = self.executor.context().current_text(&root.join(&f))?;
                let before = self.executor.original(&f).flatten();
                Some((f, before, now))
            })
            .collect();
        let measured = new_code(&files, &hits);
        self.executor.record("coverage", serde_json::to_value(&measured).unwrap_or_default());
        self.report(format!("{name}: coverage of the new code: {}", measured.describe())).await;
        Some(measured)
    }
}

/// Whether coverage is measured for `path`'s language (`language::Spec::coverage`: Python, and
/// JavaScript — TypeScript run through a transpiler is reported on lines not its own).
fn measured_language(path: &str) -> bool {
    Language::from_path(Path::new(path)).spec().is_some_and(|spec| spec.coverage)
}

/// The test command measuring coverage: pytest run by a Python (`python -m pytest ARGS`, or
/// `pytest ARGS` with the machine's python3) under the line tracer for the Python files among
/// `files` (relative paths); Node's test runner (`… --test …`) with its coverage on. `None`:
/// another runner, or no Python file to trace.
pub fn covered_command(test: &[String], files: &[String]) -> Option<Vec<String>> {
    if let Some(at) = test.iter().position(|a| a == "--test") {
        let mut command = test.to_vec();
        command.insert(at + 1, NODE_COVERAGE.to_string());
        return Some(command);
    }
    let traced: Vec<&str> = files
        .iter()
        .filter(|f| Language::from_path(Path::new(f)) == Language::Python && !f.contains(','))
        .filter(|f| !crate::context::is_test_file(Path::new(f)))
        .map(String::as_str)
        .collect();
    if traced.is_empty() {
        return None;
    }
    let (python, args) = match test {
        [python, flag, module, rest @ ..] if flag == "-m" && module == "pytest" => (python.clone(), rest),
        [pytest, rest @ ..] if Path::new(pytest).file_name().is_some_and(|n| n == "pytest") => {
            ("python3".to_string(), rest)
        }
        _ => return None,
    };
    let mut command =
        vec![python, "-c".into(), crate::executor::policy::COVER_PYTEST.to_string(), traced.join(",")];
    command.extend(args.iter().cloned());
    Some(command)
}

/// A traced run's output without the marker's line, and the lines it says ran (`None`: no
/// marker, as when pytest did not get that far).
pub fn read_hits(output: &str) -> (String, Option<Hits>) {
    let Some(at) = output.rfind(MARKER) else { return (output.to_string(), None) };
    let line_end = output[at..].find('\n').map_or(output.len(), |n| at + n);
    let ran: Option<BTreeMap<String, BTreeSet<usize>>> =
        serde_json::from_str(output[at + MARKER.len()..line_end].trim()).ok();
    let rest = format!("{}{}", &output[..at], &output[line_end..]);
    let hits = ran.map(|ran| ran.into_iter().map(|(file, lines)| (file, Lines::Ran(lines))).collect());
    (rest.trim_end().to_string(), hits)
}

/// The lines Node's coverage report says no test ran (`# file | line % | branch % | funcs % |
/// uncovered lines` rows, the last column as `3-4 9`); `None`: no report.
pub fn read_node_report(output: &str) -> Option<Hits> {
    let start = output.find("# start of coverage report")?;
    let mut hits = Hits::new();
    for line in output[start..].lines() {
        if line.contains("end of coverage report") {
            break;
        }
        let columns: Vec<&str> = line.trim_start_matches('#').split('|').map(str::trim).collect();
        let [file, _, _, _, uncovered] = columns.as_slice() else { continue };
        if file.is_empty() || *file == "file" || *file == "all files" || file.starts_with('-') {
            continue;
        }
        let mut missed = BTreeSet::new();
        for range in uncovered.split_whitespace() {
            let (from, to) = range.split_once('-').unwrap_or((range, range));
            if let (Ok(from), Ok(to)) = (from.parse::<usize>(), to.parse::<usize>()) {
                missed.extend(from..=to.min(from + 10_000));
            }
        }
        hits.insert((*file).to_string(), Lines::Missed(missed));
    }
    Some(hits)
}

/// The statements `after` (the file `path`) added to `before` (`None`: a new file) that a
/// coverage tool sees run: their first lines, one-based. Docstrings, `pass`, `else:`, braces
/// and the like are not counted.
pub fn added_statements(path: &str, before: Option<&str>, after: &str) -> Vec<usize> {
    let language = Language::from_path(Path::new(path));
    let added: BTreeSet<usize> = {
        let diff = similar::TextDiff::from_lines(before.unwrap_or_default(), after);
        diff.iter_all_changes()
            .filter(|c| c.tag() == similar::ChangeTag::Insert)
            .filter_map(|c| c.new_index().map(|i| i + 1))
            .collect()
    };
    if added.is_empty() {
        return Vec::new();
    }
    let mut parser = tree_sitter::Parser::new();
    let (Some(tree_sitter), Some(grammar)) = (language.grammar(), language.nodes()) else {
        return Vec::new();
    };
    if parser.set_language(&tree_sitter).is_err() {
        return Vec::new();
    }
    let Some(tree) = parser.parse(after, None) else { return Vec::new() };
    let mut lines = BTreeSet::new();
    let mut cursor = tree.walk();
    'walk: loop {
        let node = cursor.node();
        let line = node.start_position().row + 1;
        if added.contains(&line) && grammar.is_traced(node) {
            lines.insert(line);
        }
        if cursor.goto_first_child() {
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                continue 'walk;
            }
            if !cursor.goto_parent() {
                break 'walk;
            }
        }
    }
    lines.into_iter().collect()
}

/// The coverage of the new code in `files` (`(path, text before the run, text now)`) by
/// `hits`; a file the tracer never saw ran none of its lines.
pub fn new_code(files: &[(String, Option<String>, String)], hits: &Hits) -> NewCode {
    let mut out = NewCode::default();
    for (path, before, after) in files {
        let ran = hits.get(path);
        let text: Vec<&str> = after.lines().collect();
        for line in added_statements(path, before.as_deref(), after) {
            out.added += 1;
            if ran.is_some_and(|r| r.ran(line)) {
                out.covered += 1;
            } else {
                let shown = text.get(line - 1).map(|l| l.trim()).unwrap_or_default();
                out.uncovered.push(format!("{path}:{line} `{}`", crate::text::cut(shown, 80)));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const BEFORE: &str = "def mean(xs):\n    return sum(xs) / len(xs)\n";
    const AFTER: &str = "def mean(xs):\n    \"\"\"The mean, 0.0 for none.\"\"\"\n    if not xs:\n        return 0.0\n    else:\n        pass\n    return sum(xs) / len(xs)\n";

    #[test]
    fn the_statements_a_change_added_are_those_a_tracer_sees() {
        // the docstring, `else:` and `pass` are not counted
        assert_eq!(added_statements("calc.py", Some(BEFORE), AFTER), [3, 4]);
        assert_eq!(added_statements("calc.py", None, BEFORE), [2], "a new file: its statements");
        assert!(added_statements("calc.py", Some(AFTER), AFTER).is_empty());
        let js =
            "function mean(xs) {\n  if (xs.length === 0) {\n    return 0;\n  }\n  return xs.length;\n}\n";
        assert_eq!(
            added_statements("stats.js", Some("function mean(xs) {\n  return xs.length;\n}\n"), js),
            [2, 3]
        );
    }

    #[test]
    fn new_code_is_measured_by_the_lines_that_ran() {
        let files = vec![("calc.py".to_string(), Some(BEFORE.to_string()), AFTER.to_string())];
        let hits: Hits =
            [("calc.py".to_string(), Lines::Ran([1, 3, 7].into_iter().collect()))].into_iter().collect();
        let measured = new_code(&files, &hits);
        assert_eq!((measured.added, measured.covered), (2, 1));
        assert_eq!(measured.uncovered, ["calc.py:4 `return 0.0`"]);
        assert_eq!(measured.describe(), "1 of 2 new statement(s) run by the tests; run by none: calc.py:4");
        let none = new_code(&files, &Hits::new());
        assert_eq!(none.covered, 0, "a file the tracer never saw ran nothing");
    }

    #[test]
    fn the_traced_command_and_its_output() {
        let test: Vec<String> =
            ["/v/bin/python", "-m", "pytest", "-q"].iter().map(|s| s.to_string()).collect();
        let files = vec!["calc.py".to_string(), "test_calc.py".to_string(), "README.md".to_string()];
        let command = covered_command(&test, &files).unwrap();
        assert_eq!(command[..2], ["/v/bin/python", "-c"]);
        assert_eq!(command[3..], ["calc.py", "-q"], "the test file and the README are not traced");
        assert!(crate::executor::policy::allowed_measured(&command, &[], Some(&test)));
        let mut other = command.clone();
        other[2] = "import os".into();
        assert!(!crate::executor::policy::allowed_measured(&other, &[], Some(&test)));
        assert!(covered_command(&test, &["README.md".to_string()]).is_none());
        let npm: Vec<String> = ["npm", "test"].iter().map(|s| s.to_string()).collect();
        assert!(covered_command(&npm, &files).is_none());

        let output = "..\n2 passed in 0.01s\n\nTOKAMAK-COVERAGE {\"calc.py\": [1, 2]}\n";
        let (rest, hits) = read_hits(output);
        assert_eq!(rest, "..\n2 passed in 0.01s");
        assert_eq!(hits.unwrap()["calc.py"], Lines::Ran([1, 2].into_iter().collect()));
        assert_eq!(read_hits("no marker").1, None);

        // Node's test runner: its own coverage, on the test command as it is
        let node: Vec<String> = ["node", "--test", "test/"].iter().map(|s| s.to_string()).collect();
        let command = covered_command(&node, &[]).unwrap();
        assert_eq!(command, ["node", "--test", NODE_COVERAGE, "test/"]);
        assert!(crate::executor::policy::allowed_measured(&command, &[], Some(&node)));
        let report = "# pass 1\n# start of coverage report\n# ---\n# file          | line % | branch % | funcs % | uncovered lines\n# ---\n# stats.js      |  71.43 |    75.00 |  100.00 | 3-4 9\n# stats.test.js | 100.00 |   100.00 |  100.00 | \n# all files     |  81.82 |    83.33 |  100.00 |\n# end of coverage report\n";
        let hits = read_node_report(report).unwrap();
        assert_eq!(hits["stats.js"], Lines::Missed([3, 4, 9].into_iter().collect()));
        assert!(hits["stats.js"].ran(2) && !hits["stats.js"].ran(4));
        assert!(!hits.contains_key("all files"));
        assert_eq!(read_node_report("# pass 1"), None);
    }
}
