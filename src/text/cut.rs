//! Long text cut for the model: the head and the tail kept, the middle replaced by a marker
//! saying how much was left out.

/// Characters a model's token is counted as, where a server does not say (the estimate every
/// budget and every prompt size in Tokamak uses).
pub const CHARS_PER_TOKEN: usize = 4;

/// `text` if it fits in `max_bytes`; otherwise its first and last parts (cut at line breaks
/// where one is near, never inside a character) with a marker between them.
pub fn cut(text: &str, max_bytes: usize) -> String {
    if text.len() <= max_bytes {
        return text.to_string();
    }
    let budget = max_bytes.saturating_sub(80).max(16);
    let head_len = budget * 2 / 5;
    let tail_len = budget - head_len;
    let mut head_end = floor_char(text, head_len);
    if let Some(newline) = text[..head_end].rfind('\n').filter(|&at| at * 2 > head_end) {
        head_end = newline + 1;
    }
    let mut tail_start = ceil_char(text, text.len() - tail_len);
    if let Some(newline) = text[tail_start..].find('\n').filter(|&at| at * 2 < text.len() - tail_start) {
        tail_start += newline + 1;
    }
    let tail_start = tail_start.max(head_end);
    let cut_part = &text[head_end..tail_start];
    format!(
        "{}[… {} bytes ({} lines) cut …]\n{}",
        &text[..head_end],
        cut_part.len(),
        cut_part.matches('\n').count(),
        &text[tail_start..]
    )
}

fn floor_char(text: &str, mut at: usize) -> usize {
    at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn ceil_char(text: &str, mut at: usize) -> usize {
    at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at += 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_head_and_tail_and_says_what_was_cut() {
        assert_eq!(cut("short", 100), "short");
        let text: String = (0..1000).map(|i| format!("line {i}\n")).collect();
        let out = cut(&text, 500);
        assert!(out.len() < 600, "{}", out.len());
        assert!(out.starts_with("line 0\n") && out.ends_with("line 999\n"), "{out}");
        let marker = out.lines().find(|l| l.starts_with("[… ")).unwrap();
        assert!(marker.contains("bytes (") && marker.contains("lines) cut"), "{marker}");
        // every kept line is whole
        assert!(out.lines().filter(|l| !l.starts_with('[')).all(|l| l.starts_with("line ")), "{out}");
        // never inside a character
        let korean = "가".repeat(500);
        let out = cut(&korean, 200);
        assert!(out.contains("cut"));
    }
}
