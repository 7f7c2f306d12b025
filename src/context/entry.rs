//! One indexed file's record — its content hash, facts and identifier words — and the words
//! themselves: how an identifier splits into words and how the index keys each.

use std::collections::HashMap;

use super::extract::FileFacts;

/// One indexed file.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(super) struct Entry {
    pub(super) hash: [u8; 32],
    pub(super) facts: FileFacts,
    /// Each identifier word of the text (lowercase, by its [`word_key`]) and how often it
    /// occurs.
    pub(super) words: HashMap<u64, u32>,
    /// All the words counted.
    pub(super) length: u32,
}

impl Entry {
    pub(super) fn new(text: &str, hash: [u8; 32], facts: FileFacts) -> Entry {
        let mut entry = Entry { hash, facts, words: HashMap::new(), length: 0 };
        count_words(text, |word| entry.add_word(word_key(word), 1));
        entry
    }

    /// Counts the word of `key` `n` more times.
    pub(super) fn add_word(&mut self, key: u64, n: u32) {
        *self.words.entry(key).or_insert(0) += n;
        self.length += n;
    }

    /// Counts the word of `key` `n` times less (text that went away).
    pub(super) fn forget_word(&mut self, key: u64, n: u32) {
        if let Some(count) = self.words.get_mut(&key) {
            let gone = n.min(*count);
            *count -= gone;
            self.length -= gone;
            if *count == 0 {
                self.words.remove(&key);
            }
        }
    }
}

/// A word as the index keeps it: a 64-bit FNV-1a hash of its text, the same in every run (the
/// cache keeps them) — a file's words as numbers take a fraction of the memory their text
/// would, and a question's words are looked up by the same hash.
pub fn word_key(word: &str) -> u64 {
    word.bytes()
        .fold(0xcbf2_9ce4_8422_2325, |hash, byte| (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3))
}

/// Calls `found` with each identifier word of `text` (lowercase, longer than one character):
/// most identifiers are one lowercase word, counted without splitting or copying; the others
/// split at case changes and underscores.
pub(super) fn count_words(text: &str, mut found: impl FnMut(&str)) {
    for token in text.split(|c: char| !(c.is_alphanumeric() || c == '_')).filter(|t| !t.is_empty()) {
        if token.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()) {
            if token.len() > 1 {
                found(token);
            }
        } else {
            for word in split_words(token) {
                if word.len() > 1 {
                    found(&word);
                }
            }
        }
    }
}

/// Identifier words: split at `_`, `-`, spaces and case changes, lowercased.
pub fn split_words(name: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut previous_lower = false;
    for c in name.chars() {
        if !c.is_alphanumeric() {
            if !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
            previous_lower = false;
            continue;
        }
        if c.is_uppercase() && previous_lower && !word.is_empty() {
            words.push(std::mem::take(&mut word));
        }
        previous_lower = c.is_lowercase() || c.is_ascii_digit();
        word.extend(c.to_lowercase());
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}
