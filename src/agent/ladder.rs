//! The fix ladder's first rung (SPEC F1): fixes that need no model — the token a tree-sitter
//! `MISSING` node names or the placed syntax diagnostic says is missing, and a checker's own
//! fixes that it marks safe (ruff's `fix.edits`). A syntax repair is kept only when the
//! language's own parser (`syntax::strict_errors`) agrees that the problem it targets is
//! gone: tree-sitter's error recovery accepts texts the language rejects.

use crate::config::SyntaxSettings;
use crate::edit::apply_edits;
use crate::observer::Diagnostic;
use crate::syntax::{Placement, SyntaxErrorKind, SyntaxProblem, diagnose, strict_errors, syntax_problems};
use crate::text::TextRange;
use crate::workspace::DocumentSnapshot;

/// A fix that needs no model: edits in byte ranges of the snapshot it was computed on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeterministicFix {
    pub description: String,
    pub edits: Vec<(TextRange, String)>,
}

/// Tokens tree-sitter may report missing that are safe to insert as they are: punctuation,
/// never a name or an expression the parser had to imagine.
fn insertable(token: &str) -> bool {
    matches!(token, ")" | "]" | "}" | ":" | ";" | "," | ">" | "\"" | "'" | "`")
}

/// Inserting each insertable `MISSING` token where tree-sitter says it belongs, each kept
/// only if the language's own parser agrees (see [`strictly_repairs`]).
pub fn missing_token_fixes(snapshot: &DocumentSnapshot) -> Vec<DeterministicFix> {
    Rung::new(snapshot, None).missing_token_fixes()
}

/// One round of the first rung on a snapshot: its syntax problems found once, the language's
/// own verdict on its text parsed once (and only if a fix is to be checked), for every fix
/// tried on it.
pub struct Rung<'a> {
    snapshot: &'a DocumentSnapshot,
    /// The problems as the Observer placed them for this version, when it did.
    placed: Option<&'a [SyntaxProblem]>,
    /// The tree's problems, where tree-sitter found them (found when first asked).
    problems: Option<Vec<SyntaxProblem>>,
    strict: Strict<'a>,
}

impl<'a> Rung<'a> {
    /// `placement`: the snapshot's syntax problems as the Observer found and placed them,
    /// when it did for this version (else they are found and placed again as needed).
    pub fn new(snapshot: &'a DocumentSnapshot, placement: Option<&'a Placement>) -> Rung<'a> {
        Rung {
            snapshot,
            placed: placement.map(|p| p.placed.as_slice()),
            problems: placement.map(|p| p.found.clone()),
            strict: Strict::new(snapshot),
        }
    }

    fn problems(&mut self) -> &[SyntaxProblem] {
        let snapshot = self.snapshot;
        self.problems.get_or_insert_with(|| match &snapshot.tree {
            Some(tree) => syntax_problems(tree, &snapshot.rope, snapshot.language),
            None => Vec::new(),
        })
    }

    /// See [`missing_token_fixes`].
    pub fn missing_token_fixes(&mut self) -> Vec<DeterministicFix> {
        let candidates: Vec<DeterministicFix> = self
            .problems()
            .iter()
            .filter_map(|problem| match &problem.kind {
                SyntaxErrorKind::Missing(token) if insertable(token) => Some(DeterministicFix {
                    description: format!("insert the missing \"{token}\""),
                    edits: vec![(TextRange::empty(problem.range.start), token.clone())],
                }),
                _ => None,
            })
            .collect();
        candidates.into_iter().filter(|fix| self.strict.repairs(fix)).collect()
    }

    /// See [`verified_repair`].
    pub fn verified_repair(&mut self, settings: &SyntaxSettings) -> Option<DeterministicFix> {
        let snapshot = self.snapshot;
        if let Some(fix) = placed_repair(snapshot, self.placed, &mut self.strict) {
            return Some(fix);
        }
        snapshot.tree.as_ref()?;
        let problems = self.problems().to_vec();
        repair_at_line_ends(snapshot, settings, &problems, &mut self.strict)
    }
}

