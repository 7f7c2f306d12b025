//! The workspace index: every Python, TypeScript and JavaScript file's facts (definitions,
//! imports, call sites), built by walking the workspace (gitignore-aware, on every core),
//! updated one file at a time, and the queries the agent and people ask of it — where a name
//! is defined, symbols like a query, who calls a function (up to five levels, by name, with
//! ambiguity said), who imports a module.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use ropey::Rope;

use super::entry::{Entry, split_words};
use super::extract::{Definition, FileFacts, facts, facts_of_tree};
use super::pieces::{self, PieceRecord};
use crate::text::Language;

/// Files larger than this are skipped and counted (generated bundles, data).
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;
/// Files indexed at most (a workspace opened at a home folder stays bounded).
pub const MAX_FILES: usize = 50_000;
/// Callers are followed this many levels at most.
pub const MAX_CALLER_DEPTH: usize = 5;

/// Why a file is not in the index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub path: PathBuf,
    pub reason: String,
}

#[derive(Debug, Default)]
pub struct Index {
    root: PathBuf,
    files: BTreeMap<PathBuf, Entry>,
    pub skipped: Vec<Skipped>,
    /// The pieces of the files last brought up to date from an open document's tree, so the
    /// next update reads only what changed.
    pieces: HashMap<PathBuf, Vec<PieceRecord>>,
}

/// A definition found, with where.
#[derive(Debug, Clone, PartialEq)]
pub struct Found<'a> {
    pub path: &'a Path,
    pub definition: &'a Definition,
    pub score: f32,
}

/// A call site of the function asked about, `depth` levels up (1: calls it directly).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub path: PathBuf,
    /// The definition the call is made from (`None`: at top level).
    pub caller: Option<String>,
    pub line: usize,
    pub depth: usize,
    /// The called name is defined in more than one file and the caller's imports do not say
    /// which: it may be another function of the same name.
    pub ambiguous: bool,
}

impl Index {
    /// Indexes every file under `root` the walk does not ignore.
    pub fn build(root: &Path) -> Index {
        Index::build_reusing(root, HashMap::new())
    }

    /// Indexes `root` reusing what `cache` (a file [`Index::save`] wrote) knows: a file whose
    /// content hash is there is not parsed again. A missing, unreadable or older cache is
    /// ignored; the index is then saved back when anything was parsed. Returns the index and
    /// how many files were parsed.
    pub fn build_cached(root: &Path, cache: &Path) -> (Index, usize) {
        let known = load_cache(cache);
        let hashes: std::collections::HashSet<[u8; 32]> = known.keys().copied().collect();
        let index = Index::build_reusing(root, known);
        let parsed = index.files.values().filter(|e| !hashes.contains(&e.hash)).count();
        if (parsed > 0 || hashes.len() != index.files.len())
            && let Err(err) = index.save(cache)
        {
            tracing::warn!("could not save the index to {}: {err}", cache.display());
        }
        (index, parsed)
    }

    /// Writes every file's facts keyed by content hash (whole or not at all).
    pub fn save(&self, cache: &Path) -> std::io::Result<()> {
        // written from the entries as they are, not from a copy of them
        let file = CacheFileOut { version: CACHE_VERSION, entries: self.files.values().collect() };
        let bytes = serde_json::to_vec(&file).map_err(std::io::Error::other)?;
        if let Some(dir) = cache.parent() {
            std::fs::create_dir_all(dir)?;
        }
        crate::atomic::replace(cache, &bytes, crate::atomic::Mode::Private)
    }

