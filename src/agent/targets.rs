//! What a fix run aims at and how it knows it is done: the target diagnostics, their
//! signatures (which survive edits that move them), and the comparison after each attempt.

use std::collections::BTreeMap;

use crate::observer::{Diagnostic, Severity};
use crate::text::TextRange;

/// What the run was asked to fix.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Scope {
    /// Every error and warning in the file.
    #[default]
    File,
    /// The diagnostics overlapping a byte range.
    Range(TextRange),
    /// These diagnostics (from any source, the editor's own included).
    Diagnostics(Vec<Diagnostic>),
}

/// A diagnostic without its place: what stays the same when edits move it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Signature {
    pub source: String,
    pub code: Option<String>,
    pub message: String,
}

impl Signature {
    pub fn of(diagnostic: &Diagnostic) -> Signature {
        Signature {
            source: diagnostic.source.clone(),
            code: diagnostic.code.clone(),
            message: diagnostic.message.split_whitespace().collect::<Vec<_>>().join(" "),
        }
    }
}

/// Signatures with how often each occurs: two identical errors are two problems.
pub type Problems = BTreeMap<Signature, usize>;

pub fn problems<'a>(diagnostics: impl IntoIterator<Item = &'a Diagnostic>) -> Problems {
    let mut out = Problems::new();
    for diagnostic in diagnostics {
        *out.entry(Signature::of(diagnostic)).or_default() += 1;
    }
    out
}

/// Whether a diagnostic is worth fixing in a whole-file run: errors and warnings.
fn worth_fixing(diagnostic: &Diagnostic) -> bool {
    matches!(diagnostic.severity, Severity::Error | Severity::Warning)
}

/// The diagnostics of `current` the scope aims at. Diagnostics named in the request are
/// matched to the observed ones by signature and overlap; one the Observer does not know
/// (the editor's own source, not forwarded) is kept as given.
pub fn select(scope: &Scope, current: &[Diagnostic]) -> Vec<Diagnostic> {
    match scope {
        Scope::File => current.iter().filter(|d| worth_fixing(d)).cloned().collect(),
        Scope::Range(range) => current
            .iter()
            .filter(|d| touches(d.range, *range) && d.severity != Severity::Hint)
            .cloned()
            .collect(),
        Scope::Diagnostics(wanted) => wanted
            .iter()
            .map(|w| {
                current
                    .iter()
                    .find(|d| Signature::of(d) == Signature::of(w) && touches(d.range, w.range))
                    .or_else(|| current.iter().find(|d| same_problem(d, w) && touches(d.range, w.range)))
                    .cloned()
                    .unwrap_or_else(|| w.clone())
            })
            .collect(),
    }
}

/// The editor may name the source differently ("Pyright" for "pyright") or drop the code.
fn same_problem(a: &Diagnostic, b: &Diagnostic) -> bool {
    a.message.trim() == b.message.trim()
}

fn touches(a: TextRange, b: TextRange) -> bool {
    a.start <= b.end && b.start <= a.end
}

/// Where a run stands after an attempt, against the problems it started from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Comparison {
    /// Targets still there.
    pub remaining: Vec<Diagnostic>,
    /// Errors that were not there when the run started: the run made them.
    pub introduced: Vec<Diagnostic>,
}

impl Comparison {
    pub fn is_clean(&self) -> bool {
        self.remaining.is_empty() && self.introduced.is_empty()
    }

    /// What the next attempt aims at.
    pub fn next_targets(&self) -> Vec<Diagnostic> {
        self.remaining.iter().chain(&self.introduced).cloned().collect()
    }

    /// The signature of where the run stands, for noticing it has been here before.
    pub fn problems(&self) -> Problems {
        problems(self.remaining.iter().chain(&self.introduced))
    }
}