/// The language's own verdict on a snapshot's text, parsed once for all the fixes tried on
/// it (a whole-file parse each), and only when one is tried.
pub struct Strict<'a> {
    snapshot: &'a DocumentSnapshot,
    text: Option<String>,
    before: Option<Option<Vec<crate::syntax::StrictError>>>,
}

impl<'a> Strict<'a> {
    pub fn new(snapshot: &'a DocumentSnapshot) -> Strict<'a> {
        Strict { snapshot, text: None, before: None }
    }

    /// The snapshot's text (copied out of its rope once).
    fn text(&mut self) -> &str {
        let snapshot = self.snapshot;
        self.text.get_or_insert_with(|| snapshot.rope.to_string())
    }

    /// See [`strictly_repairs`].
    pub fn repairs(&mut self, fix: &DeterministicFix) -> bool {
        let snapshot = self.snapshot;
        self.text();
        let text = self.text.as_deref().unwrap_or_default();
        let before = self.before.get_or_insert_with(|| strict_errors(snapshot.language, text));
        match before {
            Some(before) => repairs_given(snapshot, text, before, fix),
            None => false,
        }
    }
}

/// Whether `fix` makes the problem it targets go away under the language's own parser: on
/// the text after it, fewer strict errors, and none left where the first one at or after
/// the line before the fix was. A language without a strict parser accepts nothing.
pub fn strictly_repairs(snapshot: &DocumentSnapshot, text: &str, fix: &DeterministicFix) -> bool {
    let Some(before) = strict_errors(snapshot.language, text) else {
        return false;
    };
    repairs_given(snapshot, text, &before, fix)
}

/// [`strictly_repairs`], with the strict errors of the text before the fix known.
fn repairs_given(
    snapshot: &DocumentSnapshot,
    text: &str,
    before: &[crate::syntax::StrictError],
    fix: &DeterministicFix,
) -> bool {
    let (after_text, applied) = apply_fixes(text, std::slice::from_ref(fix));
    if applied.is_empty() {
        return false;
    }
    let Some(after) = strict_errors(snapshot.language, &after_text) else {
        return false;
    };
    let Some(first_edit) = fix.edits.iter().map(|(range, _)| range.start).min() else {
        return false;
    };
    // the problem it targets: the strict error nearest to it, from the line before its own
    // to the line after (a missing `:` or `)` is often reported where the next line starts)
    let rope = &snapshot.rope;
    let line = rope.byte_to_line(first_edit.min(text.len()));
    let from = rope.line_to_byte(line.saturating_sub(1));
    let to = rope.line_to_byte((line + 2).min(rope.len_lines()));
    let fewer = after.len() < before.len();
    let Some(targeted) =
        before.iter().filter(|e| (from..=to).contains(&e.at)).min_by_key(|e| e.at.abs_diff(first_edit))
    else {
        return fewer; // none near the fix was there to begin with
    };
    // an offset of the text after the fix, on the text before it
    let back = |offset: usize| {
        let mut shift: isize = 0;
        for (range, new) in &fix.edits {
            if range.start < offset {
                shift += new.len() as isize - (range.end - range.start) as isize;
            }
        }
        (offset as isize - shift).max(0) as usize
    };
    if after.iter().any(|e| back(e.at) == targeted.at) {
        return false;
    }
    // a parser that stops at its first error (oxc often does) reports the next problem
    // instead: that counts when it lies past the fix's line
    let line_end = rope.line_to_byte((line + 1).min(rope.len_lines()));
    fewer || after.iter().all(|e| back(e.at) >= line_end)
}

/// The repair the published syntax diagnostic names (SPEC S2: "expected `:`" placed where
/// it goes), when it is one insertable token and the language's parser agrees. `placed`:
/// the problems as the Observer placed them for this version, when it did (else placed now).
pub fn placed_repair(
    snapshot: &DocumentSnapshot,
    placed: Option<&[SyntaxProblem]>,
    strict: &mut Strict<'_>,
) -> Option<DeterministicFix> {
    let tree = snapshot.tree.as_ref()?;
    let first = match placed {
        Some(placed) => placed.first()?.clone(),
        None => diagnose(tree, &snapshot.rope, snapshot.language).into_iter().next()?,
    };
    let SyntaxErrorKind::Missing(token) = &first.kind else {
        return None;
    };
    if !insertable(token) {
        return None;
    }
    let text = strict.text().to_string();
    // the diagnostic shows on the character before the insertion point, or on the one after
    // it when the point starts a line
    let mut points = vec![first.range.end, first.range.start];
    points.dedup();
    points.into_iter().filter(|&at| at <= text.len() && text.is_char_boundary(at)).find_map(|at| {
        let line = snapshot.rope.byte_to_line(at) + 1;
        let fix = DeterministicFix {
            description: format!("insert the missing \"{token}\" on line {line} (where the syntax error is placed; checked by the language's parser)"),
            edits: vec![(TextRange::empty(at), token.clone())],
        };
        strict.repairs(&fix).then_some(fix)
    })
}

/// Lines around a syntax problem where a missing token is tried.
const REPAIR_LINES: usize = 4;
/// Candidates parsed at most per call (each costs a parse of the document).
const MAX_REPAIR_CANDIDATES: usize = 16;

/// A token the syntax check says is missing without tree-sitter naming it (`"(" is never
/// closed`, a Python header without its `:`), tried at the end of the lines around each
/// problem: a candidate is kept only if parsing the result leaves fewer syntax problems, and
/// the one leaving fewest wins. Returns at most one fix. `placed`: as [`placed_repair`].
pub fn verified_repair(
    snapshot: &DocumentSnapshot,
    settings: &SyntaxSettings,
    placement: Option<&Placement>,
) -> Option<DeterministicFix> {
    Rung::new(snapshot, placement).verified_repair(settings)
}

/// A token that closes a bracket or a block header tried at the ends of the lines around the
/// problems (see [`verified_repair`]).
fn repair_at_line_ends(
    snapshot: &DocumentSnapshot,
    settings: &SyntaxSettings,
    problems: &[SyntaxProblem],
    strict: &mut Strict<'_>,
) -> Option<DeterministicFix> {
    if problems.is_empty() {
        return None;
    }
    let len = snapshot.rope.len_bytes();
    let mut candidates: Vec<(usize, String)> = Vec::new();
    for problem in problems.iter().take(3) {
        let token = if let Some(open) = never_closed(&problem.message) {
            closer(open)
        } else if problem.message.contains("expected \":\" at the end of the line") {
            ":"
        } else {
            continue;
        };
        let first = snapshot.rope.byte_to_line(problem.range.start.min(len));
        let lines = first.saturating_sub(1)..(first + REPAIR_LINES).min(snapshot.rope.len_lines());
        for line in lines {
            if let Some(at) = end_of_code(&snapshot.rope, line) {
                candidates.push((at, token.to_string()));
            }
        }
    }
    candidates.dedup();
    if candidates.is_empty() {
        return None;
    }
    let text = strict.text().to_string();
    let mut best: Option<(usize, usize, String)> = None;
    for (at, token) in candidates.into_iter().take(MAX_REPAIR_CANDIDATES) {
        let mut candidate = text.clone();
        candidate.insert_str(at, &token);
        let parsed = DocumentSnapshot::detached(snapshot.uri.clone(), &candidate, settings);
        let left = parsed
            .tree
            .as_ref()
            .map_or(usize::MAX, |tree| syntax_problems(tree, &parsed.rope, parsed.language).len());
        if left >= problems.len() || best.as_ref().is_some_and(|(fewest, _, _)| left >= *fewest) {
            continue;
        }
        // tree-sitter's word is not enough: the language's parser must agree
        let line = snapshot.rope.byte_to_line(at) + 1;
        let fix = DeterministicFix {
            description: format!(
                "insert the missing \"{token}\" at the end of line {line} (checked by the language's parser)"
            ),
            edits: vec![(TextRange::empty(at), token.clone())],
        };
        if strict.repairs(&fix) {
            best = Some((left, at, token));
        }
    }
    let (_, at, token) = best?;
    let line = snapshot.rope.byte_to_line(at) + 1;
    Some(DeterministicFix {
        description: format!(
            "insert the missing \"{token}\" at the end of line {line} (checked by the language's parser)"
        ),
        edits: vec![(TextRange::empty(at), token)],
    })
}

/// `"(" is never closed` → `(`.
fn never_closed(message: &str) -> Option<char> {
    let at = message.find("\" is never closed")?;
    message[..at].chars().last()
}

fn closer(open: char) -> &'static str {
    match open {
        '(' => ")",
        '[' => "]",
        _ => "}",
    }
}

