//! Fitting a prompt into the model's context: when the server says a prompt is too long, the
//! workspace view is cut — the files ranked last leave first — to what the context length the
//! server named leaves, or to half when it named none; the reply's room is kept within a
//! quarter of that context. The length is remembered for the endpoint, so later prompts are cut
//! before they are sent. What cannot fit even without the view is said in one sentence.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::model::estimate_tokens;
use crate::sync::lock;

/// The context lengths servers named in this process, by endpoint: later prompts to them are
/// fitted before they are sent.
static LEARNED: Mutex<Option<HashMap<String, u32>>> = Mutex::new(None);

/// Remembers the context length `endpoint` named.
pub fn learn(endpoint: &str, limit: u32) {
    lock(&LEARNED).get_or_insert_with(HashMap::new).insert(endpoint.to_string(), limit);
}

/// The context length `endpoint` named before, if it did.
pub fn learned(endpoint: &str) -> Option<u32> {
    lock(&LEARNED).as_ref().and_then(|known| known.get(endpoint).copied())
}

/// Whether a prompt of `prompt` tokens with `room` for the reply is over what a context of
/// `limit` tokens is counted on to hold (estimates can be a quarter short).
pub fn over(limit: u32, prompt: u32, room: u32) -> bool {
    left(limit, prompt, room) == 0
}

/// How many times one request is made smaller before its step gives up.
pub const MAX_FITS: u32 = 3;
/// The least room a reply is left with.
const MIN_ROOM: u32 = 256;

/// `view` cut at a line boundary to about `tokens` tokens, saying that the rest was left out.
pub fn cut_view(view: &str, tokens: u32) -> String {
    let total = estimate_tokens(view);
    if total <= tokens {
        return view.to_string();
    }
    let budget = usize::try_from(tokens).unwrap_or(usize::MAX).saturating_mul(crate::text::CHARS_PER_TOKEN);
    let mut out = String::new();
    for line in view.split_inclusive('\n') {
        if out.chars().count() + line.chars().count() > budget {
            break;
        }
        out.push_str(line);
    }
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&format!(
        "(the rest of the workspace view, about {} tokens, was left out to fit the model's context; read or search for what you need)\n",
        total.saturating_sub(estimate_tokens(&out))
    ));
    out
}

/// The tokens the workspace view may have: what the context `limit` leaves after `rest` (the
/// rest of the prompt) and `room` (the reply), with a quarter kept back because tokens are only
/// estimated — and, as the prompt was refused, less than the `current` view either way.
pub fn view_budget(limit: Option<u32>, rest: u32, room: u32, current: u32) -> u32 {
    let half = current / 2;
    match limit {
        Some(limit) => left(limit, rest, room).min(half),
        None => half,
    }
}

/// What a context of `limit` tokens is counted on to leave after `rest` and `room`.
pub fn left(limit: u32, rest: u32, room: u32) -> u32 {
    (limit / 4 * 3).saturating_sub(rest).saturating_sub(room)
}

/// `view` cut to `budget` tokens (nothing at all for none); returns its tokens before and after.
pub fn shrink(view: &mut String, budget: u32) -> (u32, u32) {
    let before = estimate_tokens(view);
    *view = if budget == 0 { String::new() } else { cut_view(view, budget) };
    (before, estimate_tokens(view))
}

/// The reply's room in a context of `limit` tokens: at most a quarter of it (a server that
/// counts the reply in the context, as vLLM does, refuses more), never less than a little.
pub fn room_within(limit: Option<u32>, room: u32) -> u32 {
    match limit {
        Some(limit) => room.min((limit / 4).max(MIN_ROOM)),
        None => room,
    }
}

/// The sentence for a prompt that does not fit even without the workspace view.
pub fn too_small(limit: Option<u32>, rest: u32) -> String {
    let context = limit.map_or_else(|| "context".to_string(), |l| format!("context of {l} tokens"));
    format!(
        "the model's {context} is too small for this step's instructions, tools and history (about {rest} tokens without any workspace view): give the server a larger context (llama.cpp: --ctx-size 8192; Ollama: num_ctx)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_view_is_cut_at_lines_and_says_so() {
        let view: String = (0..100).map(|i| format!("file_{i:03}.py: def f_{i}(): ...\n")).collect();
        let cut = cut_view(&view, 50);
        assert!(cut.starts_with("file_000.py"), "{cut}");
        assert!(cut.lines().all(|l| l.starts_with("file_") || l.starts_with("(the rest")), "{cut}");
        assert!(estimate_tokens(&cut) < 100, "{}", estimate_tokens(&cut));
        assert!(cut.contains("was left out to fit the model's context"));
        assert_eq!(cut_view("small\n", 50), "small\n");
        // nothing fits: only the sentence
        assert!(cut_view(&view, 0).starts_with("(the rest of the workspace view"));
    }

    #[test]
    fn the_budget_is_what_the_named_context_leaves() {
        // 2 048 tokens: 1 536 counted on, less 500 of the rest and 256 of room
        assert_eq!(view_budget(Some(2048), 500, 256, 4000), 780);
        // never more than half of what was refused
        assert_eq!(view_budget(Some(100_000), 500, 256, 1000), 500);
        assert_eq!(view_budget(None, 500, 256, 1000), 500);
        assert_eq!(view_budget(Some(1024), 900, 256, 1000), 0);
        assert_eq!(room_within(Some(2048), 2048), 512);
        assert_eq!(room_within(Some(512), 2048), 256);
        assert_eq!(room_within(None, 2048), 2048);
        assert!(too_small(Some(2048), 2500).contains("context of 2048 tokens"));
    }
}
