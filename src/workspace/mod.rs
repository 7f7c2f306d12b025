//! The workspace: every open document (rope + version + syntax tree), changed in order, and
//! cheap immutable snapshots of them for readers; files that are not open come from disk.

mod disk;
mod document;
mod write;

use std::collections::HashMap;
use std::path::PathBuf;

use ropey::Rope;
use tree_sitter::Tree;
use url::Url;

pub use disk::{ReadError, read_text, source_files};
use document::OpenDocument;
pub use document::{OPEN_PARSE_BYTES, ParseJob, SyntaxAfter};
pub use write::{WriteError, write_bytes_if_unchanged, write_if_unchanged};

use crate::config::SyntaxSettings;
use crate::text::{AppliedChange, Language, PositionEncoding, TextChange, TextDocument};

/// An immutable view of one version of a document. Cloning is cheap (the rope and the tree
/// share their nodes), so background work takes a snapshot instead of holding a lock.
#[derive(Debug, Clone)]
pub struct DocumentSnapshot {
    pub uri: Url,
    /// The editor's version; `None` for a file read from disk.
    pub version: Option<i32>,
    pub language: Language,
    pub rope: Rope,
    /// `None` when the language is not parsed or the document was too large or binary.
    pub tree: Option<Tree>,
    /// Why the document has no tree although its language is parsed.
    pub syntax_skipped: Option<String>,
    /// A large document's tree is being brought up to date in the background: `tree` is
    /// `None` until then (see [`Workspace::parse_job`]).
    pub syntax_pending: bool,
}

/// A snapshot holding the last reference to a tree of this much text or more has the tree
/// freed in the background ([`crate::background::discard`]): whoever drops it — a
/// keystroke's handler, a fix iteration — does not wait on freeing a large tree.
pub const DISCARD_TREE_BYTES: usize = 16 * 1024;

/// Drops `tree` (or what holds it), the tree of a text `bytes` long: in the background when
/// the text is [`DISCARD_TREE_BYTES`] or more, here otherwise.
fn free_tree<T: Send + 'static>(bytes: usize, tree: T) {
    if bytes >= DISCARD_TREE_BYTES {
        crate::background::discard(tree);
    }
}

impl Drop for DocumentSnapshot {
    fn drop(&mut self) {
        free_tree(self.rope.len_bytes(), self.tree.take());
    }
}

impl DocumentSnapshot {
    /// A snapshot of text that is not open in the editor (read from disk, say).
    pub fn detached(uri: Url, text: &str, settings: &SyntaxSettings) -> DocumentSnapshot {
        let language = language_of(&uri, "");
        let mut document = OpenDocument::new(TextDocument::new(text, None, language));
        document.parse_whole(settings, true);
        document.snapshot(uri)
    }

    /// The file system path, for `file:` URIs.
    pub fn path(&self) -> Option<PathBuf> {
        self.uri.to_file_path().ok()
    }
}

/// How often an open document's text was parsed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ParseCount {
    pub uri: Url,
    pub version: Option<i32>,
    /// Tree-sitter parses of its versions, whole or incremental.
    pub parses: u64,
    /// Parses of a text that had been parsed already.
    pub parsed_twice: u64,
}

/// Why a change could not be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChangeError {
    #[error("{0} is not open")]
    UnknownDocument(Url),
    #[error("dropped version {got} of {uri}: it is not newer than version {current}")]
    StaleVersion { uri: Url, current: i32, got: i32 },
}

/// What a successful change did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangeReport {
    /// How many of the edits had positions out of range (clamped) or reversed.
    pub clamped_edits: usize,
    /// The edits as applied, in order, for whatever must move along with the text.
    pub applied: Vec<AppliedChange>,
    /// The version the change was made to.
    pub previous_version: Option<i32>,
    /// What became of the syntax tree.
    pub syntax: SyntaxAfter,
}

/// The language of a document from its `languageId` and its URI's file name.
pub fn language_of(uri: &Url, language_id: &str) -> Language {
    let path = uri.path_segments().and_then(|mut s| s.next_back()).map(PathBuf::from);
    Language::detect(language_id, path.as_deref())
}

/// The open documents. Writers call `open`/`change`/`close` in the order the editor sent
/// them; readers take snapshots.
#[derive(Default)]
pub struct Workspace {
    documents: HashMap<Url, OpenDocument>,
    settings: SyntaxSettings,
    /// Counts openings, edits and parses, to know which document was touched last.
    touches: u64,
}

impl Workspace {
    pub fn new(settings: SyntaxSettings) -> Workspace {
        Workspace { documents: HashMap::new(), settings, touches: 0 }
    }