    fn build_reusing(root: &Path, known: HashMap<[u8; 32], Entry>) -> Index {
        let mut paths = Vec::new();
        let mut skipped = Vec::new();
        for entry in crate::walk::project(root).entries() {
            let path = entry.path();
            if !entry.file_type().is_some_and(|t| t.is_file()) || !indexed_language(path) {
                continue;
            }
            if paths.len() == MAX_FILES {
                skipped.push(Skipped {
                    path: root.to_path_buf(),
                    reason: format!("more than {MAX_FILES} files: the rest are not indexed"),
                });
                break;
            }
            match entry.metadata() {
                Ok(meta) if meta.len() > MAX_FILE_BYTES => skipped.push(Skipped {
                    path: path.to_path_buf(),
                    reason: format!("larger than {} KiB", MAX_FILE_BYTES / 1024),
                }),
                Ok(_) => paths.push(path.to_path_buf()),
                Err(err) => skipped.push(Skipped { path: path.to_path_buf(), reason: err.to_string() }),
            }
        }
        let workers = std::thread::available_parallelism().map_or(1, usize::from).clamp(1, 8);
        let chunk = paths.len().div_ceil(workers).max(1);
        let shared = &known;
        let results: Vec<(PathBuf, Result<Read, String>)> = std::thread::scope(|scope| {
            let handles: Vec<_> = paths
                .chunks(chunk)
                .map(|part| {
                    scope.spawn(move || {
                        // the editor's keystrokes go first
                        crate::background::lower_this_thread();
                        part.iter().map(|p| (p.clone(), read_entry(p, shared))).collect::<Vec<_>>()
                    })
                })
                .collect();
            handles.into_iter().flat_map(|h| h.join().unwrap_or_default()).collect()
        });
        let mut index =
            Index { root: root.to_path_buf(), files: BTreeMap::new(), skipped, pieces: HashMap::new() };
        // the cache's entries are moved into the index, not copied (a copy of a large
        // workspace's cache is a hundred megabytes), but for files of the same content
        let mut known = known;
        let mut moved: HashMap<[u8; 32], PathBuf> = HashMap::new();
        for (path, entry) in results {
            let entry = match entry {
                Ok(Read::Parsed(entry)) => entry,
                Ok(Read::Known(hash)) => match known.remove(&hash) {
                    Some(entry) => {
                        moved.insert(hash, path.clone());
                        entry
                    }
                    None => match moved.get(&hash).and_then(|first| index.files.get(first)) {
                        Some(entry) => entry.clone(),
                        None => continue,
                    },
                },
                Err(reason) => {
                    index.skipped.push(Skipped { path, reason });
                    continue;
                }
            };
            index.files.insert(path, entry);
        }
        index
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Files indexed.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Definitions indexed.
    pub fn definition_count(&self) -> usize {
        self.files.values().map(|e| e.facts.definitions.len()).sum()
    }

    /// The indexed file with the most definitions (a benchmark's "large file").
    pub fn largest_file(&self) -> Option<PathBuf> {
        self.files.iter().max_by_key(|(_, e)| e.facts.definitions.len()).map(|(p, _)| p.clone())
    }

    /// Brings one file up to date with `text` (the disk's, or a document's without a tree);
    /// `false` when it was already (same content hash) or is not a language the index reads.
    pub fn update(&mut self, path: &Path, text: &str) -> bool {
        self.update_parsed(path, text, None)
    }

    /// [`Index::update`] with the text's tree when there is one already: the file is then not
    /// parsed again.
    pub fn update_parsed(
        &mut self,
        path: &Path,
        text: &str,
        tree: Option<(&tree_sitter::Tree, Language)>,
    ) -> bool {
        self.pieces.remove(path);
        if !indexed_language(path) {
            return false;
        }
        let hash: [u8; 32] = Sha256::digest(text.as_bytes()).into();
        if self.files.get(path).is_some_and(|e| e.hash == hash) {
            return false;
        }
        let language = Language::from_path(path);
        let facts = match tree {
            Some((tree, parsed_as)) if parsed_as == language => Some(facts_of_tree(tree, text, language)),
            _ => facts(language, text),
        };
        let Some(facts) = facts else { return false };
        self.files.insert(path.to_path_buf(), Entry::new(text, hash, facts));
        self.skipped.retain(|s| s.path != path);
        true
    }

    /// Brings an open document's file up to date from the tree the editor's document keeps:
    /// after the first time, only the pieces of it that changed are read again (`pieces.rs`).
    pub fn update_document(
        &mut self,
        path: &Path,
        rope: &Rope,
        tree: &tree_sitter::Tree,
        language: Language,
    ) -> bool {
        if !indexed_language(path) || language != Language::from_path(path) {
            self.pieces.remove(path);
            return false;
        }
        let text = rope.to_string();
        let hash: [u8; 32] = Sha256::digest(text.as_bytes()).into();
        if self.files.get(path).is_some_and(|e| e.hash == hash) && self.pieces.contains_key(path) {
            return false;
        }
        let records = match (self.files.get_mut(path), self.pieces.remove(path)) {
            (Some(entry), Some(records)) => {
                let records = pieces::update(entry, records, tree, &text, rope, language);
                entry.hash = hash;
                records
            }
            _ => {
                let (facts, records) = pieces::read_all(tree, &text, rope, language);
                let mut entry = Entry { hash, facts, words: HashMap::new(), length: 0 };
                for record in &records {
                    for (word, count) in record.words() {
                        entry.add_word(*word, *count);
                    }
                }
                self.files.insert(path.to_path_buf(), entry);
                records
            }
        };
        self.pieces.insert(path.to_path_buf(), records);
        self.skipped.retain(|s| s.path != path);
        true
    }

    /// The indexed files, in path order.
    pub fn paths(&self) -> impl Iterator<Item = &Path> {
        self.files.keys().map(PathBuf::as_path)
    }

    /// A file's facts, if it is indexed.
    pub fn file_facts(&self, path: &Path) -> Option<&FileFacts> {
        self.files.get(path).map(|e| &e.facts)
    }

    /// A file's words (by [`word_key`](super::entry::word_key)) and how often each occurs, in order, and how many
    /// were counted (for tests and benchmarks).
    pub fn words_of(&self, path: &Path) -> Option<(Vec<(u64, u32)>, u32)> {
        let entry = self.files.get(path)?;
        let mut words: Vec<(u64, u32)> = entry.words.iter().map(|(w, n)| (*w, *n)).collect();
        words.sort();
        Some((words, entry.length))
    }

    /// A file's definitions (empty when it is not indexed).
    pub fn file_definitions(&self, path: &Path) -> &[Definition] {
        self.files.get(path).map_or(&[], |e| e.facts.definitions.as_slice())
    }

    /// Whether a file is indexed.
    pub fn contains(&self, path: &Path) -> bool {
        self.files.contains_key(path)
    }

    /// Forgets a deleted file.
    pub fn remove(&mut self, path: &Path) -> bool {
        self.skipped.retain(|s| s.path != path);
        self.pieces.remove(path);
        self.files.remove(path).is_some()
    }

    /// Brings one file up to date with the disk: read again, forgotten when it is gone, skipped
    /// (and counted) when it has become too large or binary. `false` when nothing changed.
    pub fn refresh(&mut self, path: &Path) -> bool {
        if !indexed_language(path) || !path.starts_with(&self.root) {
            return false;
        }
        match read_file(path) {
            Ok(text) => self.update(path, &text),
            Err(_) if !path.exists() => self.remove(path),
            Err(reason) => {
                let removed = self.remove(path);
                self.skipped.push(Skipped { path: path.to_path_buf(), reason });
                removed
            }
        }
    }

    /// Where `name` is defined (a class, function, method …), in path order.
    pub fn definitions(&self, name: &str) -> Vec<Found<'_>> {
        self.all_definitions().filter(|f| f.definition.name == name).collect()
    }

