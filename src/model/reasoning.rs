//! Reasoning is not the answer: what a model thinks before it answers, in `<think>` blocks
//! inside its content (Qwen3 and reasoning distills on a server without a reasoning parser),
//! kept apart from the text the agent reads actions and edits from. The fields servers put
//! reasoning in of their own (`reasoning_content`, Anthropic's `thinking` blocks, Ollama's
//! `thinking`) are read by each provider into the same place.

/// The tags thinking comes in.
const TAGS: [(&str, &str); 3] =
    [("<think>", "</think>"), ("<thinking>", "</thinking>"), ("<reasoning>", "</reasoning>")];

/// `(answer, reasoning)`: `text` without its thinking, and the thinking.
///
/// A block opens at the start of the text or of a line. An opening tag never closed (a reply
/// cut while thinking) makes the rest thinking. A closing tag with no opening one before it
/// at the end of a line (a chat template that opens the block in the prompt, as Qwen3's and
/// DeepSeek-R1's do) makes everything before it thinking.
pub fn split(text: &str) -> (String, String) {
    let mut answer = String::new();
    let mut reasoning = String::new();
    let mut rest = text;
    // the template opened the block: the reply starts inside it
    for (open, close) in TAGS {
        if let Some(at) = ends_a_line(rest, close)
            && !rest[..at].contains(open)
        {
            reasoning.push_str(rest[..at].trim());
            rest = &rest[at + close.len()..];
            break;
        }
    }
    while let Some((start, open, close)) = next_open(rest) {
        answer.push_str(&rest[..start]);
        let inside = &rest[start + open.len()..];
        let (thought, after) = match inside.find(close) {
            Some(end) => (&inside[..end], &inside[end + close.len()..]),
            None => (inside, ""),
        };
        if !reasoning.is_empty() {
            reasoning.push('\n');
        }
        reasoning.push_str(thought.trim());
        rest = after;
    }
    answer.push_str(rest);
    let answer = if reasoning.is_empty() { answer } else { answer.trim().to_string() };
    (answer, reasoning)
}

/// Where `tag` first ends a line of `text` (nothing but spaces after it on that line).
fn ends_a_line(text: &str, tag: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(at) = text[from..].find(tag).map(|i| from + i) {
        let line_end = text[at..].find('\n').map_or(text.len(), |i| at + i);
        if text[at + tag.len()..line_end].trim().is_empty() {
            return Some(at);
        }
        from = at + tag.len();
    }
    None
}

/// The first opening tag at the start of `text` or of a line: its offset and its tags.
fn next_open(text: &str) -> Option<(usize, &'static str, &'static str)> {
    TAGS.iter()
        .filter_map(|&(open, close)| {
            let mut from = 0;
            while let Some(at) = text[from..].find(open).map(|i| from + i) {
                let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
                if text[line_start..at].trim().is_empty() {
                    return Some((at, open, close));
                }
                from = at + open.len();
            }
            None
        })
        .min_by_key(|(at, ..)| *at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thinking_is_kept_apart_from_the_answer() {
        let call = r#"{"name": "delete", "arguments": {"path": "test_models.py"}}"#;
        // Qwen3 on llama.cpp without a reasoning parser: it considers a delete, then reads
        let reply = format!("<think>\nMaybe {call}? No, keep the tests.\n</think>\n\nI will read it first.");
        let (answer, reasoning) = split(&reply);
        assert_eq!(answer, "I will read it first.");
        assert!(reasoning.contains("delete") && !answer.contains("delete"));
        // the template opened the block: only its end is in the reply
        let (answer, reasoning) = split("the user wants a method\n</think>\nDone.");
        assert_eq!((answer.as_str(), reasoning.as_str()), ("Done.", "the user wants a method"));
        let (answer, reasoning) = split("so: read it.</think>\n\nDone.");
        assert_eq!((answer.as_str(), reasoning.as_str()), ("Done.", "so: read it."));
        // cut while thinking: nothing of it is the answer
        let (answer, reasoning) = split(&format!("<think>first {call}"));
        assert_eq!(answer, "");
        assert!(reasoning.contains("delete"));
        // several blocks, other tags
        let (answer, reasoning) = split("<thinking>a</thinking>\none\n<reasoning>b</reasoning>\ntwo");
        assert_eq!(answer, "one\n\ntwo");
        assert_eq!(reasoning, "a\nb");
        // a tag inside a line is text (an edit of an XML file, say), and text without any
        // thinking is left exactly as it was
        let edit = "  x = \"<think>\"\n  y = \"</think>\"\n";
        assert_eq!(split(edit), (edit.to_string(), String::new()));
        assert_eq!(split("  plain\n"), ("  plain\n".to_string(), String::new()));
    }
}