    /// Marks a document as touched now, then lets the trees of the documents touched longest
    /// ago go while the text holding trees is over `syntax.tree_bytes` (the document touched
    /// last keeps its tree).
    fn touch(&mut self, uri: &Url) {
        self.touches += 1;
        if let Some(document) = self.documents.get_mut(uri) {
            document.touched = self.touches;
        }
        let mut holding: Vec<(u64, usize, &Url)> = self
            .documents
            .iter()
            .filter(|(_, d)| d.holds_tree())
            .map(|(uri, d)| (d.touched, d.text.rope().len_bytes(), uri))
            .collect();
        let total: usize = holding.iter().map(|(_, bytes, _)| bytes).sum();
        if total <= self.settings.tree_bytes || holding.len() < 2 {
            return;
        }
        holding.sort_by_key(|(touched, _, _)| std::cmp::Reverse(*touched));
        let mut kept = 0;
        let mut going: Vec<Url> = Vec::new();
        for (index, (_, bytes, uri)) in holding.into_iter().enumerate() {
            if index == 0 || kept + bytes <= self.settings.tree_bytes {
                kept += bytes;
            } else {
                going.push(uri.clone());
            }
        }
        for uri in going {
            if let Some(document) = self.documents.get_mut(&uri) {
                tracing::debug!("{uri}: its syntax tree is let go until it is edited again");
                document.let_tree_go();
            }
        }
    }

    pub fn settings(&self) -> &SyntaxSettings {
        &self.settings
    }

    pub fn set_settings(&mut self, settings: SyntaxSettings) {
        self.settings = settings;
    }

    /// Opens (or re-opens, replacing) a document. A large document's tree is owed to the
    /// background ([`DocumentSnapshot::syntax_pending`]): its first parse is what opening it
    /// costs most.
    pub fn open(&mut self, uri: Url, language_id: &str, version: i32, text: &str) -> DocumentSnapshot {
        let language = language_of(&uri, language_id);
        let mut document = OpenDocument::new(TextDocument::new(text, Some(version), language));
        document.parse_whole(&self.settings, false);
        let snapshot = document.snapshot(uri.clone());
        self.documents.insert(uri.clone(), document);
        self.touch(&uri);
        snapshot
    }

    /// Applies the changes of one `didChange`, in order, then reparses once. A version that is
    /// not newer than the current one is dropped: the editor sent it before what we have.
    pub fn change(
        &mut self,
        uri: &Url,
        version: i32,
        changes: &[TextChange],
        encoding: PositionEncoding,
    ) -> Result<(DocumentSnapshot, ChangeReport), ChangeError> {
        let document =
            self.documents.get_mut(uri).ok_or_else(|| ChangeError::UnknownDocument(uri.clone()))?;
        if let Some(current) = document.text.version()
            && version <= current
        {
            return Err(ChangeError::StaleVersion { uri: uri.clone(), current, got: version });
        }
        let mut report = ChangeReport {
            clamped_edits: 0,
            applied: Vec::with_capacity(changes.len()),
            previous_version: document.text.version(),
            syntax: SyntaxAfter::Parsed,
        };
        for change in changes {
            let outcome = document.text.apply_change(change, encoding);
            report.clamped_edits += usize::from(outcome.clamped);
            report.applied.push(outcome.applied);
        }
        document.text.set_version(Some(version));
        let inserted_nul = changes.iter().any(|c| c.text.contains('\0'));
        report.syntax = document.refresh_syntax(&self.settings, &report.applied, inserted_nul);
        let snapshot = document.snapshot(uri.clone());
        self.touch(uri);
        Ok((snapshot, report))
    }

    /// After `didSave`: when the editor included the text and it differs from ours, ours is
    /// replaced (a resync; we must have missed a change). Returns the current snapshot and
    /// whether the text was replaced.
    pub fn save(&mut self, uri: &Url, text: Option<&str>) -> Result<(DocumentSnapshot, bool), ChangeError> {
        let settings = self.settings.clone();
        let document =
            self.documents.get_mut(uri).ok_or_else(|| ChangeError::UnknownDocument(uri.clone()))?;
        if let Some(text) = text
            && document.text.rope() != text
        {
            tracing::warn!("{uri}: the saved text differs from ours; resynchronising");
            let change = TextChange { range: None, text: text.to_string() };
            let outcome = document.text.apply_change(&change, PositionEncoding::Utf8);
            document.refresh_syntax(&settings, &[outcome.applied], true);
            return Ok((document.snapshot(uri.clone()), true));
        }
        Ok((document.snapshot(uri.clone()), false))
    }