/// The byte offset just after the last character of code on `line` (before trailing
/// whitespace and the line break); `None` for a blank line.
fn end_of_code(rope: &ropey::Rope, line: usize) -> Option<usize> {
    let start = rope.line_to_byte(line);
    let text = rope.line(line).to_string();
    let code = text.trim_end();
    (!code.trim().is_empty()).then(|| start + code.len())
}

/// The fixes checkers offer for `diagnostics` and mark safe, one per diagnostic.
pub fn checker_fixes(diagnostics: &[Diagnostic]) -> Vec<DeterministicFix> {
    diagnostics
        .iter()
        .filter_map(|d| d.fix.as_ref().filter(|f| f.safe && !f.edits.is_empty()).map(|f| (d, f)))
        .map(|(diagnostic, fix)| DeterministicFix {
            description: format!(
                "{} ({} {})",
                fix.description,
                diagnostic.source,
                diagnostic.code.as_deref().unwrap_or("")
            ),
            edits: fix.edits.clone(),
        })
        .collect()
}

/// Applies as many `fixes` as do not overlap one another (earlier ones win), to `text`, which
/// must be the text they were computed on. Returns the new text and the fixes applied.
pub fn apply_fixes(text: &str, fixes: &[DeterministicFix]) -> (String, Vec<DeterministicFix>) {
    let mut taken: Vec<(TextRange, String)> = Vec::new();
    let mut applied = Vec::new();
    for fix in fixes {
        let clashes = fix.edits.iter().any(|(range, _)| {
            range.end > text.len()
                || !text.is_char_boundary(range.start)
                || !text.is_char_boundary(range.end)
                || taken.iter().any(|(other, _)| overlaps(*range, *other))
        });
        if clashes {
            continue;
        }
        taken.extend(fix.edits.iter().cloned());
        applied.push(fix.clone());
    }
    taken.sort_by_key(|(range, _)| (range.start, range.end));
    // every range was checked above: on the text, on character boundaries, not overlapping
    let out = apply_edits(text, &taken).unwrap_or_else(|| text.to_string());
    (out, applied)
}

