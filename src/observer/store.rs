//! The store: each file's diagnostics keyed by source, each tagged with the document version
//! it was computed on, kept aligned with the text as it changes.

use std::collections::BTreeMap;

use super::problems::one_per_problem;
use crate::diagnostic::Diagnostic;
use crate::text::{AppliedChange, ByteEdit, TextRange};

/// Who reported. Tokamak publishes what its own sources find; what the editor forwards is
/// observed (for the agent) but never published back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// Syntax and the checkers Tokamak runs.
    Server,
    /// `tokamak/clientDiagnostics` and `codeAction` contexts.
    Editor,
}

#[derive(Debug, Clone)]
pub struct SourceEntry {
    pub origin: Origin,
    /// The document version the diagnostics were computed on (`None`: unversioned). After
    /// an edit the diagnostics are moved along with the text, but this stays: the source has
    /// not yet reported on the new version.
    pub version: Option<i32>,
    pub diagnostics: Vec<Diagnostic>,
    /// Why the last run for `version` produced nothing to believe.
    pub failure: Option<String>,
}

/// One file's diagnostics from every source.
#[derive(Debug, Clone, Default)]
pub struct FileDiagnostics {
    sources: BTreeMap<String, SourceEntry>,
}

impl FileDiagnostics {
    pub fn set(&mut self, source: &str, entry: SourceEntry) {
        self.sources.insert(source.to_string(), entry);
    }

    pub fn get(&self, source: &str) -> Option<&SourceEntry> {
        self.sources.get(source)
    }

    /// Whether `source` has reported (or failed) on exactly `version`.
    pub fn reported(&self, source: &str, version: Option<i32>) -> bool {
        self.sources.get(source).is_some_and(|e| e.version == version)
    }

    /// Says that `source`'s report on version `from` holds for version `to` (an edit that
    /// cannot have changed what it found: typing inside a comment, for the syntax).
    pub fn carry(&mut self, source: &str, from: Option<i32>, to: Option<i32>) {
        if let Some(entry) = self.sources.get_mut(source).filter(|e| e.version == from) {
            entry.version = to;
        }
    }

    /// Moves every diagnostic along with edits just made to the text. A range that overlapped
    /// replaced text shrinks to what is left of it. After a whole-document replacement
    /// nothing can be placed, so every source starts over.
    pub fn shift(&mut self, edits: &[AppliedChange]) {
        if edits.iter().any(|e| matches!(e, AppliedChange::Full)) {
            for entry in self.sources.values_mut() {
                entry.diagnostics.clear();
            }
            return;
        }
        for edit in edits.iter().filter_map(|e| match e {
            AppliedChange::Incremental(edit) => Some(edit),
            AppliedChange::Full => None,
        }) {
            for entry in self.sources.values_mut() {
                for diagnostic in &mut entry.diagnostics {
                    diagnostic.range = shift_range(diagnostic.range, edit);
                    for related in &mut diagnostic.related {
                        related.range = shift_range(related.range, edit);
                    }
                    if let Some(fix) = &mut diagnostic.fix {
                        for (range, _) in &mut fix.edits {
                            *range = shift_range(*range, edit);
                        }
                    }
                }
            }
        }
    }

    /// What Tokamak publishes: its own sources but `hidden` (checkers whose diagnostics the
    /// editor shows from its own server), each problem once, in document order.
    pub fn published(&self, hidden: &[String]) -> Vec<Diagnostic> {
        merged(
            self.sources
                .iter()
                .filter(|(key, e)| e.origin == Origin::Server && !hidden.contains(key))
                .map(|(_, e)| e),
        )
    }

    /// Everything known, from every source, each problem once (what several sources say of
    /// the same problem is one diagnostic), in document order: what the fix loop works from.
    pub fn all(&self) -> Vec<Diagnostic> {
        merged(self.sources.values())
    }

    /// What the sources that reported on exactly `version` found, de-duplicated, in
    /// document order.
    pub fn at_version(&self, version: Option<i32>) -> Vec<Diagnostic> {
        merged(self.sources.values().filter(|e| e.version == version))
    }

    /// As [`FileDiagnostics::at_version`], leaving out what the editor forwarded from the
    /// sources in `covered` (lowercase): tools Tokamak itself ran on exactly this version,
    /// whose own answer on the text is the one to believe — the editor's list of the same
    /// tool may be for an older text, sent with the newer version.
    pub fn at_version_except(&self, version: Option<i32>, covered: &[String]) -> Vec<Diagnostic> {
        let mut diagnostics = Vec::new();
        for entry in self.sources.values().filter(|e| e.version == version) {
            for diagnostic in &entry.diagnostics {
                if entry.origin == Origin::Editor && covered.contains(&diagnostic.source.to_ascii_lowercase())
                {
                    continue;
                }
                diagnostics.push(diagnostic.clone());
            }
        }
        one_per_problem(diagnostics)
    }