    /// Symbols like `query`, best first: exact (case-insensitively), then prefix, then the
    /// query's words in the name's words (split at `_` and case changes), then a subsequence.
    pub fn search(&self, query: &str, limit: usize) -> Vec<Found<'_>> {
        let query = query.trim().to_lowercase();
        if query.is_empty() {
            return Vec::new();
        }
        let mut found: Vec<Found<'_>> = self
            .all_definitions()
            .filter_map(|mut f| {
                f.score = name_score(&query, &f.definition.name)?;
                Some(f)
            })
            .collect();
        found.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| a.path.cmp(b.path))
                .then(a.definition.lines.cmp(&b.definition.lines))
        });
        found.truncate(limit);
        found
    }

    /// Who calls `name`, then who calls those, up to `depth` levels
    /// ([`MAX_CALLER_DEPTH`] at most), by name; a caller is visited once.
    pub fn callers(&self, name: &str, depth: usize) -> Vec<Caller> {
        let mut out = Vec::new();
        let mut seen: BTreeSet<String> = BTreeSet::new();
        let mut level: Vec<String> = vec![name.to_string()];
        seen.insert(name.to_string());
        for d in 1..=depth.clamp(1, MAX_CALLER_DEPTH) {
            let mut next = Vec::new();
            for called in &level {
                let defined_in: Vec<&Path> = self.definitions(called).iter().map(|f| f.path).collect();
                for (path, entry) in &self.files {
                    for call in entry.facts.calls.iter().filter(|c| &c.name == called) {
                        let ambiguous =
                            defined_in.len() > 1 && !self.imports_name_from(path, called, &defined_in);
                        out.push(Caller {
                            path: path.clone(),
                            caller: call.caller.clone(),
                            line: call.line,
                            depth: d,
                            ambiguous,
                        });
                        if let Some(caller) = &call.caller
                            && seen.insert(caller.clone())
                        {
                            next.push(caller.clone());
                        }
                    }
                }
            }
            if next.is_empty() {
                break;
            }
            level = next;
        }
        out
    }

    /// The files that import `module` (as written, or a relative import that resolves to it),
    /// with the line.
    pub fn importers(&self, module: &str) -> Vec<(PathBuf, usize)> {
        let mut out = Vec::new();
        for (path, entry) in &self.files {
            for import in &entry.facts.imports {
                if import.module == module || self.resolves_to(path, &import.module, module) {
                    out.push((path.clone(), import.line));
                }
            }
        }
        out
    }

    /// Each file with its definitions, its word counts and its word total (for ranking).
    pub(super) fn files(
        &self,
    ) -> impl Iterator<Item = (&Path, &[Definition], &std::collections::HashMap<u64, u32>, u32)> {
        self.files.iter().map(|(p, e)| (p.as_path(), e.facts.definitions.as_slice(), &e.words, e.length))
    }

    fn all_definitions(&self) -> impl Iterator<Item = Found<'_>> {
        self.files.iter().flat_map(|(path, entry)| {
            entry.facts.definitions.iter().map(move |definition| Found { path, definition, score: 0.0 })
        })
    }

    /// Whether `path` imports `name` from a module that is one of `candidates`' files.
    fn imports_name_from(&self, path: &Path, name: &str, candidates: &[&Path]) -> bool {
        let Some(entry) = self.files.get(path) else { return false };
        if candidates.contains(&path) {
            return true;
        }
        entry.facts.imports.iter().filter(|i| i.names.iter().any(|n| n == name)).any(|import| {
            candidates.iter().any(|c| {
                let module = module_name(&self.root, c);
                import.module == module || self.resolves_to(path, &import.module, &module)
            })
        })
    }

    /// Whether `written` (an import in `from`) names the module `module` (dotted for Python,
    /// a path without extension for scripts, relative to the root).
    fn resolves_to(&self, from: &Path, written: &str, module: &str) -> bool {
        let dir = from.parent().unwrap_or(&self.root);
        let resolved = if let Some(rest) =
            written.strip_prefix("./").or_else(|| written.strip_prefix("../").map(|_| written))
        {
            let joined = if written.starts_with("../") { dir.join(written) } else { dir.join(rest) };
            normalize(&joined)
                .strip_prefix(&self.root)
                .map(|p| p.to_string_lossy().replace('\\', "/"))
                .unwrap_or_default()
        } else if written.starts_with('.') {
            // Python: `.models` from `pkg/views.py` is `pkg.models`
            let dots = written.chars().take_while(|c| *c == '.').count();
            let mut base = dir.to_path_buf();
            for _ in 1..dots {
                base.pop();
            }
            let rel = base
                .strip_prefix(&self.root)
                .map(|p| p.to_string_lossy().replace(['/', '\\'], "."))
                .unwrap_or_default();
            let tail = &written[dots..];
            [rel.as_str(), tail].iter().filter(|s| !s.is_empty()).copied().collect::<Vec<_>>().join(".")
        } else {
            return false;
        };
        resolved == module || resolved.trim_end_matches("/index") == module
    }
}