/// Compares what is observed now with the run's `targets` (the diagnostics it aimed at, as
/// they were) and its `baseline` (every diagnostic at the start). `now` holds only what was
/// observed on the current text.
///
/// Diagnostics are matched by signature, not place (edits move them). When a signature also
/// occurs outside the targets, those others are assumed to be still there: of `k` current
/// diagnostics with a signature that had `o` non-target occurrences at the start, `k - o`
/// are targets, the ones nearest to where the targets were.
pub fn compare(targets: &[Diagnostic], baseline: &Problems, now: &[Diagnostic]) -> Comparison {
    let wanted = problems(targets);
    let mut remaining = Vec::new();
    for (signature, &count) in &wanted {
        let others = baseline.get(signature).copied().unwrap_or(0).saturating_sub(count);
        let mut current: Vec<&Diagnostic> = now.iter().filter(|d| &Signature::of(d) == signature).collect();
        let left = current.len().saturating_sub(others).min(count);
        if left == 0 {
            continue;
        }
        let distance = |d: &Diagnostic| {
            targets
                .iter()
                .filter(|t| &Signature::of(t) == signature)
                .map(|t| t.range.start.abs_diff(d.range.start))
                .min()
                .unwrap_or(usize::MAX)
        };
        current.sort_by_key(|d| distance(d));
        remaining.extend(current.into_iter().take(left).cloned());
    }
    remaining.sort_by_key(|d| (d.range.start, d.range.end));
    let mut allowed = baseline.clone();
    let mut introduced = Vec::new();
    for diagnostic in now.iter().filter(|d| d.severity == Severity::Error) {
        match allowed.get_mut(&Signature::of(diagnostic)) {
            Some(count) if *count > 0 => *count -= 1,
            _ => introduced.push(diagnostic.clone()),
        }
    }
    Comparison { remaining, introduced }
}

/// A syntax error, from Tokamak's own parse or a checker's (`invalid-syntax`, TS1005).
pub(super) fn is_syntax(diagnostic: &Diagnostic) -> bool {
    diagnostic.code.as_deref() == Some(crate::observer::SYNTAX_CODE)
        || diagnostic.code.as_deref() == Some("invalid-syntax")
        || diagnostic.code.as_deref().is_some_and(|c| c.starts_with("TS1"))
        || (diagnostic.code.is_none() && diagnostic.message.contains("was not closed"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn diag(start: usize, severity: Severity, source: &str, message: &str) -> Diagnostic {
        Diagnostic::new(TextRange::new(start, start + 1), severity, source, None, message.to_string())
    }

    #[test]
    fn scopes_pick_their_targets() {
        let current = vec![
            diag(0, Severity::Error, "tokamak", "\"(\" is never closed"),
            diag(10, Severity::Warning, "ruff", "unused import"),
            diag(20, Severity::Hint, "pyright", "unreachable"),
        ];
        assert_eq!(select(&Scope::File, &current).len(), 2, "hints are not worth a run");
        assert_eq!(select(&Scope::Range(TextRange::new(9, 12)), &current), vec![current[1].clone()]);
        // the editor's own diagnostic, unknown to the Observer, is kept as given
        let foreign = diag(30, Severity::Error, "Pylance", "\"x\" is not defined");
        let moved = diag(11, Severity::Warning, "Ruff", "unused import");
        let picked = select(&Scope::Diagnostics(vec![foreign.clone(), moved]), &current);
        assert_eq!(picked, vec![foreign, current[1].clone()]);
    }

    #[test]
    fn a_comparison_sees_what_is_left_and_what_is_new() {
        let start = vec![
            diag(0, Severity::Error, "tsc", "Cannot find name 'x'."),
            diag(5, Severity::Warning, "eslint", "no-var"),
        ];
        let targets = &start[..1];
        let baseline = problems(&start);
        // moved, still there
        let now = vec![diag(3, Severity::Error, "tsc", "Cannot find name 'x'.")];
        let comparison = compare(targets, &baseline, &now);
        assert_eq!(comparison.remaining.len(), 1);
        assert!(comparison.introduced.is_empty());
        // gone, but the fix broke something else
        let now = vec![diag(3, Severity::Error, "tsc", "';' expected.")];
        let comparison = compare(targets, &baseline, &now);
        assert!(comparison.remaining.is_empty());
        assert_eq!(comparison.introduced.len(), 1);
        assert!(!comparison.is_clean());
        // the warning that was there before is not the run's doing
        assert!(compare(targets, &baseline, &start[1..]).is_clean());
    }

    #[test]
    fn the_same_error_elsewhere_is_not_the_target() {
        let error = |at| diag(at, Severity::Error, "tokamak", "\")\" closes nothing");
        let start = vec![error(10), error(50)];
        let baseline = problems(&start);
        // the target was the one at 50; fixed, the one at 10 is left
        assert!(compare(&start[1..], &baseline, &[error(10)]).is_clean());
        // not fixed: the one nearest the target is the one left
        let comparison = compare(&start[1..], &baseline, &[error(10), error(52)]);
        assert_eq!(comparison.remaining, vec![error(52)]);
    }
}
