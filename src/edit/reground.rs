//! Re-grounding (SPEC E4): edits computed on one text, moved onto the text the user has made
//! of it since. Edits the user's changes do not touch move with the text; an edit whose lines
//! the user changed is a conflict, never forced.

use crate::edit::minimal_edits;
use crate::text::TextRange;

/// The user changed text the fix changes too.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the document changed where the fix goes (bytes {}..{} of the text the fix was made for)", .at.start, .at.end)]
pub struct Conflict {
    pub at: TextRange,
}

/// `edits` (sorted, in bytes of `base`) moved onto `current`, which the user made from
/// `base`. An edit conflicts with a user change on the same line or touching it.
pub fn reground(
    base: &str,
    current: &str,
    edits: &[(TextRange, String)],
) -> Result<Vec<(TextRange, String)>, Conflict> {
    if base == current {
        return Ok(edits.to_vec());
    }
    let theirs = minimal_edits(base, current);
    let mut moved = Vec::with_capacity(edits.len());
    for (range, text) in edits {
        let ours = line_span(base, *range);
        let mut delta: isize = 0;
        for (their, inserted) in &theirs {
            let span = line_span(base, *their);
            if span.start <= ours.end && ours.start <= span.end {
                return Err(Conflict { at: *range });
            }
            if their.end <= range.start {
                delta += inserted.len() as isize - their.len() as isize;
            }
        }
        let shift = |offset: usize| offset.saturating_add_signed(delta);
        moved.push((TextRange::new(shift(range.start), shift(range.end)), text.clone()));
    }
    Ok(moved)
}

/// The whole lines `range` lies on, so that changes on the same line count as touching.
fn line_span(text: &str, range: TextRange) -> TextRange {
    let start = text[..range.start.min(text.len())].rfind('\n').map_or(0, |i| i + 1);
    let end = text[range.end.min(text.len())..].find('\n').map_or(text.len(), |i| range.end + i);
    TextRange::new(start, end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apply(text: &str, edits: &[(TextRange, String)]) -> String {
        crate::edit::apply_edits(text, edits).expect("edits inside the text")
    }

    #[test]
    fn edits_move_past_typing_elsewhere() {
        let base = "def f():\n    return g(1\n\nx = 1\n";
        let fixed = "def f():\n    return g(1)\n\nx = 1\n";
        let ours = minimal_edits(base, fixed);
        // the user typed at the top and at the bottom meanwhile
        let current = "# note\ndef f():\n    return g(1\n\nx = 12\n";
        let moved = reground(base, current, &ours).unwrap();
        assert_eq!(apply(current, &moved), "# note\ndef f():\n    return g(1)\n\nx = 12\n");
    }

    #[test]
    fn typing_on_the_lines_the_fix_changes_is_a_conflict() {
        let base = "a = 1\nb = (2\nc = 3\n";
        let ours = minimal_edits(base, "a = 1\nb = (2)\nc = 3\n");
        let current = "a = 1\nb = (2 + x\nc = 3\n";
        assert!(reground(base, current, &ours).is_err());
        // unchanged text: the edits as they are
        assert_eq!(reground(base, base, &ours).unwrap(), ours);
    }
}
