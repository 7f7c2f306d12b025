//! What a run knows of a file it read or wrote (SPEC G3): its fingerprint — the sha256 of its
//! text, its size and modification time, its top-level definitions with their signatures, and
//! the hash of its tokens without whitespace or comments — and how far a file has drifted from
//! one (seed 003's classes): `None`, `Minor` (whitespace or comments, or only the modification
//! time: "timestamp changed, content same"), `Moderate` (bodies or signatures changed), `Major`
//! (definitions added, removed or renamed, or the file gone).

use std::collections::BTreeSet;
use std::path::Path;
use std::time::SystemTime;

use crate::text::Language;

/// A file as a run last saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fingerprint {
    pub sha256: String,
    pub size: usize,
    /// The file's modification time on disk then (`None`: not on disk, or an open document's
    /// unsaved text).
    pub mtime: Option<SystemTime>,
    /// Each definition as `container.name`, with its signature (`None` for a language
    /// Tokamak does not parse: then any change but whitespace is `Moderate`).
    pub definitions: Option<Vec<(String, String)>>,
    /// The hash of the text's tokens, comments and whitespace left out.
    pub shape: String,
}

/// How far a file moved from its fingerprint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Drift {
    None,
    /// Whitespace or comments: absorbed.
    Minor,
    /// Code inside definitions, or a signature: the file is read again before it is acted on.
    Moderate,
    /// Definitions added, removed or renamed, or the file deleted: the step cannot assume
    /// what it planned on.
    Major,
}

impl Drift {
    /// What a drift of this class costs the run's confidence in the file.
    pub fn cost(self) -> i32 {
        match self {
            Drift::None => 0,
            Drift::Minor => 5,
            Drift::Moderate => 15,
            Drift::Major => 40,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Drift::None => "none",
            Drift::Minor => "minor",
            Drift::Moderate => "moderate",
            Drift::Major => "major",
        }
    }
}

impl Fingerprint {
    /// The fingerprint of `text` as the file `path` (its language from the name; its mtime
    /// from the disk when `on_disk`).
    pub fn of(path: &Path, text: &str, on_disk: bool) -> Fingerprint {
        let language = Language::from_path(path);
        let (definitions, shape) = match parsed(language, text) {
            Some((definitions, shape)) => (Some(definitions), shape),
            None => (None, hash(text.split_whitespace().collect::<Vec<_>>().join(" ").as_bytes())),
        };
        Fingerprint {
            sha256: hash(text.as_bytes()),
            size: text.len(),
            mtime: if on_disk { std::fs::metadata(path).and_then(|m| m.modified()).ok() } else { None },
            definitions,
            shape,
        }
    }

    /// How far `now` (`None`: the file is gone) drifted from this, with what changed in a few
    /// words ("removed total; added sum_all").
    pub fn drift(&self, now: Option<&Fingerprint>) -> (Drift, String) {
        let Some(now) = now else {
            return (Drift::Major, "the file was deleted".to_string());
        };
        if now.sha256 == self.sha256 {
            // touched, saved unchanged, checked out again: the same text at another time
            if let (Some(was), Some(is)) = (self.mtime, now.mtime)
                && was != is
            {
                return (Drift::Minor, "only its modification time changed".to_string());
            }
            return (Drift::None, String::new());
        }
        if let (Some(before), Some(after)) = (&self.definitions, &now.definitions) {
            let names = |list: &[(String, String)]| list.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
            let (was, is) = (names(before), names(after));
            if was != is {
                // by name, and by how many definitions have it (one of two of a name gone)
                let count = |list: &[String], name: &String| list.iter().filter(|n| *n == name).count();
                let all: BTreeSet<&String> = was.iter().chain(&is).collect();
                let removed: Vec<&String> =
                    all.iter().copied().filter(|n| count(&was, n) > count(&is, n)).collect();
                let added: Vec<&String> =
                    all.iter().copied().filter(|n| count(&is, n) > count(&was, n)).collect();
                let mut said = Vec::new();
                if !removed.is_empty() {
                    said.push(format!("removed {}", join(&removed)));
                }
                if !added.is_empty() {
                    said.push(format!("added {}", join(&added)));
                }
                return (Drift::Major, said.join("; "));
            }
            if before != after {
                let changed: BTreeSet<&String> =
                    after.iter().filter(|d| !before.contains(d)).map(|(name, _)| name).collect();
                let changed: Vec<&String> = changed.into_iter().collect();
                return (Drift::Moderate, format!("the signature of {} changed", join(&changed)));
            }
        }
        if now.shape == self.shape {
            return (Drift::Minor, "only whitespace or comments changed".to_string());
        }
        (Drift::Moderate, "code inside its definitions changed".to_string())
    }

