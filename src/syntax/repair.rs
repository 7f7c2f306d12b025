//! Syntax errors placed where the repair goes (SPEC S2). Tree-sitter recovers from a
//! mistake wherever its grammar lets it, often a line or a statement later than the mistake
//! (a `def f(x)` without its `:` is reported as "unexpected `return x`" on the next line),
//! and one mistake can leave several problems behind. So before reporting, Tokamak looks for
//! the smallest repair that makes the first problem go away — one token inserted at the end
//! of a nearby line or between two tokens, or one token removed — and reports that repair at
//! its own place ("expected `:`"). What is still broken after a few repairs is reported as
//! the tree explains it; errors no single token repairs keep the tree's own explanation.
//!
//! Candidates are parsed in a window, not the whole document: the lines around the problem
//! from a line indented no deeper than they are, wrapped (`if 1:` in Python; a class or a
//! function in TypeScript) when that line is indented, and used only if the window alone
//! reproduces the problem and nothing before it. That keeps a candidate's parse to the size
//! of a few statements, whatever the size of the file.

use ropey::Rope;
use tree_sitter::{Node, Parser, Tree};

use super::errors::{SyntaxErrorKind, SyntaxProblem, syntax_problems};
use crate::text::{Language, TextRange};

/// Larger documents keep the tree's explanation (the repaired document is parsed whole once
/// per repair).
const MAX_BYTES: usize = 1024 * 1024;
/// Repairs looked for, one after the other, at most.
const MAX_ROUNDS: usize = 3;
/// Candidate parses (in the window) per repair at most.
const MAX_CANDIDATES: usize = 96;
/// The candidates that pass in the window and are judged on the whole document.
const SHORTLIST: usize = 6;
/// Lines before the first problem's line where a missing token is tried.
const LINES_BEFORE: usize = 3;
/// Lines of the first problem itself considered, at most.
const LINES_SPAN: usize = 6;
/// Lines after the problem's lines that the window keeps, at least (to see that the repair
/// does not just move the problem down).
const LINES_AFTER: usize = 3;
/// A window longer than this is cut (its statements are not complete then, but what is
/// judged is only whether the problem's own lines parse).
const MAX_WINDOW_LINES: usize = 120;

/// The syntax problems Tokamak reports for a document: repairs placed where they go, then
/// what is left as the tree explains it.
pub fn diagnose(tree: &Tree, rope: &Rope, language: Language) -> Vec<SyntaxProblem> {
    place(tree, rope, language).placed
}

/// A tree's syntax problems as tree-sitter shows them (`found`) and as placed for its
/// diagnostics (`placed`, what [`diagnose`] gives): the fix ladder reads both, and finding
/// them again costs a walk of the tree and placing them a few parses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Placement {
    pub found: Vec<SyntaxProblem>,
    pub placed: Vec<SyntaxProblem>,
}

/// [`diagnose`], keeping what tree-sitter found too.
pub fn place(tree: &Tree, rope: &Rope, language: Language) -> Placement {
    let found = syntax_problems(tree, rope, language);
    if found.is_empty() || rope.len_bytes() > MAX_BYTES {
        return Placement { placed: found.clone(), found };
    }
    let placed = repaired(tree, rope, language).unwrap_or_else(|| found.clone());
    Placement { found, placed }
}

/// One token inserted or removed.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Repair {
    /// Where, in the text the repair was found on.
    at: usize,
    /// Bytes removed at `at`.
    removed: usize,
    inserted: &'static str,
    /// The removed token's text (for the message).
    token: String,
}

impl Repair {
    fn apply(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len() + self.inserted.len());
        out.push_str(&text[..self.at]);
        out.push_str(self.inserted);
        out.push_str(&text[self.at + self.removed..]);
        out
    }

    /// Where `offset` of the repaired text was before the repair.
    fn map_back(&self, offset: usize) -> usize {
        let inserted_end = self.at + self.inserted.len();
        if offset <= self.at {
            offset
        } else if offset < inserted_end {
            self.at
        } else {
            offset - self.inserted.len() + self.removed
        }
    }

    /// The edit as tree-sitter is told of it, on `text` (before the repair).
    fn input_edit(&self, text: &str) -> tree_sitter::InputEdit {
        let point = |offset: usize, text: &str| {
            let before = &text[..offset];
            let row = before.bytes().filter(|&b| b == b'\n').count();
            let column = offset - before.rfind('\n').map_or(0, |i| i + 1);
            tree_sitter::Point { row, column }
        };
        let new_end = self.at + self.inserted.len();
        let row = point(self.at, text);
        let new_end_point = match self.inserted.rfind('\n') {
            Some(i) => tree_sitter::Point {
                row: row.row + self.inserted.matches('\n').count(),
                column: self.inserted.len() - i - 1,
            },
            None => tree_sitter::Point { row: row.row, column: row.column + self.inserted.len() },
        };
        tree_sitter::InputEdit {
            start_byte: self.at,
            old_end_byte: self.at + self.removed,
            new_end_byte: new_end,
            start_position: row,
            old_end_position: point(self.at + self.removed, text),
            new_end_position: new_end_point,
        }
    }

    fn shifted(&self, by: isize) -> Repair {
        Repair { at: (self.at as isize + by) as usize, ..self.clone() }
    }
}

