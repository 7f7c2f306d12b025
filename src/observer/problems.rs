//! One problem, one diagnostic (SPEC O1, O5): what several sources say about the same
//! problem — a syntax error from Tokamak, ruff, pyright and mypy; an undefined name from ruff
//! and pyright — becomes the most precise of their diagnostics, the others kept as its
//! related information.
//!
//! Two diagnostics are the same problem when they are of the same kind and about the same
//! place: the same name at overlapping ranges (undefined, unused, an unresolved import), or
//! syntax errors — which each parser places differently, so every other source's syntax
//! error goes to the nearest of Tokamak's when Tokamak found one (its placement is the
//! repair's), and otherwise to the nearest of the most precise source's. A name a checker
//! cannot find right next to where its own parser gave up goes to that syntax error too.
//! Diagnostics of no known kind are kept as they are, except exact repeats.

use crate::checker;
use crate::diagnostic::{Diagnostic, Related};

/// What a diagnostic is about, when several sources can say it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    Syntax,
    Undefined(String),
    Unused(String),
    UnresolvedImport(String),
}

/// How near a syntax error an undefined name is taken for its consequence.
const CASCADE_BYTES: usize = 160;

/// `diagnostics` with each problem once, in document order.
pub fn one_per_problem(mut diagnostics: Vec<Diagnostic>) -> Vec<Diagnostic> {
    diagnostics.sort_by(|a, b| {
        (a.range.start, a.range.end, a.severity, &a.message).cmp(&(
            b.range.start,
            b.range.end,
            b.severity,
            &b.message,
        ))
    });

    let kinds: Vec<Option<Kind>> = diagnostics.iter().map(kind).collect();
    // where each diagnostic goes: itself, or the index of the one that stands for it
    let mut into: Vec<usize> = (0..diagnostics.len()).collect();
    // the syntax errors that stand for the others: Tokamak's, or the most precise source's
    let syntax: Vec<usize> = (0..diagnostics.len()).filter(|&i| kinds[i] == Some(Kind::Syntax)).collect();
    let anchor_source =
        syntax.iter().map(|&i| &diagnostics[i]).min_by_key(|d| precision(d).1).map(|d| d.source.clone());
    let anchors: Vec<usize> =
        syntax.iter().copied().filter(|&i| Some(&diagnostics[i].source) == anchor_source.as_ref()).collect();
    let nearest_anchor = |i: usize| {
        let start = diagnostics[i].range.start;
        anchors.iter().copied().min_by_key(|&a| diagnostics[a].range.start.abs_diff(start))
    };
    for i in 0..diagnostics.len() {
        // the same words at the same place from two sources (the editor's ruff and
        // Tokamak's): one problem, whatever its kind, the more precise kept
        if let Some(j) = (0..i).find(|&j| {
            into[j] == j
                && diagnostics[j].range == diagnostics[i].range
                && diagnostics[j].message == diagnostics[i].message
        }) {
            into[i] = j;
            continue;
        }
        let Some(k) = &kinds[i] else { continue };
        if *k == Kind::Syntax {
            if !anchors.contains(&i) {
                into[i] = nearest_anchor(i).unwrap_or(i);
            }
            continue;
        }
        // a name a checker cannot find next to where its own parser gave up is that syntax
        // error again (its recovery dropped the definition)
        if let Kind::Undefined(_) = k
            && syntax.iter().any(|&s| diagnostics[s].source == diagnostics[i].source)
            && let Some(a) = nearest_anchor(i)
            && diagnostics[a].range.start.abs_diff(diagnostics[i].range.start) <= CASCADE_BYTES
        {
            into[i] = a;
            continue;
        }
        // the same kind at an overlapping range, seen before: the group's first member
        if let Some(j) = (0..i).find(|&j| {
            into[j] == j && kinds[j].as_ref() == Some(k) && overlap(&diagnostics[i], &diagnostics[j])
        }) {
            into[i] = j;
        }
    }

    // a member of a member belongs to the same group
    for i in 0..into.len() {
        let mut root = into[i];
        for _ in 0..into.len() {
            if into[root] == root {
                break;
            }
            root = into[root];
        }
        into[i] = root;
    }
    // each group's most precise member stands for it, the others become its related ones
    let mut groups: Vec<Vec<usize>> = vec![Vec::new(); diagnostics.len()];
    for (i, &j) in into.iter().enumerate() {
        groups[j].push(i);
    }
    let mut out: Vec<Diagnostic> = Vec::new();
    for members in groups.into_iter().filter(|g| !g.is_empty()) {
        let best = members.iter().copied().min_by_key(|&i| precision(&diagnostics[i])).unwrap_or(members[0]);
        let mut chosen = diagnostics[best].clone();
        for &i in members.iter().filter(|&&i| i != best) {
            let other = &diagnostics[i];
            chosen.severity = chosen.severity.min(other.severity);
            chosen.related.push(Related {
                source: other.source.clone(),
                code: other.code.clone(),
                message: other.message.clone(),
                range: other.range,
            });
            chosen.related.extend(other.related.iter().cloned());
        }
        out.push(chosen);
    }
    out.sort_by(|a, b| {
        (a.range.start, a.range.end, &a.message).cmp(&(b.range.start, b.range.end, &b.message))
    });
    out
}