    /// The names of the definitions `now` added, removed or changed the signature of (a
    /// method's without its class): what a file's dependents may no longer match.
    pub fn changed_names(&self, now: Option<&Fingerprint>) -> Vec<String> {
        let before = self.definitions.as_deref().unwrap_or_default();
        let after = now.and_then(|n| n.definitions.as_deref()).unwrap_or_default();
        let mut names: Vec<String> = before
            .iter()
            .filter(|d| !after.contains(d))
            .chain(after.iter().filter(|d| !before.contains(d)))
            .map(|(name, _)| name.rsplit('.').next().unwrap_or(name).to_string())
            .collect();
        names.sort();
        names.dedup();
        names
    }
}

fn join(names: &[&String]) -> String {
    let shown: Vec<&str> = names.iter().take(5).map(|n| n.as_str()).collect();
    let more = if names.len() > 5 { format!(" and {} more", names.len() - 5) } else { String::new() };
    format!("{}{more}", shown.join(", "))
}

fn hash(bytes: &[u8]) -> String {
    crate::places::sha256_hex(bytes)
}

/// The definitions (with signatures) and the token shape of `text`, when the language is one
/// Tokamak parses.
fn parsed(language: Language, text: &str) -> Option<(Vec<(String, String)>, String)> {
    let mut parser = tree_sitter::Parser::new();
    parser.set_language(&language.grammar()?).ok()?;
    let tree = parser.parse(text, None)?;
    let facts = super::facts_of_tree(&tree, text, language);
    let spec = language.spec();
    // Python's blocks are their indentation
    let indented = spec.is_some_and(|spec| !spec.braces);
    let definitions = facts
        .definitions
        .iter()
        .map(|d| {
            let name = match &d.container {
                Some(container) => format!("{container}.{}", d.name),
                None => d.name.clone(),
            };
            // a comment between a Python signature and its body is the signature's text
            let signature = match spec {
                Some(spec) if indented => {
                    let comment = format!(" {}", spec.line_comment);
                    d.signature
                        .split(comment.as_str())
                        .next()
                        .unwrap_or_default()
                        .trim_end()
                        .trim_end_matches(':')
                }
                _ => d.signature.as_str(),
            };
            (name, signature.split_whitespace().collect::<Vec<_>>().join(" "))
        })
        .collect::<Vec<_>>();
    let mut definitions = definitions;
    definitions.sort();
    // the leaves in order, comments left out: whitespace and comments cannot change it
    let mut shape: Vec<u8> = Vec::with_capacity(text.len());
    let mut cursor = tree.walk();
    let mut descend = true;
    // Python's blocks are their indentation: a line's first token keeps its column
    let mut row = usize::MAX;
    loop {
        let node = cursor.node();
        if descend && node.child_count() == 0 && !node.kind().contains("comment") {
            let start = node.start_position();
            if indented && start.row != row {
                row = start.row;
                shape.extend_from_slice(format!("\n{}:", start.column).as_bytes());
            }
            shape.extend_from_slice(text.as_bytes().get(node.byte_range()).unwrap_or_default());
            shape.push(0);
        }
        let dive = descend && !node.kind().contains("comment") && cursor.goto_first_child();
        if dive {
            continue;
        }
        if cursor.goto_next_sibling() {
            descend = true;
            continue;
        }
        if !cursor.goto_parent() {
            break;
        }
        descend = false;
    }
    Some((definitions, hash(&shape)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drift(before: &str, after: &str) -> (Drift, String) {
        let path = Path::new("calc.py");
        Fingerprint::of(path, before, false).drift(Some(&Fingerprint::of(path, after, false)))
    }

    const CALC: &str =
        "def total(xs):\n    return sum(xs)\n\n\ndef mean(xs):\n    return total(xs) / len(xs)\n";

    #[test]
    fn drift_is_classified_by_what_changed() {
        assert_eq!(drift(CALC, CALC).0, Drift::None);
        let comment = CALC.replace("    return sum(xs)\n", "    # add them up\n    return sum( xs )\n");
        let dedented = "def f(x):\n    if x:\n        y = 1\n        return y\n    return 0\n";
        let moved = "def f(x):\n    if x:\n        y = 1\n    return y\n    return 0\n";
        assert_eq!(drift(dedented, moved).0, Drift::Moderate, "a statement moved out of its block");
        assert_eq!(drift(CALC, &comment), (Drift::Minor, "only whitespace or comments changed".to_string()));
        let body = CALC.replace("return sum(xs)", "return sum(xs) + 0");
        assert_eq!(drift(CALC, &body).0, Drift::Moderate);
        let signature = CALC.replace("def total(xs):", "def total(xs, start=0):");
        assert_eq!(drift(CALC, &signature), (Drift::Moderate, "the signature of total changed".to_string()));
        let renamed = CALC.replace("def total(xs):", "def sum_all(xs):");
        assert_eq!(drift(CALC, &renamed), (Drift::Major, "removed total; added sum_all".to_string()));
        let twice = format!("{CALC}\n\ndef total(xs):\n    return 0\n");
        assert_eq!(drift(&twice, CALC), (Drift::Major, "removed total".to_string()));
        let path = Path::new("calc.py");
        assert_eq!(Fingerprint::of(path, CALC, false).drift(None).0, Drift::Major);
        // the names a dependent may no longer match
        let before = Fingerprint::of(path, CALC, false);
        assert_eq!(before.changed_names(Some(&Fingerprint::of(path, &signature, false))), ["total"]);
        assert_eq!(before.changed_names(Some(&Fingerprint::of(path, &renamed, false))), ["sum_all", "total"]);
        assert!(before.changed_names(Some(&Fingerprint::of(path, &body, false))).is_empty());
    }

    #[test]
    fn the_same_text_at_another_time_is_minor() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("calc.py");
        std::fs::write(&path, CALC).unwrap();
        let before = Fingerprint::of(&path, CALC, true);
        let file = std::fs::File::options().write(true).open(&path).unwrap();
        file.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(60)).unwrap();
        let touched = Fingerprint::of(&path, CALC, true);
        assert_eq!(
            before.drift(Some(&touched)),
            (Drift::Minor, "only its modification time changed".to_string())
        );
        assert_eq!(
            before.drift(Some(&Fingerprint::of(&path, CALC, false))).0,
            Drift::None,
            "no time to compare"
        );
    }

    #[test]
    fn a_file_tokamak_does_not_parse_drifts_by_its_words() {
        let path = Path::new("notes.txt");
        let before = Fingerprint::of(path, "one two\nthree\n", false);
        assert!(before.definitions.is_none());
        assert_eq!(before.drift(Some(&Fingerprint::of(path, "one  two three\n", false))).0, Drift::Minor);
        assert_eq!(before.drift(Some(&Fingerprint::of(path, "one two four\n", false))).0, Drift::Moderate);
    }
}
