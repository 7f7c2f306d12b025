//! The workspace: every open document (rope + version + syntax tree), changed in order, and
//! cheap immutable snapshots of them for readers; files that are not open come from disk.

mod disk;
mod write;

use std::collections::HashMap;
use std::path::PathBuf;

use ropey::Rope;
use tree_sitter::Tree;
use url::Url;

pub use disk::{ReadError, read_text, source_files};
pub use write::{WriteError, write_bytes_if_unchanged, write_if_unchanged};

use crate::config::SyntaxSettings;
use crate::syntax::SyntaxTree;
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

impl DocumentSnapshot {
    /// A snapshot of text that is not open in the editor (read from disk, say).
    pub fn detached(uri: Url, text: &str, settings: &SyntaxSettings) -> DocumentSnapshot {
        let language = language_of(&uri, "");
        let mut document = OpenDocument::new(TextDocument::new(text, None, language));
        document.refresh_syntax(settings, &[], true);
        document.snapshot(uri)
    }

    /// The file system path, for `file:` URIs.
    pub fn path(&self) -> Option<PathBuf> {
        self.uri.to_file_path().ok()
    }
}

/// A pending reparse of a large document, done off the workspace's lock.
pub struct ParseJob {
    pub uri: Url,
    pub version: Option<i32>,
    pub language: Language,
    pub rope: Rope,
    /// The document's tree, told of every edit since it was parsed.
    pub old_tree: Tree,
}

impl ParseJob {
    /// Parses (tens of milliseconds for a large file: run it off the async threads).
    pub fn parse(&self) -> Result<Tree, crate::syntax::SyntaxError> {
        crate::syntax::reparse_detached(self.language, &self.rope, &self.old_tree)
    }
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
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ChangeReport {
    /// How many of the edits had positions out of range (clamped) or reversed.
    pub clamped_edits: usize,
    /// The edits as applied, in order, for whatever must move along with the text.
    pub applied: Vec<AppliedChange>,
}

struct OpenDocument {
    text: TextDocument,
    syntax: Option<SyntaxTree>,
    syntax_skipped: Option<String>,
    /// The tree has been told of the latest edits but not reparsed yet (a large document,
    /// reparsed in the background).
    parse_pending: bool,
    /// A reparse on a keystroke took too long once: this document is reparsed in the
    /// background from now on.
    slow_to_parse: bool,
}

/// A reparse on a keystroke may take this long before the document's later ones are done in
/// the background.
const KEYSTROKE_PARSE_BUDGET: std::time::Duration = std::time::Duration::from_millis(4);

impl OpenDocument {
    fn new(text: TextDocument) -> OpenDocument {
        OpenDocument { text, syntax: None, syntax_skipped: None, parse_pending: false, slow_to_parse: false }
    }

    fn snapshot(&self, uri: Url) -> DocumentSnapshot {
        DocumentSnapshot {
            uri,
            version: self.text.version(),
            language: self.text.language(),
            rope: self.text.rope().clone(),
            tree: self.syntax.as_ref().filter(|_| !self.parse_pending).map(|s| s.tree().clone()),
            syntax_skipped: self.syntax_skipped.clone(),
            syntax_pending: self.parse_pending,
        }
    }

