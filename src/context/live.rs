//! The session's index kept live: built once, off the async threads, reusing the facts cached
//! under the project's cache folder by content hash; then brought up to date one file at a
//! time — from open documents (their rope and incrementally parsed tree, on each change) and
//! from files changed on disk (watched-file events, the agent's own writes) — never rebuilt
//! whole. A change only marks its file; the marks are applied before the next query, or in
//! the background half a second after the first mark (so no tree is held here for long).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ropey::Rope;
use tree_sitter::Tree;

use super::index::Index;
use crate::sync::lock;
use crate::text::Language;

/// What a file is brought up to date with before the next query.
enum Pending {
    /// An open document's text, with its tree when it has one.
    Text { rope: Rope, tree: Option<(Tree, Language)> },
    /// Whatever the disk has (or its absence).
    Disk,
}

/// How the index was built.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BuildReport {
    pub files: usize,
    /// Files parsed (the others came from the cache).
    pub parsed: usize,
    pub skipped: usize,
    pub millis: u128,
}

/// The index of one workspace root, shared by the server, the executor and the agent.
pub struct LiveIndex {
    /// The root with symbolic links resolved: the index's paths are all under it.
    root: PathBuf,
    /// The root as the editor named it, when that differs (`/tmp/x` for `/private/tmp/x`).
    alias: Option<PathBuf>,
    /// Where the index is saved (`None`: not saved, as in tests of the index itself).
    cache: Option<PathBuf>,
    cell: tokio::sync::OnceCell<Mutex<Index>>,
    pending: Mutex<BTreeMap<PathBuf, Pending>>,
    /// The root's `.gitignore`, for files that appear on disk after the build.
    ignore: Gitignore,
    report: Mutex<Option<BuildReport>>,
    /// Open documents' texts the index had to parse itself, having been given no tree.
    parsed_documents: std::sync::atomic::AtomicU64,
    /// A background application of the marked changes is waiting.
    applying: std::sync::atomic::AtomicBool,
}

/// How long after a change the marked changes are applied to the index in the background
/// (while typing goes on, at most this often).
const APPLY_PAUSE: std::time::Duration = std::time::Duration::from_millis(500);

