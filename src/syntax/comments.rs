//! `TODO` and `FIXME` comments: the one on a line, with the comment lines that continue it —
//! what "Implement with Tokamak" offers to do.

use ropey::Rope;
use tree_sitter::Tree;

/// The markers looked for, as whole words.
const MARKERS: &[&str] = &["TODO", "FIXME"];

/// Comment starts recognised on lines Tokamak does not parse (and to find continuation lines).
const COMMENT_STARTS: &[&str] = &["//", "/*", "#", "--", ";", "*", "<!--"];

/// Lines after the marker's own that are read as its continuation, at most.
const MAX_CONTINUATION_LINES: usize = 10;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TodoComment {
    /// `TODO` or `FIXME`.
    pub marker: &'static str,
    /// What it asks for: the words after the marker (and its `(owner)` and `:`), with its
    /// continuation lines joined by spaces; may be empty.
    pub text: String,
    /// The comment's first and last line, 0-based.
    pub lines: (usize, usize),
}

/// The `TODO`/`FIXME` comment on `line`, if there is one. With a syntax tree the marker must
/// sit in a comment node; without one, after a comment start on that line.
pub fn todo_comment(tree: Option<&Tree>, rope: &Rope, line: usize) -> Option<TodoComment> {
    if line >= rope.len_lines() {
        return None;
    }
    let text = rope.line(line).to_string();
    let (at, marker) = find_marker(&text)?;
    let before = &text[..at];
    let in_comment = match tree {
        Some(tree) => {
            let offset = rope.line_to_byte(line) + at;
            let mut node = tree.root_node().descendant_for_byte_range(offset, offset + marker.len());
            let mut found = false;
            while let Some(n) = node {
                if n.kind().contains("comment") {
                    found = true;
                    break;
                }
                node = n.parent();
            }
            found
        }
        None => COMMENT_STARTS.iter().any(|start| before.contains(start)),
    };
    if !in_comment {
        return None;
    }
    let mut words = vec![rest_after_marker(&text[at + marker.len()..])];
    // the comment start used on the marker's line, for its continuation lines
    let start = comment_start(before);
    let mut last = line;
    if let Some(start) = start {
        let continuation = if start == "/*" { "*" } else { start };
        while last + 1 < rope.len_lines() && last - line < MAX_CONTINUATION_LINES {
            let next = rope.line(last + 1).to_string();
            let trimmed = next.trim_start();
            let Some(body) = trimmed.strip_prefix(continuation) else { break };
            let body = strip_comment_end(body).trim();
            if body.is_empty() || body.starts_with('/') || find_marker(body).is_some() {
                break;
            }
            words.push(body.to_string());
            last += 1;
        }
    }
    let text = words.into_iter().filter(|w| !w.is_empty()).collect::<Vec<_>>().join(" ");
    Some(TodoComment { marker, text, lines: (line, last) })
}

/// The first marker in `text` that stands as a word, and where.
fn find_marker(text: &str) -> Option<(usize, &'static str)> {
    let bytes = text.as_bytes();
    MARKERS
        .iter()
        .filter_map(|marker| {
            text.match_indices(marker)
                .find(|(at, _)| {
                    let before = at.checked_sub(1).map(|i| bytes[i]);
                    let after = bytes.get(at + marker.len()).copied();
                    let word = |b: Option<u8>| b.is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_');
                    !word(before) && !word(after)
                })
                .map(|(at, _)| (at, *marker))
        })
        .min_by_key(|(at, _)| *at)
}

/// The words after a marker: an `(owner)` and a `:` or `-` are dropped, and a comment's end.
fn rest_after_marker(rest: &str) -> String {
    let mut rest = rest.trim_start();
    if rest.starts_with('(')
        && let Some(close) = rest.find(')')
    {
        rest = &rest[close + 1..];
    }
    let rest = rest.trim_start().trim_start_matches([':', '-', '!']).trim();
    strip_comment_end(rest).trim().to_string()
}

fn strip_comment_end(text: &str) -> &str {
    let text = text.trim_end();
    text.strip_suffix("*/").or_else(|| text.strip_suffix("-->")).unwrap_or(text)
}

/// The comment start closest before the marker on its line.
fn comment_start(before: &str) -> Option<&'static str> {
    COMMENT_STARTS
        .iter()
        .filter_map(|start| before.rfind(start).map(|at| (at, *start)))
        .max_by_key(|(at, start)| {
            // `//` over `/`-less starts at the same place; the longest start at the latest place
            (*at + start.len(), start.len())
        })
        .map(|(_, start)| start)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::SyntaxTree;
    use crate::text::Language;

    fn todo(language: Language, text: &str, line: usize) -> Option<TodoComment> {
        let rope = Rope::from_str(text);
        let tree = SyntaxTree::parse(language, &rope).ok().flatten();
        todo_comment(tree.as_ref().map(SyntaxTree::tree), &rope, line)
    }

    #[test]
    fn todo_comments_are_read_with_their_continuation() {
        let python = "class User:\n    # TODO(ada): validate the email\n    # before saving it\n    def save(self):\n        pass  # FIXME: do it\n";
        assert_eq!(
            todo(Language::Python, python, 1),
            Some(TodoComment {
                marker: "TODO",
                text: "validate the email before saving it".into(),
                lines: (1, 2)
            })
        );
        assert_eq!(
            todo(Language::Python, python, 4).map(|t| (t.marker, t.text)),
            Some(("FIXME", "do it".into()))
        );
        assert_eq!(todo(Language::Python, python, 3), None);
        // in a string it is not a comment
        assert_eq!(todo(Language::Python, "x = \"TODO: not me\"\n", 0), None);
        // words that contain the marker are not it
        assert_eq!(todo(Language::Python, "# TODOS and FIXMEs\n", 0), None);
        let ts = "/* TODO: parse the header\n * and the body */\nlet x = 1; // TODO\n";
        assert_eq!(
            todo(Language::TypeScript, ts, 0),
            Some(TodoComment { marker: "TODO", text: "parse the header and the body".into(), lines: (0, 1) })
        );
        assert_eq!(todo(Language::TypeScript, ts, 2).map(|t| t.text), Some(String::new()));
        // unparsed text: after a comment start
        assert_eq!(
            todo(Language::PlainText, "-- TODO: index it\n", 0).map(|t| t.text),
            Some("index it".into())
        );
        assert_eq!(todo(Language::PlainText, "TODO list\n", 0), None);
        // past the end
        assert_eq!(todo(Language::Python, "# TODO: x\n", 9), None);
    }
}
