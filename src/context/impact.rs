//! What a change reaches (SPEC C6): the definitions a change touched (compared by text,
//! before and after), their callers up to three levels and the importers of their modules,
//! and the tests that reach any of them — pytest node ids for the test functions that call
//! them (directly or through their callers), test files otherwise — with the test command
//! narrowed to those tests (pytest node ids; vitest and jest file filters).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::extract::{Definition, facts};
use super::index::{Caller, Index, module_name};
use crate::text::Language;

/// Callers followed this many levels to find the tests that reach a change.
const IMPACT_DEPTH: usize = 3;

/// A test that reaches a change.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct TestTarget {
    pub path: PathBuf,
    /// The test function (`TestUser::test_email` for a method), `None`: the whole file.
    pub test: Option<String>,
}

/// What a change reaches.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Impact {
    /// `(file, definition)` the change touched (added, removed or edited).
    pub symbols: Vec<(PathBuf, String)>,
    pub callers: Vec<Caller>,
    /// Files importing a changed module, with the line.
    pub importers: Vec<(PathBuf, usize)>,
    pub tests: Vec<TestTarget>,
}

/// The definitions of a file that differ between `before` and `after` (`None`: the file did
/// not exist, or no longer does): added, removed, or with other text. A change outside every
/// definition (an import, a module constant) touches the module itself: then the file's
/// importers are what it reaches, and no name is returned for it.
pub fn changed_definitions(language: Language, before: Option<&str>, after: Option<&str>) -> Vec<String> {
    let texts = |text: Option<&str>| -> BTreeMap<(Option<String>, String), String> {
        let Some(text) = text else { return BTreeMap::new() };
        let Some(found) = facts(language, text) else { return BTreeMap::new() };
        let lines: Vec<&str> = text.lines().collect();
        found
            .definitions
            .iter()
            .map(|d: &Definition| {
                let body = lines
                    .get(d.lines.0..=d.lines.1.min(lines.len().saturating_sub(1)))
                    .unwrap_or(&[])
                    .join("\n");
                ((d.container.clone(), d.name.clone()), body)
            })
            .collect()
    };
    let (before, after) = (texts(before), texts(after));
    let mut changed: BTreeSet<(Option<String>, String)> = BTreeSet::new();
    for (key, body) in &after {
        if before.get(key) != Some(body) {
            changed.insert(key.clone());
        }
    }
    for key in before.keys() {
        if !after.contains_key(key) {
            changed.insert(key.clone());
        }
    }
    // a class whose methods changed is itself changed only if what is left of it (its
    // header, its attributes) changed too
    let own = |bodies: &BTreeMap<(Option<String>, String), String>, key: &(Option<String>, String)| {
        let mut text = bodies.get(key).cloned().unwrap_or_default();
        for (_, body) in bodies.iter().filter(|(k, _)| k.0.as_ref() == Some(&key.1)) {
            text = text.replacen(body.as_str(), "", 1);
        }
        // the blank lines around a method added or removed are not the class's own
        text.lines().filter(|l| !l.trim().is_empty()).collect::<Vec<_>>().join("\n")
    };
    let containers: Vec<(Option<String>, String)> = changed
        .iter()
        .filter(|key| changed.iter().any(|other| other.0.as_ref() == Some(&key.1)))
        .filter(|key| before.contains_key(*key) && after.contains_key(*key))
        .cloned()
        .collect();
    for key in containers {
        if own(&before, &key) == own(&after, &key) {
            changed.remove(&key);
        }
    }
    let names: BTreeSet<String> = changed.into_iter().map(|(_, name)| name).collect();
    names.into_iter().collect()
}

