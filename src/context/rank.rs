//! Ranking files for a question (SPEC C1), with no model: the question's words (identifiers
//! split at `_` and case changes, and the English words of its Korean terms) scored over each
//! file's words with BM25, plus the file's definitions and path naming them, plus the file
//! the user is in; each file comes with the reasons it ranks.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::entry::{split_words, word_key};
use super::impact::is_test_file;
use super::index::Index;
use super::terms::{english_words, related_words, stems};
use crate::syntax::SymbolKind;

/// BM25's parameters (the usual ones).
const K1: f32 = 1.2;
const B: f32 = 0.75;
/// What a definition adds for each question word its name has, and one whose name is one of
/// the question's identifiers.
const DEFINES: f32 = 6.0;
const DEFINES_EXACTLY: f32 = 15.0;
/// Symbols listed per file at most.
const MAX_SYMBOLS: usize = 5;
/// What each question word in the file's path adds.
const IN_PATH: f32 = 4.0;
/// The file open in the editor.
const ACTIVE: f32 = 20.0;
/// What a test file's score counts when the question is not about tests.
const TEST_WEIGHT: f32 = 0.6;
/// What a file's score counts in another language than the file the user is in.
const OTHER_LANGUAGE_WEIGHT: f32 = 0.8;
/// What a word the question's words bring through the terms table counts, against theirs.
const RELATED: f32 = 0.3;

/// Words a question is made of that say nothing about code.
const STOPWORDS: &[&str] = &[
    "a", "an", "the", "is", "are", "was", "be", "to", "of", "in", "on", "at", "for", "and", "or", "it",
    "this", "that", "where", "what", "how", "which", "who", "why", "does", "do", "did", "can", "could",
    "should", "would", "add", "please", "me", "my", "we", "our", "you", "with", "from", "into", "code",
    "file", "function", "method", "class",
];

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RankedSymbol {
    pub name: String,
    pub kind: String,
    /// One-based.
    pub line: usize,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Ranked {
    pub path: PathBuf,
    pub score: f32,
    pub symbols: Vec<RankedSymbol>,
    pub reasons: Vec<String>,
}

/// The words a question is about: its identifiers' words (without stopwords), then the
/// English words of its Korean terms, and the stems of both (not what they bring through the
/// terms table, which ranking weighs less).
pub fn query_words(query: &str) -> Vec<String> {
    weighted_words(query, false)
        .into_iter()
        .filter(|(_, weight)| *weight >= 1.0)
        .map(|(word, _)| word)
        .collect()
}

/// [`query_words`] with each word's weight: the question's own words, its Korean terms' and
/// their stems count whole, the words they bring through the table [`RELATED`]; `plain`:
/// the question's own words only.
fn weighted_words(query: &str, plain: bool) -> Vec<(String, f32)> {
    let mut out: Vec<(String, f32)> = Vec::new();
    let add = |out: &mut Vec<(String, f32)>, word: String, weight: f32| {
        if word.len() > 1 && !STOPWORDS.contains(&word.as_str()) && !out.iter().any(|(w, _)| *w == word) {
            out.push((word, weight));
        }
    };
    for token in query.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).filter(|t| !t.is_empty()) {
        for word in split_words(token) {
            add(&mut out, word, 1.0);
        }
    }
    if plain {
        return out;
    }
    for word in english_words(query) {
        add(&mut out, word.to_string(), 1.0);
    }
    let asked: Vec<String> = out.iter().map(|(w, _)| w.clone()).collect();
    for stem in asked.iter().flat_map(|w| stems(w)) {
        add(&mut out, stem, 1.0);
    }
    for word in related_words(&asked) {
        add(&mut out, word.to_string(), RELATED);
    }
    out
}

/// The files of `index` for `query`, best first, at most `limit`; `active` is the file open
/// in the editor.
pub fn rank(index: &Index, query: &str, active: Option<&Path>, limit: usize) -> Vec<Ranked> {
    ranked(index, query, active, limit, false)
}

