//! Applying a reply's blocks to one text, in order, each against the text the previous one
//! left; a reply with one block that fails applies none of them.

use super::locate::{MatchKind, locate};
use super::reply::Block;

/// The text after every block, and what was noticed on the way.
#[derive(Debug, Clone, PartialEq)]
pub struct Applied {
    pub text: String,
    /// Blocks that were already applied, fuzzy matches and the like, for the log and the
    /// next prompt.
    pub notes: Vec<String>,
}

/// Why a reply was not applied: which block (1-based) and the reason to send back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("block {block}: {reason}")]
pub struct ApplyError {
    pub block: usize,
    pub reason: String,
}

/// Applies `blocks` to `text` (all or nothing). `threshold` is the least similarity a fuzzy
/// match needs.
pub fn apply_blocks(text: &str, blocks: &[Block], threshold: f32) -> Result<Applied, ApplyError> {
    let crlf = text.contains("\r\n");
    let mut current = text.to_string();
    let mut notes = Vec::new();
    for (index, block) in blocks.iter().enumerate() {
        let number = index + 1;
        match block {
            Block::WholeFile { content, .. } => current = line_endings(content, crlf),
            Block::SearchReplace { search, replace, .. } => {
                if search.trim().is_empty() && current.trim().is_empty() {
                    current = line_endings(replace, crlf);
                    continue;
                }
                for (search, replace) in pieces(search, replace) {
                    current = replace_one(&current, &search, &replace, threshold, crlf, &mut notes)
                        .map_err(|reason| ApplyError { block: number, reason })?;
                }
            }
        }
    }
    Ok(Applied { text: current, notes })
}

/// A SEARCH with `...` lines standing for unchanged code is split there, and so is its
/// REPLACE, when both have the same number of them.
fn pieces(search: &str, replace: &str) -> Vec<(String, String)> {
    let is_elision = |line: &str| matches!(line.trim(), "..." | "# ..." | "// ...");
    let split = |text: &str| -> Vec<String> {
        let mut parts = vec![String::new()];
        for line in text.split_inclusive('\n') {
            if is_elision(line) {
                parts.push(String::new());
            } else if let Some(last) = parts.last_mut() {
                last.push_str(line);
            }
        }
        parts
    };
    let (searches, replaces) = (split(search), split(replace));
    if searches.len() > 1 && searches.len() == replaces.len() {
        searches
            .into_iter()
            .zip(replaces)
            .filter(|(s, r)| !(s.trim().is_empty() && r.trim().is_empty()))
            .collect()
    } else {
        vec![(search.to_string(), replace.to_string())]
    }
}

fn replace_one(
    text: &str,
    search: &str,
    replace: &str,
    threshold: f32,
    crlf: bool,
    notes: &mut Vec<String>,
) -> Result<String, String> {
    let located = match locate(text, search, threshold) {
        Ok(located) => located,
        Err(err) => {
            // the model repeating a change that is already there is not a failure
            if !replace.trim().is_empty() && locate(text, replace, 1.0).is_ok() {
                notes.push("a block was already applied".to_string());
                return Ok(text.to_string());
            }
            return Err(err.to_string());
        }
    };
    let mut replacement = match located.kind {
        MatchKind::Reindented { delta, unit } => reindent(replace, delta, unit),
        MatchKind::Fuzzy { similarity } => {
            let window = &text[located.range.start..located.range.end];
            verify_fuzzy(window, search, replace).map_err(|missing| {
                let first = text[..located.range.start].matches('\n').count() + 1;
                let last = first + window.trim_end_matches('\n').matches('\n').count();
                format!(
                    "this SEARCH only roughly matches lines {first}-{last} ({:.0}% alike), and {missing}, so it may be \
                     about other code; copy the SEARCH lines exactly from the current file",
                    similarity * 100.0
                )
            })?;
            notes.push(format!("a SEARCH matched {:.0}% alike lines", similarity * 100.0));
            replace.to_string()
        }
        _ => replace.to_string(),
    };
    // a match without its final newline (the search matched without it) keeps the text's
    let matched = &text[located.range.start..located.range.end];
    if !matched.ends_with('\n') && replacement.ends_with('\n') {
        replacement.pop();
    }
    let replacement = line_endings(&replacement, crlf);
    let mut out = String::with_capacity(text.len() + replacement.len());
    out.push_str(&text[..located.range.start]);
    out.push_str(&replacement);
    out.push_str(&text[located.range.end..]);
    Ok(out)
}

