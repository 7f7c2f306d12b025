//! Syntax problems read off a tree: `MISSING` nodes (a token the parser had to invent) and
//! `ERROR` nodes (text it had to skip), with precise ranges and readable messages.

use ropey::Rope;
use tree_sitter::{Node, Tree};

use crate::text::{Language, TextRange};

/// At most this many problems are reported for one file: past that the file is not code in
/// this language (or is badly broken) and more squiggles only slow the editor down.
pub const MAX_SYNTAX_PROBLEMS: usize = 100;

/// Longest excerpt of skipped text quoted in a message, in characters.
const MAX_EXCERPT_CHARS: usize = 40;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SyntaxErrorKind {
    /// The parser expected this token or node here (`")"`, `":"`, `identifier`).
    Missing(String),
    /// The parser could not fit this text into the grammar.
    Unexpected,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxProblem {
    pub range: TextRange,
    pub kind: SyntaxErrorKind,
    pub message: String,
}

/// How many `ERROR` nodes inside `ERROR` nodes are explained before the rest is reported
/// whole (bounds the recursion on pathological input).
const MAX_NESTING: usize = 32;

/// Every syntax problem in `tree`, in document order, at most [`MAX_SYNTAX_PROBLEMS`].
pub fn syntax_problems(tree: &Tree, rope: &Rope, language: Language) -> Vec<SyntaxProblem> {
    let mut problems = Vec::new();
    let context = Context { rope, language };
    collect(tree.root_node(), &context, &mut problems, 0);
    problems.truncate(MAX_SYNTAX_PROBLEMS);
    problems
}

/// Walks `root`'s subtree iteratively (a deep tree cannot overflow the stack), descending
/// only into nodes that contain errors.
fn collect(root: Node<'_>, context: &Context<'_>, problems: &mut Vec<SyntaxProblem>, nesting: usize) {
    if !root.has_error() {
        return;
    }
    let mut cursor = root.walk();
    loop {
        if problems.len() >= MAX_SYNTAX_PROBLEMS {
            return;
        }
        let node = cursor.node();
        let mut descend = node.has_error();
        if node.is_missing() {
            problems.push(missing(node));
            descend = false;
        } else if node.is_error() {
            explain_error(node, context, problems, nesting);
            descend = false;
        }
        if descend && cursor.goto_first_child() {
            continue;
        }
        loop {
            if cursor.node() == root {
                return;
            }
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return;
            }
        }
    }
}

/// An `ERROR` node mixes text the parser skipped (loose tokens, nested `ERROR`s) with
/// complete constructs it could still recognise. Each run of skipped text is one problem,
/// so the range points at what went wrong instead of covering the whole construct; the
/// complete constructs are searched for problems of their own.
fn explain_error(node: Node<'_>, context: &Context<'_>, problems: &mut Vec<SyntaxProblem>, nesting: usize) {
    let Context { rope, language } = *context;
    if nesting >= MAX_NESTING {
        problems.push(unexpected(range_of(node, rope), rope, language));
        return;
    }
    let before = problems.len();
    let mut run: Option<TextRange> = None;
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        // a comment the parser kept inside what it skipped is not part of the problem
        if child.is_extra() && !child.has_error() {
            if let Some(range) = run.take() {
                problems.push(unexpected(range, rope, language));
            }
            continue;
        }
        let loose = child.child_count() == 0 || child.is_error();
        if loose && !child.is_missing() {
            let range = range_of(child, rope);
            run = Some(run.map_or(range, |r| TextRange::new(r.start, range.end)));
            continue;
        }
        if let Some(range) = run.take() {
            problems.push(unexpected(range, rope, language));
        }
        if child.is_missing() {
            problems.push(missing(child));
        } else {
            collect(child, context, problems, nesting + 1);
        }
    }
    if let Some(range) = run {
        problems.push(unexpected(range, rope, language));
    }
    if problems.len() == before {
        problems.push(unexpected(range_of(node, rope), rope, language));
    }
}

#[derive(Clone, Copy)]
struct Context<'a> {
    rope: &'a Rope,
    language: Language,
}

fn range_of(node: Node<'_>, rope: &Rope) -> TextRange {
    let len = rope.len_bytes();
    TextRange::new(node.start_byte().min(len), node.end_byte().min(len))
}

fn missing(node: Node<'_>) -> SyntaxProblem {
    let kind = node.kind();
    let what = if node.is_named() { kind.replace('_', " ") } else { format!("\"{kind}\"") };
    SyntaxProblem {
        range: TextRange::empty(node.start_byte()),
        kind: SyntaxErrorKind::Missing(kind.to_string()),
        message: format!("missing {what}"),
    }
}

fn unexpected(range: TextRange, rope: &Rope, language: Language) -> SyntaxProblem {
    let excerpt = excerpt(rope, range);
    let mut message =
        if excerpt.is_empty() { "syntax error".to_string() } else { format!("unexpected \"{excerpt}\"") };
    let text = rope.byte_slice(range.start..range.end).to_string();
    if let Some(hint) = bracket_hint(&text).or_else(|| block_header_hint(&text, language)) {
        message.push_str(": ");
        message.push_str(&hint);
    }
    SyntaxProblem { range, kind: SyntaxErrorKind::Unexpected, message }
}

