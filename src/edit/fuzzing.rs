//! The bodies of the fuzz targets in `fuzz/` (cargo-fuzz), kept here so the property tests
//! run them on every `cargo test` too: whatever the input, reading a reply, locating a
//! SEARCH and applying blocks never panic, and what they produce is consistent.

use super::{Block, apply_blocks, apply_edits, locate, minimal_edits, parse_reply};

/// Splits fuzz input into a document and a reply at the first NUL byte.
fn split(data: &[u8]) -> (String, String) {
    let cut = data.iter().position(|&b| b == 0).unwrap_or(data.len());
    let text = String::from_utf8_lossy(&data[..cut]).into_owned();
    let reply = String::from_utf8_lossy(data.get(cut + 1..).unwrap_or_default()).into_owned();
    (text, reply)
}

/// `parse_reply` on anything: every block it reads is made of the reply's own lines.
pub fn reply(data: &[u8]) {
    let reply = String::from_utf8_lossy(data);
    for block in parse_reply(&reply) {
        if let Block::SearchReplace { search, .. } = block {
            let normalized = reply.replace("\r\n", "\n");
            for line in search.lines().filter(|l| !l.trim().is_empty()) {
                // diff hunks drop their one-character prefix
                assert!(
                    normalized.contains(line) || normalized.contains(line.trim()),
                    "SEARCH line {line:?} is not in the reply"
                );
            }
        }
    }
}

/// `locate` on anything: a match lies inside the text on character boundaries.
pub fn locate_search(data: &[u8]) {
    let (text, search) = split(data);
    if let Ok(found) = locate(&text, &search, 0.8) {
        assert!(found.range.start <= found.range.end && found.range.end <= text.len());
        assert!(text.is_char_boundary(found.range.start) && text.is_char_boundary(found.range.end));
    }
}

/// `apply_blocks` then `minimal_edits` on anything: the edits rebuild exactly the new text.
pub fn apply(data: &[u8]) {
    let (text, reply) = split(data);
    let blocks = parse_reply(&reply);
    if let Ok(applied) = apply_blocks(&text, &blocks, 0.8) {
        let rebuilt = apply_edits(&text, &minimal_edits(&text, &applied.text));
        assert_eq!(rebuilt.as_deref(), Some(applied.text.as_str()));
    }
}