    /// Forgets a document; `false` if it was not open.
    pub fn close(&mut self, uri: &Url) -> bool {
        self.documents.remove(uri).is_some()
    }

    pub fn snapshot(&self, uri: &Url) -> Option<DocumentSnapshot> {
        self.documents.get(uri).map(|d| d.snapshot(uri.clone()))
    }

    /// The open document, or else the file on disk (read now, not kept: a file is never held
    /// twice).
    pub fn read(&self, uri: &Url) -> Result<DocumentSnapshot, ReadError> {
        if let Some(snapshot) = self.snapshot(uri) {
            return Ok(snapshot);
        }
        let path = uri.to_file_path().map_err(|()| ReadError::Io {
            path: PathBuf::from(uri.as_str()),
            reason: std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a file URI"),
        })?;
        let text = read_text(&path)?;
        Ok(DocumentSnapshot::detached(uri.clone(), &text, &self.settings))
    }

    /// What a parse of `uri` needs when its tree is owed one, for a request that needs the
    /// tree now (whether or not a background parse is under way).
    pub fn parse_job(&self, uri: &Url) -> Option<ParseJob> {
        self.documents.get(uri)?.parse_job(uri)
    }

    /// What a background parse of `uri` needs, when its tree is owed one and no background
    /// parse of it is under way; the document is marked as being parsed until
    /// [`Workspace::parse_ended`].
    pub fn background_parse_job(&mut self, uri: &Url) -> Option<ParseJob> {
        let document = self.documents.get_mut(uri).filter(|d| !d.parsing)?;
        let job = document.parse_job(uri)?;
        document.parsing = true;
        Some(job)
    }

    /// A background parse of `uri`'s text `generation` ([`ParseJob::generation`]) ended,
    /// installed or not.
    pub fn parse_ended(&mut self, uri: &Url, generation: u64) {
        if let Some(document) = self.documents.get_mut(uri).filter(|d| d.generation == generation) {
            document.parsing = false;
        }
    }

    /// Whether a background parse of `uri` is under way.
    pub fn parsing(&self, uri: &Url) -> bool {
        self.documents.get(uri).is_some_and(|d| d.parsing)
    }

    /// Installs the tree a parse made for `job`, told of the edits made since (the text moved
    /// on while it ran: the tree then still owes a reparse, which is quick). Returns the
    /// document's snapshot when the tree was of use.
    pub fn finish_parse(&mut self, job: &ParseJob, tree: Tree) -> Option<DocumentSnapshot> {
        self.finish_parse_timed(job, tree, None)
    }

    /// [`Workspace::finish_parse`] with how long the parse took, which decides whether the
    /// document's later reparses are done on the keystroke or in the background.
    pub fn finish_parse_timed(
        &mut self,
        job: &ParseJob,
        tree: Tree,
        took: Option<std::time::Duration>,
    ) -> Option<DocumentSnapshot> {
        let document = self.documents.get_mut(&job.uri)?;
        let snapshot = document.finish_parse(job, tree, took).then(|| document.snapshot(job.uri.clone()))?;
        self.touch(&job.uri);
        Some(snapshot)
    }

    /// How many times each open document's text was parsed (tree-sitter, whole or
    /// incremental), for `tokamak.status`: one version is never parsed twice.
    pub fn parse_counts(&self) -> Vec<ParseCount> {
        let mut counts: Vec<ParseCount> = self
            .documents
            .iter()
            .map(|(uri, d)| ParseCount {
                uri: uri.clone(),
                version: d.text.version(),
                parses: d.parses,
                parsed_twice: d.parsed_twice,
            })
            .collect();
        counts.sort_by(|a, b| a.uri.cmp(&b.uri));
        counts
    }

    pub fn open_documents(&self) -> usize {
        self.documents.len()
    }