impl LiveIndex {
    /// An index of `root`, not built yet; saved in `cache` when given.
    pub fn new(root: &Path, cache: Option<PathBuf>) -> Arc<LiveIndex> {
        let canonical = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
        let alias = (canonical != root).then(|| root.to_path_buf());
        let root = canonical.as_path();
        let mut builder = GitignoreBuilder::new(root);
        builder.add(root.join(".gitignore"));
        let ignore = builder.build().unwrap_or_else(|_| Gitignore::empty());
        Arc::new(LiveIndex {
            alias,
            root: root.to_path_buf(),
            cache,
            cell: tokio::sync::OnceCell::new(),
            pending: Mutex::new(BTreeMap::new()),
            ignore,
            report: Mutex::new(None),
            parsed_documents: std::sync::atomic::AtomicU64::new(0),
            applying: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// The index file of a project under its cache folder.
    pub fn cache_file(root: &Path) -> PathBuf {
        crate::places::project_cache(root).join("index.json")
    }

    /// The root, symbolic links resolved.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `path` as the index names it: under the resolved root even when the editor named the
    /// root another way.
    pub fn normalize(&self, path: &Path) -> PathBuf {
        match self.alias.as_deref().and_then(|alias| path.strip_prefix(alias).ok()) {
            Some(rest) => self.root.join(rest),
            None => path.to_path_buf(),
        }
    }

    /// How many open documents' texts the index parsed itself because it was given no tree
    /// (the Observer hands it each document's tree: never, unless something is wrong).
    pub fn parsed_documents(&self) -> u64 {
        self.parsed_documents.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// How the build went, once it is done.
    pub fn report(&self) -> Option<BuildReport> {
        lock(&self.report).clone()
    }

    /// The index, built the first time (a query that comes first waits for it) and with
    /// every change marked since applied. Hold the guard only briefly: changes are applied
    /// under it.
    pub async fn current(self: &Arc<Self>) -> MutexGuard<'_, Index> {
        let this = Arc::clone(self);
        let cell = self
            .cell
            .get_or_init(|| async move {
                let built = crate::background::run(move || this.build()).await;
                Mutex::new(built.unwrap_or_default())
            })
            .await;
        if !lock(&self.pending).is_empty() {
            let this = Arc::clone(self);
            // re-reading many files (a branch switch) must not hold an async thread
            let _ = tokio::task::spawn_blocking(move || this.apply_pending()).await;
        }
        lock(cell)
    }

    /// The index as it is, if it is built and not being updated this moment (for status
    /// lines, which must not wait; no changes applied).
    pub fn try_current(&self) -> Option<MutexGuard<'_, Index>> {
        self.cell.get()?.try_lock().ok()
    }

    /// An open document changed (or was opened): its text will be indexed, from its tree
    /// when it has one. Cheap: the rope and tree are shared, not copied. The change is applied
    /// before the next query, or in the background [`APPLY_PAUSE`] after the first mark, so
    /// the trees of documents whose trees are let go are not held here for long.
    pub fn document_changed(self: &Arc<Self>, path: &Path, rope: Rope, tree: Option<(Tree, Language)>) {
        let path = self.normalize(path);
        if path.starts_with(&self.root) {
            lock(&self.pending).insert(path, Pending::Text { rope, tree });
            self.apply_soon();
        }
    }

    /// Applies the marked changes in the background [`APPLY_PAUSE`] after the first, when the index is
    /// built and there is a runtime to wait on (one waiting at a time).
    fn apply_soon(self: &Arc<Self>) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        if self.cell.get().is_none() || self.applying.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        let this = Arc::clone(self);
        runtime.spawn(async move {
            tokio::time::sleep(APPLY_PAUSE).await;
            this.applying.store(false, std::sync::atomic::Ordering::SeqCst);
            let applying = Arc::clone(&this);
            let _ = crate::background::run(move || applying.apply_pending()).await;
        });
    }

    /// A file changed, appeared or went away on disk (or an open document was closed: the
    /// disk's text is what counts again).
    pub fn disk_changed(&self, path: &Path) {
        let path = self.normalize(path);
        if path.starts_with(&self.root) {
            lock(&self.pending).insert(path, Pending::Disk);
        }
    }

    fn build(&self) -> Index {
        let started = Instant::now();
        let (index, parsed) = match &self.cache {
            Some(cache) => Index::build_cached(&self.root, cache),
            None => {
                let index = Index::build(&self.root);
                let parsed = index.len();
                (index, parsed)
            }
        };
        let report = BuildReport {
            files: index.len(),
            parsed,
            skipped: index.skipped.len(),
            millis: started.elapsed().as_millis(),
        };
        tracing::info!(
            "indexed {} files ({} parsed, the rest from the cache; {} skipped) in {} ms",
            report.files,
            report.parsed,
            report.skipped,
            report.millis
        );
        *lock(&self.report) = Some(report);
        crate::background::give_back_memory();
        index
    }

    /// Applies the marked changes; returns how many files changed in the index.
    fn apply_pending(&self) -> usize {
        let changed = self.apply_pending_now();
        crate::background::give_back_memory();
        changed
    }

    fn apply_pending_now(&self) -> usize {
        let Some(cell) = self.cell.get() else { return 0 };
        let mut index = lock(cell);
        let pending = std::mem::take(&mut *lock(&self.pending));
        let mut changed = 0;
        for (path, change) in pending {
            changed += usize::from(match change {
                Pending::Text { rope, tree: Some((tree, language)) } => {
                    index.update_document(&path, &rope, &tree, language)
                }
                Pending::Text { rope, tree: None } => {
                    let parsed = index.update(&path, &rope.to_string());
                    if parsed && crate::text::Language::from_path(&path).is_parsed() {
                        self.parsed_documents.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    parsed
                }
                Pending::Disk if !index.contains(&path) && self.ignored(&path) => false,
                Pending::Disk => index.refresh(&path),
            });
        }
        changed
    }

    /// Whether a file that was not indexed is one the build would have left out (ignored by
    /// the root's `.gitignore`, or under a hidden folder).
    fn ignored(&self, path: &Path) -> bool {
        let Ok(relative) = path.strip_prefix(&self.root) else { return true };
        let hidden = relative.components().any(|c| c.as_os_str().to_string_lossy().starts_with('.'));
        hidden || self.ignore.matched_path_or_any_parents(path, false).is_ignore()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn changes_are_marked_then_applied_before_the_next_query() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("a.py"), "def alpha():\n    pass\n").unwrap();
        std::fs::write(root.join(".gitignore"), "gen/\n").unwrap();
        let cache = root.join(".cache/index.json");
        let live = LiveIndex::new(&root, Some(cache.clone()));
        assert_eq!(live.current().await.definitions("alpha").len(), 1);
        assert_eq!(live.report().unwrap().parsed, 1);

        // an open document's unsaved text
        let rope = Rope::from_str("def beta():\n    pass\n");
        live.document_changed(&root.join("a.py"), rope, None);
        {
            let index = live.current().await;
            assert!(index.definitions("alpha").is_empty());
            assert_eq!(index.definitions("beta").len(), 1);
        }
        // a file created on disk, one ignored, one deleted
        std::fs::write(root.join("b.py"), "def gamma():\n    pass\n").unwrap();
        std::fs::create_dir(root.join("gen")).unwrap();
        std::fs::write(root.join("gen/c.py"), "def delta():\n    pass\n").unwrap();
        live.disk_changed(&root.join("b.py"));
        live.disk_changed(&root.join("gen/c.py"));
        assert_eq!(live.current().await.definitions("gamma").len(), 1);
        assert!(live.current().await.definitions("delta").is_empty(), "gen/ is ignored");
        std::fs::remove_file(root.join("b.py")).unwrap();
        live.disk_changed(&root.join("b.py"));
        assert!(live.current().await.definitions("gamma").is_empty());

        // the root named through a symbolic link: the same files, the same paths
        let link = tempfile::tempdir().unwrap();
        let linked = link.path().join("project");
        std::os::unix::fs::symlink(&root, &linked).unwrap();
        let aliased = LiveIndex::new(&linked, None);
        assert_eq!(aliased.root(), root.as_path());
        aliased.document_changed(&linked.join("a.py"), Rope::from_str("def epsilon():\n    pass\n"), None);
        {
            let index = aliased.current().await;
            assert_eq!(index.definitions("epsilon")[0].path, root.join("a.py"));
        }

        // a restart reuses the cache: nothing is parsed again
        let again = LiveIndex::new(&root, Some(cache));
        assert_eq!(again.current().await.definitions("alpha").len(), 1);
        assert_eq!(again.report().unwrap().parsed, 0, "{:?}", again.report());
    }
}
