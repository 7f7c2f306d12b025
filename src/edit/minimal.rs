//! Minimal edits: the new text as a few small replacements of the old one — a line diff,
//! then a character diff inside changed lines — so code the model did not mean to touch is
//! never rewritten, and the user's cursor and undo history survive.

use similar::{ChangeTag, DiffOp, TextDiff};

use crate::text::TextRange;

/// Edits that turn `old` into `new`: byte ranges of `old`, sorted, not overlapping. The
/// whole lines both texts begin and end with are left out of the diff: an edit of a few lines
/// in a long file costs those lines, not the file.
pub fn minimal_edits(old: &str, new: &str) -> Vec<(TextRange, String)> {
    let (head, tail) = common_lines(old, new);
    let edits = diff_edits(&old[head..old.len() - tail], &new[head..new.len() - tail]);
    edits
        .into_iter()
        .map(|(range, text)| (TextRange::new(range.start + head, range.end + head), text))
        .collect()
}

/// How many bytes of whole lines `old` and `new` begin with, and end with, in common (not
/// overlapping).
fn common_lines(old: &str, new: &str) -> (usize, usize) {
    let (a, b) = (old.as_bytes(), new.as_bytes());
    let same = common_prefix(a, b);
    // back to the start of the line the first difference is on
    let head = if same == a.len() && same == b.len() {
        same
    } else {
        a[..same].iter().rposition(|&c| c == b'\n').map_or(0, |n| n + 1)
    };
    let (a, b) = (&a[head..], &b[head..]);
    let same = common_suffix(a, b);
    // forward to the start of a line in both, within what they end with
    let starts_line = |text: &[u8], at: usize| at == 0 || text[at - 1] == b'\n';
    let tail =
        (0..=same).rev().find(|&n| starts_line(a, a.len() - n) && starts_line(b, b.len() - n)).unwrap_or(0);
    (head, tail)
}

/// Bytes compared a block at a time (a `memcmp` each) before one at a time: a small change
/// in a long file is found at memory speed.
const BLOCK: usize = 64;

/// How many bytes `a` and `b` begin with in common.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut same = 0;
    while same + BLOCK <= n && a[same..same + BLOCK] == b[same..same + BLOCK] {
        same += BLOCK;
    }
    same + a[same..n].iter().zip(&b[same..n]).take_while(|(x, y)| x == y).count()
}

/// How many bytes `a` and `b` end with in common.
fn common_suffix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut same = 0;
    while same + BLOCK <= n
        && a[a.len() - same - BLOCK..a.len() - same] == b[b.len() - same - BLOCK..b.len() - same]
    {
        same += BLOCK;
    }
    same + a[..a.len() - same]
        .iter()
        .rev()
        .zip(b[..b.len() - same].iter().rev())
        .take_while(|(x, y)| x == y)
        .count()
}

/// [`minimal_edits`] of two texts with no common whole lines at their ends.
fn diff_edits(old: &str, new: &str) -> Vec<(TextRange, String)> {
    let old_lines: Vec<&str> = old.split_inclusive('\n').collect();
    let new_lines: Vec<&str> = new.split_inclusive('\n').collect();
    let mut old_starts = Vec::with_capacity(old_lines.len() + 1);
    let mut offset = 0;
    for line in &old_lines {
        old_starts.push(offset);
        offset += line.len();
    }
    old_starts.push(offset);

    let diff = TextDiff::from_slices(&old_lines, &new_lines);
    let mut edits: Vec<(TextRange, String)> = Vec::new();
    // Positions come from walking the ops' lengths: after compaction similar can report an
    // insert's `old_index` inside a preceding delete (seen with similar 2.7), and the lengths
    // are what stay consistent.
    let (mut old_at, mut new_at) = (0, 0);
    for op in diff.ops() {
        let (old_len, new_len) = match *op {
            DiffOp::Equal { len, .. } => {
                old_at += len;
                new_at += len;
                continue;
            }
            DiffOp::Delete { old_len, .. } => (old_len, 0),
            DiffOp::Insert { new_len, .. } => (0, new_len),
            DiffOp::Replace { old_len, new_len, .. } => (old_len, new_len),
        };
        let (old_range, new_range) = (old_at..old_at + old_len, new_at..new_at + new_len);
        old_at += old_len;
        new_at += new_len;
        let start = old_starts[old_range.start];
        let old_region = &old[start..old_starts[old_range.end]];
        let new_region: String = new_lines[new_range].concat();
        edits.extend(refine(start, old_region, &new_region));
    }
    merge(edits)
}