/// The tokens tried for `region` (the problem's lines and a few before): the separators of
/// the language, and the brackets its bracket balance points at — a closer for each opener
/// left open, an opener for each closer that closes nothing (both when the balance is off
/// in a way that says neither). Strings and comments are skipped.
fn tokens(language: Language, region: &str) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = language.spec().map_or(&[][..], |spec| spec.separators).to_vec();
    let (open, stray) = balance(region, language);
    for (c, _) in open {
        out.push(match c {
            '(' => ")",
            '[' => "]",
            _ => "}",
        });
    }
    for c in stray {
        out.push(match c {
            ')' => "(",
            ']' => "[",
            _ => "{",
        });
    }
    let mut seen = std::collections::HashSet::new();
    out.retain(|t| seen.insert(*t));
    out
}

/// The openers `text` leaves open (with their offsets) and the closers in it that close
/// nothing.
fn balance(text: &str, language: Language) -> (Vec<(char, usize)>, Vec<char>) {
    let mut open: Vec<(char, usize)> = Vec::new();
    let mut stray: Vec<char> = Vec::new();
    let mut quote: Option<char> = None;
    let spec = language.spec();
    let (comment, multiline) = spec.map_or(("", None), |spec| (spec.line_comment, spec.multiline_quote));
    let mut chars = text.char_indices().peekable();
    while let Some((offset, c)) = chars.next() {
        if let Some(q) = quote {
            if c == '\\' {
                chars.next();
            } else if c == q || (c == '\n' && Some(q) != multiline) {
                quote = None;
            }
            continue;
        }
        match c {
            '"' | '\'' => quote = Some(c),
            c if Some(c) == multiline => quote = Some(c),
            _ if !comment.is_empty() && text[offset..].starts_with(comment) => {
                for (_, c) in chars.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
            }
            '(' | '[' | '{' => open.push((c, offset)),
            ')' | ']' | '}' => {
                let opener = match c {
                    ')' => '(',
                    ']' => '[',
                    _ => '{',
                };
                if open.last().map(|(o, _)| *o) == Some(opener) {
                    open.pop();
                } else if let Some(at) = open.iter().rposition(|(o, _)| *o == opener) {
                    // closes an outer one: the ones after it were never closed
                    let unclosed: Vec<(char, usize)> = open.drain(at..).skip(1).collect();
                    stray.extend(unclosed.iter().map(|(o, _)| match o {
                        '(' => ')',
                        '[' => ']',
                        _ => '}',
                    }));
                    open.extend(unclosed);
                } else {
                    stray.push(c);
                }
            }
            _ => {}
        }
    }
    (open, stray)
}

/// The first problem of a tree (its start), and how many there are.
fn first_and_count(node: Node<'_>) -> (Option<usize>, usize) {
    if !node.has_error() {
        return (None, 0);
    }
    let mut first: Option<usize> = None;
    let mut count = 0;
    let mut cursor = node.walk();
    'walk: loop {
        let n = cursor.node();
        let problem = n.is_error() || n.is_missing();
        if problem {
            count += 1;
            let start = effective_start(n);
            first = Some(first.map_or(start, |f| f.min(start)));
        }
        if !problem && n.has_error() && cursor.goto_first_child() {
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                break 'walk;
            }
        }
    }
    (first, count)
}

/// The problem (an `ERROR` or a `MISSING` node) whose trouble starts at `start`.
fn problem_at(node: Node<'_>, start: usize) -> Option<Node<'_>> {
    let mut cursor = node.walk();
    'walk: loop {
        let n = cursor.node();
        let problem = n.is_error() || n.is_missing();
        if problem && effective_start(n) == start {
            return Some(n);
        }
        if !problem && n.has_error() && n.start_byte() <= start && cursor.goto_first_child() {
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                break 'walk;
            }
        }
    }
    None
}