/// What the changes reach: `changes` is each changed file with its changed definitions.
pub fn impact(index: &Index, changes: &[(PathBuf, Vec<String>)]) -> Impact {
    let mut out = Impact::default();
    let mut reach: BTreeSet<String> = BTreeSet::new();
    let mut modules: Vec<(String, &[String])> = Vec::new();
    for (path, names) in changes {
        modules.push((module_name(index.root(), path), names.as_slice()));
        for name in names {
            out.symbols.push((path.clone(), name.clone()));
            reach.insert(name.clone());
            for caller in index.callers(name, IMPACT_DEPTH) {
                if let Some(name) = &caller.caller {
                    reach.insert(name.clone());
                }
                out.callers.push(caller);
            }
        }
    }
    // a test file that imports what changed (a changed name by name, or a module changed
    // outside its definitions) runs whole when no test function in it is known to reach it
    let mut importing: BTreeSet<PathBuf> = BTreeSet::new();
    for (module, names) in &modules {
        for (path, line) in index.importers(module) {
            let brings = index.file_facts(&path).and_then(|f| f.imports.iter().find(|i| i.line == line));
            if names.is_empty() || brings.is_some_and(|i| i.names.iter().any(|n| names.contains(n))) {
                importing.insert(path.clone());
            }
            out.importers.push((path, line));
        }
    }
    out.importers.sort();
    out.importers.dedup();

    let mut tests: BTreeSet<TestTarget> = BTreeSet::new();
    for path in index.paths().filter(|p| is_test_file(p)) {
        let Some(facts) = index.file_facts(path) else { continue };
        let mut found = false;
        if Language::from_path(path).spec().is_some_and(|spec| spec.tests_by_name) {
            for call in facts.calls.iter().filter(|c| reach.contains(&c.name)) {
                let Some(function) = call.caller.as_deref().filter(|f| f.starts_with("test")) else {
                    continue;
                };
                let container =
                    facts.definitions.iter().find(|d| d.name == function).and_then(|d| d.container.clone());
                let test = match container {
                    Some(class) => format!("{class}::{function}"),
                    None => function.to_string(),
                };
                tests.insert(TestTarget { path: path.to_path_buf(), test: Some(test) });
                found = true;
            }
        } else if facts.calls.iter().any(|c| reach.contains(&c.name)) {
            tests.insert(TestTarget { path: path.to_path_buf(), test: None });
            found = true;
        }
        if !found && importing.contains(path) {
            tests.insert(TestTarget { path: path.to_path_buf(), test: None });
        }
    }
    // a changed test file runs whole
    for (path, _) in changes {
        if is_test_file(path) && path.exists() {
            tests.retain(|t| t.path != *path);
            tests.insert(TestTarget { path: path.clone(), test: None });
        }
    }
    out.tests = tests.into_iter().collect();
    out
}

pub use crate::language::is_test_file;

/// The test command narrowed to `tests` (relative to `root`), when its runner is one Tokamak
/// knows: pytest gets node ids (`tests/test_user.py::TestUser::test_email`), vitest and jest
/// the test files. `None`: an unknown runner, or no tests (run the whole command).
pub fn focused_test_command(command: &[String], root: &Path, tests: &[TestTarget]) -> Option<Vec<String>> {
    if tests.is_empty() {
        return None;
    }
    let relative = |p: &Path| p.strip_prefix(root).unwrap_or(p).to_string_lossy().replace('\\', "/");
    let runs = |tool: &str| {
        command.iter().any(|a| {
            let name = Path::new(a).file_name().and_then(|n| n.to_str()).unwrap_or(a);
            name == tool || name.starts_with(&format!("{tool}."))
        })
    };
    // the runner the command runs, and the tests in the languages it runs
    let runner = crate::language::test_runners().find(|r| runs(r))?;
    let ran: Vec<&TestTarget> = tests
        .iter()
        .filter(|t| {
            Language::from_path(&t.path).spec().is_some_and(|spec| spec.test_runners.contains(&runner))
        })
        .collect();
    if ran.is_empty() {
        return None;
    }
    let mut argv = command.to_vec();
    if runner.starts_with("py") {
        for test in ran {
            argv.push(match &test.test {
                Some(name) => format!("{}::{name}", relative(&test.path)),
                None => relative(&test.path),
            });
        }
        return Some(argv);
    }
    // vitest and jest: the test files
    let mut files: Vec<String> = ran.iter().map(|t| relative(&t.path)).collect();
    files.dedup();
    argv.extend(files);
    Some(argv)
}