/// The module name of a file: `pkg/models.py` → `pkg.models`; `src/util.ts` → `src/util`.
pub fn module_name(root: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(root).unwrap_or(path).with_extension("");
    let rel = rel.to_string_lossy().replace('\\', "/");
    match Language::from_path(path).spec() {
        Some(spec) => (spec.module_name)(&rel),
        None => rel,
    }
}

fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out.with_extension("")
}

fn indexed_language(path: &Path) -> bool {
    Language::from_path(path).is_parsed()
}

/// What the cache file holds: every entry (its content hash inside), for one version of the
/// extraction.
#[derive(serde::Deserialize)]
struct CacheFile {
    version: String,
    entries: Vec<Entry>,
}

/// [`CacheFile`] as it is written, borrowing the index's entries.
#[derive(serde::Serialize)]
struct CacheFileOut<'a> {
    version: &'static str,
    entries: Vec<&'a Entry>,
}

/// A cache written by another version of Tokamak is not read: what is extracted may differ.
const CACHE_VERSION: &str = concat!("index-3-", env!("CARGO_PKG_VERSION"));

fn load_cache(cache: &Path) -> HashMap<[u8; 32], Entry> {
    let Ok(bytes) = std::fs::read(cache) else { return HashMap::new() };
    match serde_json::from_slice::<CacheFile>(&bytes) {
        Ok(file) if file.version == CACHE_VERSION => file.entries.into_iter().map(|e| (e.hash, e)).collect(),
        Ok(_) => HashMap::new(),
        Err(err) => {
            tracing::warn!("ignored the index cache {}: {err}", cache.display());
            HashMap::new()
        }
    }
}