/// Whether `node` is a statement on lines of its own: nothing else on its first and last line.
fn whole_lines(node: Node<'_>) -> bool {
    let (start, end) = (node.start_position().row, node.end_position().row);
    node.is_named()
        && node.child_count() > 0
        && node.prev_sibling().is_none_or(|p| p.end_position().row < start)
        && node.next_sibling().is_none_or(|n| n.start_position().row > end)
}

/// Where an `ERROR` node's trouble starts: its first child that is not a comment or a whole
/// statement (tree-sitter often opens an `ERROR` well before the mistake).
fn effective_start(node: Node<'_>) -> usize {
    let mut node = node;
    'down: loop {
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            // comments, and whole statements the ERROR swallowed (tree-sitter can wrap a
            // module's every statement before the mistake in one)
            if !child.has_error() && (child.is_extra() || whole_lines(child)) {
                continue;
            }
            if child.is_error() {
                node = child;
                continue 'down;
            }
            // a statement with a mistake inside: the mistake
            if child.has_error() && !child.is_missing() && whole_lines(child) {
                return first_and_count(child).0.unwrap_or_else(|| child.start_byte());
            }
            return child.start_byte();
        }
        return node.start_byte();
    }
}

/// Offsets where each line starts.
fn line_starts(text: &str) -> Vec<usize> {
    std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1)).collect()
}

fn line_of(starts: &[usize], offset: usize) -> usize {
    starts.partition_point(|&s| s <= offset).saturating_sub(1)
}

fn line_text<'a>(text: &'a str, starts: &[usize], line: usize) -> &'a str {
    let start = starts.get(line).copied().unwrap_or(text.len());
    let end = starts.get(line + 1).copied().unwrap_or(text.len());
    &text[start..end]
}

/// The width of a line's indentation; `None` for a blank line.
fn indent(line: &str) -> Option<usize> {
    let code = line.trim_start_matches([' ', '\t']);
    (!code.trim().is_empty()).then(|| line.len() - code.len())
}

/// The offset just after the last character of code on `line`; `None` for a blank line.
fn end_of_code(text: &str, starts: &[usize], line: usize) -> Option<usize> {
    let start = *starts.get(line)?;
    let code = line_text(text, starts, line).trim_end();
    (!code.trim().is_empty()).then(|| start + code.len())
}

