//! Token usage: as the server reports it, or estimated when it reports none; and per-run
//! totals the agent's guards read.

use std::sync::Mutex;

use crate::sync::lock;

/// Tokens are estimated as one per four characters, rounded up — the usual rule of thumb
/// for English and code; used only when the server reports no usage, and marked so.
pub fn estimate_tokens(text: &str) -> u32 {
    u32::try_from(text.chars().count().div_ceil(crate::text::CHARS_PER_TOKEN)).unwrap_or(u32::MAX)
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub prompt_tokens: u32,
    pub completion_tokens: u32,
    /// Of `prompt_tokens`, those the server read from its cache of an earlier prompt's prefix
    /// (OpenAI's `prompt_tokens_details.cached_tokens`, llama.cpp's `timings.cache_n`,
    /// Anthropic's `cache_read_input_tokens`); 0 when it does not say.
    pub cached_prompt_tokens: u32,
    /// The numbers are estimates ([`estimate_tokens`]), not the server's count.
    pub estimated: bool,
}

impl Usage {
    pub fn total(&self) -> u32 {
        self.prompt_tokens.saturating_add(self.completion_tokens)
    }

    /// The server's numbers where it gave them, estimates for the rest.
    pub fn reported_or_estimated(
        prompt: Option<u32>,
        completion: Option<u32>,
        prompt_text: &str,
        reply: &str,
    ) -> Usage {
        Usage {
            prompt_tokens: prompt.unwrap_or_else(|| estimate_tokens(prompt_text)),
            completion_tokens: completion.unwrap_or_else(|| estimate_tokens(reply)),
            cached_prompt_tokens: 0,
            estimated: prompt.is_none() || completion.is_none(),
        }
    }

    /// With `cached` of the prompt tokens read from the server's cache.
    pub fn with_cached(mut self, cached: Option<u32>) -> Usage {
        self.cached_prompt_tokens = cached.unwrap_or(0).min(self.prompt_tokens);
        self
    }
}

/// Adds up the usage of every call in a run.
#[derive(Debug, Default)]
pub struct UsageMeter {
    total: Mutex<(Usage, u32)>,
}

impl UsageMeter {
    pub fn record(&self, usage: &Usage) {
        let mut total = lock(&self.total);
        total.0.prompt_tokens = total.0.prompt_tokens.saturating_add(usage.prompt_tokens);
        total.0.completion_tokens = total.0.completion_tokens.saturating_add(usage.completion_tokens);
        total.0.cached_prompt_tokens =
            total.0.cached_prompt_tokens.saturating_add(usage.cached_prompt_tokens);
        total.0.estimated |= usage.estimated;
        total.1 += 1;
    }

    /// The sum so far.
    pub fn total(&self) -> Usage {
        lock(&self.total).0
    }

    /// How many calls were recorded.
    pub fn calls(&self) -> u32 {
        lock(&self.total).1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimates_one_token_per_four_characters() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("abcd"), 1);
        assert_eq!(estimate_tokens("abcde"), 2);
        assert_eq!(estimate_tokens("한국어😀"), 1);
        let usage = Usage::reported_or_estimated(Some(10), None, "ignored", "12345678");
        assert_eq!(
            usage,
            Usage { prompt_tokens: 10, completion_tokens: 2, cached_prompt_tokens: 0, estimated: true }
        );
    }

    #[test]
    fn the_meter_adds_up_calls() {
        let meter = UsageMeter::default();
        meter.record(&Usage {
            prompt_tokens: 10,
            completion_tokens: 5,
            cached_prompt_tokens: 0,
            estimated: false,
        });
        meter.record(&Usage {
            prompt_tokens: 1,
            completion_tokens: 2,
            cached_prompt_tokens: 0,
            estimated: true,
        });
        assert_eq!(
            meter.total(),
            Usage { prompt_tokens: 11, completion_tokens: 7, cached_prompt_tokens: 0, estimated: true }
        );
        assert_eq!(meter.calls(), 2);
    }
}