/// A file's text, or why it is not indexed (too large, binary, not UTF-8, unreadable).
fn read_file(path: &Path) -> Result<String, String> {
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    if meta.len() > MAX_FILE_BYTES {
        return Err(format!("larger than {} KiB", MAX_FILE_BYTES / 1024));
    }
    let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
    if bytes.contains(&0) {
        return Err("binary (it has NUL bytes)".to_string());
    }
    String::from_utf8(bytes).map_err(|_| "not UTF-8".to_string())
}

/// A file's entry as read: parsed, or known by its content hash.
enum Read {
    Parsed(Entry),
    Known([u8; 32]),
}

/// A file's entry: parsed, or (its content hash) what `known` has.
fn read_entry(path: &Path, known: &HashMap<[u8; 32], Entry>) -> Result<Read, String> {
    let text = read_file(path)?;
    let hash: [u8; 32] = Sha256::digest(text.as_bytes()).into();
    if known.contains_key(&hash) {
        return Ok(Read::Known(hash));
    }
    let facts = facts(Language::from_path(path), &text).ok_or_else(|| "not parsed".to_string())?;
    Ok(Read::Parsed(Entry::new(&text, hash, facts)))
}

/// How well `name` matches `query` (lowercase); `None`: not at all.
fn name_score(query: &str, name: &str) -> Option<f32> {
    let lower = name.to_lowercase();
    if lower == query {
        return Some(100.0);
    }
    if lower.starts_with(query) {
        return Some(80.0 - (lower.len() - query.len()) as f32 * 0.1);
    }
    let words = split_words(name);
    let wanted = split_words(query);
    let hits = wanted.iter().filter(|w| words.iter().any(|n| n == *w)).count();
    if hits > 0 {
        return Some(40.0 * hits as f32 / wanted.len().max(1) as f32 + 10.0 - words.len() as f32 * 0.1);
    }
    if lower.contains(query) {
        return Some(30.0 - lower.len() as f32 * 0.05);
    }
    // a subsequence (`vemail` in `validate_email`)
    let mut chars = lower.chars();
    query.chars().all(|q| chars.any(|c| c == q)).then_some(5.0 - lower.len() as f32 * 0.01)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project(files: &[(&str, &str)]) -> tempfile::TempDir {
        crate::context::test_project(files)
    }

    const FILES: &[(&str, &str)] = &[
        (
            "app/auth.py",
            "from .models import User\n\n\ndef login(name, password):\n    user = User(name)\n    return check_password(user, password)\n\n\ndef check_password(user, password):\n    return user.password == password\n",
        ),
        (
            "app/models.py",
            "class User:\n    def __init__(self, name):\n        self.name = name\n\n    def validate_email(self):\n        return '@' in self.name\n",
        ),
        (
            "app/views.py",
            "from app.auth import login\n\n\ndef login_view(request):\n    return login(request.name, request.password)\n",
        ),
        (
            "web/login.ts",
            "import { post } from './http';\n\nexport function login(name: string) {\n  return post('/login', { name });\n}\n",
        ),
        (
            "web/http.ts",
            "export function post(url: string, body: object) {\n  return fetch(url, { method: 'POST', body: JSON.stringify(body) });\n}\n",
        ),
        (".gitignore", "build/\n"),
        ("build/generated.py", "def login():\n    pass\n"),
    ];

    #[test]
    fn definitions_search_callers_and_importers() {
        let dir = project(FILES);
        // a git repository, for the walk to read .gitignore
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        let index = Index::build(dir.path());
        assert_eq!(index.len(), 5, "the ignored build/ is not indexed");
        let rel = |p: &Path| p.strip_prefix(dir.path()).unwrap().to_string_lossy().into_owned();

        let logins: Vec<String> = index.definitions("login").iter().map(|f| rel(f.path)).collect();
        assert_eq!(logins, vec!["app/auth.py", "web/login.ts"]);

        let found = index.search("ValidateEmail", 3);
        assert_eq!(found[0].definition.name, "validate_email");
        assert_eq!(found[0].definition.container.as_deref(), Some("User"));
        let found = index.search("user", 5);
        assert_eq!(found[0].definition.name, "User", "an exact match first");

        // login is defined twice: the view imports the Python one, so it is not ambiguous
        let callers = index.callers("check_password", 3);
        let chain: Vec<(Option<String>, usize, bool)> =
            callers.iter().map(|c| (c.caller.clone(), c.depth, c.ambiguous)).collect();
        assert_eq!(
            chain,
            vec![(Some("login".into()), 1, false), (Some("login_view".into()), 2, false)],
            "{callers:?}"
        );

        let importers: Vec<String> = index.importers("app.models").iter().map(|(p, _)| rel(p)).collect();
        assert_eq!(importers, vec!["app/auth.py"]);
        let importers: Vec<String> = index.importers("web/http").iter().map(|(p, _)| rel(p)).collect();
        assert_eq!(importers, vec!["web/login.ts"]);
        let importers: Vec<String> = index.importers("app.auth").iter().map(|(p, _)| rel(p)).collect();
        assert_eq!(importers, vec!["app/views.py"]);
    }

    #[test]
    fn updates_are_per_file() {
        let dir = project(FILES);
        let mut index = Index::build(dir.path());
        let auth = dir.path().join("app/auth.py");
        let same = std::fs::read_to_string(&auth).unwrap();
        assert!(!index.update(&auth, &same), "unchanged content is not re-read");
        // rename a function: the queries follow
        assert!(index.update(&auth, &same.replace("check_password", "verify_password")));
        assert!(index.definitions("check_password").is_empty());
        assert_eq!(index.callers("verify_password", 1).len(), 1);
        // delete a file
        assert!(index.remove(&dir.path().join("app/views.py")));
        assert!(index.callers("login", 1).is_empty());
        // a new file
        assert!(index.update(&dir.path().join("app/admin.py"), "def ban(user):\n    login(user, None)\n"));
        assert_eq!(index.callers("login", 1)[0].caller.as_deref(), Some("ban"));
        assert!(index.callers("login", 1)[0].ambiguous, "login is defined twice and admin imports neither");
    }

    #[test]
    fn big_binary_and_foreign_files_are_skipped_and_counted() {
        let dir = project(&[("ok.py", "x = 1\n"), ("notes.txt", "hello\n")]);
        std::fs::write(dir.path().join("blob.py"), b"\x00\x01binary").unwrap();
        std::fs::write(dir.path().join("huge.js"), vec![b'x'; (MAX_FILE_BYTES + 1) as usize]).unwrap();
        let index = Index::build(dir.path());
        assert_eq!(index.len(), 1);
        let mut reasons: Vec<String> = index.skipped.iter().map(|s| s.reason.clone()).collect();
        reasons.sort();
        assert_eq!(
            reasons,
            vec!["binary (it has NUL bytes)".to_string(), "larger than 1024 KiB".to_string()]
        );
    }

    #[test]
    fn identifiers_split_into_words() {
        assert_eq!(split_words("validate_email"), vec!["validate", "email"]);
        assert_eq!(split_words("parseHTTPResponse2"), vec!["parse", "httpresponse2"]);
        assert_eq!(split_words("UserLogin"), vec!["user", "login"]);
    }
}