/// Leaf tokens starting on lines `first..=last` of the tree: `(start, end, is named)`.
fn leaves(tree: &Tree, starts: &[usize], first: usize, last: usize) -> Vec<(usize, usize, bool)> {
    let from = starts.get(first).copied().unwrap_or(0);
    let to = starts.get(last + 1).copied().unwrap_or(usize::MAX);
    let mut out = Vec::new();
    let mut cursor = tree.root_node().walk();
    'walk: loop {
        let n = cursor.node();
        if n.end_byte() >= from && n.start_byte() < to {
            if n.child_count() == 0 {
                if n.start_byte() >= from && !n.is_missing() && n.end_byte() > n.start_byte() {
                    // an ERROR without children is a token that fits nowhere
                    out.push((n.start_byte(), n.end_byte(), n.is_named() && !n.is_error()));
                }
            } else if cursor.goto_first_child() {
                continue;
            }
        }
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                break 'walk;
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// The lines around a problem, parsed on their own.
struct Window {
    /// The wrapper's opening, the lines, the wrapper's closing.
    text: String,
    /// Where the lines start in the document, and in `text`.
    from: usize,
    prefix: usize,
    /// The lines' length.
    len: usize,
}

impl Window {
    /// The window of the document `text` at `lines`, in the first wrapping that parses
    /// with a problem and none before `problem` (a document offset: the start of the first
    /// problem's line).
    fn around(
        parser: &mut Parser,
        text: &str,
        starts: &[usize],
        lines: (usize, usize),
        problem: usize,
        language: Language,
    ) -> Option<(Window, Tree)> {
        let (first, last) = lines;
        let base = (first..=last).filter_map(|l| indent(line_text(text, starts, l))).min().unwrap_or(0);
        // up to a line indented no deeper than the problem's lines
        let mut top = first;
        while top > 0 && indent(line_text(text, starts, top)).is_none_or(|i| i > base) && first - top < 40 {
            top -= 1;
        }
        let top_indent = indent(line_text(text, starts, top)).unwrap_or(0);
        // a few lines past the problem's (what is cut there only breaks after the horizon)
        let bottom = (last + LINES_AFTER).min(starts.len().saturating_sub(1)).min(top + MAX_WINDOW_LINES);
        let from = starts[top];
        let to = starts.get(bottom + 1).copied().unwrap_or(text.len());
        let lines = &text[from..to];
        let wrappers: &[(&str, &str)] = match language.spec() {
            Some(spec) if top_indent > 0 => spec.fragment_wrappers,
            _ => &[("", "")],
        };
        for (open, close) in wrappers {
            let window =
                Window { text: format!("{open}{lines}{close}"), from, prefix: open.len(), len: lines.len() };
            let tree = parser.parse(&window.text, None)?;
            let (found, _) = first_and_count(tree.root_node());
            if found.is_some_and(|f| window.to_document(f) >= problem) {
                return Some((window, tree));
            }
        }
        None
    }

    fn to_document(&self, offset: usize) -> usize {
        (offset.saturating_sub(self.prefix)).min(self.len) + self.from
    }
}

/// Looks for up to [`MAX_ROUNDS`] repairs; `None` when not even the first problem has one.
fn repaired(tree: &Tree, rope: &Rope, language: Language) -> Option<Vec<SyntaxProblem>> {
    let grammar = language.grammar()?;
    let mut parser = Parser::new();
    parser.set_language(&grammar).ok()?;
    let original = rope.to_string();
    let mut text = original.clone();
    let mut tree = tree.clone();
    let mut repairs: Vec<Repair> = Vec::new();
    for _ in 0..MAX_ROUNDS {
        let (Some(first), _) = first_and_count(tree.root_node()) else { break };
        // one ERROR can swallow the next mistake too: then the problem's lines end before
        // the next statement, and a repair that leaves as many problems will do
        let found = best_repair(&mut parser, &tree, &text, language, first, false)
            .or_else(|| best_repair(&mut parser, &tree, &text, language, first, true));
        let Some(repair) = found else { break };
        tree.edit(&repair.input_edit(&text));
        text = repair.apply(&text);
        repairs.push(repair);
        tree = parser.parse(&text, Some(&tree))?;
    }
    if repairs.is_empty() {
        return None;
    }
    // back to the original text's offsets, undoing the repairs from the last
    let map_back = |mut offset: usize, upto: usize| {
        for repair in repairs[..upto].iter().rev() {
            offset = repair.map_back(offset);
        }
        offset.min(original.len())
    };
    let mut problems: Vec<SyntaxProblem> = Vec::new();
    for (i, repair) in repairs.iter().enumerate() {
        problems.push(describe(&original, map_back(repair.at, i), repair));
    }
    if first_and_count(tree.root_node()).1 > 0 {
        let left = Rope::from_str(&text);
        for problem in syntax_problems(&tree, &left, language) {
            let range = TextRange::new(
                map_back(problem.range.start, repairs.len()),
                map_back(problem.range.end, repairs.len()),
            );
            problems.push(SyntaxProblem { range, ..problem });
        }
    }
    problems.sort_by_key(|p| (p.range.start, p.range.end));
    Some(problems)
}

/// How a candidate ranks among those leaving as many problems (lower first): not paired,
/// weak, after the problem's line, lines away, the place (a line's end, a removal, within a
/// line), bytes away (a closer: bytes to the end of its line).
type Rank = (bool, bool, bool, usize, u8, usize);

/// The `}` the innermost block left open before `to` (the first problem's line) misses (its
/// `{` ending its line): at the end of its last line indented deeper, before the first line
/// as shallow as the opener's that is not its closer — or at the start of that line when it
/// begins with what followed the `}` (`)`, `;`, `,`).
fn block_closer_at_dedent(text: &str, language: Language, starts: &[usize], to: usize) -> Option<Repair> {
    let (open, _) = balance(&text[..to], language);
    let opener_line = open
        .iter()
        .rev()
        .filter(|(c, _)| *c == '{')
        .map(|(_, at)| line_of(starts, *at))
        .find(|&l| line_text(text, starts, l).trim_end().ends_with('{'))?;
    let own = indent(line_text(text, starts, opener_line))?;
    let mut body_end = None;
    for l in opener_line + 1..starts.len() {
        let code = line_text(text, starts, l);
        match indent(code) {
            None => {}
            Some(i) if i > own => body_end = Some(l),
            Some(_) if code.trim_start().starts_with('}') => return None,
            // what is left of `});`, `};` or `},` once its `}` is gone: the `}` goes before it
            Some(i) if code.trim_start().starts_with([')', ';', ',']) => {
                return Some(Repair { at: starts[l] + i, removed: 0, inserted: "}", token: String::new() });
            }
            Some(_) => break,
        }
    }
    let at = end_of_code(text, starts, body_end?)?;
    Some(Repair { at, removed: 0, inserted: "}", token: String::new() })
}

/// Whether `opener` at the end of line `line` would open a block whose closer is already
/// there: a line below at the same indentation that starts with the matching closer, every
/// line between indented deeper.
fn closes_block_below(text: &str, starts: &[usize], line: usize, opener: &str) -> bool {
    let closer = match opener {
        "{" => '}',
        "(" => ')',
        "[" => ']',
        _ => return false,
    };
    let Some(own) = indent(line_text(text, starts, line)) else { return false };
    let mut body = false;
    for l in line + 1..starts.len() {
        let code = line_text(text, starts, l);
        match indent(code) {
            None => {}
            Some(i) if i > own => body = true,
            Some(i) if i == own => return body && code.trim_start().starts_with(closer),
            Some(_) => return false,
        }
    }
    false
}

/// A candidate repair and how it is ranked.
struct Candidate {
    repair: Repair,
    /// At the end of a line's code (where a missing `:` or closer usually goes).
    line_end: bool,
    /// The line the candidate is on.
    line: usize,
    /// The removal of an opener, or of a closer that starts its line: neither is usually
    /// the mistake (the opener's closer is missing; the block's opener is), so any other
    /// repair is preferred.
    weak: bool,
    /// An opener at the end of a line whose block's closer is there, below the block's
    /// deeper lines at the same indentation: where a person puts a missing `{`.
    paired: bool,
}

/// The candidate that leaves the fewest problems, all of them past the first problem's
/// lines; ties go to a place on or before the problem's line (a mistake shows up at or after
/// itself), then the nearest line, then the end of a line, then the nearest byte. In
/// document offsets.
fn best_repair(
    parser: &mut Parser,
    tree: &Tree,
    text: &str,
    language: Language,
    first: usize,
    split: bool,
) -> Option<Repair> {
    let starts = line_starts(text);
    let line = line_of(&starts, first);
    // the first problem's own lines: up to the end of the ERROR node around it
    let error_end = problem_at(tree.root_node(), first)?.end_byte().saturating_sub(1).max(first);
    let mut last = line_of(&starts, error_end).clamp(line, line + LINES_SPAN);
    if split {
        // up to a statement as shallow as the first line, not a closer
        let own_indent = indent(line_text(text, &starts, line)).unwrap_or(0);
        let next = (line + 1..=last).find(|&l| {
            let code = line_text(text, &starts, l);
            indent(code).is_some_and(|i| i <= own_indent) && !code.trim_start().starts_with([')', ']', '}'])
        });
        match next {
            Some(l) => last = l - 1,
            None => return None,
        }
    }
    // the repair must leave fewer problems; split, as many will do
    let progress = |left: usize, count: usize| left <= count;
    let lines = (line.saturating_sub(LINES_BEFORE), last);
    let horizon = starts.get(last + 1).copied().unwrap_or(text.len());
    let window = Window::around(parser, text, &starts, lines, starts[line], language);
    // the brackets are balanced over a few lines past the problem's too (a block's closer
    // below says its opener is missing)
    let region_end = starts.get(last + 1 + LINES_AFTER).copied().unwrap_or(text.len()).max(horizon);
    let region = &text[window.as_ref().map_or(starts[lines.0], |(w, _)| w.from).min(horizon)..region_end];
    let tokens = tokens(language, region);
    let rank = |c: &Candidate| {
        // a closer inserted within a line goes as far right as it can: what is between was
        // meant to be inside
        // (and of two closers, the last is the one too many)
        let closer = matches!(c.repair.inserted, ")" | "]" | "}")
            || matches!(c.repair.token.as_str(), ")" | "]" | "}");
        let line_end = starts.get(c.line + 1).copied().unwrap_or(text.len());
        let bytes = if closer { line_end.saturating_sub(c.repair.at) } else { first.abs_diff(c.repair.at) };
        let place = match (c.line_end, c.repair.removed > 0) {
            (true, _) => 0,
            (false, true) => 1,
            (false, false) => 2,
        };
        (!c.paired, c.weak, c.line > line, c.line.abs_diff(line), place, bytes)
    };

    // the candidates, nearest lines first: the problem's line, the ones before, then after
    let order: Vec<usize> = (lines.0..=line).rev().chain(line + 1..=last).collect();
    let mut candidates: Vec<Candidate> = Vec::new();
    for &l in &order {
        if let Some(at) = end_of_code(text, &starts, l) {
            for token in tokens.iter().copied() {
                let repair = Repair { at, removed: 0, inserted: token, token: String::new() };
                let paired = closes_block_below(text, &starts, l, token);
                candidates.push(Candidate { repair, line_end: true, line: l, weak: false, paired });
            }
        }
        for (i, (start, end, named)) in leaves(tree, &starts, l, l).into_iter().enumerate() {
            if !named {
                let token = text[start..end].to_string();
                let weak = (i == 0 && matches!(token.as_str(), ")" | "]" | "}"))
                    || matches!(token.as_str(), "(" | "[" | "{");
                let repair = Repair { at: start, removed: end - start, inserted: "", token };
                candidates.push(Candidate { repair, line_end: false, line: l, weak, paired: false });
            }
            // before a line's first token is the end of the line before, where a person
            // would put it (and where those candidates already are)
            if i == 0 {
                continue;
            }
            for token in tokens.iter().copied() {
                let repair = Repair { at: start, removed: 0, inserted: token, token: String::new() };
                candidates.push(Candidate { repair, line_end: false, line: l, weak: false, paired: false });
            }
        }
    }

    // tried in rank order, so the screening can stop at the first clean ones
    candidates.sort_by_cached_key(|c| rank(c));
    // screening in the window (cheap): the candidates that clear the problem's lines there
    let shortlist: Vec<Candidate> = match &window {
        Some((window, window_tree)) => {
            let (_, count) = first_and_count(window_tree.root_node());
            let shift = window.prefix as isize - window.from as isize;
            let mut passing: Vec<((usize, Rank), Candidate)> = Vec::new();
            for candidate in candidates.into_iter().take(MAX_CANDIDATES) {
                if candidate.repair.at < window.from {
                    continue;
                }
                // enough that leave the window clean, and nothing nearer can come: stop
                let clean = passing.iter().filter(|((left, _), _)| *left == 0).count();
                let (unpaired, weak, after, distance, ..) = rank(&candidate);
                let nearer = |r: &Rank| (r.0, r.1, r.2, r.3) < (unpaired, weak, after, distance);
                if clean >= SHORTLIST || passing.iter().any(|((left, r), _)| *left == 0 && nearer(r)) {
                    break;
                }
                let local = candidate.repair.shifted(shift);
                // a removal running past the window's lines is judged on the document only
                if local.at + local.removed > window.prefix + window.len {
                    continue;
                }
                let mut edited = window_tree.clone();
                edited.edit(&local.input_edit(&window.text));
                let Some(new_tree) = parser.parse(local.apply(&window.text), Some(&edited)) else { continue };
                let (next, left) = first_and_count(new_tree.root_node());
                // the problem's lines must parse now: whatever is left starts after them
                let cleared = next.is_none_or(|n| window.to_document(local.map_back(n)) >= horizon);
                if cleared && progress(left, count) {
                    passing.push(((left, rank(&candidate)), candidate));
                }
            }
            passing.sort_by_key(|(key, _)| *key);
            passing.into_iter().take(SHORTLIST).map(|(_, c)| c).collect()
        }
        None => candidates.into_iter().take(SHORTLIST * 4).collect(),
    };
    // a block left open closes where its indentation ends (often past the window)
    let mut shortlist = shortlist;
    if language.spec().is_some_and(|spec| spec.braces)
        && let Some(closer) = block_closer_at_dedent(text, language, &starts, starts[line])
    {
        let line = line_of(&starts, closer.at);
        shortlist.insert(0, Candidate { repair: closer, line_end: true, line, weak: false, paired: true });
    }

    // the shortlist judged on the whole document (an incremental parse each)
    let (_, count) = first_and_count(tree.root_node());
    let mut best: Option<((usize, Rank), Repair)> = None;
    for candidate in shortlist {
        // in the window's order: the first that leaves the document clean cannot be beaten
        if best.as_ref().is_some_and(|((left, _), _)| *left == 0) {
            break;
        }
        let mut edited = tree.clone();
        edited.edit(&candidate.repair.input_edit(text));
        let Some(new_tree) = parser.parse(candidate.repair.apply(text), Some(&edited)) else { continue };
        let (next, left) = first_and_count(new_tree.root_node());
        let cleared = next.is_none_or(|n| candidate.repair.map_back(n) >= horizon);
        if !cleared || !progress(left, count) {
            continue;
        }
        let key = (left, rank(&candidate));
        if best.as_ref().is_none_or(|(best_key, _)| key < *best_key) {
            best = Some((key, candidate.repair));
        }
    }
    if best.is_none() && line_of(&starts, error_end) > last {
        return closer_at_the_end(parser, tree, text, &starts, line, error_end);
    }
    best.map(|(_, repair)| repair)
}

/// A bracket never closed shows as an `ERROR` from the opener to the end of what it
/// swallowed: the closer goes at the end of that, where the window does not reach. Tried on
/// the whole document (a few parses).
fn closer_at_the_end(
    parser: &mut Parser,
    tree: &Tree,
    text: &str,
    starts: &[usize],
    line: usize,
    error_end: usize,
) -> Option<Repair> {
    let (_, count) = first_and_count(tree.root_node());
    let end_line = line_of(starts, error_end);
    let mut code_lines: Vec<usize> =
        (line + 1..=end_line).rev().filter(|&l| end_of_code(text, starts, l).is_some()).take(2).collect();
    code_lines.sort_unstable();
    let mut best: Option<(usize, Repair)> = None;
    for l in code_lines.into_iter().rev() {
        let Some(at) = end_of_code(text, starts, l) else { continue };
        for token in [")", "]", "}"] {
            let repair = Repair { at, removed: 0, inserted: token, token: String::new() };
            let mut edited = tree.clone();
            edited.edit(&repair.input_edit(text));
            let Some(new_tree) = parser.parse(repair.apply(text), Some(&edited)) else { continue };
            let (next, left) = first_and_count(new_tree.root_node());
            let cleared = next.is_none_or(|n| repair.map_back(n) > error_end);
            if cleared && left < count && best.as_ref().is_none_or(|(fewest, _)| left < *fewest) {
                best = Some((left, repair));
            }
        }
    }
    best.map(|(_, repair)| repair)
}

/// The problem a repair stands for, at `at` in the original text.
fn describe(original: &str, at: usize, repair: &Repair) -> SyntaxProblem {
    if repair.removed > 0 {
        return SyntaxProblem {
            range: TextRange::new(at, (at + repair.removed).min(original.len())),
            kind: SyntaxErrorKind::Unexpected,
            message: format!("unexpected \"{}\"", repair.token),
        };
    }
    // the character before the insertion point, so the squiggle shows on that line
    let line_start = original[..at].rfind('\n').map_or(0, |i| i + 1);
    let before = original[line_start..at].trim_end();
    let range = match before.char_indices().last() {
        Some((i, _)) => TextRange::new(line_start + i, line_start + before.len()),
        None => {
            let next = original[at..].chars().next().map_or(0, char::len_utf8);
            TextRange::new(at, at + next)
        }
    };
    let token = repair.inserted;
    SyntaxProblem {
        range,
        kind: SyntaxErrorKind::Missing(token.to_string()),
        message: format!("expected \"{token}\""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::SyntaxTree;
    use crate::text::{PositionEncoding, offset_to_line_col};

    /// Each problem as `line:col message` (1-based, columns in characters).
    fn render(language: Language, text: &str) -> String {
        let rope = Rope::from_str(text);
        let Ok(Some(tree)) = SyntaxTree::parse(language, &rope) else { panic!("{language:?} is parsed") };
        diagnose(tree.tree(), &rope, language)
            .iter()
            .map(|p| {
                let s = offset_to_line_col(&rope, p.range.start, PositionEncoding::Utf32);
                format!("{}:{} {}\n", s.line + 1, s.col + 1, p.message)
            })
            .collect()
    }

    /// One mutation: the text, and the first problem expected (line within the text, column,
    /// message).
    type Case = (Language, &'static str, usize, usize, &'static str);

    const CASES: &[Case] = &[
        // Python: a block's colon, a closing and an opening bracket, a comma
        (Language::Python, "def f(x)\n    return x\n", 1, 8, "expected \":\""),
        (Language::Python, "def f(x):\n    if x\n        return 1\n    return 2\n", 2, 8, "expected \":\""),
        (Language::Python, "def f(x):\n    y = g(x\n    return y\n", 2, 11, "expected \")\""),
        (Language::Python, "def f(x):\n    y = [x, 1\n    return y\n", 2, 13, "expected \"]\""),
        (Language::Python, "def f(x):\n    y = {'a': x\n    return y\n", 2, 15, "expected \"}\""),
        (Language::Python, "def f(x):\n    y = gx)\n    return y\n", 2, 11, "unexpected \")\""),
        (Language::Python, "def f(x):\n    y = g(x 1)\n    return y\n", 2, 11, "expected \",\""),
        // TypeScript: a closing parenthesis and bracket, an opening and a closing brace
        (
            Language::TypeScript,
            "function f(x: number) {\n  const y = g(x;\n  return y;\n}\n",
            2,
            15,
            "expected \")\"",
        ),
        (
            Language::TypeScript,
            "function f(x: number) {\n  const xs = [1, x;\n  return xs;\n}\n",
            2,
            18,
            "expected \"]\"",
        ),
        (Language::TypeScript, "function f(x: number)\n  return x;\n}\n", 1, 21, "expected \"{\""),
        (Language::TypeScript, "class C {\n  m(x: number)\n    return x;\n  }\n}\n", 2, 14, "expected \"{\""),
        (
            Language::TypeScript,
            "function f(x: number) {\n  const y = gx);\n  return y;\n}\n",
            2,
            15,
            "unexpected \")\"",
        ),
        // the `if` closes before `return 2;`, as its indentation says (tsc: at the end)
        (
            Language::TypeScript,
            "function f(x: number) {\n  if (x) {\n    return 1;\n\n  return 2;\n}\n",
            3,
            13,
            "expected \"}\"",
        ),
        // what is left of `});` says where its `}` was
        (Language::TypeScript, "run(() => {\n  go();\n);\n", 3, 1, "expected \"}\""),
        // TSX: a JSX expression's brace, a call's parenthesis, a function's brace
        (Language::Tsx, "function App() {\n  return <div>{x</div>;\n}\n", 2, 16, "expected \"}\""),
        (
            Language::Tsx,
            "function App() {\n  const y = g(x;\n  return <div>{y}</div>;\n}\n",
            2,
            15,
            "expected \")\"",
        ),
        (Language::Tsx, "function App()\n  return <div>{x}</div>;\n}\n", 1, 14, "expected \"{\""),
    ];

    /// What comes before the mutated code: nothing, a string with Korean and emoji, a
    /// comment, a decorator (Python's decorates the function; TypeScript's a class).
    fn prefixes(language: Language) -> [&'static str; 4] {
        match language {
            Language::Python => ["", "s = \"안녕하세요 👋\"\n", "# a comment\n", "@decorator\n"],
            _ => ["", "const s = \"안녕하세요 👋\";\n", "// a comment\n", "@sealed\nclass D {}\n"],
        }
    }

    #[test]
    fn each_mutation_is_placed_where_it_is_repaired_whatever_comes_before() {
        for &(language, text, line, col, message) in CASES {
            for prefix in prefixes(language) {
                let text = format!("{prefix}{text}");
                let line = line + prefix.matches('\n').count();
                let expected = format!("{line}:{col} {message}\n");
                let found = render(language, &text);
                assert_eq!(
                    found.lines().next().map(|l| format!("{l}\n")),
                    Some(expected),
                    "{language:?}:\n{text}\n{found}"
                );
            }
        }
    }

    #[test]
    fn one_token_is_one_error() {
        // the repair leaves nothing behind: no second error for the same mistake
        for &(language, text, ..) in CASES {
            for prefix in prefixes(language) {
                let text = format!("{prefix}{text}");
                assert_eq!(render(language, &text).lines().count(), 1, "{language:?}:\n{text}");
            }
        }
    }

    #[test]
    fn clean_code_and_a_removed_stray_closer() {
        assert_eq!(render(Language::Python, "def f(x):\n    return x\n"), "");
        assert_eq!(render(Language::Python, "print(\"hi\"))\n"), "1:12 unexpected \")\"\n");
        assert_eq!(render(Language::TypeScript, "const a = f(1));\n"), "1:15 unexpected \")\"\n");
    }

    #[test]
    fn two_mistakes_are_two_errors() {
        let text = "def f(x)\n    return x\n\n\ndef g(y)\n    return y\n";
        assert_eq!(render(Language::Python, text), "1:8 expected \":\"\n5:8 expected \":\"\n");
    }
}
