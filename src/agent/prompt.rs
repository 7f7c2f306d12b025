//! The fix prompt (SPEC F2): the error summary, the code around the errors (the enclosing
//! function or class, else nearby lines — never the whole repository; the import block too
//! for a name or an import that is wrong), an outline of the
//! file, and what earlier attempts did and why they failed.

use std::fmt::Write as _;

use crate::language::Nodes;
use crate::model::Message;
use crate::observer::{Diagnostic, about_names, error_summary};
use crate::syntax::{SymbolKind, enclosing_symbol, node_symbols, outline};
use crate::workspace::DocumentSnapshot;

/// How a reply must be written; the parser also reads diffs and whole files, but one format
/// asked for is followed best.
pub const SYSTEM: &str = "You are Tokamak, a careful programmer fixing errors that checkers found in the user's code.
Reply with the smallest change that fixes the listed errors, written as SEARCH/REPLACE blocks:

path/to/file.py
<<<<<<< SEARCH
lines copied exactly from the current file
=======
the lines that replace them
>>>>>>> REPLACE

Rules:
- SEARCH must match the current file exactly, indentation and comments included; copy a few whole lines, enough to be unique.
- Use several small blocks rather than one big one; blocks are applied in order.
- Change only what fixing the errors needs: no reformatting, renaming or unrelated improvements.
- Do not add line numbers. Explain in at most one sentence, outside the blocks.";

/// Lines of code shown around an error outside any function, or when its function is long.
const WINDOW: usize = 12;
/// The most recent notes of earlier attempts shown, and the longest shown whole.
const MAX_HISTORY: usize = 4;
const MAX_NOTE_CHARS: usize = 1_500;
/// The import block shown at most.
const MAX_IMPORT_LINES: usize = 40;
/// An enclosing scope longer than this many lines is shown as a window instead.
const MAX_SCOPE_LINES: usize = 150;

/// What the prompt is built from.
pub struct FixPrompt<'a> {
    pub snapshot: &'a DocumentSnapshot,
    /// How the file is named to the model (relative to the workspace).
    pub path: &'a str,
    pub targets: &'a [Diagnostic],
    /// One paragraph per earlier attempt.
    pub history: &'a [String],
    pub context_tokens: usize,
    /// The project's rules as `context::render_rules` shows them (empty: none).
    pub rules: &'a str,
}

impl FixPrompt<'_> {
    pub fn messages(&self) -> Vec<Message> {
        vec![Message::system(SYSTEM), Message::user(self.user())]
    }

    fn user(&self) -> String {
        let snapshot = self.snapshot;
        let budget = self.context_tokens.max(200);
        let mut out = String::new();
        let _ = writeln!(out, "Fix these problems in {} ({}):\n", self.path, snapshot.language.name());
        out.push_str(&error_summary(snapshot, self.targets, self.path, budget / 3));
        let fence = snapshot.language.name().to_ascii_lowercase();
        let statements = Statements::of(snapshot);
        let symbols = symbols_around(snapshot, statements, self.targets);
        let _ = writeln!(out, "\nThe code around them in {}:\n", self.path);
        let code = context_of(snapshot, statements, &symbols, self.targets, budget);
        let _ = writeln!(out, "```{fence}\n{code}```");
        let outline = outline_near(snapshot, statements, self.targets, budget / 4);
        if !outline.trim().is_empty() {
            let _ = writeln!(out, "\nOutline of {}:\n{outline}", self.path);
        }
        if !self.rules.is_empty() {
            let _ = write!(out, "\n{}", self.rules);
        }
        if !self.history.is_empty() {
            out.push_str("\nEarlier in this run (do not repeat what failed):\n");
            let skipped = self.history.len().saturating_sub(MAX_HISTORY);
            if skipped > 0 {
                let _ = writeln!(out, "({skipped} earlier note(s) left out)");
            }
            for note in &self.history[skipped..] {
                let note: String = note.chars().take(MAX_NOTE_CHARS).collect();
                let _ = writeln!(out, "{note}");
            }
        }
        out
    }
}

/// The lines worth showing for `targets`: each one's innermost enclosing function (or class),
/// or a window around it, merged, in file order, with `…` where lines are left out; cut to
/// `token_budget`.
pub fn focused_context(snapshot: &DocumentSnapshot, targets: &[Diagnostic], token_budget: usize) -> String {
    let statements = Statements::of(snapshot);
    let symbols = symbols_around(snapshot, statements, targets);
    context_of(snapshot, statements, &symbols, targets, token_budget)
}