/// The impact as the model and people read it.
pub fn describe(impact: &Impact, root: &Path) -> String {
    let relative = |p: &Path| p.strip_prefix(root).unwrap_or(p).display().to_string();
    let mut out = String::new();
    if impact.symbols.is_empty() {
        out.push_str("No definition changed.\n");
    } else {
        let names: Vec<String> =
            impact.symbols.iter().map(|(p, n)| format!("{n} ({})", relative(p))).collect();
        out.push_str(&format!("Changed: {}\n", names.join(", ")));
    }
    let mut callers: Vec<String> = impact
        .callers
        .iter()
        .map(|c| {
            format!(
                "{}:{} {}{}",
                relative(&c.path),
                c.line + 1,
                c.caller.as_deref().unwrap_or("<top level>"),
                if c.ambiguous { " (by name only)" } else { "" }
            )
        })
        .collect();
    callers.dedup();
    out.push_str(&format!(
        "Callers ({}): {}\n",
        callers.len(),
        if callers.is_empty() {
            "none".to_string()
        } else {
            callers.into_iter().take(40).collect::<Vec<_>>().join(", ")
        }
    ));
    let importers: BTreeSet<String> = impact.importers.iter().map(|(p, _)| relative(p)).collect();
    out.push_str(&format!(
        "Importers ({}): {}\n",
        importers.len(),
        if importers.is_empty() {
            "none".to_string()
        } else {
            importers.into_iter().collect::<Vec<_>>().join(", ")
        }
    ));
    let tests: Vec<String> = impact
        .tests
        .iter()
        .map(|t| match &t.test {
            Some(name) => format!("{}::{name}", relative(&t.path)),
            None => relative(&t.path),
        })
        .collect();
    out.push_str(&format!(
        "Tests that reach it ({}): {}\n",
        tests.len(),
        if tests.is_empty() { "none found".to_string() } else { tests.join(", ") }
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODELS: &str = "class User:\n    def __init__(self, email):\n        self.email = email\n\n    def validate_email(self):\n        return '@' in self.email\n\n\ndef make_user(email):\n    return User(email)\n";

    fn project() -> tempfile::TempDir {
        let files: &[(&str, &str)] = &[
            ("app/models.py", MODELS),
            (
                "app/signup.py",
                "from app.models import make_user\n\n\ndef signup(email):\n    user = make_user(email)\n    return user.validate_email()\n",
            ),
            ("app/other.py", "def unrelated():\n    return 1\n"),
            (
                "tests/test_signup.py",
                "from app.signup import signup\n\n\ndef test_signup_checks_email():\n    assert not signup('nope')\n\n\ndef test_nothing():\n    assert True\n",
            ),
            (
                "tests/test_models.py",
                "from app.models import User\n\n\nclass TestUser:\n    def test_valid(self):\n        assert User('a@b').validate_email()\n",
            ),
            (
                "tests/test_other.py",
                "from app.other import unrelated\n\n\ndef test_unrelated():\n    assert unrelated() == 1\n",
            ),
            (
                "web/src/cart.ts",
                "export function total(items: number[]) {\n  return items.reduce((a, b) => a + b, 0);\n}\n",
            ),
            (
                "web/src/cart.test.ts",
                "import { total } from './cart';\ntest('sums', () => { expect(total([1, 2])).toBe(3); });\n",
            ),
        ];
        crate::context::test_project(files)
    }

    #[test]
    fn changed_definitions_are_found_by_their_text() {
        let after =
            MODELS.replace("return '@' in self.email", "return '@' in self.email and '.' in self.email");
        assert_eq!(changed_definitions(Language::Python, Some(MODELS), Some(&after)), ["validate_email"]);
        let added = format!("{MODELS}\n\ndef delete_user(user):\n    pass\n");
        assert_eq!(changed_definitions(Language::Python, Some(MODELS), Some(&added)), ["delete_user"]);
        let method = MODELS.replace(
            "\n\n\ndef make_user",
            "\n    def domain(self):\n        return self.email.split('@')[1]\n\n\ndef make_user",
        );
        assert_eq!(
            changed_definitions(Language::Python, Some(MODELS), Some(&method)),
            ["domain"],
            "not the class"
        );
        let header = method.replace("class User:", "class User(Base):");
        assert_eq!(changed_definitions(Language::Python, Some(MODELS), Some(&header)), ["User", "domain"]);
        let mut removed = changed_definitions(Language::Python, Some(MODELS), None);
        removed.sort();
        assert_eq!(removed, ["User", "__init__", "make_user", "validate_email"]);
        assert!(
            changed_definitions(Language::Python, Some(MODELS), Some(&format!("import os\n{MODELS}")))
                .is_empty()
        );
    }

    #[test]
    fn a_change_reaches_its_callers_importers_and_tests() {
        let dir = project();
        let root = dir.path();
        let index = Index::build(root);
        let models = root.join("app/models.py");
        let found = impact(&index, &[(models.clone(), vec!["validate_email".into()])]);
        let tests: Vec<(String, Option<String>)> = found
            .tests
            .iter()
            .map(|t| (t.path.strip_prefix(root).unwrap().display().to_string(), t.test.clone()))
            .collect();
        assert_eq!(
            tests,
            [
                ("tests/test_models.py".to_string(), Some("TestUser::test_valid".to_string())),
                ("tests/test_signup.py".to_string(), Some("test_signup_checks_email".to_string())),
            ],
            "through signup, and directly; not test_nothing, not test_other"
        );
        let importers: Vec<String> = found
            .importers
            .iter()
            .map(|(p, _)| p.strip_prefix(root).unwrap().display().to_string())
            .collect();
        assert_eq!(importers, ["app/signup.py", "tests/test_models.py"]);
        let text = describe(&found, root);
        assert!(text.contains("Changed: validate_email (app/models.py)"), "{text}");
        assert!(text.contains("app/signup.py:6 signup"), "{text}");

        let pytest: Vec<String> = ["python", "-m", "pytest", "-q"].iter().map(|s| s.to_string()).collect();
        assert_eq!(
            focused_test_command(&pytest, root, &found.tests).unwrap()[4..],
            ["tests/test_models.py::TestUser::test_valid", "tests/test_signup.py::test_signup_checks_email"]
        );
        // a change outside every definition: the files importing the module run whole
        let other = impact(&index, &[(root.join("app/other.py"), vec![])]);
        assert_eq!(other.tests, [TestTarget { path: root.join("tests/test_other.py"), test: None }]);
        // a definition added that no test calls: no test is known to reach it
        let added = impact(&index, &[(root.join("app/other.py"), vec!["brand_new".into()])]);
        assert!(added.tests.is_empty(), "{added:?}");
        let cart = impact(&index, &[(root.join("web/src/cart.ts"), vec!["total".into()])]);
        let vitest: Vec<String> = ["npx", "vitest", "run"].iter().map(|s| s.to_string()).collect();
        assert_eq!(focused_test_command(&vitest, root, &cart.tests).unwrap()[3..], ["web/src/cart.test.ts"]);
        let make: Vec<String> = vec!["make".into(), "test".into()];
        assert_eq!(focused_test_command(&make, root, &cart.tests), None, "an unknown runner runs whole");
        assert_eq!(focused_test_command(&pytest, root, &[]), None);

        assert!(is_test_file(Path::new("pkg/test_a.py")) && is_test_file(Path::new("a/b_test.py")));
        assert!(is_test_file(Path::new("src/__tests__/x.ts")) && is_test_file(Path::new("src/x.spec.tsx")));
        assert!(!is_test_file(Path::new("src/latest.py")) && !is_test_file(Path::new("src/contest.ts")));
    }
}
