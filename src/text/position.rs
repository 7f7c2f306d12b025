//! Positions and their encodings: byte offsets inside, `(line, column)` in an encoding outside.
//!
//! The rest of the crate works with byte offsets into a document's rope. Editors speak
//! `(line, character)` where `character` counts UTF-16 code units, UTF-8 bytes or Unicode
//! scalar values, as negotiated at `initialize`. This module converts between the two and
//! clamps what is out of range, as the LSP specification asks:
//!
//! > If the character value is greater than the line length it defaults back to the line
//! > length.
//!
//! A line past the end of the document clamps to the end of the document; a column inside a
//! multi-byte character (the middle of a UTF-16 surrogate pair, say) snaps back to the start
//! of that character. The line terminator (`\n`, `\r\n` or `\r`) is not part of a line's
//! length, so no position can point between `\r` and `\n`.

use ropey::Rope;

/// How the `character` of a position is counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum PositionEncoding {
    /// UTF-8 code units (bytes).
    Utf8,
    /// UTF-16 code units: the LSP default, and what JavaScript and TypeScript count.
    #[default]
    Utf16,
    /// Unicode scalar values (characters).
    Utf32,
}

impl PositionEncoding {
    /// The name LSP uses for this encoding (`"utf-8"`, `"utf-16"`, `"utf-32"`).
    pub fn lsp_name(self) -> &'static str {
        match self {
            PositionEncoding::Utf8 => "utf-8",
            PositionEncoding::Utf16 => "utf-16",
            PositionEncoding::Utf32 => "utf-32",
        }
    }

    /// Chooses the encoding from what the client offers: UTF-8 when it is offered (no
    /// conversion needed inside), else UTF-16, which every client must support.
    pub fn negotiate<'a>(offered: impl IntoIterator<Item = &'a str>) -> PositionEncoding {
        if offered.into_iter().any(|name| name == "utf-8") {
            PositionEncoding::Utf8
        } else {
            PositionEncoding::Utf16
        }
    }
}

/// A zero-based `(line, column)` pair whose column is counted in some [`PositionEncoding`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct LineCol {
    pub line: u32,
    pub col: u32,
}

impl LineCol {
    pub const fn new(line: u32, col: u32) -> LineCol {
        LineCol { line, col }
    }
}

/// A byte offset that came from a `(line, column)`, and whether it had to be clamped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resolved {
    pub offset: usize,
    pub clamped: bool,
}

/// The byte length of `line`'s content, without its terminator.
fn line_content_bytes(rope: &Rope, line: usize) -> usize {
    let slice = rope.line(line);
    let len = slice.len_bytes();
    let mut content = len;
    // A rope line ends in at most one terminator: "\r\n", "\n" or "\r".
    if content > 0 && slice.byte(content - 1) == b'\n' {
        content -= 1;
    }
    if content > 0 && slice.byte(content - 1) == b'\r' {
        content -= 1;
    }
    content
}

/// Converts a byte offset into `(line, column)`. An offset past the end is treated as the
/// end; an offset inside a character as that character's start.
pub fn offset_to_line_col(rope: &Rope, offset: usize, encoding: PositionEncoding) -> LineCol {
    let offset = offset.min(rope.len_bytes());
    let char_idx = rope.byte_to_char(offset);
    let line = rope.char_to_line(char_idx);
    let line_start_char = rope.line_to_char(line);
    let col = match encoding {
        PositionEncoding::Utf8 => rope.char_to_byte(char_idx) - rope.line_to_byte(line),
        PositionEncoding::Utf16 => rope.char_to_utf16_cu(char_idx) - rope.char_to_utf16_cu(line_start_char),
        PositionEncoding::Utf32 => char_idx - line_start_char,
    };
    LineCol::new(saturate(line), saturate(col))
}

/// Converts `(line, column)` into a byte offset, clamping as the LSP specification asks.
pub fn line_col_to_offset(rope: &Rope, position: LineCol, encoding: PositionEncoding) -> Resolved {
    let line = position.line as usize;
    if line >= rope.len_lines() {
        return Resolved { offset: rope.len_bytes(), clamped: true };
    }
    let line_start_byte = rope.line_to_byte(line);
    let content_bytes = line_content_bytes(rope, line);
    let line_end_byte = line_start_byte + content_bytes;
    let col = position.col as usize;
    let (offset, clamped) = match encoding {
        PositionEncoding::Utf8 => {
            let wanted = line_start_byte + col;
            if wanted > line_end_byte {
                (line_end_byte, true)
            } else {
                // Snap back to the start of the character the byte belongs to.
                let snapped = rope.char_to_byte(rope.byte_to_char(wanted));
                (snapped, snapped != wanted)
            }
        }
        PositionEncoding::Utf16 => {
            let start_char = rope.line_to_char(line);
            let start_cu = rope.char_to_utf16_cu(start_char);
            let end_cu = rope.char_to_utf16_cu(rope.byte_to_char(line_end_byte));
            let wanted = start_cu + col;
            if wanted > end_cu {
                (line_end_byte, true)
            } else {
                let char_idx = rope.utf16_cu_to_char(wanted);
                let snapped_cu = rope.char_to_utf16_cu(char_idx);
                (rope.char_to_byte(char_idx), snapped_cu != wanted)
            }
        }
        PositionEncoding::Utf32 => {
            let start_char = rope.line_to_char(line);
            let end_char = rope.byte_to_char(line_end_byte);
            let wanted = start_char + col;
            if wanted > end_char { (line_end_byte, true) } else { (rope.char_to_byte(wanted), false) }
        }
    };
    Resolved { offset, clamped }
}