/// The top-level statements of a snapshot's tree, found where they are needed without
/// walking the others: tree-sitter keeps a long run of statements as a balanced tree of hidden
/// nodes, so the statement at a byte and its neighbours each cost the log of how many there
/// are. A fix's prompt then costs what the errors' surroundings hold, not what the file does
/// (collecting a 10 000-line file's statements took most of its prompt's time).
#[derive(Clone, Copy)]
struct Statements<'t> {
    root: Option<tree_sitter::Node<'t>>,
}

impl<'t> Statements<'t> {
    fn of(snapshot: &'t DocumentSnapshot) -> Statements<'t> {
        let root =
            snapshot.tree.as_ref().map(|tree| tree.root_node()).filter(|root| root.named_child_count() > 0);
        Statements { root }
    }

    /// The statement holding `offset`, else the last one starting before it, else the first.
    fn holding(&self, offset: usize) -> Option<tree_sitter::Node<'t>> {
        let root = self.root?;
        match root.first_named_child_for_byte(offset) {
            Some(next) if next.start_byte() <= offset => Some(next),
            Some(next) => next.prev_named_sibling().or(Some(next)),
            None => root.named_child(root.named_child_count().saturating_sub(1)),
        }
    }

    fn first(&self) -> Option<tree_sitter::Node<'t>> {
        self.root?.named_child(0)
    }
}

/// The symbols of the top-level statements the targets are in: what their enclosing scopes
/// are found in, read from those statements alone (not the whole file).
fn symbols_around(
    snapshot: &DocumentSnapshot,
    statements: Statements<'_>,
    targets: &[Diagnostic],
) -> Vec<crate::syntax::Symbol> {
    let mut held: Vec<tree_sitter::Node<'_>> =
        targets.iter().filter_map(|t| statements.holding(t.range.start)).collect();
    held.sort_unstable_by_key(|n| n.start_byte());
    held.dedup_by_key(|n| n.start_byte());
    held.into_iter().flat_map(|n| node_symbols(n, &snapshot.rope, snapshot.language, None)).collect()
}

/// An outline of the definitions nearest the targets within `token_budget`: the top-level
/// statement of the first target, then those above and below it in turn, until the budget
/// is spent (in a long class, its members nearest the target first); `…` where some are left
/// out. A file's whole outline when it fits.
fn outline_near(
    snapshot: &DocumentSnapshot,
    statements: Statements<'_>,
    targets: &[Diagnostic],
    token_budget: usize,
) -> String {
    let Some(first) = targets.iter().map(|t| t.range.start).min() else { return String::new() };
    let Some(focus) = statements.holding(first) else { return String::new() };
    let budget = token_budget.saturating_mul(crate::text::CHARS_PER_TOKEN);
    let outline_of =
        |node: tree_sitter::Node<'_>| outline(&node_symbols(node, &snapshot.rope, snapshot.language, None));
    // the statement of the target, its members nearest the target first when it is long
    let own = outline_of(focus);
    let mut shown: std::collections::BTreeMap<usize, String> = std::collections::BTreeMap::new();
    let mut used = own.len();
    if own.len() > budget {
        let symbols = node_symbols(focus, &snapshot.rope, snapshot.language, None);
        shown.insert(focus.start_byte(), nearest_members(&symbols, first, budget));
        used = budget;
    } else {
        shown.insert(focus.start_byte(), own);
    }
    // one cursor pass to the target's statement and on from it: a node asked for its
    // previous or next sibling walks its parent's children from the first each time, which
    // is quadratic in a long file's statements
    let Some(root) = statements.root else { return in_file_order(shown) };
    let most = budget / 4 + 1;
    let mut cursor = root.walk();
    let mut above: std::collections::VecDeque<tree_sitter::Node<'_>> = std::collections::VecDeque::new();
    let mut more_above = false;
    if cursor.goto_first_child() {
        while cursor.node() != focus {
            let node = cursor.node();
            if node.is_named() {
                if above.len() == most {
                    above.pop_front();
                    more_above = true;
                }
                above.push_back(node);
            }
            if !cursor.goto_next_sibling() {
                break;
            }
        }
    }
    let mut next_below = || {
        while cursor.goto_next_sibling() {
            if cursor.node().is_named() {
                return Some(cursor.node());
            }
        }
        None
    };
    // shows a statement's outline while the budget lasts; `false` once it is spent
    let mut show = |node: tree_sitter::Node<'_>| {
        let text = outline_of(node);
        if used + text.len() > budget {
            return false;
        }
        used += text.len();
        shown.insert(node.start_byte(), text);
        true
    };
    let (mut cut_above, mut cut_below) = (false, false);
    let (mut above_done, mut below_done) = (false, false);
    while !above_done || !below_done {
        if !above_done {
            match above.pop_back() {
                Some(node) => {
                    above_done = !show(node);
                    cut_above = above_done;
                }
                None => (cut_above, above_done) = (more_above, true),
            }
        }
        if !below_done {
            match next_below() {
                Some(node) => {
                    below_done = !show(node);
                    cut_below = below_done;
                }
                None => below_done = true,
            }
        }
    }
    let mut out = String::new();
    if cut_above {
        out.push_str("…\n");
    }
    out.push_str(&in_file_order(shown));
    if cut_below {
        out.push_str("…\n");
    }
    out
}