/// Whether fixing `d` is likely to touch the file's imports: an undefined or unused name, an
/// import that does not resolve.
pub fn about_names(d: &Diagnostic) -> bool {
    matches!(kind(d), Some(Kind::Undefined(_) | Kind::Unused(_) | Kind::UnresolvedImport(_)))
}

fn overlap(a: &Diagnostic, b: &Diagnostic) -> bool {
    a.range.start <= b.range.end && b.range.start <= a.range.end
}

/// Lower is more precise: one that carries the checker's own fix, then the better source,
/// then the narrower range.
fn precision(d: &Diagnostic) -> (bool, u8, usize) {
    (d.fix.is_none(), checker::precision(&d.source), d.range.end - d.range.start)
}

fn kind(d: &Diagnostic) -> Option<Kind> {
    let source = d.source.to_ascii_lowercase();
    let code = d.code.as_deref().unwrap_or_default();
    let message = d.message.as_str();
    let named = |make: fn(String) -> Kind| quoted(message).map(make);
    match (checker::by_source(&source), code) {
        (_, "syntax" | "invalid-syntax" | "E999") => Some(Kind::Syntax),
        (Some(tool), _) if (tool.syntax)(code, message) => Some(Kind::Syntax),
        (
            _,
            "F821"
            | "reportUndefinedVariable"
            | "name-defined"
            | "2304"
            | "TS2304"
            | "2552"
            | "TS2552"
            | "no-undef",
        ) => named(Kind::Undefined),
        (
            _,
            "F401"
            | "F841"
            | "reportUnusedImport"
            | "reportUnusedVariable"
            | "6133"
            | "TS6133"
            | "6192"
            | "TS6192"
            | "no-unused-vars"
            | "@typescript-eslint/no-unused-vars",
        ) => named(Kind::Unused),
        (
            _,
            "reportMissingImports"
            | "reportMissingModuleSource"
            | "import-not-found"
            | "import-untyped"
            | "import"
            | "2307"
            | "TS2307"
            | "import/no-unresolved",
        ) => named(Kind::UnresolvedImport),
        _ => None,
    }
}