    /// A snapshot of every open document.
    pub fn snapshots(&self) -> Vec<DocumentSnapshot> {
        self.documents.iter().map(|(uri, document)| document.snapshot(uri.clone())).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::LineCol;

    fn uri(name: &str) -> Url {
        Url::parse(&format!("file:///tmp/{name}")).unwrap()
    }

    #[test]
    fn drops_stale_versions_and_unknown_documents() {
        let mut workspace = Workspace::default();
        workspace.open(uri("a.py"), "python", 3, "x = 1\n");
        let change = TextChange { range: Some((LineCol::new(0, 4), LineCol::new(0, 5))), text: "2".into() };
        let err = workspace
            .change(&uri("a.py"), 3, std::slice::from_ref(&change), PositionEncoding::Utf16)
            .unwrap_err();
        assert!(matches!(err, ChangeError::StaleVersion { current: 3, got: 3, .. }));
        let err = workspace
            .change(&uri("b.py"), 9, std::slice::from_ref(&change), PositionEncoding::Utf16)
            .unwrap_err();
        assert_eq!(err, ChangeError::UnknownDocument(uri("b.py")));
        let (snapshot, _) = workspace.change(&uri("a.py"), 4, &[change], PositionEncoding::Utf16).unwrap();
        assert_eq!(snapshot.rope.to_string(), "x = 2\n");
        assert_eq!(snapshot.version, Some(4));
    }

    #[test]
    fn large_and_binary_documents_keep_text_but_no_tree() {
        let mut workspace =
            Workspace::new(SyntaxSettings { max_file_bytes: 10, ..SyntaxSettings::default() });
        let snapshot = workspace.open(uri("big.py"), "python", 1, "x = 1\ny = 2\nz = 3\n");
        assert!(snapshot.tree.is_none());
        assert!(snapshot.syntax_skipped.as_deref().unwrap().contains("syntax.max_file_bytes"));
        let mut workspace = Workspace::default();
        let snapshot = workspace.open(uri("bin.py"), "python", 1, "x\0y");
        assert!(snapshot.tree.is_none());
        assert!(snapshot.syntax_skipped.as_deref().unwrap().contains("NUL"));

        // a NUL typed into a parsed document turns parsing off; deleting it turns it back on
        let file = uri("typed.py");
        workspace.open(file.clone(), "python", 1, "x = 1\n");
        let at = |col| Some((LineCol::new(0, col), LineCol::new(0, col)));
        let (snapshot, _) = workspace
            .change(&file, 2, &[TextChange { range: at(0), text: "\0".into() }], PositionEncoding::Utf8)
            .unwrap();
        assert!(snapshot.tree.is_none() && snapshot.syntax_skipped.is_some());
        let delete =
            TextChange { range: Some((LineCol::new(0, 0), LineCol::new(0, 1))), text: String::new() };
        let (snapshot, _) = workspace.change(&file, 3, &[delete], PositionEncoding::Utf8).unwrap();
        assert!(snapshot.tree.is_some() && snapshot.syntax_skipped.is_none());
    }

    fn insert_at(line: u32, col: u32, text: &str) -> TextChange {
        TextChange { range: Some((LineCol::new(line, col), LineCol::new(line, col))), text: text.into() }
    }

    fn fresh_sexp(snapshot: &DocumentSnapshot) -> String {
        let tree = crate::syntax::SyntaxTree::parse(snapshot.language, &snapshot.rope).unwrap().unwrap();
        tree.tree().root_node().to_sexp()
    }

    #[test]
    fn a_large_document_is_parsed_in_the_background_and_catches_up_with_typing() {
        let mut workspace = Workspace::default();
        let file = uri("large.py");
        let text = "def f(x):\n    return x  # twice\n\n".repeat(OPEN_PARSE_BYTES / 30 + 1);
        let opened = workspace.open(file.clone(), "python", 1, &text);
        assert!(opened.syntax_pending && opened.tree.is_none(), "its first parse is owed");

        // the first parse starts; two changes come while it runs
        let job = workspace.background_parse_job(&file).unwrap();
        assert!(job.old_tree.is_none());
        assert!(workspace.background_parse_job(&file).is_none(), "one background parse at a time");
        let (_, report) =
            workspace.change(&file, 2, &[insert_at(0, 0, "y = 1\n")], PositionEncoding::Utf8).unwrap();
        assert_eq!(report.syntax, SyntaxAfter::Pending);
        workspace.change(&file, 3, &[insert_at(1, 9, "z, ")], PositionEncoding::Utf8).unwrap();

        // its tree is installed, told of both edits, and owes a quick reparse
        let tree = job.parse().unwrap();
        let snapshot = workspace.finish_parse(&job, tree).expect("installed");
        workspace.parse_ended(&file, job.generation());
        assert!(snapshot.syntax_pending && snapshot.tree.is_none());
        let job = workspace.background_parse_job(&file).unwrap();
        assert!(job.old_tree.is_some(), "an incremental reparse");
        let tree = job.parse().unwrap();
        let snapshot = workspace.finish_parse(&job, tree).unwrap();
        assert!(!snapshot.syntax_pending);
        assert_eq!(snapshot.tree.as_ref().unwrap().root_node().to_sexp(), fresh_sexp(&snapshot));

        // a parse of a text that was replaced since is of no use
        workspace.change(&file, 4, &[insert_at(0, 0, "(")], PositionEncoding::Utf8).unwrap();
        let stale = workspace.parse_job(&file);
        let whole = TextChange { range: None, text: "x = 1\n".into() };
        workspace.change(&file, 5, &[whole], PositionEncoding::Utf8).unwrap();
        if let Some(stale) = stale {
            let tree = stale.parse().unwrap();
            assert!(workspace.finish_parse(&stale, tree).is_none());
        }
        // two background parses, one on the keystroke, one of the new text
        assert_eq!(workspace.parse_counts()[0].parses, 4, "each parse of the text counted");
        assert_eq!(workspace.parse_counts()[0].parsed_twice, 0);
    }

    #[test]
    fn typing_in_a_comment_leaves_the_syntax_and_the_tree_follows() {
        let mut workspace = Workspace::default();
        let file = uri("note.py");
        workspace.open(file.clone(), "python", 1, "def f(:\n    pass  # a note\n");
        let (snapshot, report) =
            workspace.change(&file, 2, &[insert_at(1, 18, "s")], PositionEncoding::Utf8).unwrap();
        assert_eq!(report.syntax, SyntaxAfter::Unchanged);
        assert_eq!(report.previous_version, Some(1));
        assert!(snapshot.syntax_pending, "the tree follows in the background");
        // more typing in the same comment, then a parse brings the tree up to date
        let (_, report) =
            workspace.change(&file, 3, &[insert_at(1, 19, " here")], PositionEncoding::Utf8).unwrap();
        assert_eq!(report.syntax, SyntaxAfter::Unchanged);
        let job = workspace.parse_job(&file).unwrap();
        let tree = job.parse().unwrap();
        let snapshot = workspace.finish_parse(&job, tree).unwrap();
        assert_eq!(snapshot.rope.to_string(), "def f(:\n    pass  # a notes here\n");
        assert_eq!(snapshot.tree.as_ref().unwrap().root_node().to_sexp(), fresh_sexp(&snapshot));

        // code typed after comment typing is parsed at once, comment edits and all
        workspace.change(&file, 4, &[insert_at(1, 24, "!")], PositionEncoding::Utf8).unwrap();
        let (snapshot, report) =
            workspace.change(&file, 5, &[insert_at(0, 6, "x")], PositionEncoding::Utf8).unwrap();
        assert_eq!(report.syntax, SyntaxAfter::Parsed);
        assert!(!snapshot.syntax_pending);
        assert_eq!(snapshot.tree.as_ref().unwrap().root_node().to_sexp(), fresh_sexp(&snapshot));
    }

    #[test]
    fn the_trees_of_documents_not_edited_lately_are_let_go() {
        let text = "def f(x):\n    return x  # twice\n\n".repeat(OPEN_PARSE_BYTES / 30 + 1);
        let settings = SyntaxSettings { tree_bytes: text.len() * 2 + 100, ..SyntaxSettings::default() };
        let mut workspace = Workspace::new(settings);
        let parse = |workspace: &mut Workspace, file: &Url| {
            let job = workspace.background_parse_job(file).expect("a parse owed");
            let tree = job.parse().unwrap();
            let snapshot = workspace.finish_parse(&job, tree).expect("installed");
            workspace.parse_ended(file, job.generation());
            snapshot
        };
        let files: Vec<Url> = ["a.py", "b.py", "c.py"].iter().map(|name| uri(name)).collect();
        for file in &files {
            workspace.open(file.clone(), "python", 1, &text);
            assert!(parse(&mut workspace, file).tree.is_some());
        }
        // two documents' text fits: the first one opened let its tree go
        let trees = |workspace: &Workspace| -> Vec<bool> {
            files.iter().map(|f| workspace.snapshot(f).unwrap().tree.is_some()).collect()
        };
        assert_eq!(trees(&workspace), [false, true, true]);
        assert!(workspace.snapshot(&files[0]).unwrap().syntax_pending);

        // editing it brings its tree back from scratch, and the one touched longest ago goes
        let (snapshot, report) =
            workspace.change(&files[0], 2, &[insert_at(0, 0, "y = 1\n")], PositionEncoding::Utf8).unwrap();
        assert_eq!(report.syntax, SyntaxAfter::Pending);
        assert!(workspace.background_parse_job(&files[0]).is_some_and(|job| job.old_tree.is_none()));
        workspace.parse_ended(&files[0], workspace.parse_job(&files[0]).unwrap().generation());
        let snapshot = parse(&mut workspace, &snapshot.uri);
        assert_eq!(snapshot.tree.as_ref().unwrap().root_node().to_sexp(), fresh_sexp(&snapshot));
        assert_eq!(trees(&workspace), [true, false, true]);
    }
}