/// The outlines shown, in the file's order.
fn in_file_order(shown: std::collections::BTreeMap<usize, String>) -> String {
    shown.into_values().collect()
}

/// A long definition's signature and its members nearest `offset`, in order, within `budget`
/// characters.
fn nearest_members(symbols: &[crate::syntax::Symbol], offset: usize, budget: usize) -> String {
    let Some(outer) = symbols.first() else { return String::new() };
    let mut members: Vec<&crate::syntax::Symbol> = outer.children.iter().collect();
    members.sort_by_key(|m| m.range.start.abs_diff(offset));
    let mut used = outer.signature.len() + 1;
    let mut kept: Vec<&crate::syntax::Symbol> = Vec::new();
    for member in members {
        let size = member.signature.len() + 3;
        if used + size > budget {
            break;
        }
        used += size;
        kept.push(member);
    }
    kept.sort_by_key(|m| m.range.start);
    let mut out = format!("{}\n", outer.signature);
    if kept.len() < outer.children.len() {
        out.push_str("  …\n");
    }
    for member in kept {
        let _ = writeln!(out, "  {}", member.signature);
    }
    out
}

/// The lines from the file's first top-level import to its last (`import`, `from … import`,
/// an ES `import`); without imports, the top of the file up to its first statement, where
/// one would go.
fn import_block(statements: Statements<'_>, grammar: &Nodes) -> Option<(usize, usize)> {
    let is_import = |n: &tree_sitter::Node<'_>| grammar.is_import(n.kind());
    // the statements from the top, comments left out, read only as far as the imports go
    let mut next = statements.first();
    let mut walk = std::iter::from_fn(|| {
        while let Some(node) = next {
            next = node.next_named_sibling();
            if !node.is_extra() {
                return Some(node);
            }
        }
        None
    })
    .peekable();
    let first_statement = walk.peek().map(|n| n.start_position().row)?;
    // the leading run of imports (after a docstring), not one far below the others
    let mut walk = walk
        .skip_while(|n| {
            !is_import(n) && n.kind() == grammar.expression_statement && n.start_position().row < WINDOW
        })
        .take_while(is_import);
    let Some(first) = walk.next() else { return Some((0, first_statement.min(WINDOW))) };
    let start = first.start_position().row;
    let cap = start + MAX_IMPORT_LINES;
    let mut end = first.end_position().row;
    for import in walk {
        if import.start_position().row > cap {
            return Some((start, cap));
        }
        end = import.end_position().row;
    }
    Some((start, end.min(cap)))
}