/// A plain BM25 over the files' words with the question's own words only (no Korean table,
/// no definitions, paths or open file): the baseline `tokamak bench context` compares with.
pub fn plain_bm25(index: &Index, query: &str, limit: usize) -> Vec<Ranked> {
    ranked(index, query, None, limit, true)
}

fn ranked(index: &Index, query: &str, active: Option<&Path>, limit: usize, plain: bool) -> Vec<Ranked> {
    let weighted = weighted_words(query, plain);
    let words: Vec<String> = weighted.iter().map(|(w, _)| w.clone()).collect();
    let weight = |word: &str| weighted.iter().find(|(w, _)| w == word).map_or(1.0, |(_, weight)| *weight);
    let about_tests =
        words.iter().any(|w| matches!(w.as_str(), "test" | "tests" | "spec" | "pytest" | "unittest"));
    let active_language = active.map(|a| crate::text::Language::from_path(a).family());
    // the words that may name a module: the question's own and its Korean terms', not a stem
    // ("parsed" is not the module parse) nor what the table brings
    let mut naming: Vec<String> = weighted_words(query, true).into_iter().map(|(w, _)| w).collect();
    naming.extend(english_words(query).into_iter().filter(|_| !plain).map(str::to_string));
    // the question's identifiers as written (`validate_email`, `User`)
    let names: Vec<&str> =
        query.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).filter(|t| t.len() > 1).collect();
    let files: Vec<_> = index.files().collect();
    let count = files.len().max(1) as f32;
    let average = files.iter().map(|f| f.3 as f32).sum::<f32>() / count;
    let mut frequency: HashMap<&str, f32> = HashMap::new();
    for word in &words {
        frequency.insert(word, files.iter().filter(|f| f.2.contains_key(&word_key(word))).count() as f32);
    }
    let mut out = Vec::new();
    for (path, definitions, counts, length) in files {
        let mut score = 0.0;
        let mut reasons = Vec::new();
        let mut content: Vec<String> = Vec::new();
        for word in &words {
            let Some(&tf) = counts.get(&word_key(word)) else { continue };
            let df = frequency.get(word.as_str()).copied().unwrap_or(0.0);
            let idf = ((count - df + 0.5) / (df + 0.5) + 1.0).ln();
            let tf = tf as f32;
            score += weight(word) * idf * tf * (K1 + 1.0)
                / (tf + K1 * (1.0 - B + B * length as f32 / average.max(1.0)));
            content.push(format!("{word}×{}", tf as u32));
        }
        if !content.is_empty() {
            reasons.push(format!("mentions {} (BM25 {score:.1})", content.join(", ")));
        }
        let mut symbols = Vec::new();
        let mut defined = 0.0;
        for definition in definitions.iter().filter(|_| !plain) {
            let name_words = split_words(&definition.name);
            let exact = names.iter().any(|n| *n == definition.name);
            let named: f32 = words.iter().filter(|w| name_words.contains(w)).map(|w| weight(w)).sum();
            if exact || named > 0.0 {
                defined += if exact { DEFINES_EXACTLY } else { DEFINES * named };
                if symbols.len() == MAX_SYMBOLS {
                    continue;
                }
                reasons.push(format!("defines {} {}", kind_name(definition.kind), definition.name));
                symbols.push(RankedSymbol {
                    name: definition.name.clone(),
                    kind: kind_name(definition.kind).to_string(),
                    line: definition.lines.0 + 1,
                });
            }
        }
        // many definitions of the same words (a test module's) count as a few
        score += defined.min(DEFINES_EXACTLY + 2.0 * DEFINES);
        let rel = path.strip_prefix(index.root()).unwrap_or(path);
        // a module named like a word of the question (`csv.py` for "csv", `re/` for "re")
        let stem = match path.file_stem().and_then(|s| s.to_str()) {
            Some("__init__" | "index") => path.parent().and_then(|p| p.file_name()).and_then(|s| s.to_str()),
            other => other,
        };
        if !plain
            && let Some(stem) = stem.map(str::to_lowercase)
            && naming.contains(&stem)
        {
            score += DEFINES_EXACTLY * weight(&stem);
            reasons.push(format!("is the module {stem}"));
        }
        let path_words = split_words(&rel.to_string_lossy());
        let in_path: Vec<&String> = words.iter().filter(|w| path_words.contains(w)).collect();
        if !in_path.is_empty() && !plain {
            score += IN_PATH * in_path.iter().map(|w| weight(w)).sum::<f32>();
            let listed: Vec<&str> = in_path.iter().map(|w| w.as_str()).collect();
            reasons.push(format!("has {} in its path", listed.join(", ")));
        }
        if active == Some(path) {
            score += ACTIVE;
            reasons.push("is open in the editor".to_string());
        }
        // the code itself before its tests, unless the question is about tests; the language
        // of the file the user is in before the others (seed 001's weights)
        if !plain && !about_tests && is_test_file(rel) {
            score *= TEST_WEIGHT;
        }
        if !plain
            && let Some(language) = active_language
            && crate::text::Language::from_path(path).family() != language
        {
            score *= OTHER_LANGUAGE_WEIGHT;
        }
        if score > 0.0 {
            out.push(Ranked { path: path.to_path_buf(), score, symbols, reasons });
        }
    }
    out.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.path.cmp(&b.path)));
    out.truncate(limit);
    out
}