/// Two ranges clash when they share text, or both insert at the same place.
fn overlaps(a: TextRange, b: TextRange) -> bool {
    (a.start < b.end && b.start < a.end) || (a.is_empty() && b.is_empty() && a.start == b.start)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observer::{CheckerFix, Severity, syntax_diagnostics};
    use crate::syntax::strict_errors;

    fn snapshot(name: &str, text: &str) -> DocumentSnapshot {
        DocumentSnapshot::detached(
            url::Url::parse(&format!("file:///p/{name}")).unwrap(),
            text,
            &SyntaxSettings::default(),
        )
    }

    #[test]
    fn missing_punctuation_is_inserted_and_the_file_parses() {
        for (name, broken, fixed) in [
            ("a.ts", "const a = foo(1, 2;\n", "const a = foo(1, 2);\n"),
            ("b.ts", "function f() {\n  return [1, 2;\n}\n", "function f() {\n  return [1, 2];\n}\n"),
        ] {
            let before = snapshot(name, broken);
            let fixes = missing_token_fixes(&before);
            assert!(!fixes.is_empty(), "{name}");
            let (text, applied) = apply_fixes(broken, &fixes);
            assert_eq!(text, fixed, "{name}: {applied:?}");
            assert!(syntax_diagnostics(&snapshot(name, &text)).is_empty(), "{name} still broken: {text}");
        }
    }

    #[test]
    fn unclosed_brackets_and_missing_colons_are_repaired_when_the_parse_agrees() {
        for (name, broken, fixed) in [
            (
                "a.py",
                "def f(text):\n    text = sub('', text\n    return text\n",
                "def f(text):\n    text = sub('', text)\n    return text\n",
            ),
            (
                "b.py",
                "def f(x):\n    if x == 1\n        return 2\n    return 3\n",
                "def f(x):\n    if x == 1:\n        return 2\n    return 3\n",
            ),
            (
                "c.py",
                "def leap(y):\n    return y % 4 == 0 and (y % 100 != 0 or y % 400 == 0\n",
                "def leap(y):\n    return y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)\n",
            ),
        ] {
            let snap = snapshot(name, broken);
            let fix = verified_repair(&snap, &SyntaxSettings::default(), None).expect(name);
            // the problems as the Observer found and placed them give the same repair
            let placement = crate::syntax::place(snap.tree.as_ref().unwrap(), &snap.rope, snap.language);
            let given = verified_repair(&snap, &SyntaxSettings::default(), Some(&placement));
            assert_eq!(given.as_ref(), Some(&fix), "{name}");
            let (text, _) = apply_fixes(broken, &[fix]);
            assert_eq!(text, fixed, "{name}");
        }
        // whatever is tried for an unterminated string must leave the parse better than it was
        let broken = "s = s.replace(\"<, \"&lt;\")\nt = 1\n";
        let before = syntax_diagnostics(&snapshot("d.py", broken)).len();
        if let Some(fix) = verified_repair(&snapshot("d.py", broken), &SyntaxSettings::default(), None) {
            let (text, _) = apply_fixes(broken, &[fix]);
            assert!(syntax_diagnostics(&snapshot("d.py", &text)).len() < before, "{text}");
        }
    }

    /// Block headers without their `:`, over body lines that end in a call, a subscript, a
    /// string or a name, alone or before an `else:`/another statement: tree-sitter accepts
    /// the `:` at the end of the body line too, Python does not. The repair goes on the
    /// header, where the placed diagnostic says, and the result is what Python accepts.
    #[test]
    fn a_headers_colon_goes_on_the_header_and_the_language_accepts_the_result() {
        let headers = [
            ("if key is None", ""),
            ("elif key", "if a:\n        pass\n    "),
            ("while key", ""),
            ("for k in key", ""),
            ("with open(key) as fh", ""),
            ("def g(a)", ""),
            ("class C(Base)", ""),
        ];
        let bodies = ["lo = g(a, 1)", "lo = a[1]", "lo = 'text'", "lo = a", "print(a)", "lo = f(a)[0]"];
        let after = ["", "    else:\n        lo = 2\n", "    x = lo\n"];
        let mut cases = 0;
        for (header, before) in headers {
            for body in bodies {
                for tail in after {
                    if tail.contains("else")
                        && matches!(header, "def g(a)" | "class C(Base)" | "with open(key) as fh")
                    {
                        continue; // no `else` after these
                    }
                    let text = format!(
                        "def f(key, a):\n    {before}{header}\n        {body}\n{tail}    return lo\n"
                    );
                    let header_line = text.lines().position(|l| l.trim_start() == header).unwrap();
                    let snap = snapshot("t.py", &text);
                    // placed on the header line
                    let placed = crate::observer::syntax_diagnostics(&snap);
                    let first = placed.first().unwrap_or_else(|| panic!("no diagnostic for {text}"));
                    assert_eq!(
                        snap.rope.byte_to_line(first.range.start),
                        header_line,
                        "placement of {text:?}: {placed:?}"
                    );
                    assert!(first.message.contains("\":\""), "{text:?}: {placed:?}");
                    // repaired there, and Python's rules accept it
                    let fix = verified_repair(&snap, &SyntaxSettings::default(), None)
                        .unwrap_or_else(|| panic!("no repair for {text}"));
                    let (fixed, _) = apply_fixes(&text, &[fix]);
                    let expected = text.replacen(&format!("{header}\n"), &format!("{header}:\n"), 1);
                    assert_eq!(fixed, expected, "{text}");
                    assert_eq!(
                        strict_errors(crate::text::Language::Python, &fixed),
                        Some(Vec::new()),
                        "{fixed}"
                    );
                    cases += 1;
                }
            }
        }
        assert!(cases > 100, "{cases}");
    }

    #[test]
    fn a_repair_the_language_rejects_is_not_offered() {
        // the `:` at the end of the body line: tree-sitter parses it, Python does not
        let text = "def f(key, a):\n    if key is None\n        lo = g(a, 1)\n    else:\n        lo = 2\n    return lo\n";
        let snap = snapshot("t.py", text);
        let at = text.find("g(a, 1)").unwrap() + "g(a, 1)".len();
        let wrong =
            DeterministicFix { description: "wrong".into(), edits: vec![(TextRange::empty(at), ":".into())] };
        let (misplaced, _) = apply_fixes(text, std::slice::from_ref(&wrong));
        let problems = |snap: &DocumentSnapshot| {
            syntax_problems(snap.tree.as_ref().unwrap(), &snap.rope, snap.language).len()
        };
        assert!(
            problems(&snapshot("t.py", &misplaced)) < problems(&snap),
            "tree-sitter prefers it: {misplaced}"
        );
        assert!(!strictly_repairs(&snap, text, &wrong), "the language does not");
        let right = text.find("is None").unwrap() + "is None".len();
        let right = DeterministicFix {
            description: "right".into(),
            edits: vec![(TextRange::empty(right), ":".into())],
        };
        assert!(strictly_repairs(&snap, text, &right));
        // two problems, two repairs: each repairs its own, leaving the other
        let two = "class A\n    def f(self) -> int\n        return 1\n";
        let snap = snapshot("u.py", two);
        let colon = |at: usize| DeterministicFix {
            description: String::new(),
            edits: vec![(TextRange::empty(at), ":".into())],
        };
        assert!(strictly_repairs(&snap, two, &colon(7)));
        assert!(strictly_repairs(&snap, two, &colon(two.find("int").unwrap() + 3)));
        assert!(!strictly_repairs(&snap, two, &colon(two.len() - 1)), "after `return 1`");
    }

    #[test]
    fn names_the_parser_imagined_are_left_to_the_model() {
        // `x = ` needs an expression: nothing to insert
        let fixes = missing_token_fixes(&snapshot("c.ts", "let x = ;\n"));
        assert!(fixes.iter().all(|f| f.edits.iter().all(|(_, t)| insertable(t))), "{fixes:?}");
    }

    #[test]
    fn only_safe_checker_fixes_and_never_overlapping_ones() {
        let edit = |s, e, t: &str| (TextRange::new(s, e), t.to_string());
        let diagnostic = |code: &str, safe, edits| Diagnostic {
            fix: Some(CheckerFix { description: format!("fix {code}"), edits, safe }),
            ..Diagnostic::new(
                TextRange::new(0, 1),
                Severity::Warning,
                "ruff",
                Some(code.to_string()),
                code.to_string(),
            )
        };
        let text = "import os\nimport sys\nx = 1\n";
        let diagnostics = vec![
            diagnostic("F401", true, vec![edit(0, 10, "")]),
            diagnostic("F401", true, vec![edit(10, 21, "")]),
            diagnostic("UP", false, vec![edit(21, 26, "x: int = 1")]),
            diagnostic("I001", true, vec![edit(0, 21, "import os\nimport sys\n")]),
        ];
        let fixes = checker_fixes(&diagnostics);
        assert_eq!(fixes.len(), 3, "the unsafe fix is left out");
        let (fixed, applied) = apply_fixes(text, &fixes);
        assert_eq!(fixed, "x = 1\n");
        assert_eq!(applied.len(), 2, "the overlapping import sort is skipped");
    }
}