    /// Brings the syntax tree up to date after `edits` (already applied to the text):
    /// incrementally when there is a tree and every edit was incremental, from scratch
    /// otherwise; no tree at all for documents that are too large or binary.
    ///
    /// `inserted_nul` says whether the edits inserted a NUL byte; when they are all
    /// incremental and did not, the (otherwise whole-document) binary check is skipped — it
    /// is the one part of a keystroke that would cost time linear in the file's size.
    fn refresh_syntax(&mut self, settings: &SyntaxSettings, edits: &[AppliedChange], inserted_nul: bool) {
        let language = self.text.language();
        if !language.is_parsed() {
            return;
        }
        let rope = self.text.rope();
        let incremental =
            !edits.is_empty() && edits.iter().all(|e| matches!(e, AppliedChange::Incremental(_)));
        let scan_for_nul = inserted_nul || !incremental || self.syntax_skipped.is_some();
        self.syntax_skipped = skip_reason(rope, settings, scan_for_nul);
        if self.syntax_skipped.is_some() {
            self.syntax = None;
            self.parse_pending = false;
            return;
        }
        let full = edits.iter().any(|e| matches!(e, AppliedChange::Full));
        if let (Some(syntax), false) = (&mut self.syntax, full) {
            for edit in edits {
                if let AppliedChange::Incremental(edit) = edit {
                    syntax.edit(edit);
                }
            }
            // a keystroke must not wait for tree-sitter's reparse of a large file: the edited
            // tree waits for a background parse (`Workspace::parse_job`)
            if incremental && (self.slow_to_parse || rope.len_bytes() > settings.background_parse_bytes) {
                self.parse_pending = true;
                return;
            }
            let started = std::time::Instant::now();
            match syntax.reparse(rope) {
                Ok(()) => {
                    self.parse_pending = false;
                    if incremental && started.elapsed() > KEYSTROKE_PARSE_BUDGET {
                        tracing::debug!(
                            "a reparse took {:?}: reparsing in the background from now on",
                            started.elapsed()
                        );
                        self.slow_to_parse = true;
                    }
                    return;
                }
                Err(err) => tracing::warn!("incremental reparse failed, parsing afresh: {err}"),
            }
        }
        self.parse_pending = false;
        self.syntax = match SyntaxTree::parse(language, rope) {
            Ok(tree) => tree,
            Err(err) => {
                tracing::error!("{err}");
                self.syntax_skipped = Some(err.to_string());
                None
            }
        };
    }
}

fn skip_reason(rope: &Rope, settings: &SyntaxSettings, scan_for_nul: bool) -> Option<String> {
    let len = rope.len_bytes();
    if len > settings.max_file_bytes {
        return Some(format!(
            "it is {:.1} MB, more than syntax.max_file_bytes ({:.1} MB)",
            megabytes(len),
            megabytes(settings.max_file_bytes)
        ));
    }
    if scan_for_nul && rope.chunks().any(|chunk| chunk.as_bytes().contains(&0)) {
        return Some("it contains NUL bytes, so it is not source text".to_string());
    }
    None
}

fn megabytes(bytes: usize) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
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
}

impl Workspace {
    pub fn new(settings: SyntaxSettings) -> Workspace {
        Workspace { documents: HashMap::new(), settings }
    }

    pub fn settings(&self) -> &SyntaxSettings {
        &self.settings
    }

    pub fn set_settings(&mut self, settings: SyntaxSettings) {
        self.settings = settings;
    }

    /// Opens (or re-opens, replacing) a document.
    pub fn open(&mut self, uri: Url, language_id: &str, version: i32, text: &str) -> DocumentSnapshot {
        let language = language_of(&uri, language_id);
        let mut document = OpenDocument::new(TextDocument::new(text, Some(version), language));
        document.refresh_syntax(&self.settings, &[], true);
        let snapshot = document.snapshot(uri.clone());
        self.documents.insert(uri, document);
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
        let mut report = ChangeReport { clamped_edits: 0, applied: Vec::with_capacity(changes.len()) };
        for change in changes {
            let outcome = document.text.apply_change(change, encoding);
            report.clamped_edits += usize::from(outcome.clamped);
            report.applied.push(outcome.applied);
        }
        document.text.set_version(Some(version));
        let inserted_nul = changes.iter().any(|c| c.text.contains('\0'));
        document.refresh_syntax(&self.settings, &report.applied, inserted_nul);
        Ok((document.snapshot(uri.clone()), report))
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

    /// What a background reparse of `uri` needs, when its tree waits for one.
    pub fn parse_job(&self, uri: &Url) -> Option<ParseJob> {
        let document = self.documents.get(uri).filter(|d| d.parse_pending)?;
        let syntax = document.syntax.as_ref()?;
        Some(ParseJob {
            uri: uri.clone(),
            version: document.text.version(),
            language: document.text.language(),
            rope: document.text.rope().clone(),
            old_tree: syntax.tree().clone(),
        })
    }

    /// Installs the tree a background parse made for `job`, unless the document changed
    /// since (then a newer job will come). Returns the document's snapshot when installed.
    pub fn finish_parse(&mut self, job: &ParseJob, tree: Tree) -> Option<DocumentSnapshot> {
        let document = self.documents.get_mut(&job.uri)?;
        if document.text.version() != job.version {
            return None;
        }
        // (parsed meanwhile by a request that needed the tree at once: that tree is as good)
        if document.parse_pending {
            document.syntax.as_mut()?.set_tree(tree);
            document.parse_pending = false;
        }
        Some(document.snapshot(job.uri.clone()))
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
        assert!(snapshot.syntax_skipped.unwrap().contains("syntax.max_file_bytes"));
        let mut workspace = Workspace::default();
        let snapshot = workspace.open(uri("bin.py"), "python", 1, "x\0y");
        assert!(snapshot.tree.is_none());
        assert!(snapshot.syntax_skipped.unwrap().contains("NUL"));

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
}