fn kind_name(kind: SymbolKind) -> &'static str {
    match kind {
        SymbolKind::Class => "class",
        SymbolKind::Function => "function",
        SymbolKind::Method => "method",
        SymbolKind::Interface => "interface",
        SymbolKind::Enum => "enum",
        SymbolKind::Module => "module",
        SymbolKind::TypeAlias => "type",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project() -> tempfile::TempDir {
        let files: &[(&str, &str)] = &[
            (
                "app/auth/login.py",
                "from app.models.user import User\n\n\ndef login(name, password):\n    \"\"\"Log a user in.\"\"\"\n    user = User(name)\n    return user.check(password)\n",
            ),
            (
                "app/models/user.py",
                "class User:\n    def __init__(self, name):\n        self.name = name\n\n    def check(self, password):\n        return bool(password)\n",
            ),
            (
                "app/web/cookies.py",
                "def set_cookie(response, name, value):\n    response.headers['Set-Cookie'] = f'{name}={value}'\n",
            ),
            (
                "app/config.py",
                "SETTINGS = {'debug': False}\n\n\ndef load_config(path):\n    return dict(SETTINGS)\n",
            ),
            (
                "app/util/dates.py",
                "import datetime\n\n\ndef parse_date(text):\n    return datetime.date.fromisoformat(text)\n",
            ),
            ("web/src/session.ts", "export function logout(user: string): void {\n  console.log(user);\n}\n"),
        ];
        crate::context::test_project(files)
    }

    fn top(index: &Index, query: &str) -> String {
        let ranked = rank(index, query, None, 5);
        let first = ranked.first().unwrap_or_else(|| panic!("nothing for {query:?}"));
        first.path.strip_prefix(index.root()).unwrap().to_string_lossy().into_owned()
    }

    #[test]
    fn seed_scenarios_in_korean_and_english() {
        let dir = project();
        let index = Index::build(dir.path());
        assert_eq!(top(&index, "로그인 기능 어디 있어?"), "app/auth/login.py");
        assert_eq!(top(&index, "where is login handled?"), "app/auth/login.py");
        assert_eq!(top(&index, "User 클래스에 validate_email 메서드 추가해줘"), "app/models/user.py");
        let ranked = rank(&index, "User 클래스에 validate_email 메서드 추가해줘", None, 5);
        assert!(
            ranked[0].symbols.iter().any(|s| s.name == "User" && s.kind == "class" && s.line == 1),
            "{ranked:?}"
        );
        assert!(ranked[0].reasons.iter().any(|r| r == "defines class User"), "{ranked:?}");
        assert_eq!(top(&index, "쿠키는 어디서 설정해?"), "app/web/cookies.py");
        assert_eq!(top(&index, "설정 파일 읽는 곳"), "app/config.py");
        assert_eq!(top(&index, "날짜 파싱"), "app/util/dates.py");
        assert_eq!(top(&index, "로그아웃"), "web/src/session.ts");
    }

    #[test]
    fn the_open_file_ranks_higher_and_says_so() {
        let dir = project();
        let index = Index::build(dir.path());
        let active = dir.path().join("app/auth/login.py");
        let before = rank(&index, "password", None, 5);
        assert_eq!(before[0].path, dir.path().join("app/models/user.py"), "{before:?}");
        let ranked = rank(&index, "password", Some(&active), 5);
        assert_eq!(ranked[0].path, active, "{ranked:?}");
        assert!(ranked[0].reasons.contains(&"is open in the editor".to_string()));
    }

    #[test]
    fn question_words() {
        assert_eq!(
            query_words("where is validateEmail in the User class?"),
            vec!["validate", "email", "user"]
        );
        assert!(query_words("로그인").contains(&"login".to_string()));
        // an English question by its stems, and what they bring, weighing less
        let words = weighted_words("where are cookies parsed", false);
        let weight = |w: &str| words.iter().find(|(x, _)| x == w).map(|(_, weight)| *weight);
        assert_eq!((weight("cookies"), weight("cookie"), weight("parse")), (Some(1.0), Some(1.0), Some(1.0)));
        assert_eq!(weight("parser"), Some(RELATED), "{words:?}");
        assert_eq!(weighted_words("where are cookies parsed", true).len(), 2, "plain: its own words");
    }

    #[test]
    fn code_before_its_tests_and_the_open_files_language_first() {
        let files: &[(&str, &str)] = &[
            ("app/cart.py", "def cart_total(cart):\n    return sum(cart)\n"),
            (
                "tests/test_cart.py",
                "from app.cart import cart_total\n\n\ndef test_cart_total():\n    assert cart_total([1]) == 1\n",
            ),
            (
                "web/cart.ts",
                "export function cartTotal(cart: number[]): number {\n  return cart.length;\n}\n",
            ),
        ];
        let dir = crate::context::test_project(files);
        let index = Index::build(dir.path());
        let order = |query: &str, active: Option<&Path>| -> Vec<String> {
            rank(&index, query, active, 5)
                .iter()
                .map(|r| r.path.strip_prefix(dir.path()).unwrap().display().to_string())
                .collect()
        };
        let plain = order("cart total", None);
        assert!(
            plain.iter().position(|p| p == "app/cart.py")
                < plain.iter().position(|p| p == "tests/test_cart.py"),
            "{plain:?}"
        );
        let score = |query: &str, file: &str| {
            rank(&index, query, None, 5).iter().find(|r| r.path.ends_with(file)).map(|r| r.score).unwrap()
        };
        // asked about tests, a test file counts whole (and the word "tests" adds to it)
        let (asked, not) = (score("cart total tests", "test_cart.py"), score("cart total", "test_cart.py"));
        assert!(asked > not / TEST_WEIGHT, "{asked} against {not}");
        let from_ts = order("cart total", Some(&dir.path().join("web/cart.ts")));
        assert_eq!(from_ts[0], "web/cart.ts", "{from_ts:?}");
        let python = dir.path().join("app/other.py");
        let from_py = order("cart total", Some(&python));
        assert!(
            from_py.iter().position(|p| p == "app/cart.py") < from_py.iter().position(|p| p == "web/cart.ts"),
            "{from_py:?}"
        );
    }
}