/// Narrows one changed region to its changed characters, unless the two sides have little
/// in common (then the whole region is one clean replacement).
fn refine(start: usize, old: &str, new: &str) -> Vec<(TextRange, String)> {
    let whole = vec![(TextRange::new(start, start + old.len()), new.to_string())];
    if old.is_empty() || new.is_empty() {
        return whole;
    }
    let diff = TextDiff::from_chars(old, new);
    if diff.ratio() < 0.5 {
        return whole;
    }
    let mut edits = Vec::new();
    let mut old_at = start;
    let mut pending: Option<(usize, usize, String)> = None;
    for change in diff.iter_all_changes() {
        let value = change.value();
        match change.tag() {
            ChangeTag::Equal => {
                if let Some((s, e, text)) = pending.take() {
                    edits.push((TextRange::new(s, e), text));
                }
                old_at += value.len();
            }
            ChangeTag::Delete => {
                let entry = pending.get_or_insert((old_at, old_at, String::new()));
                entry.1 += value.len();
                old_at += value.len();
            }
            ChangeTag::Insert => {
                pending.get_or_insert((old_at, old_at, String::new())).2.push_str(value);
            }
        }
    }
    if let Some((s, e, text)) = pending {
        edits.push((TextRange::new(s, e), text));
    }
    edits
}

/// Joins edits that touch.
fn merge(edits: Vec<(TextRange, String)>) -> Vec<(TextRange, String)> {
    let mut out: Vec<(TextRange, String)> = Vec::with_capacity(edits.len());
    for (range, text) in edits {
        if let Some((last, last_text)) = out.last_mut()
            && last.end == range.start
        {
            last.end = range.end;
            last_text.push_str(&text);
            continue;
        }
        out.push((range, text));
    }
    out
}

/// Makes `edits` (byte ranges of `text`, sorted, not overlapping: what [`minimal_edits`]
/// returns) in `text`. `None` when an edit falls outside the text or inside a character.
pub fn apply_edits(text: &str, edits: &[(TextRange, String)]) -> Option<String> {
    let mut out = text.to_string();
    for (range, insert) in edits.iter().rev() {
        if range.start > range.end
            || range.end > out.len()
            || !out.is_char_boundary(range.start)
            || !out.is_char_boundary(range.end)
        {
            return None;
        }
        out.replace_range(range.start..range.end, insert);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn apply(old: &str, edits: &[(TextRange, String)]) -> String {
        apply_edits(old, edits).expect("edits inside the text")
    }

    #[test]
    fn a_whole_file_rewrite_that_changes_one_line_touches_only_that_line() {
        let old = "import os\n\ndef f(x):\n    return x +\n\nprint(f(1))\n";
        let new = "import os\n\ndef f(x):\n    return x + 1\n\nprint(f(1))\n";
        let edits = minimal_edits(old, new);
        assert_eq!(edits, vec![(TextRange::new(35, 35), " 1".to_string())]);
        assert_eq!(apply(old, &edits), new);
    }

    #[test]
    fn unrelated_lines_become_one_replacement() {
        let old = "a\nold line here\nz\n";
        let new = "a\ncompletely different\nz\n";
        assert_eq!(
            minimal_edits(old, new),
            vec![(TextRange::new(2, 16), "completely different\n".to_string())]
        );
    }

    #[test]
    fn korean_and_emoji_are_split_on_characters() {
        let old = "s = \"한국어 😀\"\n";
        let new = "s = \"한국 😀!\"\n";
        let edits = minimal_edits(old, new);
        assert_eq!(apply(old, &edits), new);
        assert!(edits.iter().all(|(r, _)| old.is_char_boundary(r.start) && old.is_char_boundary(r.end)));
    }

    #[test]
    fn common_ends_are_found_across_blocks() {
        let naive_prefix = |a: &[u8], b: &[u8]| a.iter().zip(b).take_while(|(x, y)| x == y).count();
        let naive_suffix =
            |a: &[u8], b: &[u8]| a.iter().rev().zip(b.iter().rev()).take_while(|(x, y)| x == y).count();
        for len in [0, 1, 63, 64, 65, 127, 128, 200] {
            let a: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
            for at in 0..len {
                let mut b = a.clone();
                b[at] = b'#';
                assert_eq!(common_prefix(&a, &b), naive_prefix(&a, &b), "{len} {at}");
                assert_eq!(common_suffix(&a, &b), naive_suffix(&a, &b), "{len} {at}");
                let longer = [a.as_slice(), b"tail"].concat();
                assert_eq!(common_prefix(&a, &longer), len);
                let longer = [b"head".as_slice(), &a].concat();
                assert_eq!(common_suffix(&a, &longer), len);
            }
        }
    }

    proptest! {
        #[test]
        fn edits_turn_old_into_new(old in "[a-c한😀 \n]{0,40}", new in "[a-c한😀 \n]{0,40}") {
            let edits = minimal_edits(&old, &new);
            prop_assert_eq!(apply(&old, &edits), new);
            for pair in edits.windows(2) {
                prop_assert!(pair[0].0.end < pair[1].0.start || (pair[0].0.end <= pair[1].0.start));
            }
        }
    }
}
