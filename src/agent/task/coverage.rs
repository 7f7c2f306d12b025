//! The coverage of a run's new code (seed 000's `coverage_data`; seed 004's tester: "커버리지
//! 확인"): when the goal asks for coverage, the tests run under a line tracer on the source
//! files the run changed (`executor::policy::COVER_PYTEST`: Python's own tracer, nothing to
//! install), and the statements the run added that no test runs send the step back once to
//! test them; what is still uncovered after that is named in the step's note.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::Runner;
use crate::sync::lock;
use crate::text::Language;

/// The marker the traced run prints its lines after.
const MARKER: &str = "TOKAMAK-COVERAGE ";
/// Uncovered statements named at most.
const NAMED: usize = 12;

/// The lines each traced file ran (one-based), by path relative to the root.
pub type Hits = BTreeMap<String, BTreeSet<usize>>;

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

    /// A test run's output without the tracer's line, which is kept as the run's last hits.
    pub(super) fn took_hits(&self, argv: &[String], output: String) -> String {
        if argv.get(2).is_none_or(|script| script != crate::executor::policy::COVER_PYTEST) {
            return output;
        }
        let (rest, hits) = read_hits(&output);
        *lock(&self.coverage_hits) = hits;
        rest
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
            .filter(|f| Language::from_path(Path::new(f)) == Language::Python)
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

/// The test command under the line tracer for `files` (relative paths of Python files): when
/// the tests are pytest run by a Python (`python -m pytest ARGS`, or `pytest ARGS` with the
/// machine's python3). `None`: another runner, or no Python file to trace.
pub fn covered_command(test: &[String], files: &[String]) -> Option<Vec<String>> {
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
    let hits: Option<Hits> = serde_json::from_str(output[at + MARKER.len()..line_end].trim()).ok();
    let rest = format!("{}{}", &output[..at], &output[line_end..]);
    (rest.trim_end().to_string(), hits)
}

/// The statements `after` added to `before` (`None`: a new file) that a tracer sees run:
/// their first lines, one-based. Docstrings, `pass`, `else:` and the like are not counted.
pub fn added_statements(before: Option<&str>, after: &str) -> Vec<usize> {
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
    let Some(grammar) = crate::syntax::grammar(Language::Python) else { return Vec::new() };
    if parser.set_language(&grammar).is_err() {
        return Vec::new();
    }
    let Some(tree) = parser.parse(after, None) else { return Vec::new() };
    let mut lines = BTreeSet::new();
    let mut cursor = tree.walk();
    'walk: loop {
        let node = cursor.node();
        let traced = matches!(
            node.kind(),
            "expression_statement"
                | "return_statement"
                | "raise_statement"
                | "assert_statement"
                | "delete_statement"
                | "if_statement"
                | "elif_clause"
                | "for_statement"
                | "while_statement"
                | "with_statement"
                | "import_statement"
                | "import_from_statement"
        );
        // a docstring is no statement that runs
        let docstring = node.kind() == "expression_statement"
            && node.named_child_count() == 1
            && node.named_child(0).is_some_and(|c| c.kind() == "string");
        let line = node.start_position().row + 1;
        if traced && !docstring && added.contains(&line) {
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
        for line in added_statements(before.as_deref(), after) {
            out.added += 1;
            if ran.is_some_and(|r| r.contains(&line)) {
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
        assert_eq!(added_statements(Some(BEFORE), AFTER), [3, 4]);
        assert_eq!(
            added_statements(None, BEFORE),
            [2],
            "a new file: every statement (the def line too is no statement here)"
        );
        assert!(added_statements(Some(AFTER), AFTER).is_empty());
    }

    #[test]
    fn new_code_is_measured_by_the_lines_that_ran() {
        let files = vec![("calc.py".to_string(), Some(BEFORE.to_string()), AFTER.to_string())];
        let hits: Hits = [("calc.py".to_string(), [1, 3, 7].into_iter().collect())].into_iter().collect();
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
        assert_eq!(hits.unwrap()["calc.py"], [1, 2].into_iter().collect());
        assert_eq!(read_hits("no marker").1, None);
    }
}