    /// The keys of the sources that reported on exactly `version`, with who they are.
    pub fn reporters(&self, version: Option<i32>) -> Vec<(String, Origin)> {
        self.sources
            .iter()
            .filter(|(_, e)| e.version == version)
            .map(|(k, e)| (k.clone(), e.origin))
            .collect()
    }

    /// `(source, failure)` for sources whose last run failed.
    pub fn failures(&self) -> Vec<(String, String)> {
        self.sources
            .iter()
            .filter_map(|(name, e)| e.failure.as_ref().map(|f| (name.clone(), f.clone())))
            .collect()
    }
}

/// The entries' diagnostics, each problem once (see `problems.rs`), in document order.
fn merged<'a>(entries: impl Iterator<Item = &'a SourceEntry>) -> Vec<Diagnostic> {
    one_per_problem(entries.flat_map(|e| e.diagnostics.iter().cloned()).collect())
}

fn shift_range(range: TextRange, edit: &ByteEdit) -> TextRange {
    let start = shift_offset(range.start, edit, edit.start);
    let end = shift_offset(range.end, edit, edit.new_end).max(start);
    TextRange::new(start, end)
}

/// Where `offset` lands after `edit`; an offset inside the replaced text goes to `inside`.
fn shift_offset(offset: usize, edit: &ByteEdit, inside: usize) -> usize {
    if offset <= edit.start {
        offset
    } else if offset >= edit.old_end {
        offset - edit.old_end + edit.new_end
    } else {
        inside
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observer::Severity;
    use crate::text::LineCol;

    fn diagnostic(start: usize, end: usize, message: &str, source: &str) -> Diagnostic {
        Diagnostic::new(TextRange::new(start, end), Severity::Error, source, None, message.to_string())
    }

    fn edit(start: usize, old_end: usize, new_end: usize) -> AppliedChange {
        let p = LineCol::default();
        AppliedChange::Incremental(ByteEdit {
            start,
            old_end,
            new_end,
            start_point: p,
            old_end_point: p,
            new_end_point: p,
        })
    }

    fn entry(origin: Origin, diagnostics: Vec<Diagnostic>) -> SourceEntry {
        SourceEntry { origin, version: Some(1), diagnostics, failure: None }
    }

    #[test]
    fn diagnostics_move_with_the_text() {
        let mut file = FileDiagnostics::default();
        file.set(
            "ruff",
            entry(
                Origin::Server,
                vec![
                    diagnostic(0, 3, "before", "ruff"),
                    diagnostic(10, 14, "after", "ruff"),
                    diagnostic(4, 9, "over", "ruff"),
                ],
            ),
        );
        // replace bytes 5..8 with 6 bytes: later offsets move by 3, one inside moves to its edge
        file.shift(&[edit(5, 8, 11)]);
        let ranges: Vec<(usize, usize)> =
            file.published(&[]).iter().map(|d| (d.range.start, d.range.end)).collect();
        assert_eq!(ranges, vec![(0, 3), (4, 12), (13, 17)]);
        assert!(file.reported("ruff", Some(1)), "the version stays what it was computed on");
    }

    #[test]
    fn merging_deduplicates_and_keeps_editor_diagnostics_unpublished() {
        let mut file = FileDiagnostics::default();
        file.set("ruff", entry(Origin::Server, vec![diagnostic(0, 3, "same", "ruff")]));
        file.set(
            "mypy",
            entry(Origin::Server, vec![diagnostic(0, 3, "same", "mypy"), diagnostic(5, 6, "other", "mypy")]),
        );
        file.set("client", entry(Origin::Editor, vec![diagnostic(7, 8, "editor", "Pylance")]));
        assert_eq!(file.published(&[]).len(), 2);
        let all: Vec<String> = file.all().iter().map(|d| d.message.clone()).collect();
        assert_eq!(all, ["same", "other", "editor"]);
    }

    #[test]
    fn a_full_replacement_clears_positions() {
        let mut file = FileDiagnostics::default();
        file.set("ruff", entry(Origin::Server, vec![diagnostic(0, 3, "x", "ruff")]));
        file.shift(&[AppliedChange::Full]);
        assert!(file.published(&[]).is_empty());
    }
}