/// Says which bracket is never closed (or closed by the wrong one) in skipped text, the most
/// common reason a construct cannot be parsed. Skips over string literals.
fn bracket_hint(text: &str) -> Option<String> {
    let mut open: Vec<char> = Vec::new();
    let mut quote: Option<char> = None;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if let Some(q) = quote {
            if c == '\\' {
                chars.next();
            } else if c == q || (c == '\n' && q != '`') {
                quote = None;
            }
            continue;
        }
        match c {
            '"' | '\'' | '`' => quote = Some(c),
            '#' => {
                // a comment (Python) runs to the end of the line
                for c in chars.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
            }
            '(' | '[' | '{' => open.push(c),
            ')' | ']' | '}' => {
                let expected = open.pop().map(closer);
                if expected != Some(c) {
                    return Some(match expected {
                        Some(expected) => format!("\"{c}\" where \"{expected}\" was expected"),
                        None => format!("\"{c}\" closes nothing"),
                    });
                }
            }
            _ => {}
        }
    }
    open.last().map(|&c| format!("\"{c}\" is never closed"))
}

fn closer(open: char) -> char {
    match open {
        '(' => ')',
        '[' => ']',
        _ => '}',
    }
}

/// A block header (Python's `if x`, `def f()`) whose line does not end with the `:` its
/// language asks for.
fn block_header_hint(text: &str, language: Language) -> Option<String> {
    let headers = language.spec()?.colon_headers;
    let line = text.lines().next()?.trim();
    let keyword = line.split(|c: char| !c.is_alphanumeric() && c != '_').next()?;
    (headers.contains(&keyword) && !line.ends_with(':'))
        .then(|| "expected \":\" at the end of the line".to_string())
}

/// The first non-blank line of `range`, trimmed and shortened.
fn excerpt(rope: &Rope, range: TextRange) -> String {
    let start = rope.byte_to_char(range.start);
    let end = rope.byte_to_char(range.end);
    let slice = rope.slice(start..end);
    let first_line =
        slice.lines().map(|line| line.to_string()).find(|line| !line.trim().is_empty()).unwrap_or_default();
    let trimmed = first_line.trim();
    let mut out: String = trimmed.chars().take(MAX_EXCERPT_CHARS).collect();
    if trimmed.chars().count() > MAX_EXCERPT_CHARS {
        out.push('…');
    }
    out.chars().map(|c| if c.is_control() { '\u{FFFD}' } else { c }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::SyntaxTree;
    use crate::text::{PositionEncoding, offset_to_line_col};

    /// Renders each problem as `line:col-line:col message` (1-based, columns in characters).
    fn check(language: Language, text: &str, expected: &str) {
        let rope = Rope::from_str(text);
        let tree = SyntaxTree::parse(language, &rope).unwrap().unwrap();
        let rendered: String = syntax_problems(tree.tree(), &rope, language)
            .iter()
            .map(|p| {
                let s = offset_to_line_col(&rope, p.range.start, PositionEncoding::Utf32);
                let e = offset_to_line_col(&rope, p.range.end, PositionEncoding::Utf32);
                format!("{}:{}-{}:{} {}\n", s.line + 1, s.col + 1, e.line + 1, e.col + 1, p.message)
            })
            .collect();
        assert_eq!(rendered, expected, "problems in:\n{text}");
    }

    #[test]
    fn clean_code_has_no_problems() {
        check(Language::Python, "def f(x):\n    return x\n", "");
        check(Language::Tsx, "const a = <div>{x}</div>;\n", "");
    }

    #[test]
    fn missing_tokens_are_named_at_their_position() {
        check(Language::TypeScript, "const a = foo(1, 2;\n", "1:19-1:19 missing \")\"\n");
        check(Language::TypeScript, "function f() {\n  return 1;\n", "2:12-2:12 missing \"}\"\n");
    }

    #[test]
    fn skipped_text_is_quoted_with_a_hint() {
        check(
            Language::Python,
            "if x\n    pass\n",
            "1:1-2:9 unexpected \"if x\": expected \":\" at the end of the line\n",
        );
        check(Language::Python, "print(\"hi\"))\n", "1:12-1:13 unexpected \")\": \")\" closes nothing\n");
        check(
            Language::Python,
            "def f(x:\n    return x\n\nclass A:\n    def g(self)\n        pass\n\nprint((1, 2)\n",
            "1:1-1:9 unexpected \"def f(x:\": \"(\" is never closed\n5:5-5:10 unexpected \"def g\": expected \":\" at the end of the line\n8:1-8:7 unexpected \"print(\": \"(\" is never closed\n",
        );
    }

    #[test]
    fn korean_and_emoji_do_not_shift_columns() {
        check(
            Language::Python,
            "s = '한국어 😀'\nx = (1,\n",
            "2:1-2:8 unexpected \"x = (1,\": \"(\" is never closed\n",
        );
    }

    #[test]
    fn bracket_hints_skip_strings_and_comments() {
        assert_eq!(bracket_hint("f(\")\" # (\n"), Some("\"(\" is never closed".to_string()));
        assert_eq!(bracket_hint("[1, 2}"), Some("\"}\" where \"]\" was expected".to_string()));
        assert_eq!(bracket_hint("x = 1 +"), None);
    }
}