fn context_of(
    snapshot: &DocumentSnapshot,
    statements: Statements<'_>,
    symbols: &[crate::syntax::Symbol],
    targets: &[Diagnostic],
    token_budget: usize,
) -> String {
    let rope = &snapshot.rope;
    let lines = rope.len_lines().max(1);
    let line_of = |offset: usize| rope.byte_to_line(offset.min(rope.len_bytes()));
    let mut spans: Vec<(usize, usize)> = Vec::new();
    for target in targets {
        let first = line_of(target.range.start);
        let last = line_of(target.range.end).max(first);
        let scope = enclosing_symbol(symbols, target.range.start)
            .into_iter()
            .rev()
            .find(|s| !matches!(s.kind, SymbolKind::Module))
            .map(|s| (line_of(s.range.start), line_of(s.range.end.saturating_sub(1))))
            .filter(|(start, end)| end.saturating_sub(*start) < MAX_SCOPE_LINES && *start <= first);
        let span = scope.unwrap_or((first.saturating_sub(WINDOW), (last + WINDOW).min(lines - 1)));
        spans.push((span.0.min(first), span.1.max(last).min(lines - 1)));
    }
    // a name that is undefined or unused, or an import that does not resolve, is fixed in the
    // imports as often as where it is reported: they are shown too, however far above
    if targets.iter().any(about_names)
        && let Some(grammar) = snapshot.language.nodes()
        && let Some(imports) = import_block(statements, grammar)
    {
        spans.push(imports);
    }
    spans.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::new();
    for (start, end) in spans {
        match merged.last_mut() {
            Some(last) if start <= last.1 + 1 => last.1 = last.1.max(end),
            _ => merged.push((start, end)),
        }
    }
    let budget_chars = token_budget.saturating_mul(crate::text::CHARS_PER_TOKEN);
    let mut out = String::new();
    let mut shown_to = 0;
    for (start, end) in merged {
        if start > shown_to {
            out.push_str("…\n");
        }
        for line in start..=end {
            let text = rope.line(line).to_string();
            if out.len() + text.len() > budget_chars && !out.is_empty() {
                out.push_str("… (cut to fit the token budget)\n");
                return out;
            }
            out.push_str(&text);
        }
        if !out.ends_with('\n') {
            out.push('\n');
        }
        shown_to = end + 1;
    }
    if shown_to < rope.len_lines() && rope.len_chars() > 0 && shown_to < lines.saturating_sub(1) {
        out.push_str("…\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SyntaxSettings;
    use crate::observer::Severity;
    use crate::text::TextRange;

    fn snapshot(text: &str) -> DocumentSnapshot {
        DocumentSnapshot::detached(
            url::Url::parse("file:///p/m.py").unwrap(),
            text,
            &SyntaxSettings::default(),
        )
    }

    #[test]
    fn a_single_error_sends_its_function_and_the_outline_not_the_file() {
        let mut text = String::new();
        for i in 0..40 {
            let _ = write!(text, "def helper_{i}(x):\n    return x + {i}\n\n");
        }
        let at = text.len();
        text.push_str("def broken(items):\n    total = 0\n    for item in items:\n        total += undefined_name\n    return total\n\n");
        for i in 40..80 {
            let _ = write!(text, "def helper_{i}(x):\n    return x + {i}\n\n");
        }
        let snapshot = snapshot(&text);
        let offset = at + text[at..].find("undefined_name").unwrap();
        let target = Diagnostic::new(
            TextRange::new(offset, offset + 14),
            Severity::Error,
            "pyright",
            None,
            "\"undefined_name\" is not defined".to_string(),
        );
        let prompt = FixPrompt {
            snapshot: &snapshot,
            path: "m.py",
            targets: std::slice::from_ref(&target),
            history: &["Attempt 1: your SEARCH block 1 matched nothing".to_string()],
            context_tokens: 3000,
            rules: "The project's rules:\n--- AGENTS.md ---\nNo prints.\n",
        };
        let user = prompt.user();
        assert!(user.contains("\nThe project's rules:\n--- AGENTS.md ---\nNo prints.\n"), "{user}");
        assert!(user.contains("def broken(items):\n    total = 0\n"), "{user}");
        assert!(!user.contains("return x + 3\n"), "bodies of other functions stay out: {user}");
        assert!(user.contains("def helper_79(x)"), "the outline names every function");
        assert!(user.contains("Attempt 1: your SEARCH block 1 matched nothing"));
        assert!(!user.contains("return x + "), "no other body is sent");
        assert!(user.len() < text.len(), "{} vs {}", user.len(), text.len());
    }

    /// In a long file the outline is the definitions nearest the error, within its share of
    /// the budget, not all of them; in a long class, the members nearest the error.
    #[test]
    fn a_long_files_outline_is_the_part_around_the_error() {
        let mut text = String::new();
        for i in 0..3000 {
            let _ = write!(text, "def helper_{i}(x):\n    return x + {i}\n\n");
        }
        text.push_str("class Big:\n");
        for i in 0..400 {
            let _ = write!(text, "    def method_{i}(self):\n        return {i}\n\n");
        }
        let at = text.find("return 250\n").unwrap();
        let snapshot = snapshot(&text);
        let target =
            Diagnostic::new(TextRange::new(at, at + 6), Severity::Error, "tokamak", None, "x".to_string());
        let prompt = FixPrompt {
            snapshot: &snapshot,
            path: "m.py",
            targets: std::slice::from_ref(&target),
            history: &[],
            context_tokens: 3000,
            rules: "",
        };
        let user = prompt.user();
        assert!(user.len() < 3000 * crate::text::CHARS_PER_TOKEN * 2, "{} chars", user.len());
        assert!(user.contains("def method_250(self)") && user.contains("def method_249(self)"), "{user}");
        assert!(user.contains("class Big"), "its class's signature: {user}");
        assert!(!user.contains("def helper_10(x)"), "far away: {user}");
        assert!(!user.contains("def method_0(self)"), "far away in the class: {user}");

        // a helper in the middle: its neighbours, not the file's ends
        let at = text.find("return x + 1500\n").unwrap();
        let target =
            Diagnostic::new(TextRange::new(at, at + 6), Severity::Error, "tokamak", None, "x".to_string());
        let prompt = FixPrompt { targets: std::slice::from_ref(&target), ..prompt };
        let user = prompt.user();
        assert!(user.contains("def helper_1499(x)\ndef helper_1500(x)\ndef helper_1501(x)"), "{user}");
        assert!(!user.contains("def helper_0(x)") && !user.contains("class Big"), "{user}");
        assert!(user.contains("Outline of m.py:\n…\n"), "{user}");
    }

    #[test]
    fn a_name_error_far_below_the_imports_shows_them() {
        let mut text =
            String::from("\"\"\"Doc.\"\"\"\nimport os\nfrom collections import (\n    OrderedDict,\n)\n\n");
        for i in 0..60 {
            let _ = write!(text, "def helper_{i}(x):\n    return x + {i}\n\n");
        }
        text.push_str("def late():\n    return defaultdict(list)\n");
        let snapshot = snapshot(&text);
        let offset = text.find("defaultdict").unwrap();
        let undefined = Diagnostic::new(
            TextRange::new(offset, offset + 11),
            Severity::Error,
            "ruff",
            Some("F821".into()),
            "Undefined name `defaultdict`".to_string(),
        );
        let context = focused_context(&snapshot, std::slice::from_ref(&undefined), 3000);
        assert!(
            context.starts_with("…\nimport os\nfrom collections import (\n    OrderedDict,\n)\n…\n"),
            "{context}"
        );
        assert!(context.ends_with("def late():\n    return defaultdict(list)\n"), "{context}");
        // a file without imports shows its top, where one would go
        let bare = super::tests::snapshot(
            "\n\ndef f():\n    return 1\n\n\ndef g():\n    return defaultdict(list)\n",
        );
        let text = bare.rope.to_string();
        let offset = text.find("defaultdict").unwrap();
        let target = Diagnostic { range: TextRange::new(offset, offset + 11), ..undefined.clone() };
        let context = focused_context(&bare, &[target], 3000);
        assert!(context.starts_with("\n\ndef f():\n…\ndef g():\n"), "{context}");
        // an import far below the leading ones is not the block
        let late =
            super::tests::snapshot(&format!("import os\n\n{}\nfrom .local import *\n", "x = 1\n".repeat(80)));
        let text = late.rope.to_string();
        let offset = text.find("x = 1").unwrap() + 40 * 6;
        let target = Diagnostic { range: TextRange::new(offset, offset + 1), ..undefined.clone() };
        let context = focused_context(&late, &[target], 3000);
        assert!(context.starts_with("import os\n…\n") && !context.contains("from .local"), "{context}");
        // another kind of error does not bring them
        let other = Diagnostic { code: Some("E501".into()), message: "Line too long".into(), ..undefined };
        assert!(!focused_context(&snapshot, &[other], 3000).contains("import os"));
    }

    #[test]
    fn top_level_errors_get_a_window() {
        let text: String = (0..100).map(|i| format!("x{i} = {i}\n")).collect();
        let snapshot = snapshot(&text);
        let offset = text.find("x50 =").unwrap();
        let target =
            Diagnostic::new(TextRange::new(offset, offset + 3), Severity::Error, "ruff", None, "m".into());
        let context = focused_context(&snapshot, &[target], 3000);
        assert!(context.starts_with("…\nx38 = 38\n") && context.ends_with("x62 = 62\n…\n"), "{context}");
    }
}
