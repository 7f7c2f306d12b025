//! Ranking files for a question (SPEC C1), with no model: the question's words (identifiers
//! split at `_` and case changes, and the English words of its Korean terms) scored over each
//! file's words with BM25, plus the file's definitions and path naming them, plus the file
//! the user is in; each file comes with the reasons it ranks.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::entry::{split_words, word_key};
use super::index::Index;
use super::terms::english_words;
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

/// The words a question is searched with: its identifiers' words (without stopwords), then
/// the English words of its Korean terms.
pub fn query_words(query: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for token in query.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).filter(|t| !t.is_empty()) {
        for word in split_words(token) {
            if word.len() > 1 && !STOPWORDS.contains(&word.as_str()) && !out.contains(&word) {
                out.push(word);
            }
        }
    }
    for word in english_words(query) {
        if !out.iter().any(|w| w == word) {
            out.push(word.to_string());
        }
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
    let mut words = query_words(query);
    if plain {
        let korean = english_words(query);
        words.retain(|w| !korean.contains(&w.as_str()));
    }
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
            score += idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * length as f32 / average.max(1.0)));
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
            let named = words.iter().filter(|w| name_words.contains(w)).count();
            if exact || named > 0 {
                defined += if exact { DEFINES_EXACTLY } else { DEFINES * named as f32 };
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
            && words.contains(&stem)
        {
            score += DEFINES_EXACTLY;
            reasons.push(format!("is the module {stem}"));
        }
        let path_words = split_words(&rel.to_string_lossy());
        let in_path: Vec<&String> = words.iter().filter(|w| path_words.contains(w)).collect();
        if !in_path.is_empty() && !plain {
            score += IN_PATH * in_path.len() as f32;
            let listed: Vec<&str> = in_path.iter().map(|w| w.as_str()).collect();
            reasons.push(format!("has {} in its path", listed.join(", ")));
        }
        if active == Some(path) {
            score += ACTIVE;
            reasons.push("is open in the editor".to_string());
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
    }
}