/// The first name quoted in a message: `` `x` ``, `"x"` or `'x'`.
fn quoted(message: &str) -> Option<String> {
    let (at, quote) = message.char_indices().find(|(_, c)| matches!(c, '`' | '"' | '\''))?;
    let rest = &message[at + quote.len_utf8()..];
    let end = rest.find(quote)?;
    let name = &rest[..end];
    (!name.is_empty()).then(|| name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observer::{CheckerFix, Severity};
    use crate::text::TextRange;

    fn d(start: usize, end: usize, source: &str, code: Option<&str>, message: &str) -> Diagnostic {
        Diagnostic::new(
            TextRange::new(start, end),
            Severity::Error,
            source,
            code.map(String::from),
            message.to_string(),
        )
    }

    fn summary(out: &[Diagnostic]) -> Vec<(usize, String, Vec<String>)> {
        out.iter()
            .map(|d| (d.range.start, d.source.clone(), d.related.iter().map(|r| r.source.clone()).collect()))
            .collect()
    }

    #[test]
    fn one_syntax_error_from_five_sources_is_tokamaks() {
        // `print(text +)`: each parser says it somewhere else
        let out = one_per_problem(vec![
            d(12, 13, "tokamak", Some("syntax"), "unexpected \")\""),
            d(12, 13, "ruff", Some("invalid-syntax"), "Expected an expression"),
            d(5, 6, "pyright", None, "\"(\" was not closed"),
            d(13, 14, "pyright", None, "Expected expression"),
            d(12, 12, "mypy", Some("syntax"), "invalid syntax"),
        ]);
        assert_eq!(
            summary(&out),
            vec![(
                12,
                "tokamak".to_string(),
                vec!["pyright".into(), "mypy".into(), "ruff".into(), "pyright".into()]
            )]
        );
    }

    #[test]
    fn several_syntax_errors_keep_theirs() {
        let out = one_per_problem(vec![
            d(10, 11, "tokamak", Some("syntax"), "expected \":\""),
            d(400, 401, "tokamak", Some("syntax"), "expected \")\""),
            d(12, 20, "ruff", Some("invalid-syntax"), "Expected ':'"),
            d(398, 402, "tsc", Some("TS1005"), "')' expected."),
        ]);
        assert_eq!(
            summary(&out),
            vec![
                (10, "tokamak".to_string(), vec!["ruff".into()]),
                (400, "tokamak".to_string(), vec!["tsc".into()])
            ]
        );
    }

    #[test]
    fn without_tokamaks_syntax_error_the_most_precise_sources_stand() {
        // an indentation error tree-sitter accepts
        let out = one_per_problem(vec![
            d(10, 14, "mypy", Some("syntax"), "Unindent does not match any outer indentation level"),
            d(12, 13, "ruff", Some("invalid-syntax"), "unindent does not match any outer indentation level"),
            d(12, 13, "pyright", None, "Unindent amount does not match previous indent"),
            d(40, 41, "mypy", Some("syntax"), "Expected dedent, found end of file"),
            d(90, 91, "ruff", Some("invalid-syntax"), "Expected ')'"),
            // pyright's recovery lost the names the broken line defines
            d(14, 18, "pyright", Some("reportUndefinedVariable"), "\"heap\" is not defined"),
            // far away, or from a checker whose parser did not fail: a problem of its own
            d(400, 404, "pyright", Some("reportUndefinedVariable"), "\"heap\" is not defined"),
            d(15, 18, "tsc", Some("TS2304"), "Cannot find name 'pos'."),
        ]);
        assert_eq!(
            summary(&out),
            vec![
                (
                    12,
                    "ruff".to_string(),
                    vec!["mypy".into(), "pyright".into(), "pyright".into(), "mypy".into()]
                ),
                (15, "tsc".to_string(), vec![]),
                (90, "ruff".to_string(), vec![]),
                (400, "pyright".to_string(), vec![]),
            ]
        );
    }

    #[test]
    fn the_same_name_from_two_checkers_is_one_problem_with_the_fix_kept() {
        let mut ruff = d(7, 9, "ruff", Some("F401"), "`os` imported but unused");
        ruff.fix = Some(CheckerFix { description: "Remove unused import".into(), edits: vec![], safe: true });
        let out = one_per_problem(vec![
            d(7, 9, "pyright", Some("reportUnusedImport"), "Import \"os\" is not accessed"),
            ruff,
            d(30, 35, "ruff", Some("F821"), "Undefined name `value`"),
            d(30, 35, "pyright", Some("reportUndefinedVariable"), "\"value\" is not defined"),
            d(30, 35, "mypy", Some("name-defined"), "Name \"value\" is not defined"),
            // another name at the same place is another problem
            d(30, 35, "pyright", Some("reportUndefinedVariable"), "\"other\" is not defined"),
            // no known kind: kept
            d(30, 35, "pyright", Some("reportAttributeAccessIssue"), "Cannot access attribute"),
        ]);
        assert_eq!(
            summary(&out),
            vec![
                (7, "ruff".to_string(), vec!["pyright".into()]),
                (30, "pyright".to_string(), vec![]),
                (30, "pyright".to_string(), vec![]),
                (30, "ruff".to_string(), vec!["pyright".into(), "mypy".into()]),
            ]
        );
        assert!(out[0].fix.is_some());
    }

    #[test]
    fn the_same_words_from_the_editor_keep_tokamaks_fix() {
        let mut ours = d(7, 9, "ruff", Some("F401"), "`os` imported but unused");
        ours.fix = Some(CheckerFix { description: "Remove unused import".into(), edits: vec![], safe: true });
        // the editor's Ruff extension, forwarded: same words, same place
        let theirs = d(7, 9, "Ruff", Some("F401"), "`os` imported but unused");
        let out = one_per_problem(vec![theirs, ours]);
        assert_eq!(summary(&out), vec![(7, "ruff".to_string(), vec!["Ruff".into()])]);
        assert!(out[0].fix.is_some());
    }

    #[test]
    fn names_are_read_from_each_quoting() {
        assert_eq!(quoted("Undefined name `x`"), Some("x".into()));
        assert_eq!(quoted("Cannot find name 'y'."), Some("y".into()));
        assert_eq!(quoted("Import \"a.b\" could not be resolved"), Some("a.b".into()));
        assert_eq!(quoted("no name"), None);
    }
}