/// A fuzzy match is trusted only where it cannot be about other code: the lines the REPLACE
/// keeps as they are must be in the matched lines (in order, indentation aside), and when it
/// keeps none, the SEARCH's names must all be there. `Err`: what is not there.
fn verify_fuzzy(window: &str, search: &str, replace: &str) -> Result<(), String> {
    let diff = similar::TextDiff::from_lines(search, replace);
    let kept: Vec<&str> = diff
        .iter_all_changes()
        .filter(|c| c.tag() == similar::ChangeTag::Equal)
        .map(|c| c.value().trim())
        .filter(|l| !l.is_empty())
        .collect();
    let mut lines = window.lines().map(str::trim);
    for line in &kept {
        if !lines.any(|l| l == *line) {
            return Err(format!("the line it keeps, `{line}`, is not there"));
        }
    }
    if kept.is_empty() {
        // the names in code, not in a line's trailing comment, in order
        let names = |text: &str| -> Vec<String> {
            text.lines()
                .map(|line| line.split(" #").next().unwrap_or(line).split("//").next().unwrap_or(line))
                .flat_map(|code| code.split(|c: char| !(c.is_alphanumeric() || c == '_')))
                .filter(|w| w.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_'))
                .map(str::to_string)
                .collect()
        };
        let there = names(window);
        if let Some(name) = names(search).into_iter().find(|n| !there.contains(n)) {
            return Err(format!("`{name}` is not there"));
        }
    }
    Ok(())
}

/// Shifts every non-blank line by `delta` columns of `unit`.
fn reindent(text: &str, delta: isize, unit: char) -> String {
    text.split_inclusive('\n')
        .map(|line| {
            if line.trim().is_empty() {
                return line.to_string();
            }
            if delta > 0 {
                format!("{}{line}", unit.to_string().repeat(delta as usize))
            } else {
                // whitespace is cut by characters: an indent may hold multi-byte spaces
                let cut = line
                    .char_indices()
                    .take(delta.unsigned_abs())
                    .take_while(|(_, c)| c.is_whitespace() && *c != '\n')
                    .last()
                    .map_or(0, |(at, c)| at + c.len_utf8());
                line[cut..].to_string()
            }
        })
        .collect()
}

fn line_endings(text: &str, crlf: bool) -> String {
    if crlf { text.replace("\r\n", "\n").replace('\n', "\r\n") } else { text.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::edit::parse_reply;

    fn check(text: &str, reply: &str, expected: Result<&str, &str>) {
        let got = apply_blocks(text, &parse_reply(reply), 0.8);
        match (got, expected) {
            (Ok(applied), Ok(want)) => assert_eq!(applied.text, want, "{reply}"),
            (Err(err), Err(want)) => assert!(err.to_string().starts_with(want), "{err}"),
            (got, want) => panic!("{reply}\ngot {got:?}\nwanted {want:?}"),
        }
    }

    fn sr(search: &str, replace: &str) -> String {
        format!("<<<<<<< SEARCH\n{search}=======\n{replace}>>>>>>> REPLACE\n")
    }

    const CODE: &str = "class A:\n    def f(self):\n        return 1\n\n    def g(self):\n        return 2\n";

    #[test]
    fn a_table_of_replies() {
        // lost indentation is put back on the replacement
        check(
            CODE,
            &sr("def g(self):\n    return 2\n", "def g(self):\n    return 3\n"),
            Ok("class A:\n    def f(self):\n        return 1\n\n    def g(self):\n        return 3\n"),
        );
        // blocks apply in order, each on the text the last one left
        let two = format!(
            "{}{}",
            sr("        return 1\n", "        return 10\n"),
            sr("        return 10\n", "        return 11\n")
        );
        check(
            CODE,
            &two,
            Ok("class A:\n    def f(self):\n        return 11\n\n    def g(self):\n        return 2\n"),
        );
        // one failing block: nothing is applied
        let bad = format!("{}{}", sr("        return 1\n", "        return 10\n"), sr("missing\n", "x\n"));
        check(CODE, &bad, Err("block 2: this SEARCH matched nothing"));
        // in the file twice
        check("x = 1\nx = 1\n", &sr("x = 1\n", "x = 2\n"), Err("block 1: this SEARCH matches 2 places"));
        // a REPLACE already present is not an error
        check(CODE, &sr("        return 7\n", "        return 1\n"), Ok(CODE));
        // `...` elisions
        let elided =
            sr("    def f(self):\n...\n        return 2\n", "    def f(this):\n...\n        return 20\n");
        check(
            CODE,
            &elided,
            Ok("class A:\n    def f(this):\n        return 1\n\n    def g(self):\n        return 20\n"),
        );
        // an indent of multi-byte spaces is cut by characters, never inside one
        check(
            "if x:\n\u{a0}\u{a0}y = 1\n",
            &sr("\u{a0}\u{a0}\u{a0}y = 1\n", "\u{a0}\u{a0}\u{a0}y = 2\n"),
            Ok("if x:\n\u{a0}\u{a0}y = 2\n"),
        );
        // a CRLF file keeps its line endings
        check("a = 1\r\nb = 2\r\n", &sr("b = 2\n", "b = 3\nc = 4\n"), Ok("a = 1\r\nb = 3\r\nc = 4\r\n"));
        // a whole-file block
        check(CODE, "```python\nx = 1\n```\n", Ok("x = 1\n"));
    }

    const MEAN: &str =
        "def mean(values):\n    total = sum(values)\n    count = len(values)\n    return total / count\n";

    #[test]
    fn a_fuzzy_match_never_lands_on_other_code() {
        // a reply about `numbers`: the line it keeps is not in the file
        let about_numbers = sr(
            "def mean(numbers):\n    total = sum(numbers)\n    count = len(numbers)\n    return total / count\n",
            "def mean(numbers):\n    total = sum(numbers)\n    count = len(numbers)\n    return total / max(count, 1)\n",
        );
        check(MEAN, &about_numbers, Err("block 1: this SEARCH only roughly matches lines 1-4"));
        let got = apply_blocks(MEAN, &parse_reply(&about_numbers), 0.6).unwrap_err();
        assert!(got.reason.contains("`def mean(numbers):`"), "{got}");
        // a one-line change keeps nothing: its names must be there
        let one_line = sr("    count = len(numbers)   # how many\n", "    count = max(len(numbers), 1)\n");
        let got = apply_blocks(MEAN, &parse_reply(&one_line), 0.6).unwrap_err();
        assert!(got.reason.contains("`numbers` is not there"), "{got}");
        // a SEARCH off by a comment and a space, the kept lines there: applied
        check(
            MEAN,
            &sr(
                "def mean(values):\n    total = sum(values)  # all\n    count = len(values)\n    return total / count\n",
                "def mean(values):\n    total = sum(values)\n    count = len(values)\n    return total / max(count, 1)\n",
            ),
            Ok(
                "def mean(values):\n    total = sum(values)\n    count = len(values)\n    return total / max(count, 1)\n",
            ),
        );
    }
}