fn saturate(value: usize) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use PositionEncoding::{Utf8, Utf16, Utf32};

    /// `(text, byte offset, encoding) => (line, col)`, and back again.
    #[test]
    fn offset_to_line_col_table() {
        let cases: &[(&str, usize, PositionEncoding, (u32, u32))] = &[
            // ASCII
            ("hello\nworld", 0, Utf16, (0, 0)),
            ("hello\nworld", 5, Utf16, (0, 5)),
            ("hello\nworld", 6, Utf16, (1, 0)),
            ("hello\nworld", 11, Utf8, (1, 5)),
            // Korean: three bytes, one UTF-16 unit, one char each
            ("한국어 x", 3, Utf8, (0, 3)),
            ("한국어 x", 3, Utf16, (0, 1)),
            ("한국어 x", 10, Utf16, (0, 4)),
            ("한국어 x", 10, Utf32, (0, 4)),
            // emoji: four bytes, two UTF-16 units (a surrogate pair), one char
            ("a😀b", 5, Utf8, (0, 5)),
            ("a😀b", 5, Utf16, (0, 3)),
            ("a😀b", 5, Utf32, (0, 2)),
            // an offset inside the emoji snaps to its start
            ("a😀b", 3, Utf16, (0, 1)),
            // CRLF: the terminator belongs to the line before
            ("ab\r\ncd", 4, Utf16, (1, 0)),
            ("ab\r\ncd", 6, Utf16, (1, 2)),
            // a lone CR is a line break in LSP
            ("ab\rcd", 3, Utf16, (1, 0)),
            // empty document
            ("", 0, Utf16, (0, 0)),
            // past the end clamps to the end
            ("ab\n", 99, Utf16, (1, 0)),
        ];
        for &(text, offset, encoding, (line, col)) in cases {
            let rope = Rope::from_str(text);
            assert_eq!(
                offset_to_line_col(&rope, offset, encoding),
                LineCol::new(line, col),
                "{text:?} offset {offset} in {encoding:?}"
            );
        }
    }

    type PositionCase<'a> = (&'a str, (u32, u32), PositionEncoding, (usize, bool));

    /// `(text, (line, col), encoding) => (byte offset, clamped)`.
    #[test]
    fn line_col_to_offset_table() {
        let cases: &[PositionCase<'_>] = &[
            ("hello\nworld", (1, 2), Utf16, (8, false)),
            ("hello\nworld", (0, 5), Utf8, (5, false)),
            // column past the line's end clamps to the end of its content
            ("hello\nworld", (0, 99), Utf16, (5, true)),
            // line past the end clamps to the end of the document
            ("hello\nworld", (7, 0), Utf16, (11, true)),
            ("hello\nworld", (u32::MAX, u32::MAX), Utf8, (11, true)),
            // Korean
            ("한국어 x", (0, 1), Utf16, (3, false)),
            ("한국어 x", (0, 3), Utf8, (3, false)),
            ("한국어 x", (0, 4), Utf8, (3, true)), // inside '국': snaps back
            ("한국어 x", (0, 5), Utf32, (11, false)),
            ("한국어 x", (0, 6), Utf32, (11, true)), // past the end
            // emoji
            ("a😀b", (0, 3), Utf16, (5, false)),
            ("a😀b", (0, 2), Utf16, (1, true)), // between the surrogates: snaps back
            ("a😀b", (0, 2), Utf32, (5, false)),
            // CRLF: no position lands between \r and \n
            ("ab\r\ncd", (0, 3), Utf16, (2, true)),
            ("ab\r\ncd", (1, 1), Utf16, (5, false)),
            ("ab\rcd", (1, 1), Utf8, (4, false)),
            // empty document and the empty last line after a newline
            ("", (0, 0), Utf16, (0, false)),
            ("", (0, 5), Utf16, (0, true)),
            ("ab\n", (1, 0), Utf16, (3, false)),
        ];
        for &(text, (line, col), encoding, (offset, clamped)) in cases {
            let rope = Rope::from_str(text);
            assert_eq!(
                line_col_to_offset(&rope, LineCol::new(line, col), encoding),
                Resolved { offset, clamped },
                "{text:?} ({line}, {col}) in {encoding:?}"
            );
        }
    }

    #[test]
    fn every_char_boundary_round_trips_in_every_encoding() {
        let text = "def 함수(x):\r\n    return '😀'\n\rlast";
        let rope = Rope::from_str(text);
        for (offset, _) in text.char_indices().chain([(text.len(), ' ')]) {
            // offsets inside a line terminator pair are not positions
            if offset > 0 && text.as_bytes()[offset - 1] == b'\r' && text[offset..].starts_with('\n') {
                continue;
            }
            for encoding in [Utf8, Utf16, Utf32] {
                let position = offset_to_line_col(&rope, offset, encoding);
                let back = line_col_to_offset(&rope, position, encoding);
                assert_eq!(back, Resolved { offset, clamped: false }, "{offset} {encoding:?}");
            }
        }
    }

    #[test]
    fn negotiation_prefers_utf8_and_falls_back_to_utf16() {
        assert_eq!(PositionEncoding::negotiate(["utf-16", "utf-8"]), Utf8);
        assert_eq!(PositionEncoding::negotiate(["utf-32", "utf-16"]), Utf16);
        assert_eq!(PositionEncoding::negotiate([]), Utf16);
    }
}
